package web

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

// ServeOpenAPI registers GET /api/openapi.json, the service's OpenAPI document (docs/openapi.md), readable
// without credentials. doc makes the JSON once, at the first request (a server that is never asked pays
// nothing); its error answers 500 (the service's tests load the same document, so a tested build has none).
func ServeOpenAPI(e *echo.Echo, doc func() ([]byte, error)) {
	once := sync.OnceValues(doc)
	e.GET("/api/openapi.json", func(c echo.Context) error {
		b, err := once()
		if err != nil {
			return apperr.Wrap(apperr.Internal, "the OpenAPI document cannot be loaded", err)
		}
		return c.JSONBlob(http.StatusOK, b)
	})
}
