package api

import (
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/protectzip"
)

// CortexVersion is what /api/status reports as versions.Cortex: the version of the reference analysis API
// this service speaks, marked as ours. The reference case system's client only requires a string there; a
// missing key marks the server as down and hides its analyzers.
const CortexVersion = "3.1.8-analysis-svc-" + Version

type statusResponse struct {
	Versions map[string]string `json:"versions"`
	Config   statusConfig      `json:"config"`
	Warnings []string          `json:"warnings,omitempty"` // e.g. a definition path that yields no definition
}

// statusConfig is the config object of the reference analysis server's status.
type statusConfig struct {
	ProtectDownloadsWith string   `json:"protectDownloadsWith"`
	AuthType             []string `json:"authType"`
	Capabilities         []string `json:"capabilities"`
	SsoAutoLogin         bool     `json:"ssoAutoLogin"`
}

func (h *handler) downloadPassword() string {
	return protectzip.Password(h.cfg.DownloadPassword)
}

func (h *handler) status(c echo.Context) error {
	authTypes := []string{"key", "session"}
	if h.auth.Basic {
		authTypes = append(authTypes, "basic")
	}
	return c.JSON(http.StatusOK, statusResponse{
		Versions: map[string]string{"Cortex": CortexVersion, "analysis-svc": Version, "Go": runtime.Version()},
		Config: statusConfig{ProtectDownloadsWith: h.downloadPassword(), AuthType: authTypes,
			Capabilities: []string{"changePassword", "setPassword", "authByKey"}},
		Warnings: h.workers.Catalog().Warnings(),
	})
}

// health answers "Ok" (text, 200) when the database answers and "Error" otherwise, the words of the
// reference systems' health routes.
func (h *handler) health(c echo.Context) error {
	if h.cfg.Ready.Ready != nil {
		if err := h.cfg.Ready.Ready(c.Request().Context()); err != nil {
			return c.String(http.StatusOK, "Error")
		}
	}
	return c.String(http.StatusOK, "Ok")
}
