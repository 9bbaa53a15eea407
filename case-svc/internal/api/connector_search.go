package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// connectorSearchRoutes adds the reference system's connector lookups beside connectorRoutes (n: "analysis" or
// "cortex"): job search, one analyzer, responder search.
func (h *handler) connectorSearchRoutes(a route.Routes, n string) {
	p := "/connector/" + n
	a.POST(p+"/job/_search", h.searchAnalyzerJobs)
	a.GET(p+"/analyzer/:analyzerId", h.remoteAnalyzer)
	a.POST(p+"/responder/_search", h.searchResponders)
	a.GET(p+"/action/:objectType/:objectId", h.objectActions)
}

// actionFields are the fields an object's responder history may be sorted on.
var actionFields = search.Fields{"startDate": {Path: "startDate", Type: search.Number}, "endDate": {Path: "endDate", Type: search.Number},
	"status": {Path: "status"}, "responderName": {Path: "responderName"}, "responderId": {Path: "responderId"}}

// objectActions answers the responder actions run on an object of the organisation, newest first (the
// reference system's responder history; a member's read, as GET /action/{id}).
func (h *handler) objectActions(c echo.Context) error {
	obj, err := h.responderObject(c, c.Param("objectType"), c.Param("objectId"))
	if err != nil {
		return err
	}
	_, p, err := web.Search(c, actionFields, h.max)
	if err != nil {
		return err
	}
	acts, total, err := h.analyses.ActionsOf(c.Request().Context(), route.Caller(c), obj.Type, obj.ID, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(acts, actionJSON))
}

// searchAnalyzerJobs searches the analyzer jobs of the caller's organisation (the search DSL over
// connector.JobFields; range, sort, X-Total).
func (h *handler) searchAnalyzerJobs(c echo.Context) error {
	f, p, err := web.Search(c, connector.JobFields, h.max)
	if err != nil {
		return err
	}
	js, total, err := h.analyses.Jobs(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(js, jobJSON))
}

// remoteAnalyzer answers one analyzer of the servers the organisation may use, by id or name (manageAnalyse,
// as the list). An analyzer only an unreachable server has is a 404, with the server in X-Analysis-Warnings.
func (h *handler) remoteAnalyzer(c echo.Context) error {
	ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), false, "")
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		c.Response().Header().Set("X-Analysis-Warnings", strings.Join(warnings, "; "))
	}
	id := c.Param("analyzerId")
	i := slices.IndexFunc(ws, func(w connector.ServerWorkers) bool { return w.ID == id || w.Name == id })
	if i < 0 {
		return apperr.New(apperr.NotFound, "Analyzer not found")
	}
	return c.JSON(http.StatusOK, remoteWorkerJSON(ws[i]))
}

// responderFields are the fields a responder search may name; the merged list is filtered in memory (it comes
// from the analysis servers, not from the database).
var responderFields = search.Fields{"id": {Path: "id"}, "name": {Path: "name"}, "version": {Path: "version"},
	"description": {Path: "description"}, "dataTypeList": {Path: "dataTypeList"}}

// searchResponders lists the responders of the servers the organisation may use that match the query (eq,
// _in, _like, _and, _or, _not over responderFields; other operators: 400), with range and X-Total.
func (h *handler) searchResponders(c echo.Context) error {
	f, p, err := web.Search(c, responderFields, h.max)
	if err != nil {
		return err
	}
	ws, warnings, err := h.analyses.Workers(c.Request().Context(), route.Caller(c), true, "")
	if err != nil {
		return err
	}
	var out []connector.ServerWorkers
	for _, w := range ws {
		ok, err := matchWorker(f, w)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, w)
		}
	}
	total := len(out)
	out = out[min(p.Offset, len(out)):]
	if p.Limit > 0 {
		out = out[:min(p.Limit, len(out))]
	}
	return h.remoteListTotal(c, out, warnings, int64(total))
}

// matchWorker evaluates a parsed filter on a remote worker.
func matchWorker(n search.Node, w connector.ServerWorkers) (bool, error) {
	values := func(path string) []string {
		switch path {
		case "id":
			return []string{w.ID}
		case "name":
			return []string{w.Name}
		case "version":
			return []string{w.Version}
		case "description":
			return []string{w.Description}
		}
		return w.DataTypeList
	}
	switch n.Op {
	case "", search.OpAll:
		return true, nil
	case search.OpAnd, search.OpOr:
		for _, ch := range n.Children {
			ok, err := matchWorker(ch, w)
			if err != nil {
				return false, err
			}
			if ok == (n.Op == search.OpOr) {
				return ok, nil
			}
		}
		return n.Op == search.OpAnd, nil
	case search.OpNot:
		ok, err := matchWorker(n.Children[0], w)
		return !ok, err
	case search.OpEq:
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return any(v) == n.Value }), nil
	case search.OpIn:
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return slices.Contains(n.Values, any(v)) }), nil
	case search.OpLike:
		s, _ := n.Value.(string)
		return slices.ContainsFunc(values(n.Path), func(v string) bool { return strings.Contains(strings.ToLower(v), strings.ToLower(s)) }), nil
	}
	return false, apperr.Errorf(apperr.BadRequest, "a responder search takes field values, _in, _like, _and, _or and _not, not %s", n.Op)
}
