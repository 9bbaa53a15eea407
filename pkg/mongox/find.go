package mongox

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/pkg/search"
)

// FindPage runs a list or search: the documents of coll matching f, in p's order (then by _id, so pages are
// stable), from p.Offset, at most p.Limit of them, decoded into out (a pointer to a slice), and the total
// number of matches.
func FindPage(ctx context.Context, coll *mongo.Collection, f search.Node, p search.Page, out any) (int64, error) {
	filter := Filter(f)
	sort := Sort(p.Sort)
	hasID := false
	for _, k := range p.Sort {
		hasID = hasID || k.Path == "_id"
	}
	if !hasID {
		sort = append(sort, bson.E{Key: "_id", Value: 1})
	}
	opts := options.Find().SetSort(sort).SetSkip(int64(p.Offset))
	if p.Limit > 0 {
		opts.SetLimit(int64(p.Limit))
	}
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return 0, fmt.Errorf("find in %s: %w", coll.Name(), err)
	}
	if err := cur.All(ctx, out); err != nil {
		return 0, fmt.Errorf("read %s: %w", coll.Name(), err)
	}
	total, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", coll.Name(), err)
	}
	return total, nil
}

// Millis is a time as stored: epoch milliseconds.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Time is the inverse of Millis.
func Time(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Index is one index a store needs.
type Index struct {
	Name   string
	Keys   bson.D
	Unique bool
}

// EnsureIndexes creates the indexes of coll that do not exist yet. It lists them first because FerretDB v1.24
// (SQLite) panics on createIndexes for an index that already exists once the database has been reopened.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, idx ...Index) error {
	have := map[string]bool{}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		return fmt.Errorf("list indexes of %s: %w", coll.Name(), err)
	}
	var specs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(ctx, &specs); err != nil {
		return fmt.Errorf("list indexes of %s: %w", coll.Name(), err)
	}
	for _, s := range specs {
		have[s.Name] = true
	}
	var models []mongo.IndexModel
	for _, i := range idx {
		if !have[i.Name] {
			models = append(models, mongo.IndexModel{Keys: i.Keys,
				Options: options.Index().SetName(i.Name).SetUnique(i.Unique)})
		}
	}
	if len(models) == 0 {
		return nil
	}
	if _, err := coll.Indexes().CreateMany(ctx, models); err != nil {
		return fmt.Errorf("create indexes of %s: %w", coll.Name(), err)
	}
	return nil
}
