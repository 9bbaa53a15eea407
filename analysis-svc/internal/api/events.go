package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// The events of issue 13 (pkg/events): Cortex's live stream of the caller's organisation's job events
// (POST /api/stream, GET /api/stream/{id}, GET /api/stream/status), and the webhooks of an organisation,
// which receive its JobFinished events (/api/webhook, org-admins).

// eventRoutes registers the event routes (none without events).
func (h *handler) eventRoutes(a web.Routes) {
	if h.cfg.Events == nil {
		return
	}
	a.POST("/api/stream", h.createStream)
	a.GET("/api/stream/status", h.streamStatus)
	a.GET("/api/stream/:streamId", h.pollStream, web.LongPoll)

	a.GET("/api/webhook", h.listWebhooks)
	a.POST("/api/webhook", h.createWebhook)
	a.GET("/api/webhook/:webhookId", h.getWebhook)
	a.PATCH("/api/webhook/:webhookId", h.updateWebhook)
	a.DELETE("/api/webhook/:webhookId", h.deleteWebhook)
	a.GET("/api/webhook/:webhookId/delivery", h.listDeliveries)
	a.POST("/api/webhook/:webhookId/delivery/:deliveryId/resend", h.resendDelivery)
	a.POST("/api/webhook/:webhookId/test", h.testWebhook)
}

// JobObject renders a job in events as the API shows it.
func JobObject(j analysis.Job) map[string]any {
	b, err := json.Marshal(jobJSON(j))
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	return m
}

// --- stream ---

func (h *handler) createStream(c echo.Context) error {
	cl := caller(c)
	id, err := h.cfg.Events.Hub().Create(cl.Login, cl.Org)
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, id)
}

func (h *handler) pollStream(c echo.Context) error {
	evs, err := h.cfg.Events.Hub().Poll(c.Request().Context(), c.Param("streamId"), caller(c).Login)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.Messages(evs))
}

// streamStatus answers as Cortex does: the seconds left before the session expires, and whether to warn.
func (h *handler) streamStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"remaining": int64(h.auth.SessionTTL / time.Second), "warning": false})
}

// --- webhooks ---

// webhooks returns the endpoint manager for an org-admin of an organization.
func (h *handler) webhooks(c echo.Context) (*events.Webhooks, identity.Caller, error) {
	cl := caller(c)
	w := h.cfg.Events.Webhooks()
	if w == nil {
		return nil, cl, events.ErrNoWebhooks
	}
	if !cl.Has(identity.RoleOrgAdmin) {
		return nil, cl, apperr.New(apperr.Forbidden, "this action needs the role orgadmin")
	}
	return w, cl, nil
}

func (h *handler) listWebhooks(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	list, err := w.Endpoints(c.Request().Context(), cl.Org)
	if err != nil {
		return err
	}
	return web.List(c, int64(len(list)), mapSlice(list, events.ViewEndpoint))
}

func (h *handler) createWebhook(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	var req events.EndpointInput
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	e, err := w.Create(c.Request().Context(), cl.Org, cl.Login, events.NewEndpointID(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, events.ViewEndpoint(e))
}

func (h *handler) getWebhook(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	e, err := w.Endpoint(c.Request().Context(), cl.Org, c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.ViewEndpoint(e))
}

func (h *handler) updateWebhook(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	var req events.EndpointInput
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	e, err := w.Update(c.Request().Context(), cl.Org, c.Param("webhookId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.ViewEndpoint(e))
}

func (h *handler) deleteWebhook(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	if err := w.Delete(c.Request().Context(), cl.Org, c.Param("webhookId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) listDeliveries(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	_, p, err := web.Search(c, search.Fields{}, h.max)
	if err != nil {
		return err
	}
	list, total, err := w.Deliveries(c.Request().Context(), cl.Org, c.Param("webhookId"), p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(list, events.ViewDelivery))
}

func (h *handler) resendDelivery(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	d, err := w.Resend(c.Request().Context(), cl.Org, c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.ViewDelivery(d))
}

func (h *handler) testWebhook(c echo.Context) error {
	w, cl, err := h.webhooks(c)
	if err != nil {
		return err
	}
	d, err := w.Test(c.Request().Context(), cl.Org, cl.Login, c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.ViewDelivery(d))
}
