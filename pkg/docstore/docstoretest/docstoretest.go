// Package docstoretest gives each test a fresh database of its own: an SQLite file in the test's temporary
// folder, closed when the test ends. (The conformance and concurrency suites of pkg/docstore also run on the
// MongoDB engine; see its mongotest package.)
package docstoretest

import (
	"context"
	"fmt"
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

// Doc is the document of Fill's collection.
type Doc struct {
	ID  string  `json:"_id"`
	Org string  `json:"org"`
	N   int64   `json:"n"`
	F   float64 `json:"f"`
}

// Spec declares Fill's collection, "things", with one index (org, -n).
var Spec = docstore.Spec{Name: "things", Indexes: []docstore.Index{
	{Name: "org_n", Keys: []docstore.Key{docstore.Asc("org"), docstore.Desc("n")}},
}}

// Fill stores n documents in db's collection Spec (_id d00000…, org o0–o2 in turn, n the index, f n+0.5) and
// returns it.
func Fill(t testing.TB, db *docstore.DB, n int) *docstore.Collection {
	t.Helper()
	ctx := context.Background()
	c, err := db.Collection(ctx, Spec)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]any, n)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%05d", i), Org: fmt.Sprint("o", i%3), N: int64(i), F: float64(i) + 0.5}
	}
	res, err := c.InsertMany(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res {
		if e != nil {
			t.Fatal(e)
		}
	}
	return c
}
