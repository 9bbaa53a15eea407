package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/accounts"
	"github.com/openir/platform/case-svc/internal/api/analyses"
	automationapi "github.com/openir/platform/case-svc/internal/api/automation"
	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/api/templates"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/web"
)

// withActor puts the caller and the request id in the request's context, for the audit records of its
// changes.
func withActor(c echo.Context, cl identity.Caller) {
	r := c.Request()
	c.SetRequest(r.WithContext(audit.WithActor(r.Context(), audit.Actor{User: cl.Login, Org: cl.Org, RequestID: web.RequestID(c)})))
}

// batched returns the request's context collecting the audit events of the changes made with it, and the
// function that writes them in one call (audit.Service.Batch), for a handler whose service call makes several
// changes; without an audit service, the context itself.
func (h *handler) batched(c echo.Context) (context.Context, func() error) {
	if h.events == nil {
		return c.Request().Context(), func() error { return nil }
	}
	return h.events.Batch(c.Request().Context())
}

// auditObject renders a record of an event as the API shows it (v0).
func (h *handler) auditObject(v any) map[string]any {
	var r any
	switch x := v.(type) {
	case cases.Case:
		r = h.caseJSON(identity.Caller{}, x, nil)
	case cases.Alert:
		r = alertJSON(x, nil)
	case cases.Observable:
		r = observableJSON(x)
	case task.Task:
		r = taskJSON(x)
	case task.Log:
		r = logJSON(x)
	case connector.Job:
		r = analyses.JobJSON(x)
	case connector.Action:
		r = analyses.ActionJSON(x)
	case template.Template:
		r = templates.JSON(x)
	case customfield.Field:
		r = customfields.FieldJSON(x)
	case identity.User:
		r = accounts.UserJSON(x, "")
	case identity.Organisation:
		r = accounts.OrgJSON(x)
	case automation.Set:
		r = automationapi.SetJSON(x)
	case automation.Rule:
		r = automationapi.RuleJSON(x)
	case automation.Firing:
		r = automationapi.FiringJSON(x)
	default:
		return nil
	}
	m, err := route.ToMap(r)
	if err != nil {
		return nil
	}
	return m
}
