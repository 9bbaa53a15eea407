package main

import (
	"context"
	"log/slog"

	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/docstore"
)

// openDB opens the embedded database name under dir as internal/app opens the service's (docstore.Open with an
// empty database.uri: the SQLite file dir/name.db).
func openDB(ctx context.Context, dir, name string, log *slog.Logger) (*docstore.DB, error) {
	return docstore.Open(ctx, docstore.Config{Name: name, Path: dir}, log)
}

// collection opens a collection of db with the spec its store declares (its indexes and array fields), for
// the floors and the bulk fill, which read and write the stores' collections directly.
func collection(ctx context.Context, db *docstore.DB, name string) (*docstore.Collection, error) {
	return store.Collection(ctx, db, name)
}
