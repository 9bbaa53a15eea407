package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/analyses"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/api/trail"
	"github.com/openir/platform/case-svc/internal/api/ui"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// The query API (POST /api/v0/query and /api/v1/query, `?name=` is only a label): the body's steps run by
// the interpreter of package query (queries of records), events.go (audit events) or ui.go (users,
// organisations, profiles, definitions); this file writes the records of a query of records as JSON.

// queries is the query interpreter on the handler's services.
func (h *handler) queries() *query.Engine {
	return query.New(h.svc, h.taskSvc, h.analyses, h.tally, h.max)
}

func (h *handler) query(v1 bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		f, err := web.Fields(c)
		if err != nil {
			return err
		}
		raw, ok := f["query"].([]any)
		if !ok {
			return apperr.New(apperr.BadRequest, `the body must be {"query": [step, ...]}`)
		}
		if len(raw) == 0 {
			return apperr.New(apperr.BadRequest, "the query has no step")
		}
		if len(raw) > 64 {
			return apperr.New(apperr.BadRequest, "the query has more than 64 steps")
		}
		if trail.IsQuery(raw) && h.events != nil {
			steps := make([]map[string]any, len(raw))
			for i, r := range raw {
				if steps[i], ok = r.(map[string]any); !ok {
					return apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
				}
			}
			return h.trail.Query(c, steps, v1) // trail/
		}
		if ui.IsQuery(raw) {
			return h.ui.Query(c, raw, v1) // users, organisations, profiles, definitions: ui/
		}
		cl := route.Caller(c)
		p, out, err := h.queries().Build(c.Request().Context(), cl, raw)
		if err != nil {
			return err
		}
		return h.finish(c, cl, p, out, v1)
	}
}

// finish runs the pipeline and writes its output: a number for count, an object for an aggregation, else an
// array (X-Total for a v0 page, and for a v1 page whose extraData names "total").
func (h *handler) finish(c echo.Context, cl identity.Caller, p *query.Pipeline, out query.Output, v1 bool) error {
	ctx := c.Request().Context()
	q := h.queries()
	if out.Count || out.Agg != nil {
		res, err := q.Answer(ctx, cl, p, out)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
	from, limit := 0, h.max
	if out.Page {
		from, limit = out.From, out.To-out.From
	}
	var items []any
	var total int64
	if limit > 0 {
		var err error
		if items, total, err = q.Run(ctx, cl, p, from, limit); err != nil {
			return err
		}
	} else {
		_, t, err := q.Run(ctx, cl, p, 0, 0)
		if err != nil {
			return err
		}
		total = t
	}
	extras := slices.DeleteFunc(slices.Clone(out.ExtraData), func(s string) bool { return s == "total" })
	for _, e := range extras {
		if !slices.Contains(extraNames[p.Kind], e) {
			return query.BadStep("page", "unknown extraData %s for %ss (known: %s)", strconv.Quote(query.Shorten(e)), p.Kind,
				strings.Join(append([]string{"total"}, extraNames[p.Kind]...), ", "))
		}
	}
	if err := boundExtraData(len(items), extras); err != nil {
		return err
	}
	rendered := make([]any, 0, len(items))
	for _, it := range items {
		r, err := h.render(ctx, cl, it, v1, extras)
		if err != nil {
			return err
		}
		rendered = append(rendered, r)
	}
	if out.Page && (!v1 || slices.Contains(out.ExtraData, "total")) {
		c.Response().Header().Set("X-Total", strconv.FormatInt(total, 10))
	}
	return c.JSON(http.StatusOK, rendered)
}

// extraNames are the extraData a page may ask for, by kind (besides "total").
var extraNames = map[query.Kind][]string{
	query.KindCase:       {"taskStats", "observableStats", "alerts", "isOwner", "shareCount", "permissions", "actionRequired"},
	query.KindAlert:      {"caseNumber", "similarCases"},
	query.KindTask:       {"case", "caseId", "isOwner", "shareCount", "actionRequired"},
	query.KindObservable: {"seen", "permissions", "isOwner", "shareCount"},
	query.KindLog:        {"case", "task", "taskId", "actionCount"},
}

// render writes one record as its v0 JSON; v1 adds the bookkeeping fields under their v1 names (_createdBy,
// _createdAt, _updatedBy, _updatedAt); extraData, when asked, is an object of the named values.
func (h *handler) render(ctx context.Context, cl identity.Caller, it any, v1 bool, extras []string) (any, error) {
	var v any
	switch x := it.(type) {
	case cases.Case:
		v = h.caseJSON(cl, x, nil)
	case cases.Alert:
		r, err := h.alertWithArtifacts(ctx, x)
		if err != nil {
			return nil, err
		}
		v = r
	case cases.Observable:
		v = observableJSON(x)
	case task.Task:
		v = taskJSON(x)
	case task.Log:
		v = logJSON(x)
	case connector.Job:
		v = analyses.JobJSON(x)
	case connector.Action:
		v = analyses.ActionJSON(x)
	case cases.SimilarCase:
		return h.similarJSON(cl, x, false), nil
	case cases.LinkedCase:
		v = h.linkedJSON(cl, x)
	}
	if !v1 && len(extras) == 0 {
		return v, nil
	}
	m, err := route.ToMap(v)
	if err != nil {
		return nil, err
	}
	if v1 {
		for _, k := range []string{"createdBy", "createdAt", "updatedBy", "updatedAt"} {
			if x, ok := m[k]; ok {
				m["_"+k] = x
			}
		}
	}
	if len(extras) > 0 {
		ed := map[string]any{}
		for _, e := range extras {
			x, err := h.extra(ctx, cl, it, e)
			if err != nil {
				return nil, err
			}
			ed[e] = x
		}
		m["extraData"] = ed
	}
	return m, nil
}

// extra computes one extraData value of a record.
func (h *handler) extra(ctx context.Context, cl identity.Caller, it any, name string) (any, error) {
	switch x := it.(type) {
	case cases.Case:
		switch name {
		case "taskStats", "observableStats", "alerts":
			st, err := h.svc.Stats(ctx, cl, x)
			if err != nil {
				return nil, err
			}
			switch name {
			case "taskStats":
				tasks := map[string]int64{"total": 0}
				for k, n := range st.Tasks {
					tasks[k] = n
					tasks["total"] += n
				}
				return tasks, nil
			case "observableStats":
				return map[string]int64{"total": st.Observables}, nil
			}
			return route.MapSlice(st.Alerts, func(a cases.Alert) any { return alertJSON(a, nil) }), nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		case "permissions":
			return h.svc.Permissions(cl, x), nil
		case "actionRequired":
			return false, nil
		}
	case cases.Alert:
		switch name {
		case "caseNumber":
			if n, err := strconv.ParseInt(strings.TrimPrefix(x.CaseID, "~"), 10, 64); err == nil {
				return n, nil
			}
			return nil, nil
		case "similarCases":
			scs, err := h.svc.SimilarCases(ctx, cl, x, search.Node{Op: search.OpAll})
			if err != nil {
				return nil, err
			}
			return route.MapSlice(scs, func(sc cases.SimilarCase) similarCaseResponse { return h.similarJSON(cl, sc, false) }), nil
		}
	case task.Task:
		switch name {
		case "case":
			cs, err := h.svc.Case(ctx, cl, x.CaseID)
			if err != nil {
				return nil, err
			}
			return h.caseJSON(cl, cs, nil), nil
		case "caseId":
			n, _ := strconv.ParseInt(strings.TrimPrefix(x.CaseID, "~"), 10, 64)
			return n, nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		case "actionRequired":
			return false, nil
		}
	case cases.Observable:
		switch name {
		case "seen":
			n, err := h.svc.Seen(ctx, cl, x)
			return n, err
		case "permissions":
			return h.svc.Permissions(cl, cases.Case{}), nil
		case "isOwner":
			return true, nil
		case "shareCount":
			return 0, nil
		}
	case task.Log:
		switch name {
		case "case":
			cs, err := h.svc.Case(ctx, cl, x.CaseID)
			if err != nil {
				return nil, err
			}
			return h.caseJSON(cl, cs, nil), nil
		case "task":
			t, err := h.taskSvc.Task(ctx, cl, x.TaskID)
			if err != nil {
				return nil, err
			}
			return taskJSON(t), nil
		case "taskId":
			return x.TaskID, nil
		case "actionCount":
			return 0, nil
		}
	}
	return nil, nil
}
