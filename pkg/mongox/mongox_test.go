package mongox_test

import (
	"context"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/mongox/mongotest"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// The embedded server must make concurrent updates atomic: that is why it uses one connection.
func TestEmbedded_ConcurrentIncIsAtomic(t *testing.T) {
	db := mongotest.New(t)
	ctx := context.Background()
	c := db.Collection("counters")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "n"}, {Key: "v", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.UpdateByID(ctx, "n", bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var got struct{ V int }
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: "n"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.V != 50 {
		t.Fatalf("v = %d, want 50", got.V)
	}
}

// Data written through Open survives closing and reopening the embedded database.
func TestOpen_EmbeddedPersists(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := mongox.Open(ctx, mongox.Config{Name: "persist", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("x").InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	idx := mongox.Index{Name: "v", Keys: bson.D{{Key: "v", Value: 1}}}
	if err := mongox.EnsureIndexes(ctx, db.Collection("x"), idx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err = mongox.Open(ctx, mongox.Config{Name: "persist", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	// Re-creating an existing index after a reopen crashes FerretDB's connection: EnsureIndexes must skip it.
	if err := mongox.EnsureIndexes(ctx, db.Collection("x"), idx); err != nil {
		t.Fatal(err)
	}
	n, err := db.Collection("x").CountDocuments(ctx, bson.D{})
	if err != nil || n != 1 {
		t.Fatalf("count = %d, %v; want 1", n, err)
	}
	if !db.Embedded {
		t.Fatal("want embedded")
	}
}
