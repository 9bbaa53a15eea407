package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

// connectorRoutes registers the connector at /api/connector/analysis/… and at the reference system's
// /api/connector/cortex/… spelling.
func (h *handler) connectorRoutes(a route.Routes) {
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
		h.connectorSearchRoutes(a, n) // connector_search.go
	}
}

type runJobRequest struct {
	AnalysisID string `json:"analysisId"`
	CortexID   string `json:"cortexId"` // the reference system's name of analysisId
	ArtifactID string `json:"artifactId"`
	AnalyzerID string `json:"analyzerId"`
}

func (h *handler) runAnalyzerJob(c echo.Context) error {
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
	return c.JSON(http.StatusCreated, jobJSON(j))
}

func (h *handler) connectorJob(c echo.Context) error {
	j, err := h.analyses.AnalyzerJob(c.Request().Context(), route.Caller(c), web.Param(c, "jobId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, jobJSON(j))
}

type remoteWorkerResponse struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	DataTypeList []string `json:"dataTypeList"`
	AnalysisIDs  []string `json:"analysisIds"`
	CortexIDs    []string `json:"cortexIds"` // the reference system's name of analysisIds
}

// listRemoteWorkers merges the analyzers (or responders) of every usable server by name. A server that is
// down is left out; its name is in the X-Analysis-Warnings header and the log, and the call still succeeds.
func (h *handler) listRemoteWorkers(responder bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), responder, web.Param(c, "dataType"))
		if err != nil {
			return err
		}
		return h.remoteList(c, ws, warnings)
	}
}

func (h *handler) remoteList(c echo.Context, ws []connector.ServerWorkers, warnings []string) error {
	return h.remoteListTotal(c, ws, warnings, int64(len(ws)))
}

// remoteListTotal writes a page of workers with the total of the whole list.
func (h *handler) remoteListTotal(c echo.Context, ws []connector.ServerWorkers, warnings []string, total int64) error {
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
	return remoteWorkerResponse{ID: w.ID, Name: w.Name, Version: w.Version, Description: w.Description,
		DataTypeList: dt, AnalysisIDs: w.Servers, CortexIDs: w.Servers}
}

// respondersFor lists the responders that accept an object of the caller's organisation.
func (h *handler) respondersFor(c echo.Context) error {
	obj, err := h.responderObject(c, web.Param(c, "objectType"), web.Param(c, "objectId"))
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

func (h *handler) runResponder(c echo.Context) error {
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
	obj, err := h.responderObject(c, req.ObjectType, req.ObjectID)
	if err != nil {
		return err
	}
	act, err := h.analyses.RunResponder(c.Request().Context(), route.Caller(c), req.AnalysisID, req.ResponderID, obj)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, actionJSON(act))
}

func (h *handler) getAction(c echo.Context) error {
	act, err := h.analyses.Action(c.Request().Context(), route.Caller(c), web.Param(c, "actionId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, actionJSON(act))
}

// asObject renders a response value as the JSON object a responder receives.
func asObject(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers (custom field values, big integers) reach the responder with their exact text
	_ = dec.Decode(&m)
	return m
}

// responderObject loads the object a responder runs on (of the caller's organisation) and renders it as the
// API does. A missing task or log answers 404 "Task not found" / "Log not found" (DECISIONS.md).
func (h *handler) responderObject(c echo.Context, objectType, id string) (connector.ResponderObject, error) {
	typ, err := connector.NormalizeObjectType(objectType)
	if err != nil {
		return connector.ResponderObject{}, err
	}
	ctx, cl := c.Request().Context(), route.Caller(c)
	obj := connector.ResponderObject{Type: typ, ID: id}
	caseLevels := func(caseID string) error {
		cs, err := h.svc.Case(ctx, cl, caseID)
		if err != nil {
			return err
		}
		obj.TLP, obj.PAP = cs.TLP, cs.PAP
		return nil
	}
	switch typ {
	case "case_task":
		t, err := h.svc.Task(ctx, cl, id)
		if apperr.Is(err, apperr.NotFound) {
			return obj, apperr.New(apperr.NotFound, "Task not found")
		}
		if err != nil {
			return obj, err
		}
		obj.CaseID, obj.TaskID, obj.Data = t.CaseID, t.ID, asObject(taskJSON(t))
		return obj, caseLevels(t.CaseID)
	case "case_task_log":
		l, err := h.svc.Log(ctx, cl, id)
		if apperr.Is(err, apperr.NotFound) {
			return obj, apperr.New(apperr.NotFound, "Log not found")
		}
		if err != nil {
			return obj, err
		}
		obj.CaseID, obj.TaskID, obj.Data = l.CaseID, l.TaskID, asObject(logJSON(l))
		return obj, caseLevels(l.CaseID)
	case "case":
		cs, err := h.svc.Case(ctx, cl, id)
		if err != nil {
			return obj, err
		}
		obj.ID, obj.CaseID, obj.TLP, obj.PAP, obj.Data = cs.ID, cs.ID, cs.TLP, cs.PAP, asObject(h.caseJSON(cl, cs, nil))
		return obj, nil
	case "alert":
		al, err := h.svc.Alert(ctx, cl, id)
		if err != nil {
			return obj, err
		}
		obj.ID, obj.AlertID, obj.TLP, obj.PAP, obj.Data = al.ID, al.ID, al.TLP, al.PAP, asObject(alertJSON(al, nil))
		return obj, nil
	default: // case_artifact
		o, err := h.svc.Observable(ctx, cl, id)
		if err != nil {
			return obj, err
		}
		obj.CaseID, obj.AlertID, obj.TLP, obj.Data = o.CaseID, o.AlertID, o.TLP, asObject(observableJSON(o))
		obj.PAP = 2
		if o.CaseID != "" {
			return obj, caseLevels(o.CaseID)
		}
		return obj, nil
	}
}

type actionResponse struct {
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

func actionJSON(a connector.Action) actionResponse {
	r := actionResponse{ID: a.ID, IDDup: a.ID, Type: "action", ResponderID: a.ResponderID, ResponderName: a.ResponderName,
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
