package webui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

// rateUnits are the units of a worker's rate limit.
var rateUnits = []string{"Second", "Minute", "Hour", "Day", "Month"}

// roleSets are the role sets a user may hold, as the create form offers them (value: the roles, comma-separated).
var roleSets = []string{"read", "read,analyze", "read,analyze,orgadmin"}

// usersPage is the users of the orgadmin's organization, or of every organization for a superadmin.
type usersPage struct {
	webui.Page
	Users    []identity.User
	OrgNames []string // superadmin: the organizations a new user may join
	RoleSets []string
	Super    bool
	Self     string
}

func (h *Handler) adminUsers(c echo.Context) error {
	ctx := c.Request().Context()
	cl := caller(c)
	p := usersPage{Page: h.base(c, "Users"), RoleSets: roleSets, Super: cl.Superadmin(), Self: cl.Login}
	p.Current = "Users"
	page := search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}}
	var err error
	if p.Super {
		if p.Users, _, err = h.s.Identity.Users(ctx, cl, all, page); err != nil {
			return err
		}
		orgs, _, err := h.s.Identity.Orgs(ctx, cl, all, page)
		if err != nil {
			return err
		}
		for _, o := range orgs {
			p.OrgNames = append(p.OrgNames, o.ID)
		}
		p.RoleSets = append(slices.Clone(roleSets), "superadmin")
	} else if p.Users, _, err = h.s.Identity.OrgUsers(ctx, cl, cl.Org, all, page); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "users", "", p)
}

// workersPage is the organization's enabled analyzers (or responders) and the definitions it may enable.
type workersPage struct {
	webui.Page
	Kind        analysis.Kind
	Plural      string // "analyzers" or "responders": the page's path
	Workers     []analysis.Worker
	Definitions []analysis.Definition
	Secret      map[string]bool // the configuration items shown only as set or not set
	RateUnits   []string
}

func (h *Handler) adminWorkers(kind analysis.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		cl := caller(c)
		if err := cl.Require(identity.RoleOrgAdmin); err != nil {
			return err
		}
		p := workersPage{Page: h.base(c, plural(kind)), Kind: kind, Plural: string(kind) + "s", Secret: map[string]bool{}, RateUnits: rateUnits}
		p.Title = titleCase(p.Plural)
		p.Current = p.Title
		var err error
		if p.Workers, _, err = h.s.Workers.List(ctx, cl, kind, all, search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "name"}}}); err != nil {
			return err
		}
		if p.Definitions, err = h.s.Workers.Definitions(cl, kind); err != nil {
			return err
		}
		for _, w := range p.Workers {
			d, _ := h.s.Workers.Catalog().Definition(kind, w.DefinitionID)
			for k := range w.Configuration {
				p.Secret[k] = p.Secret[k] || secretName(k) || slices.ContainsFunc(d.ConfigurationItems,
					func(it analysis.ConfigItem) bool { return it.Name == k && it.Secret })
			}
		}
		return h.pages.Render(c, http.StatusOK, "workers", "", p)
	}
}

// secretName tells configuration values shown only as set or not set: items named like a credential (the
// service's rule, analysis.IsSecretName) and the proxies (their URL may hold a password).
func secretName(name string) bool {
	return analysis.IsSecretName(name) || strings.HasPrefix(name, "proxy")
}

// secretItem tells the items whose form field is a password field, never filled.
func secretItem(it analysis.ConfigItem) bool { return it.Secret || secretName(it.Name) }

func plural(k analysis.Kind) string { return string(k) + "s" }

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// enablePage is the form that enables a definition: one field per configuration item of the definition and
// per global item, by type (string, text, number, boolean, multi-valued), required and defaults; a secret
// item is a password field, never filled.
type enablePage struct {
	webui.Page
	Kind       analysis.Kind
	Plural     string
	Definition analysis.Definition
	Items      []analysis.ConfigItem
	Globals    []analysis.ConfigItem
	RateUnits  []string
}

func (h *Handler) enablePage(kind analysis.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		cl := caller(c)
		if err := cl.Require(identity.RoleOrgAdmin); err != nil {
			return err
		}
		d, ok := h.s.Workers.Catalog().Definition(kind, web.Param(c, "definitionId"))
		if !ok {
			return apperr.Errorf(apperr.NotFound, "%s definition %s not found", kind, web.Param(c, "definitionId"))
		}
		p := enablePage{Page: h.base(c, "Enable "+d.Name), Kind: kind, Plural: plural(kind), Definition: d,
			Items: d.ConfigurationItems, Globals: analysis.GlobalItems(kind),
			RateUnits: rateUnits}
		p.Current = titleCase(p.Plural)
		return h.pages.Render(c, http.StatusOK, "enable", "", p)
	}
}

// orgsPage is the superadmin's organizations.
type orgsPage struct {
	webui.Page
	Organizations []identity.Organization
}

func (h *Handler) adminOrgs(c echo.Context) error {
	cl := caller(c)
	orgs, _, err := h.s.Identity.Orgs(c.Request().Context(), cl, all, search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}})
	if err != nil {
		return err
	}
	p := orgsPage{Page: h.base(c, "Organizations"), Organizations: orgs}
	p.Current = "Organizations"
	return h.pages.Render(c, http.StatusOK, "orgs", "", p)
}

// catalogPage is the definitions this server can run (analyzers and responders), the path warnings of the
// last scans and the scan actions (superadmin and orgadmin).
type catalogPage struct {
	webui.Page
	Analyzers  []analysis.Definition
	Responders []analysis.Definition
	Warnings   []string
	Admin      bool // orgadmin: a link to enable each definition
}

func (h *Handler) adminCatalog(c echo.Context) error {
	cl := caller(c)
	p := catalogPage{Page: h.base(c, "Catalog"), Warnings: h.s.Workers.Catalog().Warnings(), Admin: cl.Has(identity.RoleOrgAdmin)}
	p.Current = "Catalog"
	var err error
	if p.Analyzers, err = h.s.Workers.Definitions(cl, analysis.KindAnalyzer); err != nil {
		return err
	}
	if p.Responders, err = h.s.Workers.Definitions(cl, analysis.KindResponder); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "catalog", "", p)
}
