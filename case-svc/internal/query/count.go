package query

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/pkg/search"
)

// The query API's counting steps (TheHive 4.1): count… steps that start and end a query with a number,
// limitedCount and aggregation to end one, and myTasks. Numbers come from the database's counts (agg.go).

// kindRecords are the records the counting steps count, by kind of pipeline.
var kindRecords = map[Kind]tally.Record{
	KindCase: tally.RecordCase, KindAlert: tally.RecordAlert, KindObservable: tally.RecordObservable,
	KindTask: tally.RecordTask, KindLog: tally.RecordLog, KindJob: tally.RecordJob,
}

// countStarts are the steps that count records of the caller's organisation: what they count and how
// narrowed. Nothing follows them.
var countStarts = map[string]struct {
	Kind   Kind
	filter func() search.Node
}{
	"countCase":  {KindCase, all},
	"countAlert": {KindAlert, all},
	"countUnreadAlert": {KindAlert, func() search.Node {
		return search.Node{Op: search.OpEq, Path: "read", Value: false}
	}},
	"countImportedAlert": {KindAlert, func() search.Node {
		return search.Node{Op: search.OpEq, Path: "status", Value: cases.AlertImported}
	}},
	// related: alerts attached to a case, read or not (Imported or Updated)
	"countRelatedAlert": {KindAlert, func() search.Node { return search.Node{Op: search.OpExists, Path: cases.PathCaseID} }},
	"countTask":         {KindTask, all},
	"countCaseObservable": {KindObservable, func() search.Node {
		return search.Node{Op: search.OpExists, Path: cases.PathCaseID}
	}},
	"countAlertObservable": {KindObservable, func() search.Node {
		return search.Node{Op: search.OpExists, Path: cases.PathAlertID}
	}},
}

func all() search.Node { return search.Node{Op: search.OpAll} }

// isCountStart reports whether a first step counts (and so ends the query).
func IsCountStart(name string) bool {
	_, ok := countStarts[name]
	return ok
}

// startCounting starts a query with a count… step or myTasks (the tasks assigned to the caller); ok is
// false for other steps.
func startCounting(cl identity.Caller, name string, step map[string]any) (*Pipeline, bool, error) {
	if name == "myTasks" {
		return &Pipeline{Kind: KindTask, Filter: search.Node{Op: search.OpEq, Path: "owner", Value: cl.Login}}, true,
			Params(name, step)
	}
	s, ok := countStarts[name]
	if !ok {
		return nil, false, nil
	}
	return &Pipeline{Kind: s.Kind, Filter: s.filter()}, true, Params(name, step)
}

// endCounting reads limitedCount {threshold} and aggregation {_agg…} into out; ok is false for other steps.
func endCounting(p *Pipeline, out *Output, name string, step map[string]any) (bool, error) {
	switch name {
	case "limitedCount":
		if err := Params(name, step, "threshold"); err != nil {
			return true, err
		}
		out.Count, out.Threshold = true, 10000
		if v, present := step["threshold"]; present && v != nil {
			n, isNum := v.(json.Number)
			i, err := strconv.ParseInt(n.String(), 10, 64)
			if !isNum || err != nil || i <= 0 {
				return true, BadStep(name, "threshold must be a positive integer")
			}
			out.Threshold = i
		}
		return true, nil
	case "aggregation":
		r, ok := kindRecords[p.Kind]
		if !ok {
			return true, BadStep(name, "does not apply to %ss", p.Kind)
		}
		m := make(map[string]any, len(step))
		for k, v := range step {
			if k != "_name" {
				m[k] = v
			}
		}
		budget := MaxAggs
		a, err := ParseAgg(m, tally.RecordFields[r], &budget)
		if err != nil {
			return true, err
		}
		out.Agg = &a
		return true, nil
	}
	return false, nil
}

// Answer is the answer of a query that counts (count…, count, limitedCount: a number) or aggregates (an
// object): counted in the database for the kinds with a record, by the pipeline's total otherwise (similar
// and linked cases, computed in memory).
func (e *Engine) Answer(ctx context.Context, cl identity.Caller, p *Pipeline, out Output) (any, error) {
	r, ok := kindRecords[p.Kind]
	if out.Agg != nil {
		left := MaxQueries
		return e.aggregate(ctx, cl, r, p.Filter, *out.Agg, false, &left)
	}
	total, err := e.countOf(ctx, cl, p, r, ok)
	if err != nil {
		return nil, err
	}
	if out.Threshold > 0 {
		total = min(total, out.Threshold)
	}
	return total, nil
}

func (e *Engine) countOf(ctx context.Context, cl identity.Caller, p *Pipeline, r tally.Record, counted bool) (int64, error) {
	if counted {
		return e.tally.Count(ctx, cl, r, p.Filter)
	}
	_, total, err := e.Run(ctx, cl, p, 0, 0)
	return total, err
}
