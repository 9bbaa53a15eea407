package api

import (
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/protectzip"
)

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

func (h *handler) downloadPassword() string {
	return protectzip.Password(h.cfg.DownloadPassword)
}

// status is public, as in the reference system. connectors.cortex lists the analysis servers with their
// version and whether they accept our key, from a check at most a few seconds old (connector.StatusTTL).
func (h *handler) status(c echo.Context) error {
	authTypes := []string{"key", "session"}
	if h.auth.Basic {
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
		Versions: map[string]string{"case-svc": Version, "Go": runtime.Version()},
		Config: statusConfig{
			ProtectDownloadsWith: h.downloadPassword(),
			AuthType:             authTypes,
			Capabilities:         []string{"changePassword", "setPassword", "authByKey"},
			PollingDuration:      1000,
			FreeTagDefaultColour: "#000000",
		},
		Connectors: connectors,
	})
}

// health answers the reference system's health word as text, always with 200: "Ok" when the database
// answers and every analysis server is OK, "Warning" when the database answers and a server is not,
// "Error" when the database does not answer.
func (h *handler) health(c echo.Context) error {
	if h.cfg.Ready != nil {
		if err := h.cfg.Ready(c.Request().Context()); err != nil {
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
