package webui

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
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

// statusPage is the service's state: version, database, the definition paths' warnings and the job queue:
// the caller's organization's waiting and running jobs, or every organization's with this replica's workers
// (superadmin).
type statusPage struct {
	webui.Page
	Version    string
	DatabaseOK bool
	Warnings   []string
	Queue      analysis.QueueStatus
	Super      bool
}

func (h *Handler) statusPage(c echo.Context) error {
	ctx := c.Request().Context()
	cl := caller(c)
	p := statusPage{Page: h.base(c, "Status"), Version: h.s.Version, DatabaseOK: h.ready(ctx) == nil,
		Warnings: h.s.Workers.Catalog().Warnings(), Super: cl.Superadmin()}
	p.Current = "Status"
	var err error
	if p.Queue, err = h.s.Jobs.Queue(ctx, cl); err != nil {
		return err
	}
	return h.pages.Render(c, http.StatusOK, "status", "", p)
}

func (h *Handler) ready(ctx context.Context) error {
	if h.s.Ready == nil {
		return nil
	}
	return h.s.Ready(ctx)
}
