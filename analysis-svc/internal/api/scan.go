package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/web"
)

// scanResponse answers POST /api/{analyzer,responder}definition/scan. The reference server answers 204 at
// once and scans in the background (both kinds); this one scans the route's kind before answering and says
// what changed, so an operator sees a refused definition or a wrong path right away (README).
type scanResponse struct {
	Type        string                       `json:"type"`      // analyzer or responder
	Added       []string                     `json:"added"`     // definition ids
	Changed     []string                     `json:"changed"`   // ids whose definition file changed
	Removed     []string                     `json:"removed"`   // ids no longer found
	Unchanged   int                          `json:"unchanged"` // how many loaded definitions stayed as they were
	Refused     []analysis.RefusedDefinition `json:"refused"`   // {file, definition, reason}
	Warnings    []string                     `json:"warnings"`  // configured paths that yield no definition
	Definitions int                          `json:"definitions"`
}

// scanRoutes registers the two scan routes (orgadmin or superadmin, checked in analysis.Workers.Scan).
func (h *handler) scanRoutes(a web.Routes) {
	for _, k := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
		a.POST("/api/"+string(k)+"definition/scan", h.scanDefinitions, kind(k))
	}
}

func (h *handler) scanDefinitions(c echo.Context) error {
	rep, err := h.workers.Scan(caller(c), kindOf(c))
	if err != nil {
		return err
	}
	refused := rep.Refused
	if refused == nil {
		refused = []analysis.RefusedDefinition{}
	}
	return c.JSON(http.StatusOK, scanResponse{Type: string(rep.Kind), Added: rep.Added, Changed: rep.Changed,
		Removed: rep.Removed, Unchanged: rep.Unchanged, Refused: refused, Warnings: rep.Warnings,
		Definitions: rep.Definitions})
}
