package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
)

// mergeCases is POST /api/case/{caseId}/_merge/{mergedCaseId}, the reference system's v0 case merge (its UI's
// "Merge case"): both cases of the caller's organisation become one new case (cases.Service.MergeCases),
// answered with 201 and the new case, as TheHive 4.1 does.
func (h *handler) mergeCases(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	cs, err := h.svc.MergeCases(ctx, cl, []string{c.Param("caseId"), c.Param("mergedCaseId")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, h.caseJSON(cl, cs, nil))
}

// mergeCasesV1 is POST /api/v1/case/_merge/{caseIds}, the v1 merge of TheHive 4.1 (its later UI, thehive4py 2):
// the ids (or numbers) joined with commas, the first case's values first; 201 with the new case in the v1 names.
func (h *handler) mergeCasesV1(c echo.Context) error {
	ctx, cl := c.Request().Context(), route.Caller(c)
	cs, err := h.svc.MergeCases(ctx, cl, strings.Split(c.Param("caseIds"), ","))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, h.caseV1JSON(cl, cs))
}
