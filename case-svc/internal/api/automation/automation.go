// Package automation serves the automation routes of case-svc (/api/automation/…, docs/automation.md): the
// organisation's analyzer sets, and bulk runs of a set or a list of analyzers on a case's or an alert's
// observables.
package automation

import (
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
