package docstore

import (
	"context"
	"errors"
)

// explainer is implemented by the collections of engines that can show a query plan (SQLite).
type explainer interface {
	Explain(ctx context.Context, q Query) (string, error)
}

// Explain returns the engine's plan for Find(q): SQLite's EXPLAIN QUERY PLAN, one step per line (tests check
// that lists and searches use an index). Engines without one return an error.
func (c *Collection) Explain(ctx context.Context, q Query) (string, error) {
	x, ok := c.c.(explainer)
	if !ok {
		return "", errors.New("docstore: explain is not supported on this engine")
	}
	return x.Explain(ctx, q)
}
