package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// RuleObjects evaluates automation rules' conditions on the stored objects of events: the objects of a batch
// of events are read in one query per object type, and every condition is evaluated on each of them in memory
// (docstore.Matcher, held to the engines' query results by pkg/docstore's conformance suite), instead of one
// search per rule and object.
type RuleObjects struct {
	colls map[string]*docstore.Collection // by event objectType
}

var _ automation.ObjectMatcher = (*RuleObjects)(nil)

// NewRuleObjects returns the matcher over the stores' collections.
func NewRuleObjects(obs *ObservableStore, alerts *AlertStore, cs *CaseStore, tasks *TaskStore) *RuleObjects {
	return &RuleObjects{colls: map[string]*docstore.Collection{
		"case_artifact": obs.coll, "alert": alerts.coll, "case": cs.cases, "case_task": tasks.tasks}}
}

// maxMatchIDs is the most ids read in one query.
const maxMatchIDs = 500

// Match reads the objects of type objectType with these ids and reports, for each one found, which filters it
// matches (in the filters' order).
func (o *RuleObjects) Match(ctx context.Context, objectType string, ids []string, filters []search.Node) (map[string][]bool, error) {
	coll, ok := o.colls[objectType]
	if !ok {
		return nil, fmt.Errorf("rule objects: no collection for %q", objectType)
	}
	ms := make([]*docstore.Matcher, len(filters))
	for i, f := range filters {
		m, err := coll.Matcher(f)
		if err != nil {
			return nil, fmt.Errorf("rule condition on %s: %w", coll.Name(), err)
		}
		ms[i] = m
	}
	out := make(map[string][]bool, len(ids))
	for len(ids) > 0 {
		part := ids[:min(len(ids), maxMatchIDs)]
		ids = ids[len(part):]
		var docs []json.RawMessage
		if err := coll.Find(ctx, docstore.Query{Filter: docstore.In("_id", part...)}, &docs); err != nil {
			return nil, fmt.Errorf("find in %s: %w", coll.Name(), err)
		}
		for _, raw := range docs {
			doc, err := docstore.DecodeDocument(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", coll.Name(), err)
			}
			id, _ := doc["_id"].(string)
			res := make([]bool, len(ms))
			for i, m := range ms {
				res[i] = m.Match(doc)
			}
			out[id] = res
		}
	}
	return out, nil
}
