package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/search"
)

// linkedCaseResponse is a linked case as the reference system writes it: the case, with the observables of
// the asked case whose values it shares (linkedWith) and their number (linksCount).
type linkedCaseResponse struct {
	caseResponse
	LinkedWith []observableResponse `json:"linkedWith"`
	LinksCount int                  `json:"linksCount"`
}

func (h *handler) linkedJSON(cl identity.Caller, lc cases.LinkedCase) linkedCaseResponse {
	return linkedCaseResponse{caseResponse: h.caseJSON(cl, lc.Case, nil),
		LinkedWith: route.MapSlice(lc.Shared, observableJSON), LinksCount: len(lc.Shared)}
}

// LinksTruncatedHeader is set (to "true") on a links answer cut by one of the bounds of cases.LinkedCases.
const LinksTruncatedHeader = "X-Links-Truncated"

// caseLinks answers GET /api/case/{id}/links (thehive4py get_linked_cases): the cases sharing observables
// with the case, bounded (cases.LinksCompareMax…): a cut answer says so in LinksTruncatedHeader.
func (h *handler) caseLinks(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	cs, err := h.svc.Case(ctx, cl, c.Param("caseId"))
	if err != nil {
		return err
	}
	links, cut, err := h.svc.LinkedCases(ctx, cl, cs, search.Node{Op: search.OpAll})
	if err != nil {
		return err
	}
	if cut {
		c.Response().Header().Set(LinksTruncatedHeader, "true")
	}
	return c.JSON(http.StatusOK, route.MapSlice(links, func(lc cases.LinkedCase) linkedCaseResponse { return h.linkedJSON(cl, lc) }))
}

// similarObservableResponse is an observable of another case with the same value, with that case.
type similarObservableResponse struct {
	observableResponse
	Case caseResponse `json:"case"`
}

// observableSimilar answers GET /api/case/artifact/{id}/similar.
func (h *handler) observableSimilar(c echo.Context) error {
	cl := route.Caller(c)
	l, err := h.svc.ObservableSimilar(c.Request().Context(), cl, c.Param("observableId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, route.MapSlice(l, func(s cases.SimilarObservable) similarObservableResponse {
		return similarObservableResponse{observableResponse: observableJSON(s.Observable), Case: h.caseJSON(cl, s.Case, nil)}
	}))
}
