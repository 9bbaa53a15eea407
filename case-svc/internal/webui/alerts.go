package webui

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

var alertSorts = map[string]bool{"date": true, "title": true, "severity": true, "source": true, "type": true, "status": true}

type alertListPage struct {
	webui.Page
	View     webui.List
	Alerts   []cases.Alert
	CanWrite bool
	Quick    []webui.Link
}

func (h *Handler) alertList(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	v, sort, err := webui.ParseList(c.QueryParams(), "-date", alertSorts)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	parts, err := statusSeverity(q)
	if err != nil {
		return err
	}
	for _, k := range []string{"source", "type", "tags"} {
		if s := q.Get(k); s != "" {
			parts = append(parts, eq(k, s))
		}
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		parts = append(parts, search.Node{Op: search.OpLike, Path: "title", Value: s})
	}
	free, err := parseStringFilter(q.Get("filter"), cases.AlertFields)
	if err != nil {
		return err
	}
	list, total, err := h.s.Cases.Alerts(ctx, cl, and(append(parts, free)...), search.Page{Offset: v.Offset, Limit: v.Size, Sort: sort})
	if err != nil {
		return err
	}
	v.SetTotal(total)
	p := alertListPage{Page: h.base(c, "Alerts"), View: v, Alerts: list, CanWrite: cl.Can(identity.ManageAlert)}
	p.Current = "Alerts"
	p.Quick = []webui.Link{{Name: "New", Href: "?status=New"}, {Name: "Updated", Href: "?status=Updated"},
		{Name: "Ignored", Href: "?status=Ignored"}, {Name: "Imported", Href: "?status=Imported"}, {Name: "All", Href: "?"}}
	return h.pages.Render(c, http.StatusOK, "alerts", "", p)
}

type alertPage struct {
	webui.Page
	Alert       cases.Alert
	Observables []cases.Observable
	Similar     []cases.SimilarCase
	Templates   []template.Template
	CanWrite    bool
}

func (h *Handler) alertPage(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	a, err := h.s.Cases.Alert(ctx, cl, web.Param(c, "alertId"))
	if err != nil {
		return err
	}
	p := alertPage{Page: h.base(c, a.Title), Alert: a, CanWrite: cl.Can(identity.ManageAlert)}
	p.Current = "Alerts"
	if p.Observables, err = h.s.Cases.AlertObservables(ctx, a); err != nil {
		return err
	}
	if p.Similar, err = h.s.Cases.SimilarCases(ctx, cl, a, search.Node{Op: search.OpAll}); err != nil {
		return err
	}
	if p.CanWrite {
		if p.Templates, _, err = h.s.Templates.List(ctx, cl, search.Node{Op: search.OpAll}, search.Page{Limit: 100,
			Sort: []search.SortKey{{Path: "name"}}}); err != nil {
			return err
		}
	}
	return h.pages.Render(c, http.StatusOK, "alert", "", p)
}

// taskQueuePage is "my tasks" (assigned to the caller, open) or "waiting tasks" (of the organisation).
type taskQueuePage struct {
	webui.Page
	Mine  bool
	View  webui.List
	Tasks []task.Task
	Cases map[string]cases.Case
}

func (h *Handler) taskQueue(mine bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		cl := route.Caller(c)
		v, sort, err := webui.ParseList(c.QueryParams(), "-flag", map[string]bool{"flag": true, "startDate": true, "title": true, "status": true, "createdAt": true})
		if err != nil {
			return err
		}
		f := eq("status", task.Waiting)
		title := "Waiting tasks"
		if mine {
			f, title = and(eq("owner", cl.Login), in("status", task.Waiting, task.InProgress)), "My tasks"
		}
		sort = append(sort, search.SortKey{Path: "createdAt", Desc: true})
		list, total, err := h.s.Tasks.List(ctx, cl, "", f, search.Page{Offset: v.Offset, Limit: v.Size, Sort: sort})
		if err != nil {
			return err
		}
		v.SetTotal(total)
		p := taskQueuePage{Page: h.base(c, title), Mine: mine, View: v, Tasks: list, Cases: map[string]cases.Case{}}
		p.Current = title
		for _, t := range list {
			if _, ok := p.Cases[t.CaseID]; ok {
				continue
			}
			if cs, err := h.s.Cases.Case(ctx, cl, t.CaseID); err == nil {
				p.Cases[t.CaseID] = cs
			}
		}
		return h.pages.Render(c, http.StatusOK, "tasks", "", p)
	}
}

// observablePage is one observable: its properties, its analyzers' jobs with their reports, the same value
// in other cases.
type observablePage struct {
	webui.Page
	Observable cases.Observable
	Case       cases.Case
	Jobs       []connector.Job
	Similar    []cases.SimilarObservable
	Can        perms
	Responders respondersView
}

func (h *Handler) observablePage(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	o, err := h.s.Cases.Observable(ctx, cl, web.Param(c, "observableId"))
	if err != nil {
		return err
	}
	title := o.Data
	if o.Attachment != nil {
		title = o.Attachment.Name
	}
	p := observablePage{Page: h.base(c, o.DataType+" "+title), Observable: o, Can: permsOf(cl)}
	p.Current = "Cases"
	if o.CaseID != "" {
		if p.Case, err = h.s.Cases.Case(ctx, cl, o.CaseID); err != nil {
			return err
		}
		if p.Similar, err = h.s.Cases.ObservableSimilar(ctx, cl, o.ID); err != nil {
			return err
		}
	}
	root := o.CaseID
	if root == "" {
		root = o.AlertID
	}
	if p.Responders, err = h.responders(ctx, cl, "case_artifact", o.ID, root, true); err != nil {
		return err
	}
	if h.s.Connector != nil && p.Can.Analyse {
		if p.Jobs, _, err = h.s.Connector.Jobs(ctx, cl, eq(connector.PathObservableID, o.ID),
			search.Page{Limit: 200, Sort: []search.SortKey{{Path: "startDate", Desc: true}}}); err != nil {
			return err
		}
	}
	return h.pages.Render(c, http.StatusOK, "observable", "", p)
}
