package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// mergeCases is POST /api/case/{caseId}/_merge/{mergedCaseId}, the reference system's v0 case merge (its UI's
// "Merge case"): both cases of the caller's organisation become one new case (cases.Service.MergeCases),
// answered with 201 and the new case, as TheHive 4.1 does.
func (h *handler) mergeCases(c echo.Context) error {
	ctx, cl := c.Request().Context(), caller(c)
	cs, err := h.svc.MergeCases(ctx, cl, []string{c.Param("caseId"), c.Param("mergedCaseId")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, h.caseJSON(cl, cs, nil))
}
