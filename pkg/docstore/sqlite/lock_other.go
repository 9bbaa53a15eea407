//go:build !unix

package sqlite

import (
	"fmt"
	"os"
)

// lockDatabase only creates the lock file where flock is not available (SQLite's own locking still applies).
func lockDatabase(path, db string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", db, err)
	}
	return f, nil
}

func unlockDatabase(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}
