package mongox_test

import (
	"context"
	"fmt"
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

// The _id expression index makes lookups by _id use an index on the embedded engine.
func TestIndexIDs(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := mongox.Open(ctx, mongox.Config{Name: "idx", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	c := db.Collection("docs")
	docs := make([]any, 2000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: fmt.Sprintf("id-%05d", i)}, {Key: "v", Value: i}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := db.IndexIDs(ctx); err != nil {
		t.Fatal(err)
	}
	var got struct{ V int }
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: "id-01234"}}).Decode(&got); err != nil || got.V != 1234 {
		t.Fatalf("find by _id after indexing: %v %v", got, err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: "id-00007"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: -7}}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: "id-00007"}}).Decode(&got); err != nil || got.V != -7 {
		t.Fatalf("update by _id after indexing: %v %v", got, err)
	}
	if err := db.IndexIDs(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}
