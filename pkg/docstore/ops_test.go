package docstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/mongotest"
)

type opsDoc struct {
	ID  string  `json:"_id"`
	Org string  `json:"org"`
	N   int64   `json:"n"`
	F   float64 `json:"f"`
}

var opsSpec = docstore.Spec{Name: "things", Indexes: []docstore.Index{
	{Name: "org_n", Keys: []docstore.Key{docstore.Asc("org"), docstore.Desc("n")}},
}}

func fill(t *testing.T, db *docstore.DB, n int) *docstore.Collection {
	t.Helper()
	ctx := context.Background()
	c, err := db.Collection(ctx, opsSpec)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]any, n)
	for i := range docs {
		docs[i] = opsDoc{ID: fmt.Sprintf("d%05d", i), Org: fmt.Sprint("o", i%3), N: int64(i), F: float64(i) + 0.5}
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

// Migrate copies SQLite to the MongoDB engine, verifies counts, keeps numbers' types and is safe to re-run.
func TestMigrate_SQLiteToMongo(t *testing.T) {
	ctx := context.Background()
	src, err := docstore.Open(ctx, docstore.Config{Name: "svc", Path: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	fill(t, src, 1234)
	dst := mongotest.New(t)
	rep, err := docstore.Migrate(ctx, src, dst, []docstore.Spec{opsSpec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || rep[0].Copied != 1234 || rep[0].Target != 1234 {
		t.Fatalf("first run: %+v", rep)
	}
	// Re-run after a partial copy: nothing is copied twice.
	rep, err = docstore.Migrate(ctx, src, dst, []docstore.Spec{opsSpec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep[0].Copied != 0 || rep[0].Present != 1234 || rep[0].Target != 1234 {
		t.Fatalf("second run: %+v", rep)
	}
	c, err := dst.Collection(ctx, opsSpec)
	if err != nil {
		t.Fatal(err)
	}
	var got []opsDoc
	if err := c.Find(ctx, docstore.Query{Filter: docstore.Eq("org", "o2"), Sort: docstore.Sort("-n"), Limit: 2}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].N != 1232 || got[0].F != 1232.5 || got[1].N != 1229 {
		t.Fatalf("target documents %+v", got)
	}
}
