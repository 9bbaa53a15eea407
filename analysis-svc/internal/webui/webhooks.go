package webui

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
	"github.com/openir/platform/pkg/webui"
)

// The orgadmin's webhooks (issue 13's /api/webhook): the organization's endpoints, which receive its job
// events, created, tested, enabled or disabled, edited and deleted through the API from ui.js; each with its
// recent deliveries and their re-send. Credentials (password, token, signing secret) are never shown back,
// only whether they are set.

// webhooks returns the endpoint manager for an orgadmin.
func (h *Handler) webhooks(c echo.Context) (*events.Webhooks, identity.Caller, error) {
	cl := caller(c)
	if err := cl.Require(identity.RoleOrgAdmin); err != nil {
		return nil, cl, err
	}
	if h.s.Webhooks == nil {
		return nil, cl, events.ErrNoWebhooks
	}
	return h.s.Webhooks, cl, nil
}

// webhooksPage lists the organization's webhooks with the form of a new one.
type webhooksPage struct {
	webui.Page
	Webhooks []events.EndpointView
	Webhook  *events.EndpointView // nil: the new webhook's form is empty
}

func (h *Handler) webhookList(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	eps, err := w.Endpoints(c.Request().Context(), cl.Org)
	if err != nil {
		return err
	}
	p := webhooksPage{Page: h.base(c, "Webhooks")}
	p.Current = "Webhooks"
	for _, e := range eps {
		p.Webhooks = append(p.Webhooks, events.ViewEndpoint(e))
	}
	return h.pages.Render(c, http.StatusOK, "webhooks", "", p)
}

// webhookPage is one webhook: its settings (the edit form), its test, and its recent deliveries.
type webhookPage struct {
	webui.Page
	Webhook    events.EndpointView
	List       webui.List
	Deliveries []events.DeliveryView
}

func (h *Handler) webhookDetail(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := w.Endpoint(ctx, cl.Org, web.Param(c, "id"))
	if err != nil {
		return err
	}
	v, _, err := webui.ParseList(c.QueryParams(), "-createdAt", nil)
	if err != nil {
		return err
	}
	ds, total, err := w.Deliveries(ctx, cl.Org, e.ID, search.Page{Offset: v.Offset, Limit: v.Size})
	if err != nil {
		return err
	}
	v.SetTotal(total)
	p := webhookPage{Page: h.base(c, "Webhook "+e.Name), Webhook: events.ViewEndpoint(e), List: v}
	p.Current = "Webhooks"
	for _, d := range ds {
		p.Deliveries = append(p.Deliveries, events.ViewDelivery(d))
	}
	return h.pages.Render(c, http.StatusOK, "webhook", fragment(c, "webhook-deliveries"), p)
}
