package mongox

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver FerretDB's SQLite backend uses
)

// FerretDB 1.24's SQLite backend looks documents up by _id with the expression `_ferretdb_sjson->'$._id'`,
// but the unique index it creates is on `_ferretdb_sjson->"_id"`: SQLite uses an expression index only for
// the identical expression, so every findOne, update and delete by _id scanned the whole table (measured by
// the benchmarks: 40 ms at 10k documents, 340 ms at 100k). indexIDs adds, to every collection table of the
// embedded database, an index on the expression the queries use. FerretDB does not know these indexes (they
// are not in its metadata), which is harmless: SQLite maintains them and drops them with their table.
func indexIDs(ctx context.Context, dir, dbName string) error {
	file := filepath.Join(dir, dbName+".sqlite")
	if _, err := os.Stat(file); err != nil {
		return nil // not created yet: nothing to index (and never create it under FerretDB)
	}
	return indexFile(ctx, file)
}

// indexAll indexes every database of the embedded server's folder (tests and tools use several).
func indexAll(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := indexFile(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

func indexFile(ctx context.Context, file string) error {
	dsn := (&url.URL{Scheme: "file", Opaque: file}).String() + "?mode=rw&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var exists int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_ferretdb_collections'`).Scan(&exists)
	if err != nil || exists == 0 {
		return err
	}
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM _ferretdb_collections`)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	for _, t := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, t+"__id_expr", t)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("index _id of %s: %w", t, err)
		}
	}
	return nil
}

// KeepIDsIndexed indexes the _id lookups of every database under dir (see indexIDs) every interval until ctx
// ends, for collections created later.
// The first run waits one interval: at start-up FerretDB is creating the database file, and a second opener
// then gets SQLITE_BUSY (services call DB.IndexIDs themselves once their stores exist).
func KeepIDsIndexed(ctx context.Context, dir string, interval time.Duration, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := indexAll(ctx, dir); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
	}
}
