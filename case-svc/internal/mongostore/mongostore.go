// Package mongostore implements the stores of case-svc on MongoDB (or the embedded FerretDB). BSON documents
// stay in this package; driver errors become domain errors at its boundary. Every hot path (authentication,
// get, create) reads by _id or inserts; lists and searches may scan on the embedded engine and have indexes on
// MongoDB.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/pkg/mongox"
)

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }

// stamp is the $set of every update.
func stamp(by string, at time.Time) bson.D {
	return bson.D{{Key: "updatedAt", Value: mongox.Millis(at)}, {Key: "updatedBy", Value: by}}
}

// nullMillis stores a zero time as null.
func nullMillis(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// timeOf reads a nullable stored time.
func timeOf(p *int64) time.Time {
	if p == nil {
		return time.Time{}
	}
	return mongox.Time(*p)
}

// nullString stores "" as null.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func stringOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// findOneAndSet applies $set to the document matching filter and decodes the result into out; notFound is
// returned when nothing matches.
func findOneAndSet(ctx context.Context, coll *mongo.Collection, filter, set bson.D, out any, notFound error) error {
	err := coll.FindOneAndUpdate(ctx, filter, bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return notFound
	}
	if err != nil {
		return fmt.Errorf("update in %s: %w", coll.Name(), err)
	}
	return nil
}

// findOne decodes the document with this _id into out; notFound is returned when there is none.
func findOne(ctx context.Context, coll *mongo.Collection, filter bson.D, out any, notFound error) error {
	err := coll.FindOne(ctx, filter).Decode(out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return notFound
	}
	if err != nil {
		return fmt.Errorf("find in %s: %w", coll.Name(), err)
	}
	return nil
}

// toInt reads a stored number of any BSON numeric type.
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// normalize turns decoded BSON scalars into the domain's forms (int32 → int64).
func normalize(v any) any {
	if n, ok := v.(int32); ok {
		return int64(n)
	}
	return v
}
