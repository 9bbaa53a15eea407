// Package store implements the stores of case-svc on the document-collection API of pkg/docstore, so the
// same code runs on the embedded SQLite engine and on MongoDB. Stored document types stay in this package;
// docstore errors become domain errors at its boundary. Each collection declares its indexes once, in its
// store's constructor: every list and search the API offers (organisation scope, the parent's id, status…,
// then its default sort) is served from an index (plan_test.go checks the plans).
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// stamp is the update of the bookkeeping fields that every update writes.
func stamp(by string, at time.Time) docstore.Update {
	return docstore.Set("updatedAt", docstore.Millis(at)).Set("updatedBy", by)
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
	return docstore.Time(*p)
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

// setFields adds to u a Set of each named field with its value from values, each field once; a name values
// does not hold is an error (a domain field without a stored form).
func setFields(u docstore.Update, what string, values map[string]any, fields []string) (docstore.Update, error) {
	seen := map[string]bool{}
	for _, f := range fields {
		v, ok := values[f]
		if !ok {
			return u, fmt.Errorf("update %s: unknown field %q", what, f)
		}
		if !seen[f] {
			seen[f] = true
			u = u.Set(f, v)
		}
	}
	return u, nil
}

// findOneAndUpdate applies u to the document matching f and decodes it, as updated, into out; notFound is
// returned when nothing matches.
func findOneAndUpdate(ctx context.Context, coll *docstore.Collection, f search.Node, u docstore.Update, out any, notFound error) error {
	err := coll.FindOneAndUpdate(ctx, f, nil, u, docstore.FindAndUpdate{}, out)
	if errors.Is(err, docstore.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return fmt.Errorf("update in %s: %w", coll.Name(), err)
	}
	return nil
}

// get decodes the document with this _id into out; notFound is returned when there is none.
func get(ctx context.Context, coll *docstore.Collection, id string, out any, notFound error) error {
	return findOne(ctx, coll, docstore.ID(id), out, notFound)
}

// findOne decodes the first document matching f into out; notFound is returned when there is none.
func findOne(ctx context.Context, coll *docstore.Collection, f search.Node, out any, notFound error) error {
	err := coll.FindOne(ctx, f, nil, out)
	if errors.Is(err, docstore.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return fmt.Errorf("find in %s: %w", coll.Name(), err)
	}
	return nil
}

// page runs a list or search on coll, decoding the documents as D and converting each with conv.
func page[D, T any](ctx context.Context, coll *docstore.Collection, f search.Node, p search.Page, conv func(D) T) ([]T, int64, error) {
	var docs []D
	total, err := coll.FindPage(ctx, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]T, len(docs))
	for i, d := range docs {
		out[i] = conv(d)
	}
	return out, total, nil
}

// encodeJSON writes v as compact JSON text without HTML escaping (json.Number values keep their text).
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// decodeJSON reads stored JSON text, keeping numbers exact (json.Number).
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// decodeValue reads a stored JSON value with integral numbers as int64 and the others as float64, the forms
// the domain keeps.
func decodeValue(raw json.RawMessage) any {
	v, err := decodeJSON(string(raw))
	if err != nil {
		return nil
	}
	return docstore.Normalize(v)
}

// Specs are the collections of case-svc as the stores declare them (the attachment store's files and chunks
// aside): for tools that read or fill a database directly (case-bench, a copy between engines) and for the
// plan tests, so they open each collection with its indexes and array fields.
func Specs() []docstore.Spec {
	return []docstore.Spec{orgSpec, userSpec, apiKeySpec, counterSpec, caseSpec, taskSpec, logSpec, templateSpec,
		customFieldSpec, observableSpec, grantSpec, alertSpec, jobSpec, actionSpec, pendingSpec, auditSpec, endpointSpec,
		deliverySpec, setSpec, ruleSpec, firingSpec, cursorSpec}
}

// Collection opens the collection name of db with its declared spec (a bare one for a name no store declares).
func Collection(ctx context.Context, db *docstore.DB, name string) (*docstore.Collection, error) {
	for _, s := range Specs() {
		if s.Name == name {
			return db.Collection(ctx, s)
		}
	}
	return db.Collection(ctx, docstore.Spec{Name: name})
}
