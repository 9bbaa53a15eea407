package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
)

// asObject renders a response value as the JSON object a responder receives.
func asObject(v any) map[string]any {
	m, _ := route.ToMap(v)
	return m
}

// responderObject loads the object a responder runs on (of the caller's organisation) and renders it as the
// API does. A missing task or log answers 404 "Task not found" / "Log not found" (DECISIONS.md).
func (h *handler) responderObject(c echo.Context, objectType, id string) (connector.ResponderObject, error) {
	return h.objectOf(c.Request().Context(), route.Caller(c), objectType, id)
}

// objectOf is responderObject for a caller outside a request (an automation rule's owner).
func (h *handler) objectOf(ctx context.Context, cl identity.Caller, objectType, id string) (connector.ResponderObject, error) {
	typ, err := connector.NormalizeObjectType(objectType)
	if err != nil {
		return connector.ResponderObject{}, err
	}
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
		t, err := h.taskSvc.Task(ctx, cl, id)
		if apperr.Is(err, apperr.NotFound) {
			return obj, apperr.New(apperr.NotFound, "Task not found")
		}
		if err != nil {
			return obj, err
		}
		obj.CaseID, obj.TaskID, obj.Data = t.CaseID, t.ID, asObject(taskJSON(t))
		return obj, caseLevels(t.CaseID)
	case "case_task_log":
		l, err := h.taskSvc.Log(ctx, cl, id)
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
