package docstore

import (
	"context"
	"errors"
	"log/slog"
)

// Placeholders until the engines land (sqlite.go, mongo.go replace this file).
func openSQLite(ctx context.Context, cfg Config, log *slog.Logger) (engine, error) {
	return nil, errors.New("sqlite engine: not yet")
}

func openMongo(ctx context.Context, cfg Config, log *slog.Logger) (engine, error) {
	return nil, errors.New("mongodb engine: not yet")
}
