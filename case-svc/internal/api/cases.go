package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/web"
)

type caseResponse struct {
	route.Meta
	CaseID           int64                     `json:"caseId"`
	Title            string                    `json:"title"`
	Description      string                    `json:"description"`
	Severity         int                       `json:"severity"`
	StartDate        int64                     `json:"startDate"`
	EndDate          *int64                    `json:"endDate"`
	ImpactStatus     *string                   `json:"impactStatus"`
	ResolutionStatus *string                   `json:"resolutionStatus"`
	Tags             []string                  `json:"tags"`
	Flag             bool                      `json:"flag"`
	TLP              int                       `json:"tlp"`
	PAP              int                       `json:"pap"`
	Status           string                    `json:"status"`
	Summary          *string                   `json:"summary"`
	Owner            *string                   `json:"owner"`
	CustomFields     map[string]map[string]any `json:"customFields"`
	Stats            any                       `json:"stats"`
	Permissions      []identity.Permission     `json:"permissions"`
}

// statsResponse is the reference system's case stats (v0, nstats=true).
type statsResponse struct {
	Tasks      map[string]int64 `json:"tasks"`
	Artifacts  map[string]int64 `json:"artifacts"`
	Alerts     []any            `json:"alerts"`
	MergeFrom  any              `json:"mergeFrom"`
	MergeInto  any              `json:"mergeInto"`
	IsOwner    bool             `json:"isOwner"`
	ShareCount int              `json:"shareCount"`
}

func (h *handler) caseJSON(cl identity.Caller, cs cases.Case, stats any) caseResponse {
	tags := cs.Tags
	if tags == nil {
		tags = []string{}
	}
	if stats == nil {
		stats = map[string]any{}
	}
	return caseResponse{Meta: route.MetaOf(cs.ID, "case", cs.Meta), CaseID: cs.Number, Title: cs.Title,
		Description: cs.Description, Severity: cs.Severity, StartDate: route.Millis(cs.StartDate),
		EndDate: route.NullMillis(cs.EndDate), ImpactStatus: route.NullString(cs.ImpactStatus),
		ResolutionStatus: route.NullString(cs.ResolutionStatus), Tags: tags, Flag: cs.Flag, TLP: cs.TLP, PAP: cs.PAP,
		Status: cs.Status, Summary: route.NullString(cs.Summary), Owner: route.NullString(cs.Owner),
		CustomFields: customfields.ValuesJSON(cs.CustomFields), Stats: stats, Permissions: h.svc.Permissions(cl, cs)}
}

// withStats renders a case, with its stats when the request says nstats=true (they cost a count of its
// tasks, so they are opt-in as in the reference system).
func (h *handler) withStats(ctx context.Context, c echo.Context, cs cases.Case) (caseResponse, error) {
	cl := route.Caller(c)
	if !route.Flag(c, "nstats") {
		return h.caseJSON(cl, cs, nil), nil
	}
	st, err := h.svc.Stats(ctx, cl, cs)
	if err != nil {
		return caseResponse{}, err
	}
	tasks := map[string]int64{"total": 0}
	for status, n := range st.Tasks {
		tasks[status] = n
		tasks["total"] += n
	}
	alerts := route.MapSlice(st.Alerts, func(a cases.Alert) any { return map[string]string{"type": a.Type, "source": a.Source} })
	return h.caseJSON(cl, cs, statsResponse{Tasks: tasks, Artifacts: map[string]int64{"count": st.Observables},
		Alerts: alerts, IsOwner: true}), nil
}

type createCaseRequest struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Severity    *int   `json:"severity"`
	// SeverityAlt is the contract sample's spelling of severity.
	SeverityAlt  *int                       `json:"Severity"`
	TLP          *int                       `json:"tlp"`
	PAP          *int                       `json:"pap"`
	StartDate    *int64                     `json:"startDate"`
	Tags         web.Strings                `json:"tags"`
	Flag         *bool                      `json:"flag"`
	Owner        string                     `json:"owner"`
	Assignee     string                     `json:"assignee"`
	Summary      string                     `json:"summary"`
	Tasks        []route.TaskRequest        `json:"tasks"`
	CustomFields map[string]json.RawMessage `json:"customFields"`
	Template     string                     `json:"template"`
	CaseTemplate string                     `json:"caseTemplate"`
}

func (h *handler) createCase(c echo.Context) error {
	var req createCaseRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	cfs, err := customfields.Inputs(req.CustomFields)
	if err != nil {
		return err
	}
	n := cases.NewCase{Title: req.Title, Description: req.Description, Severity: req.Severity, TLP: req.TLP,
		PAP: req.PAP, StartDate: route.TimeOpt(req.StartDate), Tags: req.Tags, Flag: req.Flag, Owner: req.Owner,
		Summary: req.Summary, Tasks: route.MapSlice(req.Tasks, route.TaskRequest.Input), CustomFields: cfs, Template: req.Template}
	if n.Severity == nil {
		n.Severity = req.SeverityAlt
	}
	if n.Owner == "" {
		n.Owner = req.Assignee
	}
	if n.Template == "" {
		n.Template = req.CaseTemplate
	}
	ctx, write := h.batched(c) // the case's event and its tasks' in one write
	cs, _, err := h.svc.CreateCase(ctx, route.Caller(c), n)
	if werr := write(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, h.caseJSON(route.Caller(c), cs, nil))
}

func (h *handler) getCase(c echo.Context) error {
	ctx := c.Request().Context()
	cs, err := h.svc.Case(ctx, route.Caller(c), c.Param("caseId"))
	if err != nil {
		return err
	}
	out, err := h.withStats(ctx, c, cs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handler) listCases(c echo.Context) error {
	ctx := c.Request().Context()
	if err := h.rewriteChildQuery(c); err != nil { // _child (child.go)
		return err
	}
	f, p, err := web.Search(c, cases.CaseFields, h.max)
	if err != nil {
		return err
	}
	list, total, err := h.svc.Cases(ctx, route.Caller(c), f, p)
	if err != nil {
		return err
	}
	out := make([]caseResponse, len(list))
	for i, cs := range list {
		if out[i], err = h.withStats(ctx, c, cs); err != nil {
			return err
		}
	}
	return web.List(c, total, out)
}

type updateCaseRequest struct {
	Title            web.Opt[string]                     `json:"title"`
	Description      web.Opt[string]                     `json:"description"`
	Severity         web.Opt[int]                        `json:"severity"`
	SeverityAlt      web.Opt[int]                        `json:"Severity"`
	TLP              web.Opt[int]                        `json:"tlp"`
	PAP              web.Opt[int]                        `json:"pap"`
	StartDate        web.Opt[int64]                      `json:"startDate"`
	EndDate          web.Opt[int64]                      `json:"endDate"`
	ImpactStatus     web.Opt[string]                     `json:"impactStatus"`
	ResolutionStatus web.Opt[string]                     `json:"resolutionStatus"`
	Summary          web.Opt[string]                     `json:"summary"`
	Tags             web.Opt[web.Strings]                `json:"tags"`
	Flag             web.Opt[bool]                       `json:"flag"`
	Status           web.Opt[string]                     `json:"status"`
	Owner            web.Opt[string]                     `json:"owner"`
	Assignee         web.Opt[string]                     `json:"assignee"`
	CustomFields     web.Opt[map[string]json.RawMessage] `json:"customFields"`
}

func (h *handler) updateCase(c echo.Context) error {
	u, err := bindCaseUpdate(c)
	if err != nil {
		return err
	}
	cs, err := h.svc.UpdateCase(c.Request().Context(), route.Caller(c), c.Param("caseId"), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.caseJSON(route.Caller(c), cs, nil))
}

// bindCaseUpdate reads the case fields of a PATCH body (single or _bulk).
func bindCaseUpdate(c echo.Context) (cases.CaseUpdate, error) {
	var req updateCaseRequest
	if err := web.Bind(c, &req); err != nil {
		return cases.CaseUpdate{}, err
	}
	if !req.Severity.Set {
		req.Severity = req.SeverityAlt
	}
	if !req.Owner.Set {
		req.Owner = req.Assignee
	}
	u := cases.CaseUpdate{Title: route.Change(req.Title), Description: route.Change(req.Description),
		Severity: route.Change(req.Severity), TLP: route.Change(req.TLP), PAP: route.Change(req.PAP),
		StartDate: route.TimeChange(req.StartDate), EndDate: route.TimeChange(req.EndDate),
		ImpactStatus: route.Change(req.ImpactStatus), ResolutionStatus: route.Change(req.ResolutionStatus),
		Summary: route.Change(req.Summary), Tags: route.StringsChange(req.Tags), Flag: route.Change(req.Flag),
		Status: route.Change(req.Status), Owner: route.Change(req.Owner)}
	if req.CustomFields.Set {
		cfs, err := customfields.Inputs(req.CustomFields.V)
		if err != nil {
			return cases.CaseUpdate{}, err
		}
		if cfs == nil {
			cfs = map[string]customfield.Input{}
		}
		u.CustomFields = record.Change[map[string]customfield.Input]{Set: true, V: cfs}
	}
	return u, nil
}

func (h *handler) deleteCase(c echo.Context) error {
	if err := h.svc.DeleteCase(c.Request().Context(), route.Caller(c), c.Param("caseId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
