package api

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// rewriteChildQuery brings the reference system's _child operator into a case search's `query`:
// {_child: {_type: "case_task"|"case_artifact", _query: Q}} becomes {_in: {_field: "_id", _values: [the
// organisation's cases having such a task or observable]}}. The children are found first (Q in the task or
// observable search language, the organisation's only, at most search.max: more is a 400 asking for a
// narrower query), then the cases by id.
func (h *handler) rewriteChildQuery(c echo.Context) error {
	f, err := web.Fields(c)
	if err != nil {
		return err
	}
	q, ok := f["query"]
	if !ok {
		return nil
	}
	if s, isString := q.(string); isString {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return nil // web.Search reports it
		}
		q = v
	}
	out, err := h.childFilter(c.Request().Context(), route.Caller(c), q, 0)
	if err != nil {
		return err
	}
	f["query"] = out
	return nil
}

func (h *handler) childFilter(ctx context.Context, cl identity.Caller, q any, depth int) (any, error) {
	if depth > 64 {
		return nil, apperr.New(apperr.BadRequest, "query is nested too deeply")
	}
	switch v := q.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := h.childFilter(ctx, cl, x, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case map[string]any:
		if ch, ok := v["_child"]; ok && len(v) == 1 {
			return h.childCases(ctx, cl, ch)
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := h.childFilter(ctx, cl, x, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	}
	return q, nil
}

func (h *handler) childCases(ctx context.Context, cl identity.Caller, ch any) (any, error) {
	bad := apperr.New(apperr.BadRequest, `_child supports {"_type": "case_task" or "case_artifact", "_query": {...}}`)
	m, ok := ch.(map[string]any)
	if !ok {
		return nil, bad
	}
	typ, _ := m["_type"].(string)
	fields := map[string]search.Fields{"case_task": task.Fields, "case_artifact": cases.ObservableFields}[typ]
	if fields == nil {
		return nil, bad
	}
	raw, err := query.RewriteFilter(m["_query"]) // _parent, _is, _ne inside
	if err != nil {
		return nil, err
	}
	n, err := search.Parse(raw, fields)
	if err != nil {
		return nil, err
	}
	pg := search.Page{Limit: h.max}
	var parents []string
	var total int64
	if typ == "case_task" {
		var ts []task.Task
		ts, total, err = h.taskSvc.List(ctx, cl, "", n, pg)
		for _, t := range ts {
			parents = append(parents, t.CaseID)
		}
	} else {
		var os []cases.Observable
		os, total, err = h.svc.Observables(ctx, cl, cases.Parent{}, n, pg)
		for _, o := range os {
			parents = append(parents, o.CaseID)
		}
	}
	if err != nil {
		return nil, err
	}
	if total > int64(h.max) {
		return nil, apperr.Errorf(apperr.BadRequest, "_child matches %d records, more than %d: narrow its _query", total, h.max)
	}
	ids := []any{}
	for _, id := range parents {
		if id != "" && !slices.Contains(ids, any(id)) {
			ids = append(ids, id)
		}
	}
	return map[string]any{"_in": map[string]any{"_field": "_id", "_values": ids}}, nil
}
