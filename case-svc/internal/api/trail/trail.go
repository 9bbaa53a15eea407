// Package trail serves case-svc's events (issue 13): the audit trail (GET /api/audit, POST
// /api/audit/_search, GET /api/flow, v1 GET /api/v1/audit, and the query API's steps listAudit, audits and
// listAuditFromObject), the live stream (/api/stream) and the webhooks of an organisation (/api/webhook).
package trail

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// Handler serves the event routes.
type Handler struct {
	events  audit.Service
	queries func() *query.Engine
	max     int
}

// New returns the handlers over the audit service (nil: no event route); queries makes the query engine of a
// request (the audit steps start from a query of records), max is the largest page of a search.
func New(events audit.Service, queries func() *query.Engine, max int) *Handler {
	return &Handler{events: events, queries: queries, max: max}
}

// Routes registers the event routes under one prefix (none without an audit service).
func (h *Handler) Routes(a route.Routes) {
	if h.events == nil {
		return
	}
	switch a.Prefix {
	case "/api/v1":
		a.GET("/audit", h.listAudit)
		return
	case "/api/v0":
		a.GET("/audit", h.listAudit)
		a.POST("/audit/_search", h.listAudit)
		a.GET("/flow", h.flow)
		return
	}
	a.GET("/audit", h.listAudit)
	a.POST("/audit/_search", h.listAudit)
	a.GET("/flow", h.flow)

	a.POST("/stream", h.createStream)
	a.GET("/stream/status", h.streamStatus)
	a.GET("/stream/:streamId", h.pollStream, web.LongPoll)

	a.GET("/webhook", h.listWebhooks)
	a.POST("/webhook", h.createWebhook)
	a.GET("/webhook/:webhookId", h.getWebhook)
	a.PATCH("/webhook/:webhookId", h.updateWebhook)
	a.DELETE("/webhook/:webhookId", h.deleteWebhook)
	a.GET("/webhook/:webhookId/delivery", h.listDeliveries)
	a.POST("/webhook/:webhookId/delivery/:deliveryId/resend", h.resendDelivery)
	a.POST("/webhook/:webhookId/test", h.testWebhook)
}

func (h *Handler) listAudit(c echo.Context) error {
	f, p, err := web.Search(c, audit.Fields, h.max)
	if err != nil {
		return err
	}
	list, total, err := h.events.Events(c.Request().Context(), route.Caller(c).Org, f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(list, events.MessageOf))
}

// flow answers the latest events of a case or alert (rootId), or of the organisation, grouped by request.
func (h *Handler) flow(c echo.Context) error {
	n := 10
	if s := c.QueryParam("count"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return apperr.New(apperr.BadRequest, "count must be a positive integer")
		}
		n = min(v, h.max)
	}
	f := search.Node{Op: search.OpAll}
	if root := c.QueryParam("rootId"); root != "" {
		f = search.Node{Op: search.OpEq, Path: "rootId", Value: root}
	}
	list, _, err := h.events.Events(c.Request().Context(), route.Caller(c).Org, f,
		search.Page{Limit: n, Sort: []search.SortKey{{Path: "date", Desc: true}}})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.Messages(list))
}

// Query runs a query whose records are audit events: listAudit, listAuditFromObject {objectId}, or any
// query of records followed by audits (the events of a case or alert and what belongs to it; of the record
// itself for the other kinds), then filter, sort, page or count.
func (h *Handler) Query(c echo.Context, steps []map[string]any, v1 bool) error {
	ctx := c.Request().Context()
	cl := route.Caller(c)
	q := h.queries()
	p := &query.Pipeline{Kind: query.KindAudit, Filter: search.Node{Op: search.OpAll}}
	var out query.Output
	rest := steps
	switch name, _ := steps[0]["_name"].(string); name {
	case "listAudit":
		if err := query.Params(name, steps[0]); err != nil {
			return err
		}
		rest = steps[1:]
	case "listAuditFromObject":
		if err := query.Params(name, steps[0], "objectId"); err != nil {
			return err
		}
		id, _ := steps[0]["objectId"].(string)
		if id == "" {
			return query.BadStep(name, "objectId must be a non-empty string")
		}
		p.Filter = search.Node{Op: search.OpEq, Path: "objectId", Value: id}
		rest = steps[1:]
	default:
		i := slices.IndexFunc(steps, func(s map[string]any) bool { return s["_name"] == "audits" })
		if i <= 0 {
			return query.BadStep(name, "audits must follow a query of records")
		}
		if err := query.Params("audits", steps[i]); err != nil {
			return err
		}
		src, err := h.startSteps(ctx, cl, q, steps[:i])
		if err != nil {
			return err
		}
		items, err := q.Collect(ctx, cl, src, "audits")
		if err != nil {
			return err
		}
		roots, objects := []any{}, []any{}
		for _, it := range items {
			switch src.Kind {
			case query.KindCase, query.KindAlert:
				roots = append(roots, query.RecordID(it))
			default:
				objects = append(objects, query.RecordID(it))
			}
		}
		p.Filter = search.Node{Op: search.OpOr, Children: []search.Node{
			{Op: search.OpIn, Path: "rootId", Values: roots}, {Op: search.OpIn, Path: "objectId", Values: objects}}}
		rest = steps[i+1:]
	}
	for _, step := range rest {
		name, _ := step["_name"].(string)
		if out.Page || out.Count {
			return query.BadStep(name, "nothing may follow page or count")
		}
		switch name {
		case "filter", "sort", "page", "count":
			if name == "page" {
				delete(step, "extraData")
			}
			if err := q.Next(ctx, cl, p, &out, name, step); err != nil {
				return err
			}
		default:
			return query.BadStep(name, "does not apply to audits")
		}
	}
	if len(p.Sort) == 0 {
		p.Sort = []search.SortKey{{Path: "date", Desc: true}}
	}
	from, limit := 0, h.max
	if out.Page {
		from, limit = out.From, out.To-out.From
	}
	if out.Count {
		limit = 1
	}
	list, total, err := h.events.Events(ctx, cl.Org, p.Filter, search.Page{Offset: from, Limit: max(limit, 1), Sort: p.Sort})
	if err != nil {
		return err
	}
	if out.Count {
		return c.JSON(http.StatusOK, total)
	}
	if limit == 0 {
		list = nil
	}
	if out.Page && !v1 {
		c.Response().Header().Set("X-Total", strconv.FormatInt(total, 10))
	}
	return c.JSON(http.StatusOK, route.MapSlice(list, events.MessageOf))
}

// startSteps runs the steps of a query of records (before audits).
func (h *Handler) startSteps(ctx context.Context, cl identity.Caller, q *query.Engine, steps []map[string]any) (*query.Pipeline, error) {
	var p *query.Pipeline
	var out query.Output
	for _, step := range steps {
		name, _ := step["_name"].(string)
		if p == nil {
			var err error
			if p, err = q.Start(ctx, cl, name, step); err != nil {
				return nil, err
			}
			continue
		}
		if name == "page" || name == "count" {
			return nil, query.BadStep(name, "cannot come before audits")
		}
		if err := q.Next(ctx, cl, p, &out, name, step); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// IsQuery reports whether a query's records are audit events.
func IsQuery(raw []any) bool {
	for i, r := range raw {
		step, _ := r.(map[string]any)
		name, _ := step["_name"].(string)
		if (i == 0 && (name == "listAudit" || name == "listAuditFromObject")) || name == "audits" {
			return true
		}
	}
	return false
}

// --- stream ---

func (h *Handler) createStream(c echo.Context) error {
	cl := route.Caller(c)
	id, err := h.events.CreateStream(cl.Login, cl.Org)
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, id)
}

func (h *Handler) pollStream(c echo.Context) error {
	evs, err := h.events.PollStream(c.Request().Context(), c.Param("streamId"), route.Caller(c).Login)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, events.Messages(evs))
}

func (h *Handler) streamStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"remaining": 3600, "warning": false})
}

// --- webhooks ---

// webhookResponse is events.EndpointView with case-svc's identity fields.
type webhookResponse struct {
	ID   string `json:"_id"`
	Type string `json:"_type"`
	events.EndpointView
}

func webhookJSON(e audit.Endpoint) webhookResponse {
	return webhookResponse{ID: e.ID, Type: "webhook", EndpointView: events.ViewEndpoint(e)}
}

// deliveryResponse is events.DeliveryView with case-svc's _id.
type deliveryResponse struct {
	ID string `json:"_id"`
	events.DeliveryView
}

func deliveryJSON(d audit.Delivery) deliveryResponse {
	return deliveryResponse{ID: d.ID, DeliveryView: events.ViewDelivery(d)}
}

func (h *Handler) listWebhooks(c echo.Context) error {
	list, err := h.events.Endpoints(c.Request().Context(), route.Caller(c))
	if err != nil {
		return err
	}
	return web.List(c, int64(len(list)), route.MapSlice(list, webhookJSON))
}

func (h *Handler) createWebhook(c echo.Context) error {
	var req audit.EndpointInput
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	e, err := h.events.CreateEndpoint(c.Request().Context(), route.Caller(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookJSON(e))
}

func (h *Handler) getWebhook(c echo.Context) error {
	e, err := h.events.Endpoint(c.Request().Context(), route.Caller(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(e))
}

func (h *Handler) updateWebhook(c echo.Context) error {
	var req audit.EndpointInput
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	e, err := h.events.UpdateEndpoint(c.Request().Context(), route.Caller(c), c.Param("webhookId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(e))
}

func (h *Handler) deleteWebhook(c echo.Context) error {
	if err := h.events.DeleteEndpoint(c.Request().Context(), route.Caller(c), c.Param("webhookId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Handler) listDeliveries(c echo.Context) error {
	_, p, err := web.Search(c, search.Fields{}, h.max)
	if err != nil {
		return err
	}
	list, total, err := h.events.Deliveries(c.Request().Context(), route.Caller(c), c.Param("webhookId"), p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(list, deliveryJSON))
}

func (h *Handler) resendDelivery(c echo.Context) error {
	d, err := h.events.Resend(c.Request().Context(), route.Caller(c), c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deliveryJSON(d))
}

func (h *Handler) testWebhook(c echo.Context) error {
	d, err := h.events.TestEndpoint(c.Request().Context(), route.Caller(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deliveryJSON(d))
}
