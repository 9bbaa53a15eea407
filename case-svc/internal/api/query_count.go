package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/search"
)

// The query API's counting steps (TheHive 4.1): count… steps that start and end a query with a number,
// limitedCount and aggregation to end one, and myTasks. Numbers come from the database's counts (stats.go).

// kindRecords are the records the counting steps count, by kind of pipeline.
var kindRecords = map[kind]cases.Record{
	kindCase: cases.RecordCase, kindAlert: cases.RecordAlert, kindObservable: cases.RecordObservable,
	kindTask: cases.RecordTask, kindLog: cases.RecordLog, kindJob: cases.RecordJob,
}

// countStarts are the steps that count records of the caller's organisation: what they count and how
// narrowed. Nothing follows them.
var countStarts = map[string]struct {
	kind   kind
	filter func() search.Node
}{
	"countCase":  {kindCase, all},
	"countAlert": {kindAlert, all},
	"countUnreadAlert": {kindAlert, func() search.Node {
		return search.Node{Op: search.OpEq, Path: "read", Value: false}
	}},
	"countImportedAlert": {kindAlert, func() search.Node {
		return search.Node{Op: search.OpEq, Path: "status", Value: cases.AlertImported}
	}},
	// related: alerts attached to a case, read or not (Imported or Updated)
	"countRelatedAlert": {kindAlert, func() search.Node { return search.Node{Op: search.OpExists, Path: cases.PathCaseID} }},
	"countTask":         {kindTask, all},
	"countCaseObservable": {kindObservable, func() search.Node {
		return search.Node{Op: search.OpExists, Path: cases.PathCaseID}
	}},
	"countAlertObservable": {kindObservable, func() search.Node {
		return search.Node{Op: search.OpExists, Path: cases.PathAlertID}
	}},
}

func all() search.Node { return search.Node{Op: search.OpAll} }

// isCountStart reports whether a first step counts (and so ends the query).
func isCountStart(name string) bool {
	_, ok := countStarts[name]
	return ok
}

// startCounting starts a query with a count… step or myTasks (the tasks assigned to the caller); ok is
// false for other steps.
func startCounting(cl cases.Caller, name string, step map[string]any) (*pipeline, bool, error) {
	if name == "myTasks" {
		return &pipeline{kind: kindTask, filter: search.Node{Op: search.OpEq, Path: "owner", Value: cl.Login}}, true,
			params(name, step)
	}
	s, ok := countStarts[name]
	if !ok {
		return nil, false, nil
	}
	return &pipeline{kind: s.kind, filter: s.filter()}, true, params(name, step)
}

// endCounting reads limitedCount {threshold} and aggregation {_agg…} into out; ok is false for other steps.
func endCounting(p *pipeline, out *output, name string, step map[string]any) (bool, error) {
	switch name {
	case "limitedCount":
		if err := params(name, step, "threshold"); err != nil {
			return true, err
		}
		out.count, out.threshold = true, 10000
		if v, present := step["threshold"]; present && v != nil {
			n, isNum := v.(json.Number)
			i, err := strconv.ParseInt(n.String(), 10, 64)
			if !isNum || err != nil || i <= 0 {
				return true, badStep(name, "threshold must be a positive integer")
			}
			out.threshold = i
		}
		return true, nil
	case "aggregation":
		r, ok := kindRecords[p.kind]
		if !ok {
			return true, badStep(name, "does not apply to %ss", p.kind)
		}
		m := make(map[string]any, len(step))
		for k, v := range step {
			if k != "_name" {
				m[k] = v
			}
		}
		budget := maxAggs
		a, err := parseAgg(m, cases.RecordFields[r], &budget)
		if err != nil {
			return true, err
		}
		out.agg = &a
		return true, nil
	}
	return false, nil
}

// finishCounting writes the answer of a count (count…, count, limitedCount: a number) or an aggregation
// (an object): counted in the database for the kinds with a record, by the pipeline's total otherwise
// (similar and linked cases, computed in memory).
func (h *handler) finishCounting(c echo.Context, cl cases.Caller, p *pipeline, out output) error {
	ctx := c.Request().Context()
	r, ok := kindRecords[p.kind]
	if out.agg != nil {
		left := maxQueries
		res, err := h.aggregate(ctx, cl, r, p.filter, *out.agg, false, &left)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
	total, err := h.countOf(ctx, cl, p, r, ok)
	if err != nil {
		return err
	}
	if out.threshold > 0 {
		total = min(total, out.threshold)
	}
	return c.JSON(http.StatusOK, total)
}

func (h *handler) countOf(ctx context.Context, cl cases.Caller, p *pipeline, r cases.Record, counted bool) (int64, error) {
	if counted {
		return h.svc.Count(ctx, cl, r, p.filter)
	}
	_, total, err := h.run(ctx, cl, p, 0, 0)
	return total, err
}
