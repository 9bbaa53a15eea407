package webui

import (
	"net/http"
	"slices"
	"strconv"
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
}

func (h *Handler) adminWorkers(kind analysis.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		cl := caller(c)
		if err := cl.Require(identity.RoleOrgAdmin); err != nil {
			return err
		}
		p := workersPage{Page: h.base(c, plural(kind)), Kind: kind, Plural: string(kind) + "s", Secret: map[string]bool{}}
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
				it := analysis.ConfigItem{Name: k}
				if i := slices.IndexFunc(d.ConfigurationItems, func(it analysis.ConfigItem) bool { return it.Name == k }); i >= 0 {
					it = d.ConfigurationItems[i]
				}
				p.Secret[k] = p.Secret[k] || analysis.IsSecretItem(it)
			}
		}
		return h.pages.Render(c, http.StatusOK, "workers", "", p)
	}
}

func plural(k analysis.Kind) string { return string(k) + "s" }

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// workerForm is the form that enables a definition or edits an enabled worker: one field per configuration
// item of the definition and per global item (TLP and PAP checks, proxies…), by type (string, text, number,
// boolean, multi-valued), required and defaults; the name and limits (rate, cache, job timeout). Enabling,
// the fields hold the defaults; editing, the worker's values, except a credential's (analysis.IsSecretItem):
// its field is never filled, left empty it keeps the stored value (the API keeps an omitted credential),
// filled it replaces it, and an optional one can be removed. The edit form sends the whole configuration,
// which the API's PATCH replaces.
type workerForm struct {
	webui.Page
	Kind       analysis.Kind
	Plural     string
	Definition analysis.Definition
	Known      bool             // the definition is in the catalog (editing: otherwise only name and limits)
	Worker     *analysis.Worker // editing: the worker; nil: enabling
	Items      []itemField
	Globals    []itemField
	RateUnits  []string
}

// itemField is one configuration item's field: its value as the field holds it ("" for a credential).
type itemField struct {
	analysis.ConfigItem
	Value  string // text, number and string fields; multi: one per line
	Bool   string // boolean: "true", "false" or "" (the default)
	Secret bool   // a password field, never filled
	Stored bool   // editing a credential that has a value: left empty, the field keeps it
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
		return h.workerForm(c, kind, d, nil)
	}
}

func (h *Handler) editPage(kind analysis.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		cl := caller(c)
		if err := cl.Require(identity.RoleOrgAdmin); err != nil {
			return err
		}
		w, err := h.s.Workers.Worker(c.Request().Context(), cl, kind, web.Param(c, "id"))
		if err != nil {
			return err
		}
		d, _ := h.s.Workers.Catalog().Definition(kind, w.DefinitionID)
		return h.workerForm(c, kind, d, &w)
	}
}

func (h *Handler) workerForm(c echo.Context, kind analysis.Kind, d analysis.Definition, w *analysis.Worker) error {
	title := "Enable " + d.Name
	if w != nil {
		title = "Edit " + w.Name
	}
	p := workerForm{Page: h.base(c, title), Kind: kind, Plural: plural(kind), Definition: d, Known: d.ID != "",
		Worker: w, RateUnits: rateUnits}
	p.Current = titleCase(p.Plural)
	if p.Known {
		p.Items = fields(d.ConfigurationItems, w)
		p.Globals = fields(analysis.GlobalItems(kind), w)
	}
	return h.pages.Render(c, http.StatusOK, "workerform", "", p)
}

// fields are the items' fields with the defaults (w nil) or the worker's values.
func fields(items []analysis.ConfigItem, w *analysis.Worker) []itemField {
	out := make([]itemField, len(items))
	for i, it := range items {
		f := itemField{ConfigItem: it, Secret: analysis.IsSecretItem(it)}
		v := it.DefaultValue
		if w != nil {
			v = w.Configuration[it.Name]
		}
		switch {
		case f.Secret:
			f.Stored = w != nil && !emptyValue(v)
		case it.Type == "boolean" && !it.Multi:
			if b, ok := v.(bool); ok && w != nil {
				f.Bool = strconv.FormatBool(b)
			}
		default:
			f.Value = fieldText(v)
		}
		out[i] = f
	}
	return out
}

// fieldText is a value as its form field holds it: a list one per line.
func fieldText(v any) string {
	if l, ok := v.([]any); ok {
		parts := make([]string, len(l))
		for i, x := range l {
			parts[i] = dataText(x)
		}
		return strings.Join(parts, "\n")
	}
	return dataText(v)
}

func emptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
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
