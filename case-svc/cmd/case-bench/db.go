package main

import (
	"context"
	"log/slog"

	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/docstore"
)

// openDB opens the database db (benchkit.Run.DB: the embedded SQLite file, or a fresh database on the MongoDB
// pass) as internal/app opens the service's.
func openDB(ctx context.Context, db docstore.Config, log *slog.Logger) (*docstore.DB, error) {
	return docstore.Open(ctx, db, log)
}

// collection opens a collection of db with the spec its store declares (its indexes and array fields), for
// the floors and the bulk fill, which read and write the stores' collections directly.
func collection(ctx context.Context, db *docstore.DB, name string) (*docstore.Collection, error) {
	return store.Collection(ctx, db, name)
}
