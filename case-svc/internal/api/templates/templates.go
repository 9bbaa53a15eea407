// Package templates serves the case templates of an organisation (/api/case/template) and renders them
// (JSON, which the audit trail and the UI routes use too).
package templates

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/web"
)

// Handler serves the case template routes.
type Handler struct {
	svc *template.Service
	max int
}

// New returns the handlers over the case template service; max is the largest page of a search.
func New(svc *template.Service, max int) *Handler { return &Handler{svc: svc, max: max} }

// TaskResponse is a template's task as the API renders it.
type TaskResponse struct {
	Title       string  `json:"title"`
	Group       string  `json:"group"`
	Description string  `json:"description"`
	Owner       *string `json:"owner"`
	Flag        bool    `json:"flag"`
	Order       int     `json:"order"`
	Status      string  `json:"status"`
}

// Response is a case template as the API renders it.
type Response struct {
	route.Meta
	Name         string                    `json:"name"`
	DisplayName  string                    `json:"displayName"`
	TitlePrefix  string                    `json:"titlePrefix"`
	Description  string                    `json:"description"`
	Summary      string                    `json:"summary"`
	Severity     *int                      `json:"severity"`
	TLP          *int                      `json:"tlp"`
	PAP          *int                      `json:"pap"`
	Tags         []string                  `json:"tags"`
	Flag         bool                      `json:"flag"`
	Tasks        []TaskResponse            `json:"tasks"`
	CustomFields map[string]map[string]any `json:"customFields"`
	Status       string                    `json:"status"`
	Metrics      map[string]any            `json:"metrics"`
}

// JSON renders a case template.
func JSON(t template.Template) Response {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return Response{Meta: route.MetaOf(t.ID, "caseTemplate", t.Meta), Name: t.Name, DisplayName: t.DisplayName,
		TitlePrefix: t.TitlePrefix, Description: t.Description, Summary: t.Summary, Severity: t.Severity,
		TLP: t.TLP, PAP: t.PAP, Tags: tags, Flag: t.Flag,
		Tasks: route.MapSlice(t.Tasks, func(k template.Task) TaskResponse {
			return TaskResponse{Title: k.Title, Group: k.Group, Description: k.Description,
				Owner: route.NullString(k.Owner), Flag: k.Flag, Order: k.Order, Status: task.Waiting}
		}),
		CustomFields: customfields.ValuesJSON(t.CustomFields), Status: templateStatus, Metrics: map[string]any{}}
}

// templateRequest is a template's fields, for create and PATCH alike.
type templateRequest struct {
	Name         web.Opt[string]                     `json:"name"`
	DisplayName  web.Opt[string]                     `json:"displayName"`
	TitlePrefix  web.Opt[string]                     `json:"titlePrefix"`
	Description  web.Opt[string]                     `json:"description"`
	Summary      web.Opt[string]                     `json:"summary"`
	Severity     web.Opt[int]                        `json:"severity"`
	TLP          web.Opt[int]                        `json:"tlp"`
	PAP          web.Opt[int]                        `json:"pap"`
	Tags         web.Opt[web.Strings]                `json:"tags"`
	Flag         web.Opt[bool]                       `json:"flag"`
	Tasks        web.Opt[[]route.TaskRequest]        `json:"tasks"`
	CustomFields web.Opt[map[string]json.RawMessage] `json:"customFields"`
}

func (r templateRequest) input() (template.Input, error) {
	in := template.Input{Name: route.Change(r.Name), DisplayName: route.Change(r.DisplayName),
		TitlePrefix: route.Change(r.TitlePrefix), Description: route.Change(r.Description), Summary: route.Change(r.Summary),
		Severity: route.Change(r.Severity), TLP: route.Change(r.TLP), PAP: route.Change(r.PAP), Tags: route.StringsChange(r.Tags),
		Flag: route.Change(r.Flag)}
	if r.Tasks.Set {
		in.Tasks = record.Change[[]task.Input]{Set: true, V: route.MapSlice(r.Tasks.V, route.TaskRequest.Input)}
	}
	if r.CustomFields.Set {
		cfs, err := customfields.Inputs(r.CustomFields.V)
		if err != nil {
			return template.Input{}, err
		}
		if cfs == nil {
			cfs = map[string]customfield.Input{}
		}
		in.CustomFields = record.Change[map[string]customfield.Input]{Set: true, V: cfs}
	}
	return in, nil
}

// Create is POST /case/template.
func (h *Handler) Create(c echo.Context) error {
	var req templateRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := h.svc.Create(c.Request().Context(), route.Caller(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, JSON(t))
}

// Get is GET /case/template/{id} (id or name).
func (h *Handler) Get(c echo.Context) error {
	t, err := h.svc.Template(c.Request().Context(), route.Caller(c), c.Param("templateId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JSON(t))
}

// List is GET /case/template and POST /case/template/_search.
func (h *Handler) List(c echo.Context) error {
	if err := rewriteTemplateStatus(c); err != nil { // template_status.go
		return err
	}
	f, p, err := web.Search(c, template.Fields, h.max)
	if err != nil {
		return err
	}
	ts, total, err := h.svc.List(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(ts, JSON))
}

// Update is PATCH /case/template/{id}.
func (h *Handler) Update(c echo.Context) error {
	var req templateRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := h.svc.Update(c.Request().Context(), route.Caller(c), c.Param("templateId"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JSON(t))
}

// Delete is DELETE /case/template/{id}.
func (h *Handler) Delete(c echo.Context) error {
	if err := h.svc.Delete(c.Request().Context(), route.Caller(c), c.Param("templateId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// templateStatus is the status every case template shows (TheHive 3's templates had one; TheHive 4 answers it).
const templateStatus = "Ok"

// rewriteTemplateStatus gives case template searches the `status` that every template shows as "Ok": thehive4py
// 1.8 (get_case_template, with its default version THEHIVE_3) searches {"_and": [{name}, {"_field": "status",
// "_value": "Ok"}]}. A status term becomes {} (every template) for "Ok" and {"_not": {}} (none) for another
// value, in the forms {"_field": "status", "_value": v} and {"status": v}, anywhere in the query.
func rewriteTemplateStatus(c echo.Context) error {
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
	out, err := query.WalkFilter(q, templateStatusTerm)
	if err != nil {
		return err
	}
	f["query"] = out
	return nil
}

// templateStatusTerm is WalkFilter's rewrite of a status term (rewriteTemplateStatus).
func templateStatusTerm(v map[string]any, _ func(any) (any, error)) (any, bool, error) {
	var status any
	switch {
	case len(v) == 2 && v["_field"] == "status":
		status = v["_value"]
	case len(v) == 1 && v["status"] != nil:
		status = v["status"]
	}
	switch {
	case status == nil:
		return nil, false, nil
	case status == templateStatus:
		return map[string]any{}, true, nil
	default:
		return map[string]any{"_not": map[string]any{}}, true, nil
	}
}
