// Package status serves the service's status (/api/status: versions, the configuration a client reads, the
// analysis servers' state) and health word (/api/health), both without credentials.
package status

import (
	"context"
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/connector"
)

// Handler serves the status routes.
type Handler struct {
	version          string
	analyses         *connector.Analyses
	basic            bool
	downloadPassword string
	ready            func(ctx context.Context) error
}

// New returns the handlers: version is the service's, basic whether HTTP basic credentials are accepted,
// downloadPassword the password of the zips of /api/datastorezip, ready the database check (nil: none).
func New(version string, analyses *connector.Analyses, basic bool, downloadPassword string, ready func(ctx context.Context) error) *Handler {
	return &Handler{version: version, analyses: analyses, basic: basic, downloadPassword: downloadPassword, ready: ready}
}

type statusResponse struct {
	Versions   map[string]string `json:"versions"`
	Config     statusConfig      `json:"config"`
	Connectors map[string]any    `json:"connectors"`
}

// statusConfig is the config object of the reference case system's status (TheHive 4).
type statusConfig struct {
	ProtectDownloadsWith string   `json:"protectDownloadsWith"`
	AuthType             []string `json:"authType"`
	Capabilities         []string `json:"capabilities"`
	SsoAutoLogin         bool     `json:"ssoAutoLogin"`
	PollingDuration      int64    `json:"pollingDuration"` // ms the UI waits between stream polls
	FreeTagDefaultColour string   `json:"freeTagDefaultColour"`
}

type serverStatusJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Status  string `json:"status"`
}

type cortexStatusJSON struct {
	Enabled bool               `json:"enabled"`
	Status  string             `json:"status"`
	Servers []serverStatusJSON `json:"servers"`
}

// Status is GET /status, public as in the reference system. connectors.cortex lists the analysis servers with their
// version and whether they accept our key, from a check at most a few seconds old (connector.StatusTTL).
func (h *Handler) Status(c echo.Context) error {
	authTypes := []string{"key", "session"}
	if h.basic {
		authTypes = append(authTypes, "basic")
	}
	connectors := map[string]any{}
	if st := h.analyses.Status(c.Request().Context()); st.Enabled {
		servers := make([]serverStatusJSON, len(st.Servers))
		for i, s := range st.Servers {
			servers[i] = serverStatusJSON{Name: s.Name, Version: s.Version, Status: s.Status}
		}
		connectors["cortex"] = cortexStatusJSON{Enabled: true, Status: st.Status, Servers: servers}
	}
	return c.JSON(http.StatusOK, statusResponse{
		Versions: map[string]string{"case-svc": h.version, "Go": runtime.Version()},
		Config: statusConfig{
			ProtectDownloadsWith: h.downloadPassword,
			AuthType:             authTypes,
			Capabilities:         []string{"changePassword", "setPassword", "authByKey"},
			PollingDuration:      1000,
			FreeTagDefaultColour: "#000000",
		},
		Connectors: connectors,
	})
}

// Health is GET /health: the reference system's health word as text, always with 200: "Ok" when the database
// answers and every analysis server is OK, "Warning" when the database answers and a server is not,
// "Error" when the database does not answer.
func (h *Handler) Health(c echo.Context) error {
	if h.ready != nil {
		if err := h.ready(c.Request().Context()); err != nil {
			return c.String(http.StatusOK, "Error")
		}
	}
	switch st := h.analyses.Status(c.Request().Context()); {
	case !st.Enabled || st.Status == "OK":
		return c.String(http.StatusOK, "Ok")
	default:
		return c.String(http.StatusOK, "Warning")
	}
}
