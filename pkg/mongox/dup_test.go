package mongox_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/mongox/mongotest"
)

// A unique-index violation is recognised for inserts and for updates alike.
func TestIsDuplicate(t *testing.T) {
	db := mongotest.New(t)
	ctx := context.Background()
	c := db.Collection("u")
	if err := mongox.EnsureIndexes(ctx, c, mongox.Index{Name: "name", Keys: bson.D{{Key: "name", Value: 1}}, Unique: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "a"}})
	if !mongox.IsDuplicate(err) {
		t.Fatalf("insert: %v", err)
	}
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "a"}}}})
	if !mongox.IsDuplicate(err) {
		t.Fatalf("update: %v", err)
	}
}
