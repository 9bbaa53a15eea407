// Package ui serves what TheHive 4.1's web UI reads before it shows anything: the models' descriptions (GET
// /describe/_all, /describe/{model}), the configuration items (GET /config, /config/user/{path},
// /config/organisation/{path}) and the query API's steps on users, organisations, profiles and definitions
// (Query).
package ui

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/accounts"
	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/api/templates"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Handler serves the UI routes.
type Handler struct {
	svc       *cases.Service
	tasks     *task.Service
	templates *template.Service
	ids       *identity.Service
	fields    *customfield.Service
	max       int
}

// New returns the handlers over the domain services; max is the largest page of a search.
func New(svc *cases.Service, tasks *task.Service, templates *template.Service, ids *identity.Service, fields *customfield.Service, max int) *Handler {
	return &Handler{svc: svc, tasks: tasks, templates: templates, ids: ids, fields: fields, max: max}
}

// Routes registers the describe and config routes under one prefix.
func (h *Handler) Routes(a route.Routes) {
	a.GET("/describe/_all", h.describeAll)
	a.GET("/describe/:model", h.describe)
	a.GET("/config", h.listConfig)
	a.GET("/config/user/:path", h.userConfig)
	a.GET("/config/organisation/:path", h.orgConfig)
}

// --- describe ---

// attribute is one described field of a model.
type attribute struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Values      []any    `json:"values"`
	Labels      []string `json:"labels"`
	Description string   `json:"description"`
}

type modelDescription struct {
	Label      string      `json:"label"`
	Attributes []attribute `json:"attributes"`
}

// describedModels are the models described, under their v0 and v1 names, with the fields of their searches.
var describedModels = []struct {
	v0, v1 string
	fields search.Fields
}{
	{"case", "case", cases.CaseFields}, {"case_task", "task", task.Fields},
	{"case_task_log", "log", task.LogFields}, {"alert", "alert", cases.AlertFields},
	{"case_artifact", "observable", cases.ObservableFields}, {"case_artifact_job", "job", connector.JobFields},
	{"caseTemplate", "caseTemplate", template.Fields}, {"customField", "customField", customfield.Fields},
	{"user", "user", identity.UserFields}, {"organisation", "organisation", identity.OrgFields},
	{"profile", "profile", profileFields}, {"observableType", "observableType", observableTypeFields},
}

// profileFields and observableTypeFields: profiles and observable types are fixed lists, found by name.
var (
	profileFields        = search.Fields{"name": {Path: "name"}}
	observableTypeFields = search.Fields{"name": {Path: "name"}}
)

var levels = []any{0, 1, 2, 3}

// describeModel lists a model's fields with their types, the enumerations the UI offers as choices, and one
// attribute per custom field for cases and alerts (customFields.<name>).
func describeModel(label string, fields search.Fields, custom []customfield.Field) modelDescription {
	var out []attribute
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if name == "id" || name == "_id" || strings.HasPrefix(name, "customFields") {
			continue
		}
		a := attribute{Name: name, Type: "string", Values: []any{}, Labels: []string{}}
		switch {
		case strings.HasSuffix(name, "By") || name == "owner" || name == "assignee":
			a.Type = "user"
		case strings.HasSuffix(name, "At") || strings.HasSuffix(name, "Date") || name == "date":
			a.Type = "date"
		case fields[name].Type == search.Number:
			a.Type = "number"
		case fields[name].Type == search.Bool:
			a.Type = "boolean"
		}
		switch name {
		case "tlp", "pap":
			a.Values, a.Labels = levels, []string{"white", "green", "amber", "red"}
		case "severity":
			a.Values, a.Labels = []any{1, 2, 3, 4}, []string{"low", "medium", "high", "critical"}
		case "status":
			if vs := statusValues[label]; vs != nil {
				a.Type, a.Values = "enumeration", vs
			}
		}
		out = append(out, a)
	}
	if label == "case" || label == "alert" || label == "caseTemplate" {
		for _, f := range custom {
			a := attribute{Name: "customFields." + f.Name, Type: string(f.Type), Values: []any{}, Labels: []string{},
				Description: f.Description}
			for _, o := range f.Options {
				a.Values = append(a.Values, o)
				a.Labels = append(a.Labels, fmt.Sprint(o))
			}
			out = append(out, a)
		}
	}
	return modelDescription{Label: label, Attributes: out}
}

// statusValues are the values of each model's status, by v0 and v1 name.
var statusValues = map[string][]any{
	"case":      {cases.CaseOpen, cases.CaseResolved, cases.CaseDuplicated},
	"alert":     {cases.AlertNew, cases.AlertUpdated, cases.AlertIgnored, cases.AlertImported},
	"case_task": {task.Waiting, task.InProgress, task.Completed, task.Cancel},
	"task":      {task.Waiting, task.InProgress, task.Completed, task.Cancel},
}

// descriptions describes every model under its v0 names (/api, /api/v0) or its v1 names (/api/v1).
func (h *Handler) descriptions(c echo.Context) (map[string]modelDescription, error) {
	custom, _, err := h.fields.List(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: h.max})
	if err != nil {
		return nil, err
	}
	v1 := strings.HasPrefix(c.Path(), "/api/v1/")
	out := make(map[string]modelDescription, len(describedModels))
	for _, m := range describedModels {
		name := m.v0
		if v1 {
			name = m.v1
		}
		out[name] = describeModel(name, m.fields, custom)
	}
	return out, nil
}

// describeAll is GET /describe/_all: {model: {label, attributes: [{name, type, values, labels, description}]}}.
func (h *Handler) describeAll(c echo.Context) error {
	d, err := h.descriptions(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// describe is GET /describe/{model}: one model's description; an unknown model is a 404.
func (h *Handler) describe(c echo.Context) error {
	d, err := h.descriptions(c)
	if err != nil {
		return err
	}
	m, ok := d[c.Param("model")]
	if !ok {
		return apperr.Errorf(apperr.NotFound, "Model %s not found", strconv.Quote(query.Shorten(c.Param("model"))))
	}
	return c.JSON(http.StatusOK, m)
}

// --- config ---

// configItem is one configuration item as TheHive's ConfigCtrl writes it.
type configItem struct {
	Path         string `json:"path"`
	Description  string `json:"description,omitempty"`
	DefaultValue any    `json:"defaultValue"`
	Value        any    `json:"value"`
}

var configPathRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// listConfig is GET /config (manageConfig): the service's configuration items that a client may read.
func (h *Handler) listConfig(c echo.Context) error {
	if err := route.Caller(c).Require(identity.ManageConfig); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, []configItem{
		{Path: "search.max", Description: "the most records one list or search answers",
			DefaultValue: 10000, Value: h.max},
	})
}

// userConfig is GET /config/user/{path} and orgConfig GET /config/organisation/{path}: TheHive's UI reads
// its preferences there. No preference is stored here (the PUT routes are not served): every item answers
// its default, the empty string, as TheHive answers an item never set.
func (h *Handler) userConfig(c echo.Context) error { return h.preference(c) }

func (h *Handler) orgConfig(c echo.Context) error { return h.preference(c) }

func (h *Handler) preference(c echo.Context) error {
	path := c.Param("path")
	if !configPathRe.MatchString(path) {
		return apperr.New(apperr.BadRequest, "path must be a dotted name such as ui.theme")
	}
	return c.JSON(http.StatusOK, configItem{Path: path, DefaultValue: "", Value: ""})
}

// --- the query API on users, organisations, profiles and definitions ---

// uiStarts start a query of their own (Query): users, organisations, profiles, custom fields, case
// templates and observable types are not records of the case pipeline.
var uiStarts = []string{"currentUser", "listUser", "listOrganisation", "getOrganisation", "listCustomField",
	"listCaseTemplate", "listProfile", "listObservableType"}

// IsQuery reports whether a query starts with one of uiStarts, or moves to users (getCase… then
// assignableUsers).
func IsQuery(raw []any) bool {
	for i, r := range raw {
		step, _ := r.(map[string]any)
		name, _ := step["_name"].(string)
		if (i == 0 && slices.Contains(uiStarts, name)) || name == "assignableUsers" {
			return true
		}
	}
	return false
}

// uiPipeline is the state of such a query: what it lists, narrowed and ordered.
type uiPipeline struct {
	what   string // user, organisation, customField, caseTemplate, profile, observableType, or record (a get… step)
	filter search.Node
	sort   []search.SortKey
}

var uiFields = map[string]search.Fields{"user": identity.UserFields, "organisation": identity.OrgFields,
	"customField": customfield.Fields, "caseTemplate": template.Fields, "profile": profileFields,
	"observableType": observableTypeFields}

func (h *Handler) Query(c echo.Context, raw []any, v1 bool) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	var p *uiPipeline
	var out query.Output
	for i, r := range raw {
		step, ok := r.(map[string]any)
		if !ok {
			return apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
		}
		name, _ := step["_name"].(string)
		if name == "" {
			return apperr.Errorf(apperr.BadRequest, "query step %d has no _name", i+1)
		}
		if out.Page || out.Count {
			return query.BadStep(name, "nothing may follow page or count")
		}
		var err error
		if p == nil {
			p, err = h.uiStart(ctx, cl, name, step)
		} else {
			err = h.uiNext(ctx, cl, p, &out, name, step)
		}
		if err != nil {
			return err
		}
	}
	if p.what == "record" {
		return query.BadStep("assignableUsers", "ends a query that starts with getCase, getTask or getAlert")
	}
	if out.Count {
		_, total, err := h.uiRun(ctx, cl, p, search.Page{Limit: 1})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, total)
	}
	pg := search.Page{Limit: h.max, Sort: p.sort}
	if out.Page {
		pg.Offset, pg.Limit = out.From, out.To-out.From
	}
	items, total, err := h.uiRun(ctx, cl, p, pg)
	if err != nil {
		return err
	}
	if out.Page && (!v1 || slices.Contains(out.ExtraData, "total")) {
		c.Response().Header().Set("X-Total", strconv.FormatInt(total, 10))
	}
	if v1 {
		for i, it := range items {
			m, err := route.ToMap(it)
			if err != nil {
				return err
			}
			for _, k := range []string{"createdBy", "createdAt", "updatedBy", "updatedAt"} {
				if x, ok := m[k]; ok {
					m["_"+k] = x
				}
			}
			items[i] = m
		}
	}
	return c.JSON(http.StatusOK, items)
}

func (h *Handler) uiStart(ctx context.Context, cl identity.Caller, name string, step map[string]any) (*uiPipeline, error) {
	everything := search.Node{Op: search.OpAll}
	lists := map[string]string{"listUser": "user", "listOrganisation": "organisation", "listCustomField": "customField",
		"listCaseTemplate": "caseTemplate", "listProfile": "profile", "listObservableType": "observableType"}
	if what, ok := lists[name]; ok {
		return &uiPipeline{what: what, filter: everything}, query.Params(name, step)
	}
	switch name {
	case "currentUser":
		return &uiPipeline{what: "user", filter: search.Node{Op: search.OpEq, Path: "_id", Value: cl.Login}}, query.Params(name, step)
	case "getOrganisation", "getCase", "getTask", "getAlert":
		if err := query.Params(name, step, "idOrName"); err != nil {
			return nil, err
		}
		id, _ := step["idOrName"].(string)
		if id == "" {
			return nil, query.BadStep(name, "idOrName must be a non-empty string")
		}
		var err error
		switch name {
		case "getOrganisation":
			var o identity.Organisation
			if o, err = h.ids.Org(ctx, cl, id); err == nil {
				return &uiPipeline{what: "organisation", filter: search.Node{Op: search.OpEq, Path: "_id", Value: o.Name}}, nil
			}
		case "getCase":
			_, err = h.svc.Case(ctx, cl, id)
		case "getTask":
			_, err = h.tasks.Task(ctx, cl, id)
		case "getAlert":
			_, err = h.svc.Alert(ctx, cl, id)
		}
		if err != nil {
			return nil, err
		}
		return &uiPipeline{what: "record"}, nil
	}
	return nil, query.BadStep(name, "does not start this query")
}

func (h *Handler) uiNext(ctx context.Context, cl identity.Caller, p *uiPipeline, out *query.Output, name string, step map[string]any) error {
	switch name {
	case "assignableUsers":
		if err := query.Params(name, step); err != nil {
			return err
		}
		if p.what != "record" {
			return query.BadStep(name, "follows getCase, getTask or getAlert")
		}
		// the users who may be given the record: the unlocked users of the caller's organisation
		*p = uiPipeline{what: "user", filter: search.Node{Op: search.OpAnd, Children: []search.Node{
			{Op: search.OpEq, Path: identity.PathUserOrgs, Value: cl.Org}, {Op: search.OpEq, Path: "locked", Value: false}}}}
		return nil
	case "users":
		if err := query.Params(name, step); err != nil {
			return err
		}
		if p.what != "organisation" {
			return query.BadStep(name, "follows organisations, not %ss", p.what)
		}
		orgs, _, err := h.ids.Orgs(ctx, cl, p.filter, search.Page{Limit: h.max})
		if err != nil {
			return err
		}
		names := make([]any, len(orgs))
		for i, o := range orgs {
			names[i] = o.Name
		}
		*p = uiPipeline{what: "user", filter: search.Node{Op: search.OpIn, Path: identity.PathUserOrgs, Values: names}}
		return nil
	}
	if p.what == "record" {
		return query.BadStep(name, "only assignableUsers follows getCase, getTask or getAlert here")
	}
	switch name {
	case "filter":
		q := make(map[string]any, len(step))
		for k, v := range step {
			if k != "_name" {
				q[k] = v
			}
		}
		n, err := query.ParseFilter(name, q, uiFields[p.what])
		if err != nil {
			return err
		}
		p.filter = search.Node{Op: search.OpAnd, Children: []search.Node{p.filter, n}}
		return nil
	case "sort":
		if err := query.Params(name, step, "_fields"); err != nil {
			return err
		}
		specs, err := query.SortSpecs(name, step["_fields"])
		if err != nil {
			return err
		}
		if p.sort, err = search.ParseSort(specs, uiFields[p.what]); err != nil {
			return query.BadStep(name, "%s", query.MessageOf(err))
		}
		return nil
	case "page":
		if err := query.Params(name, step, "from", "to", "extraData"); err != nil {
			return err
		}
		return out.SetPage(name, step, h.max)
	case "count":
		out.Count = true
		return query.Params(name, step)
	}
	return query.BadStep(name, "does not apply to %ss", p.what)
}

// uiRun reads a page of what the pipeline lists, rendered, and the total.
func (h *Handler) uiRun(ctx context.Context, cl identity.Caller, p *uiPipeline, pg search.Page) ([]any, int64, error) {
	switch p.what {
	case "user":
		us, total, err := h.ids.Users(ctx, cl, p.filter, pg)
		return route.MapSlice(us, func(u identity.User) any { return accounts.UserJSON(u, cl.Org) }), total, err
	case "organisation":
		os, total, err := h.ids.Orgs(ctx, cl, p.filter, pg)
		return route.MapSlice(os, func(o identity.Organisation) any { return accounts.OrgJSON(o) }), total, err
	case "customField":
		fs, total, err := h.fields.List(ctx, cl, p.filter, pg)
		return route.MapSlice(fs, func(f customfield.Field) any { return customfields.FieldJSON(f) }), total, err
	case "caseTemplate":
		ts, total, err := h.templates.List(ctx, cl, p.filter, pg)
		return route.MapSlice(ts, func(t template.Template) any { return templates.JSON(t) }), total, err
	}
	// profiles and observable types: fixed lists, narrowed by name
	want, filtered, err := route.NamesIn(p.filter)
	if err != nil {
		return nil, 0, err
	}
	var l []any
	if p.what == "profile" {
		for _, pr := range identity.Profiles() {
			if !filtered || slices.Contains(want, pr.Name) {
				l = append(l, accounts.ProfileJSON(pr))
			}
		}
	} else {
		for _, t := range cases.ObservableTypes() {
			if !filtered || slices.Contains(want, t) {
				l = append(l, observableTypeJSON(t))
			}
		}
	}
	if len(pg.Sort) > 0 && pg.Sort[0].Desc {
		slices.Reverse(l)
	}
	from := min(pg.Offset, len(l))
	to := min(from+pg.Limit, len(l))
	return l[from:to], int64(len(l)), nil
}

// observableTypeResponse is an observable type (the reference system's ObservableType).
type observableTypeResponse struct {
	route.Meta
	Name         string `json:"name"`
	IsAttachment bool   `json:"isAttachment"`
}

func observableTypeJSON(name string) observableTypeResponse {
	return observableTypeResponse{Meta: route.MetaOf("~"+name, "observableType", record.Meta{CreatedBy: "system"}),
		Name: name, IsAttachment: name == cases.DataTypeFile}
}
