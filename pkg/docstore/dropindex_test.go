package docstore_test

import (
	"testing"

	"github.com/openir/platform/pkg/docstore"
)

// A unique index replaced by another: once dropped, it no longer refuses writes, the new one does, and
// dropping it again (or an index that never existed) is not an error.
func TestDropIndex(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		old := docstore.Spec{Name: "numbered", Indexes: []docstore.Index{{Name: "n", Keys: []docstore.Key{docstore.Asc("n")}, Unique: true}}}
		c := confColl(t, db, old, `{"_id":"a","org":"x","n":1}`)
		if err := c.Insert(ctx, map[string]any{"_id": "b", "org": "y", "n": 1}); !docstore.IsDuplicate(err) {
			t.Fatalf("the unique index does not hold: %v", err)
		}
		c, err := db.Collection(ctx, docstore.Spec{Name: "numbered", Indexes: []docstore.Index{
			{Name: "org_n", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("n")}, Unique: true}}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := c.DropIndex(ctx, "n"); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.DropIndex(ctx, "never"); err != nil {
			t.Fatal(err)
		}
		if err := c.Insert(ctx, map[string]any{"_id": "b", "org": "y", "n": 1}); err != nil {
			t.Fatalf("after the drop: %v", err)
		}
		if err := c.Insert(ctx, map[string]any{"_id": "c", "org": "y", "n": 1}); !docstore.IsDuplicate(err) {
			t.Fatalf("the new unique index does not hold: %v", err)
		}
	})
}
