package sqlite

import (
	"context"
	"database/sql"
)

// RawSQL runs one SQL statement on the read connections (query_only) and returns how many rows it produced,
// every column of each row read as bytes (docstore.DB.RawSQL: for benchmarks only).
func (e *Engine) RawSQL(ctx context.Context, query string, args ...any) (int, error) {
	rows, err := e.r.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	dst := make([]any, len(cols))
	for i := range dst {
		dst[i] = new(sql.RawBytes)
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// RawSQLInt runs a one-row, one-column SQL query (SELECT count(*) …) like RawSQL and returns its integer.
func (e *Engine) RawSQLInt(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := e.r.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
