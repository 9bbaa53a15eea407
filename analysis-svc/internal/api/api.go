// Package api is the HTTP surface of analysis-svc: the routes of spec/analysis-api.md, their request and
// response types, and the translation between them and the analysis domain.
package api

import (
	_ "embed"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/analysis-svc/internal/webui"
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
	web.APIConfig // MaxFile: the largest file of an analyzer run (job.max_file)
	Ready         web.Options
	// Events are the job events' stream and webhooks (nil: no /api/stream, no /api/webhook).
	Events *events.Bus
}

type handler struct {
	ids     *identity.Service
	workers *analysis.Workers
	jobs    *analysis.Jobs
	cfg     Config
	max     int
	auth    web.AuthConfig
}

// New returns the service's HTTP handler with every route registered.
func New(cfg Config, ids *identity.Service, workers *analysis.Workers, jobs *analysis.Jobs) *echo.Echo {
	opts := cfg.Ready
	opts.Log, opts.Limits = cfg.Log, cfg.Limits
	if cfg.Events != nil {
		opts.Collectors = append(opts.Collectors, cfg.Events.Metrics.Collectors()...)
	}
	e := web.New(opts)
	cfg.Auth.Transport = cfg.Secure // basic credentials follow the HTTPS rule of the password endpoints
	h := &handler{ids: ids, workers: workers, jobs: jobs, cfg: cfg, max: cfg.SearchMax, auth: cfg.Auth}
	h.routes(e)
	// The web interface (internal/webui): its pages are embedded, so a template error fails every start and
	// every test, never one request.
	s := webui.Services{Identity: ids, Jobs: jobs, Workers: workers, Version: Version,
		ZipPassword: h.downloadPassword(), Ready: cfg.Ready.Ready}
	if cfg.Events != nil {
		s.Webhooks = cfg.Events.Webhooks()
	}
	pages, err := webui.New(s, cfg.Log)
	if err != nil {
		panic(err)
	}
	pages.Routes(e, web.Authenticate[identity.Caller](h.ids, h.auth))
	return e
}

// routes registers the whole API surface, top to bottom.
func (h *handler) routes(e *echo.Echo) {
	authn := web.Authenticate[identity.Caller](h.ids, h.auth)
	secure := web.RequireSecure(h.cfg.Secure)

	e.GET("/api/status", h.status)
	e.GET("/api/health", h.health)
	web.ServeOpenAPI(e, func() ([]byte, error) { return openapi.JSON(openapiYAML) })
	e.POST("/api/login", h.login, secure) // a password: HTTPS only, as the password endpoints
	e.POST("/api/logout", h.logout)
	e.GET("/api/logout", h.logout)

	a := web.Routes{E: e, MW: []echo.MiddlewareFunc{authn}}
	a.GET("/api/user/current", h.currentUser)

	a.GET("/api/organization", h.listOrgs)
	a.POST("/api/organization/_search", h.listOrgs)
	a.POST("/api/organization/_stats", h.orgStats)
	a.POST("/api/organization", h.createOrg)
	a.GET("/api/organization/:orgId", h.getOrg)
	a.PATCH("/api/organization/:orgId", h.updateOrg)
	a.DELETE("/api/organization/:orgId", h.deleteOrg)
	a.GET("/api/organization/:orgId/user", h.listOrgUsers)
	a.POST("/api/organization/:orgId/user/_search", h.listOrgUsers)

	a.GET("/api/user", h.listUsers)
	a.POST("/api/user/_search", h.listUsers)
	a.POST("/api/user", h.createUser)
	a.GET("/api/user/:login", h.getUser)
	a.PATCH("/api/user/:login", h.updateUser)
	a.POST("/api/user/:login/password/set", h.setPassword, secure)
	a.POST("/api/user/:login/password/change", h.changePassword, secure)
	a.POST("/api/user/:login/key/renew", h.renewKey, secure)
	a.GET("/api/user/:login/key", h.getKey, secure)
	a.DELETE("/api/user/:login/key", h.revokeKey, secure)

	// Analyzers and responders share handlers; the kind middleware says which.
	for _, k := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
		kk := kind(k)
		n := string(k)
		a.GET("/api/"+n+"definition", h.listDefinitions, kk)
		a.POST("/api/organization/"+n+"/:definitionId", h.enableWorker, kk)
		a.GET("/api/organization/"+n, h.listWorkers, kk)
		a.GET("/api/organization/"+n+"/_search", h.listWorkers, kk) // GET, as Cortex routes it
		a.GET("/api/"+n, h.listWorkers, kk)
		a.POST("/api/"+n+"/_search", h.listWorkers, kk)
		a.GET("/api/"+n+"/type/:dataType", h.workersForType, kk)
		a.GET("/api/"+n+"/:id", h.getWorker, kk)
		a.PATCH("/api/"+n+"/:id", h.updateWorker, kk)
		a.DELETE("/api/"+n+"/:id", h.disableWorker, kk)
		a.GET("/api/"+n+"config", h.listBaseConfigs, kk) // base configurations (baseconfig.go)
		a.GET("/api/"+n+"config/:name", h.getBaseConfig, kk)
		a.PATCH("/api/"+n+"config/:name", h.updateBaseConfig, kk)
		if k == analysis.KindAnalyzer {
			a.POST("/api/"+n+"/:id/run", h.runWorker, kk, web.Upload(h.cfg.MaxFile)) // an observable file
		} else {
			a.POST("/api/"+n+"/:id/run", h.runWorker, kk)
		}
	}

	h.scanRoutes(a) // POST /api/{analyzer,responder}definition/scan (scan.go)

	a.GET("/api/job", h.searchJobs)
	a.POST("/api/job/_search", h.searchJobs)
	a.POST("/api/job/status", h.jobStatuses)
	a.GET("/api/job/:id", h.getJob)
	a.GET("/api/job/:id/report", h.jobReport)
	a.GET("/api/job/:id/waitreport", h.waitReport, web.LongPoll) // bounded by job.waitreport.max
	a.GET("/api/job/:id/artifacts", h.jobArtifacts)
	a.DELETE("/api/job/:id", h.deleteJob)
	a.GET("/api/datastore/:hash", h.download)
	a.GET("/api/datastorezip/:hash", h.downloadZip)
	h.eventRoutes(a)
}

func caller(c echo.Context) identity.Caller { return web.Caller[identity.Caller](c) }
