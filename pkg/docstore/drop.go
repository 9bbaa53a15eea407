package docstore

import (
	"context"
	"errors"
	"fmt"
)

// databaseDropper is implemented by the MongoDB engine.
type databaseDropper interface {
	DropDatabase(ctx context.Context) error
}

// DropDatabase removes the whole database with its collections: for a program that made a database of its own
// on a shared MongoDB (the benchmarks' MongoDB pass) and must leave nothing behind. On SQLite, remove the file
// instead: this returns an error. Stores must not use it.
func (d *DB) DropDatabase(ctx context.Context) error {
	e, ok := d.eng.(databaseDropper)
	if !ok {
		return errors.New("docstore: DropDatabase is only available on the MongoDB engine")
	}
	if err := e.DropDatabase(ctx); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	return nil
}
