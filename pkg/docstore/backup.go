package docstore

import (
	"context"
	"errors"
)

// backuper is implemented by engines that take their own online snapshot (SQLite).
type backuper interface {
	Backup(ctx context.Context, path string) error
}

// Backup writes a consistent snapshot of the whole database to the new file path while the database keeps
// serving (SQLite: VACUUM INTO; the file must not exist). On MongoDB it is an error: use mongodump.
func (d *DB) Backup(ctx context.Context, path string) error {
	b, ok := d.eng.(backuper)
	if !ok {
		return errors.New("docstore: backup is for the embedded database; on MongoDB use mongodump")
	}
	return b.Backup(ctx, path)
}
