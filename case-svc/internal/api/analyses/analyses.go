// Package analyses serves the connector's routes (/api/connector/analysis/… and the reference system's
// /api/connector/cortex/…): analyzer jobs, responder actions and the responder history of an object, and the
// analyzers and responders of the analysis servers, with the JSON of jobs and actions (JobJSON, ActionJSON,
// which the query API and the audit trail render too).
package analyses

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// ObjectFunc loads the object a responder runs on (of the caller's organisation), rendered as the API renders
// it: the router's, which renders every record.
type ObjectFunc func(c echo.Context, objectType, id string) (connector.ResponderObject, error)

// Handler serves the connector's routes.
type Handler struct {
	analyses *connector.Analyses
	object   ObjectFunc
	max      int
}

// New returns the handlers over the connector; max is the largest page of a search.
func New(a *connector.Analyses, object ObjectFunc, max int) *Handler {
	return &Handler{analyses: a, object: object, max: max}
}

// Routes registers the connector at /api/connector/analysis/… and at the reference system's
// /api/connector/cortex/… spelling.
func (h *Handler) Routes(a route.Routes) {
	a.GET("/connector/job/:jobId", h.connectorJob)
	for _, n := range []string{"analysis", "cortex"} {
		p := "/connector/" + n
		a.POST(p+"/job", h.runAnalyzerJob)
		a.GET(p+"/job/:jobId", h.connectorJob)
		a.GET(p+"/analyzer", h.listRemoteWorkers(false))
		a.GET(p+"/analyzer/type/:dataType", h.listRemoteWorkers(false))
		a.GET(p+"/responder", h.listRemoteWorkers(true))
		a.GET(p+"/responder/:objectType/:objectId", h.respondersFor)
		a.POST(p+"/action", h.runResponder)
		a.GET(p+"/action/:actionId", h.getAction)
		h.searchRoutes(a, n)
	}
}

type runJobRequest struct {
	AnalysisID string `json:"analysisId"`
	CortexID   string `json:"cortexId"` // the reference system's name of analysisId
	ArtifactID string `json:"artifactId"`
	AnalyzerID string `json:"analyzerId"`
}

func (h *Handler) runAnalyzerJob(c echo.Context) error {
	var req runJobRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.AnalysisID == "" {
		req.AnalysisID = req.CortexID
	}
	if req.ArtifactID == "" {
		return apperr.Fields(apperr.FieldError{Name: "artifactId", Message: "required"})
	}
	j, err := h.analyses.RunAnalyzer(c.Request().Context(), route.Caller(c), req.AnalysisID, req.ArtifactID, req.AnalyzerID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, JobJSON(j))
}

func (h *Handler) connectorJob(c echo.Context) error {
	j, err := h.analyses.AnalyzerJob(c.Request().Context(), route.Caller(c), web.Param(c, "jobId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JobJSON(j))
}

type remoteWorkerResponse struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	DataTypeList []string `json:"dataTypeList"`
	AnalysisIDs  []string `json:"analysisIds"`
	CortexIDs    []string `json:"cortexIds"` // the reference system's name of analysisIds
	// WorkerIDs is the worker's id on each of its servers (id is the first's): the one to send to that server.
	WorkerIDs map[string]string `json:"workerIds"`
}

// listRemoteWorkers merges the analyzers (or responders) of every usable server by name. A server that is
// down is left out; its name is in the X-Analysis-Warnings header and the log, and the call still succeeds.
func (h *Handler) listRemoteWorkers(responder bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), responder, web.Param(c, "dataType"))
		if err != nil {
			return err
		}
		return h.remoteList(c, ws, warnings)
	}
}

func (h *Handler) remoteList(c echo.Context, ws []connector.ServerWorkers, warnings []string) error {
	return h.remoteListTotal(c, ws, warnings, int64(len(ws)))
}

// remoteListTotal writes a page of workers with the total of the whole list.
func (h *Handler) remoteListTotal(c echo.Context, ws []connector.ServerWorkers, warnings []string, total int64) error {
	if len(warnings) > 0 {
		c.Response().Header().Set("X-Analysis-Warnings", strings.Join(warnings, "; "))
	}
	return web.List(c, total, route.MapSlice(ws, remoteWorkerJSON))
}

func remoteWorkerJSON(w connector.ServerWorkers) remoteWorkerResponse {
	dt := w.DataTypeList
	if dt == nil {
		dt = []string{}
	}
	ids := make(map[string]string, len(w.Servers))
	for i, s := range w.Servers {
		ids[s] = w.IDs[i]
	}
	return remoteWorkerResponse{ID: w.ID, Name: w.Name, Version: w.Version, Description: w.Description,
		DataTypeList: dt, AnalysisIDs: w.Servers, CortexIDs: w.Servers, WorkerIDs: ids}
}

// respondersFor lists the responders that accept an object of the caller's organisation.
func (h *Handler) respondersFor(c echo.Context) error {
	obj, err := h.object(c, web.Param(c, "objectType"), web.Param(c, "objectId"))
	if err != nil {
		return err
	}
	ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), true, "thehive:"+obj.Type)
	if err != nil {
		return err
	}
	return h.remoteList(c, ws, warnings)
}

type runResponderRequest struct {
	ResponderID string `json:"responderId"`
	ObjectType  string `json:"objectType"`
	ObjectID    string `json:"objectId"`
	AnalysisID  string `json:"analysisId"`
	CortexID    string `json:"cortexId"`
}

func (h *Handler) runResponder(c echo.Context) error {
	var req runResponderRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if err := route.Caller(c).Require(identity.ManageAction); err != nil {
		return err
	}
	if req.AnalysisID == "" {
		req.AnalysisID = req.CortexID
	}
	var probs []apperr.FieldError
	for _, f := range []struct{ name, v string }{{"responderId", req.ResponderID}, {"objectType", req.ObjectType}, {"objectId", req.ObjectID}} {
		if f.v == "" {
			probs = append(probs, apperr.FieldError{Name: f.name, Message: "required"})
		}
	}
	if probs != nil {
		return apperr.Fields(probs...)
	}
	obj, err := h.object(c, req.ObjectType, req.ObjectID)
	if err != nil {
		return err
	}
	act, err := h.analyses.RunResponder(c.Request().Context(), route.Caller(c), req.AnalysisID, req.ResponderID, obj)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ActionJSON(act))
}

func (h *Handler) getAction(c echo.Context) error {
	act, err := h.analyses.Action(c.Request().Context(), route.Caller(c), web.Param(c, "actionId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ActionJSON(act))
}

// ActionResponse is a responder action as the API renders it.
type ActionResponse struct {
	ID                  string  `json:"_id"`
	IDDup               string  `json:"id"`
	Type                string  `json:"_type"`
	ResponderID         string  `json:"responderId"`
	ResponderName       string  `json:"responderName"`
	ResponderDefinition string  `json:"responderDefinition"`
	AnalysisID          string  `json:"analysisId"`
	CortexID            string  `json:"cortexId"`
	AnalysisJobID       string  `json:"analysisJobId"`
	CortexJobID         string  `json:"cortexJobId"`
	ObjectType          string  `json:"objectType"`
	ObjectID            string  `json:"objectId"`
	Status              string  `json:"status"`
	StartDate           int64   `json:"startDate"`
	EndDate             *int64  `json:"endDate"`
	Operations          string  `json:"operations"`        // the contract: a JSON-encoded string
	Report              string  `json:"report"`            // likewise
	Message             string  `json:"message,omitempty"` // why a Waiting action has not reached its server
	CreatedBy           string  `json:"createdBy"`
	CreatedAt           int64   `json:"createdAt"`
	UpdatedBy           *string `json:"updatedBy"`
	UpdatedAt           *int64  `json:"updatedAt"`
}

// ActionJSON renders an action; its report shows once the responder has answered.
func ActionJSON(a connector.Action) ActionResponse {
	r := ActionResponse{ID: a.ID, IDDup: a.ID, Type: "action", ResponderID: a.ResponderID, ResponderName: a.ResponderName,
		ResponderDefinition: a.ResponderDefinition, AnalysisID: a.AnalysisID, CortexID: a.AnalysisID,
		AnalysisJobID: a.AnalysisJobID, CortexJobID: a.AnalysisJobID, ObjectType: connector.ObjectTypeLabel(a.ObjectType),
		ObjectID: a.ObjectID, Status: a.Status, StartDate: a.StartDate.UnixMilli(), Operations: a.Operations,
		CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt.UnixMilli(), Message: a.Message}
	if !a.EndDate.IsZero() {
		v := a.EndDate.UnixMilli()
		r.EndDate = &v
	}
	if a.UpdatedBy != "" {
		v, t := a.UpdatedBy, a.UpdatedAt.UnixMilli()
		r.UpdatedBy, r.UpdatedAt = &v, &t
	}
	// While the server has not taken the action, the record keeps the object to send in its report; show the
	// report only once the responder has answered.
	r.Report = "{}"
	if a.Status != connector.JobWaiting && a.Status != connector.JobInProgress {
		r.Report = a.Report
	}
	return r
}

// searchRoutes adds the reference system's connector lookups beside Routes (n: "analysis" or
// "cortex"): job search, one analyzer, responder search.
func (h *Handler) searchRoutes(a route.Routes, n string) {
	p := "/connector/" + n
	a.POST(p+"/job/_search", h.searchAnalyzerJobs)
	a.GET(p+"/analyzer/:analyzerId", h.remoteAnalyzer)
	a.POST(p+"/responder/_search", h.searchResponders)
	a.GET(p+"/action/:objectType/:objectId", h.objectActions)
}

// actionFields are the fields an object's responder history may be sorted on.
var actionFields = search.Fields{"startDate": {Path: "startDate", Type: search.Number}, "endDate": {Path: "endDate", Type: search.Number},
	"status": {Path: "status"}, "responderName": {Path: "responderName"}, "responderId": {Path: "responderId"}}

// objectActions answers the responder actions run on an object of the organisation, newest first (the
// reference system's responder history; a member's read, as GET /action/{id}).
func (h *Handler) objectActions(c echo.Context) error {
	obj, err := h.object(c, c.Param("objectType"), c.Param("objectId"))
	if err != nil {
		return err
	}
	_, p, err := web.Search(c, actionFields, h.max)
	if err != nil {
		return err
	}
	acts, total, err := h.analyses.ActionsOf(c.Request().Context(), route.Caller(c), obj.Type, obj.ID, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(acts, ActionJSON))
}

// searchAnalyzerJobs searches the analyzer jobs of the caller's organisation (the search DSL over
// connector.JobFields; range, sort, X-Total).
func (h *Handler) searchAnalyzerJobs(c echo.Context) error {
	f, p, err := web.Search(c, connector.JobFields, h.max)
	if err != nil {
		return err
	}
	js, total, err := h.analyses.Jobs(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(js, JobJSON))
}

// remoteAnalyzer answers one analyzer of the servers the organisation may use, by id or name (manageAnalyse,
// as the list). An analyzer only an unreachable server has is a 404, with the server in X-Analysis-Warnings.
func (h *Handler) remoteAnalyzer(c echo.Context) error {
	ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), false, "")
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		c.Response().Header().Set("X-Analysis-Warnings", strings.Join(warnings, "; "))
	}
	id := c.Param("analyzerId")
	i := slices.IndexFunc(ws, func(w connector.ServerWorkers) bool { return slices.Contains(w.IDs, id) || w.Name == id })
	if i < 0 {
		return apperr.New(apperr.NotFound, "Analyzer not found")
	}
	return c.JSON(http.StatusOK, remoteWorkerJSON(ws[i]))
}

// responderFields are the fields a responder search may name; the merged list is filtered in memory (it comes
// from the analysis servers, not from the database).
var responderFields = search.Fields{"id": {Path: "id"}, "name": {Path: "name"}, "version": {Path: "version"},
	"description": {Path: "description"}, "dataTypeList": {Path: "dataTypeList"}}

// searchResponders lists the responders of the servers the organisation may use that match the query (eq,
// _in, _like, _and, _or, _not over responderFields; other operators: 400), with range and X-Total.
func (h *Handler) searchResponders(c echo.Context) error {
	f, p, err := web.Search(c, responderFields, h.max)
	if err != nil {
		return err
	}
	ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), true, "")
	if err != nil {
		return err
	}
	var out []connector.ServerWorkers
	for _, w := range ws {
		ok, err := matchWorker(f, w)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, w)
		}
	}
	total := len(out)
	out = out[min(p.Offset, len(out)):]
	if p.Limit > 0 {
		out = out[:min(p.Limit, len(out))]
	}
	return h.remoteListTotal(c, out, warnings, int64(total))
}

// matchWorker evaluates a parsed filter on a remote worker.
func matchWorker(n search.Node, w connector.ServerWorkers) (bool, error) {
	values := func(path string) []string {
		switch path {
		case "id":
			return []string{w.ID}
		case "name":
			return []string{w.Name}
		case "version":
			return []string{w.Version}
		case "description":
			return []string{w.Description}
		}
		return w.DataTypeList
	}
	switch n.Op {
	case "", search.OpAll:
		return true, nil
	case search.OpAnd, search.OpOr:
		for _, ch := range n.Children {
			ok, err := matchWorker(ch, w)
			if err != nil {
				return false, err
			}
			if ok == (n.Op == search.OpOr) {
				return ok, nil
			}
		}
		return n.Op == search.OpAnd, nil
	case search.OpNot:
		ok, err := matchWorker(n.Children[0], w)
		return !ok, err
	case search.OpEq:
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return any(v) == n.Value }), nil
	case search.OpIn:
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return slices.Contains(n.Values, any(v)) }), nil
	case search.OpLike:
		s, _ := n.Value.(string)
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return strings.Contains(strings.ToLower(v), strings.ToLower(s)) }), nil
	}
	return false, apperr.Errorf(apperr.BadRequest, "a responder search takes field values, _in, _like, _and, _or and _not, not %s", n.Op)
}

// JobResponse is an analyzer job (case_artifact_job) as the API renders it.
type JobResponse struct {
	route.Meta
	AnalyzerID         string         `json:"analyzerId"`
	AnalyzerName       string         `json:"analyzerName"`
	AnalyzerDefinition string         `json:"analyzerDefinition"`
	Status             string         `json:"status"`
	StartDate          *int64         `json:"startDate"`
	EndDate            *int64         `json:"endDate"`
	AnalysisID         string         `json:"analysisId"`
	AnalysisJobID      string         `json:"analysisJobId"`
	CortexID           string         `json:"cortexId"`    // the reference system's name of analysisId
	CortexJobID        string         `json:"cortexJobId"` // and of analysisJobId
	Report             map[string]any `json:"report"`
	ObservableID       string         `json:"observableId"`
	CaseID             string         `json:"caseId"`
	AlertID            string         `json:"alertId,omitempty"` // the observable's alert (bulk runs and rules)
	Rule               string         `json:"rule,omitempty"`    // the automation rule that made the job
	Message            string         `json:"message,omitempty"` // why a Waiting job has not reached its server
}

// JobJSON renders an analyzer job.
func JobJSON(j connector.Job) JobResponse {
	return JobResponse{Meta: route.MetaOf(j.ID, "case_artifact_job", j.Meta), AnalyzerID: j.AnalyzerID,
		AnalyzerName: j.AnalyzerName, AnalyzerDefinition: j.AnalyzerDefinition, Status: j.Status,
		StartDate: route.NullMillis(j.StartDate), EndDate: route.NullMillis(j.EndDate), AnalysisID: j.AnalysisID,
		AnalysisJobID: j.AnalysisJobID, CortexID: j.AnalysisID, CortexJobID: j.AnalysisJobID, Report: j.Report, ObservableID: j.ObservableID, CaseID: j.CaseID,
		AlertID: j.AlertID, Rule: j.Rule, Message: j.Message}
}
