// Package automation serves the automation routes of case-svc (/api/automation/…, docs/automation.md): the
// organisation's analyzer sets, and bulk runs of a set or a list of analyzers on a case's or an alert's
// observables.
package automation

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/analyses"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/web"
)

// Handler serves the automation routes.
type Handler struct {
	svc *automation.Service
	max int
}

// New returns the handlers over the automation service; max is the largest page of a search.
func New(svc *automation.Service, max int) *Handler { return &Handler{svc: svc, max: max} }

// Routes registers the automation routes.
func (h *Handler) Routes(a route.Routes) {
	a.GET("/automation/set", h.listSets)
	a.POST("/automation/set/_search", h.listSets)
	a.POST("/automation/set", h.createSet)
	a.GET("/automation/set/:setId", h.getSet)
	a.PATCH("/automation/set/:setId", h.updateSet)
	a.DELETE("/automation/set/:setId", h.deleteSet)
	a.POST("/automation/run", h.run)
	a.GET("/automation/rule", h.listRules)
	a.POST("/automation/rule/_search", h.listRules)
	a.POST("/automation/rule", h.createRule)
	a.GET("/automation/rule/:ruleId", h.getRule)
	a.PATCH("/automation/rule/:ruleId", h.updateRule)
	a.DELETE("/automation/rule/:ruleId", h.deleteRule)
	a.GET("/automation/rule/:ruleId/history", h.history)
	a.POST("/automation/rule/:ruleId/history/_search", h.history)
}

// AnalyzerJSON is an analyzer of a set or of a run.
type AnalyzerJSON struct {
	AnalysisID string         `json:"analysisId"`
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

func (a AnalyzerJSON) analyzer() automation.Analyzer {
	return automation.Analyzer{AnalysisID: a.AnalysisID, Name: a.Name, Parameters: a.Parameters}
}

// SetResponse is an analyzer set as the API renders it.
type SetResponse struct {
	route.Meta
	Name        string                    `json:"name"`
	Description string                    `json:"description"`
	Analyzers   map[string][]AnalyzerJSON `json:"analyzers"`
}

// SetJSON renders an analyzer set.
func SetJSON(s automation.Set) SetResponse {
	m := make(map[string][]AnalyzerJSON, len(s.Analyzers))
	for dt, as := range s.Analyzers {
		m[dt] = route.MapSlice(as, func(a automation.Analyzer) AnalyzerJSON {
			return AnalyzerJSON{AnalysisID: a.AnalysisID, Name: a.Name, Parameters: a.Parameters}
		})
	}
	return SetResponse{Meta: route.MetaOf(s.ID, "analyzerSet", s.Meta), Name: s.Name, Description: s.Description, Analyzers: m}
}

// setRequest is a set's fields, for create and PATCH alike.
type setRequest struct {
	Name        web.Opt[string]                    `json:"name"`
	Description web.Opt[string]                    `json:"description"`
	Analyzers   web.Opt[map[string][]AnalyzerJSON] `json:"analyzers"`
}

func (r setRequest) input() automation.SetInput {
	in := automation.SetInput{Name: route.Change(r.Name), Description: route.Change(r.Description)}
	if r.Analyzers.Set {
		m := map[string][]automation.Analyzer{}
		for dt, as := range r.Analyzers.V {
			m[dt] = route.MapSlice(as, AnalyzerJSON.analyzer)
		}
		in.Analyzers = record.Change[map[string][]automation.Analyzer]{Set: true, V: m}
	}
	return in
}

func (h *Handler) createSet(c echo.Context) error {
	var req setRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	s, err := h.svc.CreateSet(c.Request().Context(), route.Caller(c), req.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, SetJSON(s))
}

func (h *Handler) getSet(c echo.Context) error {
	s, err := h.svc.Set(c.Request().Context(), route.Caller(c), web.Param(c, "setId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SetJSON(s))
}

func (h *Handler) listSets(c echo.Context) error {
	f, p, err := web.Search(c, automation.SetFields, h.max)
	if err != nil {
		return err
	}
	ss, total, err := h.svc.Sets(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(ss, SetJSON))
}

func (h *Handler) updateSet(c echo.Context) error {
	var req setRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	s, err := h.svc.UpdateSet(c.Request().Context(), route.Caller(c), web.Param(c, "setId"), req.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SetJSON(s))
}

func (h *Handler) deleteSet(c echo.Context) error {
	if err := h.svc.DeleteSet(c.Request().Context(), route.Caller(c), web.Param(c, "setId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// runRequest is a bulk run: a set or a list of analyzers, on a case's or an alert's observables.
type runRequest struct {
	CaseID        string         `json:"caseId"`
	AlertID       string         `json:"alertId"`
	ObservableIDs []string       `json:"observableIds"`
	SetID         string         `json:"setId"`
	Analyzers     []AnalyzerJSON `json:"analyzers"`
	Force         bool           `json:"force"`
}

// SkippedJSON is a pair a bulk run skipped.
type SkippedJSON struct {
	ObservableID string  `json:"observableId"`
	DataType     string  `json:"dataType"`
	Data         *string `json:"data"`
	AnalysisID   string  `json:"analysisId"`
	Analyzer     string  `json:"analyzer"`
	Reason       string  `json:"reason"`
	Message      string  `json:"message"`
	JobID        *string `json:"jobId"`
}

// RunResponse is what a bulk run did.
type RunResponse struct {
	Created []analyses.JobResponse `json:"created"`
	Skipped []SkippedJSON          `json:"skipped"`
}

// RunJSON renders a bulk run's result.
func RunJSON(r connector.BulkResult) RunResponse {
	out := RunResponse{Created: route.MapSlice(r.Created, analyses.JobJSON), Skipped: route.MapSlice(r.Skipped, func(s connector.Skipped) SkippedJSON {
		return SkippedJSON{ObservableID: s.ObservableID, DataType: s.DataType, Data: route.NullString(s.Data), AnalysisID: s.AnalysisID,
			Analyzer: s.Analyzer, Reason: s.Reason, Message: s.Message, JobID: route.NullString(s.JobID)}
	})}
	if out.Created == nil {
		out.Created = []analyses.JobResponse{}
	}
	if out.Skipped == nil {
		out.Skipped = []SkippedJSON{}
	}
	return out
}

// run is POST /automation/run. The Idempotency-Key header makes a retried request create nothing new.
func (h *Handler) run(c echo.Context) error {
	var req runRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	res, err := h.svc.RunAnalyzers(c.Request().Context(), route.Caller(c), automation.Run{CaseID: req.CaseID, AlertID: req.AlertID,
		ObservableIDs: req.ObservableIDs, Set: req.SetID, Analyzers: route.MapSlice(req.Analyzers, AnalyzerJSON.analyzer),
		Key: c.Request().Header.Get("Idempotency-Key"), Force: req.Force})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunJSON(res))
}

// ActionJSON is an action of a rule.
type ActionJSON struct {
	Type       string   `json:"type"`
	Set        string   `json:"set,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	Responder  string   `json:"responder,omitempty"`
	AnalysisID string   `json:"analysisId,omitempty"`
}

func (a ActionJSON) action() automation.Action {
	return automation.Action{Type: a.Type, Set: a.Set, Tags: a.Tags, Owner: a.Owner, Responder: a.Responder, AnalysisID: a.AnalysisID}
}

// RuleResponse is a rule as the API renders it.
type RuleResponse struct {
	route.Meta
	Name        string          `json:"name"`
	Enabled     bool            `json:"enabled"`
	Event       string          `json:"event"`
	Conditions  json.RawMessage `json:"conditions"`
	Actions     []ActionJSON    `json:"actions"`
	MaxDepth    int             `json:"maxDepth"`
	JobsPerHour int             `json:"jobsPerHour"`
	DryRun      bool            `json:"dryRun"`
	Owner       string          `json:"owner"`
	Stopped     *string         `json:"stopped"`
}

// RuleJSON renders a rule.
func RuleJSON(r automation.Rule) RuleResponse {
	cond := r.Conditions
	if cond == nil {
		cond = json.RawMessage("null")
	}
	return RuleResponse{Meta: route.MetaOf(r.ID, "rule", r.Meta), Name: r.Name, Enabled: r.Enabled, Event: r.Event, Conditions: cond,
		Actions: route.MapSlice(r.Actions, func(a automation.Action) ActionJSON {
			return ActionJSON{Type: a.Type, Set: a.Set, Tags: a.Tags, Owner: a.Owner, Responder: a.Responder, AnalysisID: a.AnalysisID}
		}), MaxDepth: r.MaxDepth, JobsPerHour: r.JobsPerHour, DryRun: r.DryRun, Owner: r.Owner, Stopped: route.NullString(r.Stopped)}
}

// ruleRequest is a rule's fields, for create and PATCH alike.
type ruleRequest struct {
	Name        web.Opt[string]          `json:"name"`
	Enabled     web.Opt[bool]            `json:"enabled"`
	Event       web.Opt[string]          `json:"event"`
	Conditions  web.Opt[json.RawMessage] `json:"conditions"`
	Actions     web.Opt[[]ActionJSON]    `json:"actions"`
	MaxDepth    web.Opt[int]             `json:"maxDepth"`
	JobsPerHour web.Opt[int]             `json:"jobsPerHour"`
	DryRun      web.Opt[bool]            `json:"dryRun"`
}

func (r ruleRequest) input() automation.RuleInput {
	in := automation.RuleInput{Name: route.Change(r.Name), Enabled: route.Change(r.Enabled), Event: route.Change(r.Event),
		MaxDepth: route.Change(r.MaxDepth), JobsPerHour: route.Change(r.JobsPerHour), DryRun: route.Change(r.DryRun)}
	if r.Conditions.Set {
		in.Conditions = record.Change[json.RawMessage]{Set: true, V: r.Conditions.V}
	}
	if r.Actions.Set {
		in.Actions = record.Change[[]automation.Action]{Set: true, V: route.MapSlice(r.Actions.V, ActionJSON.action)}
	}
	return in
}

func (h *Handler) createRule(c echo.Context) error {
	var req ruleRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	r, err := h.svc.CreateRule(c.Request().Context(), route.Caller(c), req.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, RuleJSON(r))
}

func (h *Handler) getRule(c echo.Context) error {
	r, err := h.svc.Rule(c.Request().Context(), route.Caller(c), web.Param(c, "ruleId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RuleJSON(r))
}

func (h *Handler) listRules(c echo.Context) error {
	f, p, err := web.Search(c, automation.RuleFields, h.max)
	if err != nil {
		return err
	}
	rs, total, err := h.svc.Rules(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(rs, RuleJSON))
}

func (h *Handler) updateRule(c echo.Context) error {
	var req ruleRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	r, err := h.svc.UpdateRule(c.Request().Context(), route.Caller(c), web.Param(c, "ruleId"), req.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RuleJSON(r))
}

func (h *Handler) deleteRule(c echo.Context) error {
	if err := h.svc.DeleteRule(c.Request().Context(), route.Caller(c), web.Param(c, "ruleId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// FiringResponse is one entry of a rule's history.
type FiringResponse struct {
	ID         string   `json:"_id"`
	IDAlias    string   `json:"id"`
	Type       string   `json:"_type"`
	Rule       string   `json:"rule"`
	RuleName   string   `json:"ruleName"`
	Event      string   `json:"event"`
	ObjectType string   `json:"objectType"`
	ObjectID   string   `json:"objectId"`
	EventID    string   `json:"eventId"`
	Depth      int      `json:"depth"`
	Status     string   `json:"status"`
	Message    string   `json:"message"`
	Jobs       []string `json:"jobs"`
	Planned    int      `json:"planned"`
	// Actions are the responder actions the firing made.
	Actions   []string `json:"actions"`
	Date      int64    `json:"date"`
	UpdatedAt int64    `json:"updatedAt"`
}

// FiringJSON renders a firing.
func FiringJSON(f automation.Firing) FiringResponse {
	jobs := f.Jobs
	if jobs == nil {
		jobs = []string{}
	}
	actions := []string{}
	for _, r := range f.Responders {
		if r.ActionID != "" {
			actions = append(actions, r.ActionID)
		}
	}
	return FiringResponse{ID: f.ID, IDAlias: f.ID, Type: "ruleFiring", Rule: f.Rule, RuleName: f.RuleName, Event: f.Event,
		ObjectType: f.ObjectType, ObjectID: f.ObjectID, EventID: f.EventID, Depth: f.Depth, Status: f.Status, Message: f.Message,
		Jobs: jobs, Planned: f.Planned, Actions: actions, Date: route.Millis(f.Date), UpdatedAt: route.Millis(f.Updated)}
}

// history is a rule's history: what it did about each (object, event), newest first.
func (h *Handler) history(c echo.Context) error {
	f, p, err := web.Search(c, automation.FiringFields, h.max)
	if err != nil {
		return err
	}
	fs, total, err := h.svc.History(c.Request().Context(), route.Caller(c), web.Param(c, "ruleId"), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(fs, FiringJSON))
}
