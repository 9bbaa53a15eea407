package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/pkg/web"
)

type customFieldResponse struct {
	route.Meta
	Name        string `json:"name"`
	Reference   string `json:"reference"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Options     []any  `json:"options"`
	Mandatory   bool   `json:"mandatory"`
}

func customFieldJSON(f customfield.Field) customFieldResponse {
	opts := f.Options
	if opts == nil {
		opts = []any{}
	}
	return customFieldResponse{Meta: route.MetaOf(f.ID, "customField", f.Meta), Name: f.Name, Reference: f.Name,
		DisplayName: f.DisplayName, Description: f.Description, Type: string(f.Type), Options: opts,
		Mandatory: f.Mandatory}
}

type createCustomFieldRequest struct {
	Name        string `json:"name"`
	Reference   string `json:"reference"` // the older name of name
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Options     []any  `json:"options"`
	Mandatory   bool   `json:"mandatory"`
}

func (h *handler) createCustomField(c echo.Context) error {
	var req createCustomFieldRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Name == "" {
		req.Name = req.Reference
	}
	f, err := h.fields.Create(c.Request().Context(), route.Caller(c), customfield.NewField{Name: req.Name,
		DisplayName: req.DisplayName, Description: req.Description, Type: req.Type, Options: req.Options,
		Mandatory: req.Mandatory})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, customFieldJSON(f))
}

func (h *handler) getCustomField(c echo.Context) error {
	f, err := h.fields.Field(c.Request().Context(), route.Caller(c), c.Param("fieldId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, customFieldJSON(f))
}

func (h *handler) listCustomFields(c echo.Context) error {
	f, p, err := web.Search(c, customfield.Fields, h.max)
	if err != nil {
		return err
	}
	fs, total, err := h.fields.List(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(fs, customFieldJSON))
}

type updateCustomFieldRequest struct {
	DisplayName web.Opt[string] `json:"displayName"`
	Description web.Opt[string] `json:"description"`
	Options     web.Opt[[]any]  `json:"options"`
	Mandatory   web.Opt[bool]   `json:"mandatory"`
	Type        web.Opt[string] `json:"type"`
}

func (h *handler) updateCustomField(c echo.Context) error {
	var req updateCustomFieldRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	f, err := h.fields.Update(c.Request().Context(), route.Caller(c), c.Param("fieldId"), customfield.Update{
		DisplayName: route.Change(req.DisplayName), Description: route.Change(req.Description), Options: route.Change(req.Options),
		Mandatory: route.Change(req.Mandatory), Type: route.Change(req.Type)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, customFieldJSON(f))
}

func (h *handler) deleteCustomField(c echo.Context) error {
	if err := h.fields.Delete(c.Request().Context(), route.Caller(c), c.Param("fieldId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
