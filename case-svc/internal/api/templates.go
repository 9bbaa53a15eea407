package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/web"
)

type templateTaskResponse struct {
	Title       string  `json:"title"`
	Group       string  `json:"group"`
	Description string  `json:"description"`
	Owner       *string `json:"owner"`
	Flag        bool    `json:"flag"`
	Order       int     `json:"order"`
	Status      string  `json:"status"`
}

type templateResponse struct {
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
	Tasks        []templateTaskResponse    `json:"tasks"`
	CustomFields map[string]map[string]any `json:"customFields"`
	Status       string                    `json:"status"`
	Metrics      map[string]any            `json:"metrics"`
}

func templateJSON(t cases.Template) templateResponse {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return templateResponse{Meta: route.MetaOf(t.ID, "caseTemplate", t.Meta), Name: t.Name, DisplayName: t.DisplayName,
		TitlePrefix: t.TitlePrefix, Description: t.Description, Summary: t.Summary, Severity: t.Severity,
		TLP: t.TLP, PAP: t.PAP, Tags: tags, Flag: t.Flag,
		Tasks: route.MapSlice(t.Tasks, func(k cases.TemplateTask) templateTaskResponse {
			return templateTaskResponse{Title: k.Title, Group: k.Group, Description: k.Description,
				Owner: route.NullString(k.Owner), Flag: k.Flag, Order: k.Order, Status: cases.TaskWaiting}
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
	Tasks        web.Opt[[]taskRequest]              `json:"tasks"`
	CustomFields web.Opt[map[string]json.RawMessage] `json:"customFields"`
}

func (r templateRequest) input() (cases.TemplateInput, error) {
	in := cases.TemplateInput{Name: route.Change(r.Name), DisplayName: route.Change(r.DisplayName),
		TitlePrefix: route.Change(r.TitlePrefix), Description: route.Change(r.Description), Summary: route.Change(r.Summary),
		Severity: route.Change(r.Severity), TLP: route.Change(r.TLP), PAP: route.Change(r.PAP), Tags: stringsChange(r.Tags),
		Flag: route.Change(r.Flag)}
	if r.Tasks.Set {
		in.Tasks = record.Change[[]cases.NewTask]{Set: true, V: route.MapSlice(r.Tasks.V, taskRequest.newTask)}
	}
	if r.CustomFields.Set {
		cfs, err := customfields.Inputs(r.CustomFields.V)
		if err != nil {
			return cases.TemplateInput{}, err
		}
		if cfs == nil {
			cfs = map[string]customfield.Input{}
		}
		in.CustomFields = record.Change[map[string]customfield.Input]{Set: true, V: cfs}
	}
	return in, nil
}

func (h *handler) createTemplate(c echo.Context) error {
	var req templateRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := h.svc.CreateTemplate(c.Request().Context(), route.Caller(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, templateJSON(t))
}

func (h *handler) getTemplate(c echo.Context) error {
	t, err := h.svc.Template(c.Request().Context(), route.Caller(c), c.Param("templateId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, templateJSON(t))
}

func (h *handler) listTemplates(c echo.Context) error {
	if err := rewriteTemplateStatus(c); err != nil { // template_status.go
		return err
	}
	f, p, err := web.Search(c, cases.TemplateFields, h.max)
	if err != nil {
		return err
	}
	ts, total, err := h.svc.Templates(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(ts, templateJSON))
}

func (h *handler) updateTemplate(c echo.Context) error {
	var req templateRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := h.svc.UpdateTemplate(c.Request().Context(), route.Caller(c), c.Param("templateId"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, templateJSON(t))
}

func (h *handler) deleteTemplate(c echo.Context) error {
	if err := h.svc.DeleteTemplate(c.Request().Context(), route.Caller(c), c.Param("templateId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
