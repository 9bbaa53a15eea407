// Package docstoretest gives each test a fresh database of its own: an SQLite file in the test's temporary
// folder, closed when the test ends. (The conformance and concurrency suites of pkg/docstore also run on the
// MongoDB engine; see its mongotest package.)
package docstoretest

import (
	"context"
	"testing"

	"github.com/openir/platform/pkg/docstore"
)

// New returns a fresh, empty embedded database closed when the test ends.
func New(t testing.TB) *docstore.DB {
	t.Helper()
	db, err := docstore.Open(context.Background(), docstore.Config{Name: "test", Path: t.TempDir()}, nil)
	if err != nil {
		t.Fatalf("docstoretest: open database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}
