// Package webui is case-svc's web interface: the analyst's pages under /ui/ (cases, a case with its tasks,
// observables, reports and activity, alerts, task queues, administration), rendered on the server with
// html/template over the same domain services as the API handlers, with the caller the API's organisation
// middleware sets (so permissions and organisations apply exactly as for the API). Pages only read; every
// change is a request of the shared script (pkg/webui's ui.js) to the REST API, with the session cookie and
// its CSRF header, so that validation and the audit trail are the API's. The layout, style sheet, script and
// login page are pkg/webui's, shared with analysis-svc. (Not to be confused with internal/api/ui, which
// serves the reference UI's support routes describe and config.) docs/web-ui.md: how a page is added and
// tested.
package webui

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

//go:embed pages
var pageFiles embed.FS

// Service is the product name in the pages' title bar.
const Service = "case-svc"

// Services are the domain services the pages read.
type Services struct {
	Identity     *identity.Service
	Cases        *cases.Service
	Tasks        *task.Service
	Templates    *template.Service
	CustomFields *customfield.Service
	Connector    *connector.Analyses // nil: no analysis server configured
	Events       audit.Service       // nil: no activity timeline
}

// Handler serves the pages.
type Handler struct {
	s     Services
	pages *webui.Templates
	auth  web.AuthConfig
	log   *slog.Logger
}

// New parses the pages (a template error is a start-up error, never a page's).
func New(s Services, auth web.AuthConfig, log *slog.Logger) (*Handler, error) {
	t, err := webui.Parse(pageFiles, "pages/*.html", "pages/partial/*.html", funcs())
	if err != nil {
		return nil, err
	}
	return &Handler{s: s, pages: t, auth: auth, log: log}, nil
}

// Routes registers the pages. authn and org are the API's authentication and organisation middleware: a
// page request without a valid session goes to the login page with the page to return to.
func (h *Handler) Routes(e *echo.Echo, authn, org echo.MiddlewareFunc) {
	webui.Assets(e)
	home := func(c echo.Context) error { return c.Redirect(http.StatusFound, webui.Prefix+"/cases") }
	e.GET("/", home)
	e.GET(webui.Prefix, home)
	e.GET(webui.Prefix+"/", home)
	e.GET(webui.Prefix+"/login", h.pages.Login(Service, "/api/login"))
	r := web.Routes{E: e} // its routes decode their path parameters, as the API's
	// A page runs behind the API's middleware: a refused credential leads to the login page (with the page to
	// come back to), any other error to an error page.
	page := func(path string, fn echo.HandlerFunc) {
		r.GET(webui.Prefix+path, webui.Authed(fn, h.errorPage, authn, org))
	}
	page("/counters", h.counters)
	page("/cases", h.caseList)
	page("/cases/:caseId", h.casePage)
	page("/cases/:caseId/observables", h.caseObservablesFragment)
	page("/observables/:observableId", h.observablePage)
	page("/actions/:objectType/:objectId", h.actionsFragment)
	page("/alerts", h.alertList)
	page("/alerts/:alertId", h.alertPage)
	page("/tasks/mine", h.taskQueue(true))
	page("/tasks/waiting", h.taskQueue(false))
	page("/admin/users", h.adminUsers)
	page("/admin/templates", h.adminTemplates)
	page("/admin/organisations", h.adminOrgs)
	page("/admin/profiles", h.adminProfiles)
	page("/admin/customfields", h.adminFields)
	r.POST(webui.Prefix+"/organisation", h.switchOrg, authn, org)
}

// errorPage renders an error with the API's status and message (a 404 for another organisation's record, as
// the API answers); an internal error's cause is never shown.
func (h *Handler) errorPage(c echo.Context, err error) error {
	return h.pages.ErrorPage(c, err, h.log, h.base(c, ""))
}

// base is the layout's data for the caller: its name, organisations, the top bar.
func (h *Handler) base(c echo.Context, title string) webui.Page {
	p := webui.Base(c, Service, title)
	cl := route.Caller(c)
	if cl.Login == "" {
		return p
	}
	p.User, p.Name, p.Org, p.Orgs = cl.Login, cl.Name, cl.Org, cl.Orgs
	if p.Name == "" {
		p.Name = cl.Login
	}
	if cl.PlatformAdmin() {
		p.Nav = []webui.Link{{Name: "Organisations", Href: "/ui/admin/organisations"}, {Name: "Users", Href: "/ui/admin/users"},
			{Name: "Profiles", Href: "/ui/admin/profiles"}, {Name: "Custom fields", Href: "/ui/admin/customfields"}}
		return p
	}
	p.Nav = []webui.Link{
		{Name: "Cases", Href: "/ui/cases"},
		{Name: "My tasks", Href: "/ui/tasks/mine", ID: "myTasks"},
		{Name: "Waiting tasks", Href: "/ui/tasks/waiting", ID: "waitingTasks"},
		{Name: "Alerts", Href: "/ui/alerts", ID: "unreadAlerts"},
	}
	if cl.Can(identity.ManageUser) || cl.Can(identity.ManageCaseTemplate) {
		p.Nav = append(p.Nav, webui.Link{Name: "Administration", Href: "/ui/admin/users"})
	}
	if h.s.Connector != nil {
		for _, s := range h.s.Connector.Status(c.Request().Context()).Servers {
			class := "down"
			if s.Status == "OK" {
				class = "up"
			}
			p.Status = append(p.Status, webui.Link{Name: s.Name, Class: class})
		}
	}
	return p
}

// Counters are the top bar's live counts.
type Counters struct {
	MyTasks      int64 `json:"myTasks"`
	WaitingTasks int64 `json:"waitingTasks"`
	UnreadAlerts int64 `json:"unreadAlerts"`
}

func (h *Handler) countersOf(ctx context.Context, cl identity.Caller) (Counters, error) {
	var out Counters
	if cl.PlatformAdmin() {
		return out, nil
	}
	var err error
	count := func(dst *int64, f func() (int64, error)) {
		if err == nil {
			*dst, err = f()
		}
	}
	one := search.Page{Limit: 1}
	count(&out.MyTasks, func() (int64, error) {
		_, n, err := h.s.Tasks.List(ctx, cl, "", and(eq("owner", cl.Login), in("status", task.Waiting, task.InProgress)), one)
		return n, err
	})
	count(&out.WaitingTasks, func() (int64, error) {
		_, n, err := h.s.Tasks.List(ctx, cl, "", eq("status", task.Waiting), one)
		return n, err
	})
	count(&out.UnreadAlerts, func() (int64, error) {
		_, n, err := h.s.Cases.Alerts(ctx, cl, eq("status", "New"), one)
		return n, err
	})
	return out, err
}

func (h *Handler) counters(c echo.Context) error {
	n, err := h.countersOf(c.Request().Context(), route.Caller(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

// switchOrg keeps the organisation the user works in (one of its own) in the cookie the API reads.
func (h *Handler) switchOrg(c echo.Context) error {
	var req struct {
		Organisation string `json:"organisation"`
	}
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if !route.Caller(c).Member(req.Organisation) {
		return apperr.New(apperr.NotFound, "organisation not found")
	}
	c.SetCookie(&http.Cookie{Name: route.OrgHeader, Value: req.Organisation, Path: "/", Secure: h.auth.Secure,
		SameSite: http.SameSiteLaxMode})
	return c.NoContent(http.StatusNoContent)
}

// Filters built from a page's query string: the search language of the API, so that a page's list is what
// the API's search of the same filter returns.
func eq(field string, v any) search.Node { return search.Node{Op: search.OpEq, Path: field, Value: v} }

func in(field string, vs ...any) search.Node {
	return search.Node{Op: search.OpIn, Path: field, Values: vs}
}

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

// statusSeverity is the status and severity filter of a list (cases, alerts) from its query string.
func statusSeverity(q url.Values) ([]search.Node, error) {
	var parts []search.Node
	if s := q.Get("status"); s != "" {
		parts = append(parts, eq("status", s))
	}
	if s := q.Get("severity"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 4 {
			return nil, apperr.New(apperr.BadRequest, "severity must be 1 to 4")
		}
		parts = append(parts, eq("severity", int64(n)))
	}
	return parts, nil
}

// parseStringFilter parses the free filter of a list (the API's _string language) against fields.
func parseStringFilter(s string, fields search.Fields) (search.Node, error) {
	if strings.TrimSpace(s) == "" {
		return search.Node{Op: search.OpAll}, nil
	}
	n, err := search.Parse(map[string]any{"_string": s}, fields)
	if err != nil {
		var e *apperr.Error
		if errors.As(err, &e) {
			return n, apperr.New(apperr.BadRequest, "filter: "+e.Message)
		}
		return n, apperr.New(apperr.BadRequest, "filter: "+err.Error())
	}
	return n, nil
}
