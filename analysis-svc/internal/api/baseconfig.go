package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

// GET/PATCH /api/{analyzer,responder}config[/{name}]: an organization's base configurations (analysis
// baseconfig.go), shaped as Cortex serves them.

type baseConfigResponse struct {
	Name               string                `json:"name"`
	Workers            []string              `json:"workers"`
	ConfigurationItems []analysis.ConfigItem `json:"configurationItems"`
	Config             map[string]any        `json:"config"`
}

func baseConfigJSON(b analysis.BaseConfig) baseConfigResponse {
	r := baseConfigResponse{Name: b.Name, Workers: b.Workers, ConfigurationItems: b.Items, Config: b.Config}
	if r.Workers == nil {
		r.Workers = []string{}
	}
	if r.ConfigurationItems == nil {
		r.ConfigurationItems = []analysis.ConfigItem{}
	}
	if r.Config == nil {
		r.Config = map[string]any{}
	}
	return r
}

func (h *handler) listBaseConfigs(c echo.Context) error {
	bs, err := h.workers.BaseConfigs(c.Request().Context(), caller(c), kindOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, mapSlice(bs, baseConfigJSON)) // no X-Total, as Cortex
}

func (h *handler) getBaseConfig(c echo.Context) error {
	b, err := h.workers.BaseConfig(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, baseConfigJSON(b))
}

// baseConfigRequest is the body of PATCH: the values, which replace the stored ones.
type baseConfigRequest struct {
	Config web.Opt[json.RawMessage] `json:"config"`
}

func (h *handler) updateBaseConfig(c echo.Context) error {
	var req baseConfigRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if !req.Config.Set {
		return apperr.Fields(apperr.FieldError{Name: "config", Message: "required: an object of configuration values"})
	}
	conf, err := rawObject("config", req.Config.V)
	if err != nil {
		return err
	}
	if conf == nil {
		conf = map[string]any{}
	}
	b, err := h.workers.SetBaseConfig(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "name"), conf)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, baseConfigJSON(b))
}
