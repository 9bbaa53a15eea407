package webui

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/webui"
)

// mePage is the signed-in user's own page: name, password change, own API key (revealed or renewed on a
// click, into the page, never into a URL).
type mePage struct {
	webui.Page
	Me identity.User
}

func (h *Handler) mePage(c echo.Context) error {
	u, err := h.s.Identity.Current(c.Request().Context(), caller(c))
	if err != nil {
		return err
	}
	p := mePage{Page: h.base(c, "My account"), Me: u}
	p.Current = "My account"
	return h.pages.Render(c, http.StatusOK, "me", "", p)
}

// statusPage is the service's state: version, database, the definition paths' warnings and, for an
// organization's user, its jobs waiting and running.
type statusPage struct {
	webui.Page
	Version    string
	DatabaseOK bool
	Warnings   []string
	Queue      []queueCount // nil for a superadmin (jobs are an organization's)
}

type queueCount struct {
	Status string
	N      int64
}

func (h *Handler) statusPage(c echo.Context) error {
	ctx := c.Request().Context()
	cl := caller(c)
	p := statusPage{Page: h.base(c, "Status"), Version: h.s.Version, DatabaseOK: h.ready(ctx) == nil,
		Warnings: h.s.Workers.Catalog().Warnings()}
	p.Current = "Status"
	if !cl.Superadmin() {
		for _, st := range []string{analysis.JobWaiting, analysis.JobInProgress} {
			_, n, err := h.s.Jobs.Search(ctx, cl, eq("status", st), search.Page{Limit: 1})
			if err != nil {
				return err
			}
			p.Queue = append(p.Queue, queueCount{Status: st, N: n})
		}
	}
	return h.pages.Render(c, http.StatusOK, "status", "", p)
}

func (h *Handler) ready(ctx context.Context) error {
	if h.s.Ready == nil {
		return nil
	}
	return h.s.Ready(ctx)
}
