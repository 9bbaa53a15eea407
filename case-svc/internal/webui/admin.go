package webui

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/webui"
)

// adminPage is the administration of users (an org-admin: its organisation's; a platform admin: everyone's),
// case templates (org-admin), organisations, profiles and custom fields (platform admin).
type adminPage struct {
	webui.Page
	Tab           string
	Tabs          []webui.Link
	Users         []identity.User
	Profiles      []identity.Profile
	Templates     []template.Template
	Organisations []identity.Organisation
	Fields        []customfield.Field
	Platform      bool
}

func (h *Handler) admin(c echo.Context, tab string) (adminPage, error) {
	cl := route.Caller(c)
	p := adminPage{Page: h.base(c, "Administration"), Tab: tab, Platform: cl.PlatformAdmin(), Profiles: identity.Profiles()}
	p.Current = "Administration"
	if p.Platform {
		p.Current = map[string]string{"users": "Users", "organisations": "Organisations", "profiles": "Profiles",
			"customfields": "Custom fields"}[tab]
		p.Tabs = []webui.Link{{Name: "Organisations", Href: "/ui/admin/organisations", ID: "organisations"},
			{Name: "Users", Href: "/ui/admin/users", ID: "users"}, {Name: "Profiles", Href: "/ui/admin/profiles", ID: "profiles"},
			{Name: "Custom fields", Href: "/ui/admin/customfields", ID: "customfields"}}
		return p, nil
	}
	if err := cl.Require(identity.ManageUser); err != nil && tab == "users" {
		return p, err
	}
	if err := cl.Require(identity.ManageCaseTemplate); err != nil && tab == "templates" {
		return p, err
	}
	p.Tabs = []webui.Link{{Name: "Users", Href: "/ui/admin/users", ID: "users"},
		{Name: "Case templates", Href: "/ui/admin/templates", ID: "templates"}}
	return p, nil
}

func (h *Handler) adminUsers(c echo.Context) error {
	p, err := h.admin(c, "users")
	if err != nil {
		return err
	}
	if p.Users, _, err = h.s.Identity.Users(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
		return err
	}
	if p.Platform {
		if p.Organisations, _, err = h.s.Identity.Orgs(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
			search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
			return err
		}
	}
	return h.pages.Render(c, http.StatusOK, "admin", "", p)
}

func (h *Handler) adminTemplates(c echo.Context) error {
	p, err := h.admin(c, "templates")
	if err != nil {
		return err
	}
	if p.Platform {
		return errBadTab
	}
	if p.Templates, _, err = h.s.Templates.List(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "name"}}}); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "admin", "", p)
}

func (h *Handler) adminOrgs(c echo.Context) error {
	p, err := h.admin(c, "organisations")
	if err != nil {
		return err
	}
	if err := route.Caller(c).Require(identity.ManageOrganisation); err != nil {
		return err
	}
	if p.Organisations, _, err = h.s.Identity.Orgs(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "admin", "", p)
}

// adminProfiles lists the profiles and their permissions (platform administration).
func (h *Handler) adminProfiles(c echo.Context) error {
	p, err := h.admin(c, "profiles")
	if err != nil {
		return err
	}
	if err := route.Caller(c).Require(identity.ManageProfile); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "admin", "", p)
}

// adminFields lists and creates the custom field definitions (platform administration).
func (h *Handler) adminFields(c echo.Context) error {
	p, err := h.admin(c, "customfields")
	if err != nil {
		return err
	}
	if err := customfield.RequireManager(route.Caller(c)); err != nil {
		return err
	}
	if p.Fields, _, err = h.s.CustomFields.List(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: 1000, Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "admin", "", p)
}
