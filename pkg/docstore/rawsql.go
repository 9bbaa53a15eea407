package docstore

import (
	"context"
	"errors"

	"github.com/openir/platform/pkg/docstore/sqlite"
)

// RawSQL runs one SQL statement on the SQLite engine's read connections (query_only) and returns how many rows
// it produced, every column of each row read as bytes. It is for benchmarks: the floor of a request is the
// bare SQL it needs, measured on the same database. Tables are named after their collections (columns id
// and doc); a path's expression is json_extract(doc,'$."a"."b"'), the one the declared indexes use. Other
// engines return an error. Stores must not use it.
func (d *DB) RawSQL(ctx context.Context, query string, args ...any) (int, error) {
	e, ok := d.eng.(*sqlite.Engine)
	if !ok {
		return 0, errors.New("docstore: RawSQL is only available on the SQLite engine")
	}
	return e.RawSQL(ctx, query, args...)
}

// RawSQLInt runs a one-row, one-column SQL query (SELECT count(*) …) like RawSQL and returns its integer.
func (d *DB) RawSQLInt(ctx context.Context, query string, args ...any) (int64, error) {
	e, ok := d.eng.(*sqlite.Engine)
	if !ok {
		return 0, errors.New("docstore: RawSQLInt is only available on the SQLite engine")
	}
	return e.RawSQLInt(ctx, query, args...)
}
