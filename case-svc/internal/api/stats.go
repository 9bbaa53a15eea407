package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

// The _stats routes of TheHive 4.1's v0 API ({query, stats: [aggregation…]}, one per record, and POST
// /api/_stats with a list of {model, query, stats}): their aggregations run in package query (Engine.Stats),
// the engine of the query's aggregation step too.

// stats is POST /<record>/_stats {query, stats}: the aggregations' results merged into one object.
func (h *handler) stats(model string) echo.HandlerFunc {
	return func(c echo.Context) error {
		fields, err := web.Fields(c)
		if err != nil {
			return err
		}
		left := query.MaxQueries
		out, err := h.queries().Stats(c.Request().Context(), route.Caller(c), model, fields["query"], fields["stats"], &left)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
}

// allStats is POST /_stats {stats: [{model, query, stats}…]}: every result deep-merged into one object.
func (h *handler) allStats(c echo.Context) error {
	fields, err := web.Fields(c)
	if err != nil {
		return err
	}
	list, ok := fields["stats"].([]any)
	if !ok {
		return apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of {model, query, stats}"})
	}
	if len(list) > query.MaxAggs {
		return apperr.Fields(apperr.FieldError{Name: "stats", Message: fmt.Sprintf("at most %d entries", query.MaxAggs)})
	}
	out := map[string]any{}
	left := query.MaxQueries
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of {model, query, stats}"})
		}
		model, _ := m["model"].(string)
		if !query.IsStatsModel(model) {
			return apperr.Fields(apperr.FieldError{Name: "model", Message: fmt.Sprintf("unknown model %q", query.Shorten(model))})
		}
		r, err := h.queries().Stats(c.Request().Context(), route.Caller(c), model, m["query"], m["stats"], &left)
		if err != nil {
			return err
		}
		query.Merge(out, r)
	}
	return c.JSON(http.StatusOK, out)
}
