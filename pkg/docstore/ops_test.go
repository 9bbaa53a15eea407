package docstore_test

import (
	"context"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/docstore/mongotest"
)

// Migrate copies SQLite to the MongoDB engine, verifies counts, keeps numbers' types and is safe to re-run.
func TestMigrate_SQLiteToMongo(t *testing.T) {
	ctx := context.Background()
	src, err := docstore.Open(ctx, docstore.Config{Name: "svc", Path: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	docstoretest.Fill(t, src, 1234)
	dst := mongotest.New(t)
	rep, err := docstore.Migrate(ctx, src, dst, []docstore.Spec{docstoretest.Spec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || rep[0].Copied != 1234 || rep[0].Target != 1234 {
		t.Fatalf("first run: %+v", rep)
	}
	// Re-run after a partial copy: nothing is copied twice.
	rep, err = docstore.Migrate(ctx, src, dst, []docstore.Spec{docstoretest.Spec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep[0].Copied != 0 || rep[0].Present != 1234 || rep[0].Target != 1234 {
		t.Fatalf("second run: %+v", rep)
	}
	c, err := dst.Collection(ctx, docstoretest.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []docstoretest.Doc
	if err := c.Find(ctx, docstore.Query{Filter: docstore.Eq("org", "o2"), Sort: docstore.Sort("-n"), Limit: 2}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].N != 1232 || got[0].F != 1232.5 || got[1].N != 1229 {
		t.Fatalf("target documents %+v", got)
	}
}
