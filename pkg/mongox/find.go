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
