// Package webui is analysis-svc's web interface under /ui/: the analyst's job history, job reports and new
// analysis, the orgadmin's users and analyzers, the superadmin's organizations and definition catalog. Pages
// are rendered on the server with html/template over the domain services (analysis.Jobs, analysis.Workers,
// identity.Service) with the caller the API's authentication middleware sets, so roles and organizations
// apply exactly as for the API. Pages only read; every change is a request of the shared script (pkg/webui's
// ui.js) to the REST API with the session cookie and its CSRF header. The layout, style sheet, script and
// login page are pkg/webui's, shared with case-svc. docs/web-ui.md: how a page is added and tested.
package webui

import (
	"context"
	"embed"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

//go:embed pages
var pageFiles embed.FS

// Service is the product name in the pages' title bar.
const Service = "analysis-svc"

// Services are the domain services the pages read.
type Services struct {
	Identity *identity.Service
	Jobs     *analysis.Jobs
	Workers  *analysis.Workers
	// Webhooks are the organizations' webhooks (nil: not configured, no webhook page).
	Webhooks *events.Webhooks
	// Version is the service's version (the status page); ZipPassword the password of the protected zip
	// downloads (public, as in GET /api/status); Ready checks the database (nil: not checked).
	Version     string
	ZipPassword string
	Ready       func(context.Context) error
}

// Handler serves the pages.
type Handler struct {
	s     Services
	pages *webui.Templates
	log   *slog.Logger
}

// New parses the pages (a template error is a start-up error, never a page's).
func New(s Services, log *slog.Logger) (*Handler, error) {
	t, err := webui.Parse(pageFiles, "pages/*.html", "pages/partial/*.html", funcs())
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{s: s, pages: t, log: log}, nil
}

// Routes registers the pages. authn is the API's authentication middleware: a page request without a valid
// session goes to the login page with the page to return to.
func (h *Handler) Routes(e *echo.Echo, authn echo.MiddlewareFunc) {
	webui.Assets(e)
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, webui.Prefix+"/") })
	e.GET(webui.Prefix+"/login", h.pages.Login(Service, "/api/login"))
	// A page without a valid session goes to the login page with the page to come back to.
	r := web.Routes{E: e} // its routes decode their path parameters, as the API's
	page := func(path string, fn echo.HandlerFunc) { r.GET(webui.Prefix+path, webui.Authed(fn, h.errorPage, authn)) }
	page("", h.home)
	page("/", h.home)
	page("/counters", h.counters)
	page("/me", h.mePage)
	page("/status", h.statusPage)
	page("/jobs", h.jobList)
	page("/jobs/:id", h.jobPage)
	page("/analyze", h.analyzePage)
	page("/analyze/plan", h.analyzePlan)
	page("/admin/users", h.adminUsers)
	for _, k := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
		page("/admin/"+plural(k), h.adminWorkers(k))
		page("/admin/"+plural(k)+"/enable/:definitionId", h.enablePage(k))
		page("/admin/"+plural(k)+"/edit/:id", h.editPage(k))
	}
	page("/admin/webhooks", h.webhookList)
	page("/admin/webhooks/:id", h.webhookDetail)
	page("/admin/organizations", h.adminOrgs)
	page("/admin/catalog", h.adminCatalog)
}

func caller(c echo.Context) identity.Caller { return web.Caller[identity.Caller](c) }

// errorPage renders an error with the API's status and message (a 404 for another organization's record, as
// the API answers); an internal error's cause is never shown.
func (h *Handler) errorPage(c echo.Context, err error) error {
	return h.pages.ErrorPage(c, err, h.log, h.base(c, ""))
}

// home sends the caller to its first page: a superadmin to the organizations, anyone else to the jobs.
func (h *Handler) home(c echo.Context) error {
	if caller(c).Superadmin() {
		return c.Redirect(http.StatusFound, webui.Prefix+"/admin/organizations")
	}
	return c.Redirect(http.StatusFound, webui.Prefix+"/jobs")
}

// base is the layout's data for the caller: its login, organization and the top bar by role.
func (h *Handler) base(c echo.Context, title string) webui.Page {
	p := webui.Base(c, Service, title)
	if !webui.Authenticated(c) {
		return p
	}
	who := caller(c)
	p.User, p.Name, p.Org = who.Login, who.Login, who.Org
	switch {
	case who.Superadmin():
		p.Nav = []webui.Link{{Name: "Organizations", Href: "/ui/admin/organizations"}, {Name: "Users", Href: "/ui/admin/users"},
			{Name: "Catalog", Href: "/ui/admin/catalog"}}
	default:
		p.Nav = []webui.Link{{Name: "Jobs", Href: "/ui/jobs", ID: "activeJobs"}}
		if who.Has(identity.RoleAnalyze) {
			p.Nav = append(p.Nav, webui.Link{Name: "New analysis", Href: "/ui/analyze"})
		}
		if who.Has(identity.RoleOrgAdmin) {
			p.Nav = append(p.Nav, webui.Link{Name: "Analyzers", Href: "/ui/admin/analyzers"}, webui.Link{Name: "Responders", Href: "/ui/admin/responders"},
				webui.Link{Name: "Users", Href: "/ui/admin/users"}, webui.Link{Name: "Catalog", Href: "/ui/admin/catalog"})
			if h.s.Webhooks != nil {
				p.Nav = append(p.Nav, webui.Link{Name: "Webhooks", Href: "/ui/admin/webhooks"})
			}
		}
	}
	p.Nav = append(p.Nav, webui.Link{Name: "Status", Href: "/ui/status"}, webui.Link{Name: "My account", Href: "/ui/me"})
	return p
}

// Counters are the top bar's live counts: the organization's jobs waiting or running.
type Counters struct {
	ActiveJobs int64 `json:"activeJobs"`
}

func (h *Handler) counters(c echo.Context) error {
	var out Counters
	cl := caller(c)
	if !cl.Superadmin() {
		_, n, err := h.s.Jobs.Search(c.Request().Context(), cl, search.Node{Op: search.OpIn, Path: "status",
			Values: []any{analysis.JobWaiting, analysis.JobInProgress}}, search.Page{Limit: 1})
		if err != nil {
			return err
		}
		out.ActiveJobs = n
	}
	return c.JSON(http.StatusOK, out)
}

// and joins filters (the match-all ones left out).
func and(ns ...search.Node) search.Node {
	var kids []search.Node
	for _, n := range ns {
		if n.Op != "" && n.Op != search.OpAll {
			kids = append(kids, n)
		}
	}
	switch len(kids) {
	case 0:
		return search.Node{Op: search.OpAll}
	case 1:
		return kids[0]
	}
	return search.Node{Op: search.OpAnd, Children: kids}
}

func eq(path string, v any) search.Node { return search.Node{Op: search.OpEq, Path: path, Value: v} }

var all = search.Node{Op: search.OpAll}
