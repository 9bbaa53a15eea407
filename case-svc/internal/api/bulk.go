package api

// The _bulk and _stats routes of the reference system's v0 API (TheHive 4.1 v0 router: PATCH /case/_bulk,
// PATCH /case/artifact/_bulk, POST /alert/delete/_bulk, POST /case/_stats). The reference system runs a bulk
// request in one transaction: one unknown id (or one of another organisation) fails the whole request with
// 404. Here every id is checked first (permission, then each record in the caller's organisation) and only
// then are the single-object service methods applied one by one; a change refused on validation after the
// first ones were applied leaves those applied (no transaction across records).

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

type bulkRequest struct {
	IDs web.Strings `json:"ids"`
}

// bulkIDs reads the ids of a bulk request: required, without duplicates, at most the search maximum.
func (h *handler) bulkIDs(c echo.Context) ([]string, error) {
	var req bulkRequest
	if err := web.Bind(c, &req); err != nil {
		return nil, err
	}
	if req.IDs == nil {
		return nil, apperr.Fields(apperr.FieldError{Name: "ids", Message: "required"})
	}
	max := h.max
	if max <= 0 {
		max = web.DefaultMax
	}
	if len(req.IDs) > max {
		return nil, apperr.Fields(apperr.FieldError{Name: "ids", Message: fmt.Sprintf("at most %d ids", max)})
	}
	seen := make(map[string]bool, len(req.IDs))
	out := make([]string, 0, len(req.IDs))
	for _, id := range req.IDs {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// bulkCheck requires the permission and finds every id in the caller's organisation before any change.
func bulkCheck(ctx context.Context, cl identity.Caller, perm identity.Permission, ids []string, find func(context.Context, string) error) error {
	if err := cl.Require(perm); err != nil {
		return err
	}
	for _, id := range ids {
		if err := find(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// bulkUpdateCases is PATCH /case/_bulk {ids, …case fields}: 200 with the updated cases.
func (h *handler) bulkUpdateCases(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	ids, err := h.bulkIDs(c)
	if err != nil {
		return err
	}
	u, err := bindCaseUpdate(c)
	if err != nil {
		return err
	}
	if err := bulkCheck(ctx, cl, identity.ManageCase, ids, func(ctx context.Context, id string) error {
		_, err := h.svc.Case(ctx, cl, id)
		return err
	}); err != nil {
		return err
	}
	out := make([]caseResponse, 0, len(ids))
	for _, id := range ids {
		cs, err := h.svc.UpdateCase(ctx, cl, id, u)
		if err != nil {
			return err
		}
		out = append(out, h.caseJSON(cl, cs, nil))
	}
	return c.JSON(http.StatusOK, out)
}

// bulkUpdateObservables is PATCH /case/artifact/_bulk {ids, …observable fields}: 204.
func (h *handler) bulkUpdateObservables(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	ids, err := h.bulkIDs(c)
	if err != nil {
		return err
	}
	u, err := bindObservableUpdate(c)
	if err != nil {
		return err
	}
	if err := bulkCheck(ctx, cl, identity.ManageObservable, ids, func(ctx context.Context, id string) error {
		_, err := h.svc.Observable(ctx, cl, id)
		return err
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := h.svc.UpdateObservable(ctx, cl, id, u); err != nil {
			return err
		}
	}
	return c.NoContent(http.StatusNoContent)
}

// bulkDeleteAlerts is POST /alert/delete/_bulk {ids}: 204.
func (h *handler) bulkDeleteAlerts(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	ids, err := h.bulkIDs(c)
	if err != nil {
		return err
	}
	if err := bulkCheck(ctx, cl, identity.ManageAlert, ids, func(ctx context.Context, id string) error {
		_, err := h.svc.Alert(ctx, cl, id)
		return err
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := h.svc.DeleteAlert(ctx, cl, id); err != nil {
			return err
		}
	}
	return c.NoContent(http.StatusNoContent)
}
