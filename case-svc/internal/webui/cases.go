package webui

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/webui"
)

var caseSorts = map[string]bool{"caseId": true, "title": true, "severity": true, "startDate": true, "status": true,
	"owner": true, "updatedAt": true, "tlp": true}

// caseListPage is the case list: quick filters and a free filter in the URL, sortable columns, exact count.
type caseListPage struct {
	webui.Page
	View      webui.List
	Cases     []cases.Case
	Templates []template.Template
	Users     []identity.User
	CanWrite  bool
	Statuses  []string
	Quick     []webui.Link
	Fields    []customfield.Field // the custom fields one may show as columns
	Columns   []string            // the custom fields shown (query parameter col, repeated)
}

// caseFilter is the list's filter from the query string: status, severity, tag, assignee (me = the caller),
// flag, q (a case number, or words of the title) and filter (the API's _string language).
func caseFilter(c echo.Context, cl identity.Caller) (search.Node, error) {
	q := c.QueryParams()
	parts, err := statusSeverity(q)
	if err != nil {
		return search.Node{}, err
	}
	if s := q.Get("tag"); s != "" {
		parts = append(parts, eq("tags", s))
	}
	if s := q.Get("assignee"); s != "" {
		if s == "me" {
			s = cl.Login
		}
		parts = append(parts, eq("owner", s))
	}
	if q.Get("flag") == "true" {
		parts = append(parts, eq("flag", true))
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		if n, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64); err == nil {
			parts = append(parts, eq("caseId", n))
		} else {
			parts = append(parts, search.Node{Op: search.OpLike, Path: "title", Value: s})
		}
	}
	free, err := parseStringFilter(q.Get("filter"), cases.CaseFields)
	if err != nil {
		return search.Node{}, err
	}
	parts = append(parts, free)
	return and(parts...), nil
}

func (h *Handler) caseList(c echo.Context) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	v, sort, err := webui.ParseList(c.QueryParams(), "-caseId", caseSorts)
	if err != nil {
		return err
	}
	f, err := caseFilter(c, cl)
	if err != nil {
		return err
	}
	list, total, err := h.s.Cases.Cases(ctx, cl, f, search.Page{Offset: v.Offset, Limit: v.Size, Sort: sort})
	if err != nil {
		return err
	}
	v.SetTotal(total)
	p := caseListPage{Page: h.base(c, "Cases"), View: v, Cases: list, CanWrite: cl.Can(identity.ManageCase),
		Statuses: cases.CaseStatuses()}
	p.Current = "Cases"
	if p.Fields, _, err = h.s.CustomFields.List(ctx, cl, search.Node{Op: search.OpAll}, search.Page{Limit: 200,
		Sort: []search.SortKey{{Path: "_id"}}}); err != nil {
		return err
	}
	for _, col := range c.QueryParams()["col"] {
		if slices.ContainsFunc(p.Fields, func(f customfield.Field) bool { return f.Name == col }) && !slices.Contains(p.Columns, col) {
			p.Columns = append(p.Columns, col)
		}
	}
	if p.CanWrite {
		if p.Templates, _, err = h.s.Templates.List(ctx, cl, search.Node{Op: search.OpAll}, search.Page{Limit: 100,
			Sort: []search.SortKey{{Path: "name"}}}); err != nil {
			return err
		}
		if p.Users, err = h.assignable(c); err != nil {
			return err
		}
	}
	p.Quick = []webui.Link{
		{Name: "My open cases", Href: "?status=Open&assignee=me"},
		{Name: "Open", Href: "?status=Open"},
		{Name: "Flagged", Href: "?flag=true"},
		{Name: "Critical and high", Href: "?filter=" + urlQuery("severity:3 OR severity:4")},
		{Name: "Resolved", Href: "?status=Resolved"},
		{Name: "All", Href: "?"},
	}
	return h.pages.Render(c, http.StatusOK, "cases", "", p)
}

// assignable lists the users of the caller's organisation (for assignee choices).
func (h *Handler) assignable(c echo.Context) ([]identity.User, error) {
	users, _, err := h.s.Identity.Users(c.Request().Context(), route.Caller(c), search.Node{Op: search.OpAll},
		search.Page{Limit: 500, Sort: []search.SortKey{{Path: "_id"}}})
	return users, err
}
