package store

import (
	"context"
	"fmt"

	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// Tally counts the records of every collection in the database (docstore Count and GroupCount): the
// statistics never read the records themselves.
type Tally struct {
	colls map[tally.Record]*docstore.Collection
}

var _ tally.Store = (*Tally)(nil)

// tallySpecs are the collections of each counted record.
var tallySpecs = map[tally.Record]docstore.Spec{
	tally.RecordCase: caseSpec, tally.RecordAlert: alertSpec, tally.RecordTask: taskSpec, tally.RecordLog: logSpec,
	tally.RecordObservable: observableSpec, tally.RecordTemplate: templateSpec,
	tally.RecordCustomField: customFieldSpec, tally.RecordUser: userSpec, tally.RecordOrg: orgSpec,
	tally.RecordJob: jobSpec,
}

// NewTally opens the collections it counts.
func NewTally(ctx context.Context, db *docstore.DB) (*Tally, error) {
	t := &Tally{colls: make(map[tally.Record]*docstore.Collection, len(tallySpecs))}
	for r, spec := range tallySpecs {
		c, err := db.Collection(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", spec.Name, err)
		}
		t.colls[r] = c
	}
	return t, nil
}

func (t *Tally) coll(r tally.Record) (*docstore.Collection, error) {
	c, ok := t.colls[r]
	if !ok {
		return nil, fmt.Errorf("tally: no collection for %q", r)
	}
	return c, nil
}

// Count counts the records of kind r matching f.
func (t *Tally) Count(ctx context.Context, r tally.Record, f search.Node) (int64, error) {
	c, err := t.coll(r)
	if err != nil {
		return 0, err
	}
	return c.Count(ctx, f)
}

// Groups counts the records of kind r matching f by the value of path, largest count first (at most limit
// groups, 0 = all).
func (t *Tally) Groups(ctx context.Context, r tally.Record, f search.Node, path string, limit int) ([]tally.ValueCount, error) {
	c, err := t.coll(r)
	if err != nil {
		return nil, err
	}
	groups, err := c.GroupCount(ctx, f, path, limit)
	if err != nil {
		return nil, err
	}
	out := make([]tally.ValueCount, len(groups))
	for i, g := range groups {
		out[i] = tally.ValueCount{Value: g.Value, Count: g.Count}
	}
	return out, nil
}
