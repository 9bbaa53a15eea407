// Package api is the HTTP surface of case-svc (spec/case-api.md). Until the case issue lands it serves only
// the service status and the operational endpoints of pkg/web.
package api

import (
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/web"
)

// Version is the service version reported by /api/status.
const Version = "0.1.0"

// New returns the service's HTTP handler with every route registered.
func New(opts web.Options) *echo.Echo {
	e := web.New(opts)
	e.GET("/api/status", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{
			"versions": map[string]string{"case-svc": Version, "Go": runtime.Version()},
			"config":   map[string]any{"authType": []string{"key", "session"}},
		})
	})
	return e
}
