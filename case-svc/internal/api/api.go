// Package api is the HTTP surface of case-svc: the routes of spec/case-api.md and those DECISIONS.md adds
// (identity, case management), registered in one function (routes) so that the surface reads top to bottom,
// their request and response types, and the translation between them and the domain. Groups of handlers
// live in sub-packages, whose handlers the router registers or which register their own where the router
// calls them: accounts (sessions, users, organisations, profiles), analyses (the connector's routes),
// customfields (the definitions, and the custom field values' JSON), templates (case templates), trail (audit
// trail, stream, webhooks), ui (describe, config, the UI's query steps) and status (status and health), on
// route (what the groups share: prefixed routes, the caller, the records' bookkeeping, request conversions).
package api

import (
	"context"
	_ "embed"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/accounts"
	"github.com/openir/platform/case-svc/internal/api/analyses"
	automationapi "github.com/openir/platform/case-svc/internal/api/automation"
	"github.com/openir/platform/case-svc/internal/api/customfields"
	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/api/status"
	"github.com/openir/platform/case-svc/internal/api/templates"
	"github.com/openir/platform/case-svc/internal/api/trail"
	"github.com/openir/platform/case-svc/internal/api/ui"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/case-svc/internal/webui"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/openapi"
	"github.com/openir/platform/pkg/web"
)

// openapiYAML is the service's OpenAPI 3.1 document (docs/openapi.md: how to add a route).
//
//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the service's OpenAPI document, checked (its tests use it).
func OpenAPI() (*openapi.Doc, error) { return openapi.Load(openapiYAML) }

// Version is the service version reported by /api/status.
const Version = "0.1.0"

// Config is what the handlers need besides the domain services.
type Config struct {
	web.APIConfig // MaxFile: the largest uploaded file (observable file, archive, task log attachment)
	// Ready reports whether the database answers (/readyz).
	Ready func(ctx context.Context) error
	// Events is the audit trail, streams and webhooks (nil: none of their routes).
	Events audit.Service
	// Metrics are the events' metrics, served at /metrics (nil: none).
	Metrics *events.Metrics
}

// Services are the domain services behind the routes.
type Services struct {
	Identity     *identity.Service
	Cases        *cases.Service
	Tasks        *task.Service
	Templates    *template.Service
	CustomFields *customfield.Service
	Connector    *connector.Analyses
	Tally        *tally.Counter
	// Automation holds analyzer sets, bulk runs and rules (nil: none of their routes).
	Automation *automation.Service
}

type handler struct {
	ids      *identity.Service
	svc      *cases.Service
	taskSvc  *task.Service
	tmpls    *template.Service
	fields   *customfield.Service
	analyses *connector.Analyses
	auto     *automation.Service
	tally    *tally.Counter
	trail    *trail.Handler
	ui       *ui.Handler
	cfg      Config
	max      int
	auth     web.AuthConfig
	events   audit.Service
}

// New returns the service's HTTP handler with every route registered.
func New(cfg Config, s Services) *echo.Echo {
	opts := web.Options{Log: cfg.Log, Limits: cfg.Limits, Ready: cfg.Ready}
	if cfg.Metrics != nil {
		opts.Collectors = cfg.Metrics.Collectors()
	}
	e := web.New(opts)
	cfg.Auth.Transport = cfg.Secure // basic credentials follow the HTTPS rule of the password endpoints
	h := &handler{ids: s.Identity, svc: s.Cases, taskSvc: s.Tasks, tmpls: s.Templates, fields: s.CustomFields, analyses: s.Connector, auto: s.Automation, tally: s.Tally, cfg: cfg, max: cfg.SearchMax, auth: cfg.Auth, events: cfg.Events}
	h.trail = trail.New(cfg.Events, h.queries, h.max)
	h.ui = ui.New(h.svc, h.taskSvc, h.tmpls, h.ids, h.fields, h.max)
	if cfg.Events != nil {
		cfg.Events.SetRenderer(h.auditObject)
	}
	if s.Automation != nil {
		s.Automation.SetObjects(h.objectOf) // rules' responders get the objects as the API's responder runs do
	}
	h.routes(e)
	// The web interface (internal/webui): its pages are embedded, so a template error fails every start and
	// every test, never one request.
	pages, err := webui.New(webui.Services{Identity: s.Identity, Cases: s.Cases, Tasks: s.Tasks, Templates: s.Templates,
		CustomFields: s.CustomFields, Connector: s.Connector, Events: cfg.Events}, h.auth, cfg.Log)
	if err != nil {
		panic(err)
	}
	pages.Routes(e, web.Authenticate[identity.User](h.ids, h.auth), h.organisation)
	return e
}

// routes registers the whole API surface, top to bottom. The reference system serves its v0 API at both
// /api and /api/v0 and its v1 API at /api/v1; identity routes exist in both versions with the same shapes
// here, so they are served under all three prefixes.
func (h *handler) routes(e *echo.Echo) {
	authn := web.Authenticate[identity.User](h.ids, h.auth)
	secure := web.RequireSecure(h.cfg.Secure)
	upload := web.Upload(h.cfg.MaxFile)
	web.ServeOpenAPI(e, func() ([]byte, error) { return openapi.JSON(openapiYAML) }) // GET /api/openapi.json, without credentials
	// The route groups of the sub-packages: sessions, users, organisations and profiles; the connector; the
	// custom field definitions; the case templates; the status.
	acc := accounts.New(h.ids, h.auth, h.cfg.Secure, h.max)
	an := analyses.New(h.analyses, h.responderObject, h.max)
	cf := customfields.New(h.fields, h.max)
	tp := templates.New(h.tmpls, h.max)
	st := status.New(Version, h.analyses, h.auth.Basic, h.downloadPassword(), h.cfg.Ready)

	for _, prefix := range []string{"/api", "/api/v0", "/api/v1"} {
		// --- without credentials ---
		e.GET(prefix+"/status", st.Status)
		e.GET(prefix+"/health", st.Health)
		e.POST(prefix+"/login", acc.Login, secure) // a password: HTTPS only, as the password endpoints
		e.POST(prefix+"/logout", acc.Logout)
		e.GET(prefix+"/logout", acc.Logout)

		a := route.Routes{Routes: web.Routes{E: e, MW: []echo.MiddlewareFunc{authn, h.organisation}}, Prefix: prefix}

		// --- identity: users, organisations, profiles ---
		a.GET("/user/current", acc.CurrentUser)
		a.GET("/user", acc.ListUsers)
		a.POST("/user/_search", acc.ListUsers)
		a.POST("/user", acc.CreateUser)
		a.GET("/user/:userId", acc.GetUser)
		a.PATCH("/user/:userId", acc.UpdateUser)
		a.DELETE("/user/:userId", acc.LockUser)
		a.DELETE("/user/:userId/force", acc.ForceDeleteUser)
		a.POST("/user/:userId/password/set", acc.SetPassword, secure)
		a.POST("/user/:userId/password/change", acc.ChangePassword, secure)
		a.GET("/user/:userId/key", acc.GetKey, secure)
		a.DELETE("/user/:userId/key", acc.RevokeKey, secure)
		a.POST("/user/:userId/key/renew", acc.RenewKey, secure)

		a.GET("/organisation", acc.ListOrgs)
		a.POST("/organisation/_search", acc.ListOrgs)
		a.POST("/organisation", acc.CreateOrg)
		a.GET("/organisation/:orgId", acc.GetOrg)
		a.PATCH("/organisation/:orgId", acc.UpdateOrg)

		a.GET("/profile", acc.ListProfiles)
		a.POST("/profile/_search", acc.ListProfiles)
		a.GET("/profile/:profileId", acc.GetProfile)

		h.trail.Routes(a) // audit, flow, stream, webhooks (trail/)
		h.ui.Routes(a)    // describe, config (ui/)

		if prefix == "/api/v1" {
			a.POST("/case/_merge/:caseIds", h.mergeCasesV1) // merge.go: the one v1 case route
			continue                                        // the case routes below are the v0 API: /api and /api/v0
		}

		// --- statistics of users, organisations, several models (stats.go) ---
		a.POST("/user/_stats", h.stats("user"))
		a.POST("/organisation/_stats", h.stats("organisation"))
		a.POST("/_stats", h.allStats)

		// --- cases ---
		a.POST("/case", h.createCase)
		a.GET("/case", h.listCases)
		a.POST("/case/_search", h.listCases)
		a.POST("/case/_stats", h.stats("case"))   // statistics: stats.go
		a.PATCH("/case/_bulk", h.bulkUpdateCases) // static segments win over /case/:caseId (bulk.go)
		a.GET("/case/:caseId", h.getCase)
		a.PATCH("/case/:caseId", h.updateCase)
		a.DELETE("/case/:caseId", h.deleteCase)
		a.DELETE("/case/:caseId/force", h.deleteCase)
		a.GET("/case/:caseId/links", h.caseLinks)
		a.POST("/case/:caseId/_merge/:mergedCaseId", h.mergeCases) // merge.go

		// --- case templates ---
		a.GET("/case/template", tp.List)
		a.POST("/case/template/_search", tp.List)
		a.POST("/case/template/_stats", h.stats("caseTemplate"))
		a.POST("/case/template", tp.Create)
		a.GET("/case/template/:templateId", tp.Get)
		a.PATCH("/case/template/:templateId", tp.Update)
		a.DELETE("/case/template/:templateId", tp.Delete)

		// --- tasks: the contract writes POST /api/case/{id}task, which the router sees as one parameter
		// ending in "task"; clients also send /api/case/{id}/task ---
		a.POST("/case/:caseId", h.createTaskJoined)
		a.POST("/case/:caseId/task", h.createTask)
		a.GET("/case/:caseId/task", h.listCaseTasks)
		a.POST("/case/:caseId/task/_search", h.listCaseTasks)
		a.GET("/case/task", h.listTasks)
		a.POST("/case/task/_search", h.listTasks)
		a.POST("/case/task/_stats", h.stats("case_task"))
		a.GET("/case/task/:taskId", h.getTask)
		a.PATCH("/case/task/:taskId", h.updateTask)

		// --- task logs ---
		a.POST("/case/task/:taskId/log", h.createLog, upload)
		a.GET("/case/task/:taskId/log", h.listTaskLogs)
		a.POST("/case/task/:taskId/log/_search", h.listTaskLogs)
		a.POST("/case/task/log/_search", h.listLogs)
		a.POST("/case/task/log/_stats", h.stats("case_task_log"))
		a.GET("/case/task/log/:logId", h.getLog)
		a.PATCH("/case/task/log/:logId", h.updateLog)
		a.DELETE("/case/task/log/:logId", h.deleteLog)
		a.GET("/datastore/:fileId", h.download)
		a.GET("/datastorezip/:fileId", h.downloadZip)

		// --- custom fields ---
		a.GET("/customField", cf.List)
		a.POST("/customField/_search", cf.List)
		a.POST("/customFields/_search", cf.List)
		a.POST("/customField/_stats", h.stats("customField"))
		a.POST("/customField", cf.Create)
		a.GET("/customField/:fieldId", cf.Get)
		a.PATCH("/customField/:fieldId", cf.Update)
		a.DELETE("/customField/:fieldId", cf.Delete)

		// --- observables (the reference system's artifacts) of cases and alerts ---
		a.POST("/case/:caseId/artifact", h.createCaseObservables, upload)
		a.GET("/case/:caseId/artifact", h.listCaseObservables)
		a.POST("/case/:caseId/artifact/_search", h.listCaseObservables)
		a.POST("/case/artifact/_search", h.searchObservables)
		a.POST("/case/artifact/_stats", h.stats("case_artifact"))
		a.PATCH("/case/artifact/_bulk", h.bulkUpdateObservables)
		a.GET("/case/artifact/:observableId", h.getObservable)
		a.GET("/case/artifact/:observableId/similar", h.observableSimilar)
		a.PATCH("/case/artifact/:observableId", h.updateObservable)
		a.DELETE("/case/artifact/:observableId", h.deleteObservable)
		a.POST("/alert/:alertId/artifact", h.createAlertObservables, upload)
		a.GET("/alert/:alertId/artifact", h.listAlertObservables)
		a.POST("/alert/:alertId/artifact/_search", h.listAlertObservables)
		a.POST("/alert/artifact/_search", h.searchAlertObservables)
		a.GET("/alert/artifact/:observableId", h.getObservable)
		a.PATCH("/alert/artifact/:observableId", h.updateObservable)
		a.DELETE("/alert/artifact/:observableId", h.deleteObservable)

		// --- alerts ---
		a.POST("/alert", h.createAlert)
		a.GET("/alert", h.listAlerts)
		a.POST("/alert/_search", h.listAlerts)
		a.POST("/alert/_stats", h.stats("alert"))
		a.POST("/alert/merge/_bulk", h.mergeAlerts)
		a.POST("/alert/delete/_bulk", h.bulkDeleteAlerts)
		a.GET("/alert/:alertId", h.getAlert)
		a.PATCH("/alert/:alertId", h.updateAlert)
		a.DELETE("/alert/:alertId", h.deleteAlert)
		a.POST("/alert/:alertId/markAsRead", h.markAsRead)
		a.POST("/alert/:alertId/markAsUnread", h.markAsUnread)
		a.POST("/alert/:alertId/markAsUnead", h.markAsUnread) // the contract's spelling
		a.POST("/alert/:alertId/follow", h.follow)
		a.POST("/alert/:alertId/unfollow", h.unfollow)
		a.POST("/alert/:alertId/createCase", h.createCaseFromAlert)
		a.POST("/alert/:alertId/merge/:caseId", h.mergeAlert)

		if prefix == "/api" {
			an.Routes(a) // analyses/
			if h.auto != nil {
				automationapi.New(h.auto, h.max).Routes(a) // automation/
			}
		}
	}

	// --- the query API: /api/v0/query and /api/v1/query (not /api/query, as in the reference system) ---
	for _, v := range []string{"/api/v0", "/api/v1"} {
		a := route.Routes{Routes: web.Routes{E: e, MW: []echo.MiddlewareFunc{authn, h.organisation}}, Prefix: v}
		a.POST("/query", h.query(v == "/api/v1"))
	}
}

// organisation runs after authentication: it picks the organisation of the request (the X-Organisation
// header, else the cookie set at login, else the user's first organisation) and sets the caller. A header
// naming an organisation the user does not belong to is a 403; a stale cookie falls back to the default.
func (h *handler) organisation(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := web.Caller[identity.User](c)
		org := c.Request().Header.Get(route.OrgHeader)
		if org == "" {
			if ck, err := c.Cookie(route.OrgHeader); err == nil && ck.Value != "" {
				if _, member := u.ProfileIn(identity.IDName(ck.Value)); member {
					org = ck.Value
				}
			}
		}
		caller, err := h.ids.CallerOf(u, org)
		if err != nil {
			return err
		}
		route.SetCaller(c, caller)
		withActor(c, caller) // who makes the request's changes, for their audit records
		return next(c)
	}
}
