// Package customfields serves the custom field definitions (/api/customField) and writes and reads the
// custom field values of cases, alerts and templates as the contract shows them (ValuesJSON, Inputs).
package customfields

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

// Handler serves the custom field routes.
type Handler struct {
	fields *customfield.Service
	max    int
}

// New returns the handlers over the custom field service; max is the largest page of a search.
func New(fields *customfield.Service, max int) *Handler { return &Handler{fields: fields, max: max} }

// FieldResponse is a custom field definition as the API renders it.
type FieldResponse struct {
	route.Meta
	Name        string `json:"name"`
	Reference   string `json:"reference"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Options     []any  `json:"options"`
	Mandatory   bool   `json:"mandatory"`
}

// FieldJSON renders a definition.
func FieldJSON(f customfield.Field) FieldResponse {
	opts := f.Options
	if opts == nil {
		opts = []any{}
	}
	return FieldResponse{Meta: route.MetaOf(f.ID, "customField", f.Meta), Name: f.Name, Reference: f.Name,
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

// Create is POST /customField: a platform administrator defines a field.
func (h *Handler) Create(c echo.Context) error {
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
	return c.JSON(http.StatusCreated, FieldJSON(f))
}

// Get is GET /customField/{id} (id or name).
func (h *Handler) Get(c echo.Context) error {
	f, err := h.fields.Field(c.Request().Context(), route.Caller(c), c.Param("fieldId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, FieldJSON(f))
}

// List is GET /customField and POST /customField/_search (and /customFields/_search).
func (h *Handler) List(c echo.Context) error {
	f, p, err := web.Search(c, customfield.Fields, h.max)
	if err != nil {
		return err
	}
	fs, total, err := h.fields.List(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(fs, FieldJSON))
}

type updateCustomFieldRequest struct {
	DisplayName web.Opt[string] `json:"displayName"`
	Description web.Opt[string] `json:"description"`
	Options     web.Opt[[]any]  `json:"options"`
	Mandatory   web.Opt[bool]   `json:"mandatory"`
	Type        web.Opt[string] `json:"type"`
}

// Update is PATCH /customField/{id}.
func (h *Handler) Update(c echo.Context) error {
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
	return c.JSON(http.StatusOK, FieldJSON(f))
}

// Delete is DELETE /customField/{id}.
func (h *Handler) Delete(c echo.Context) error {
	if err := h.fields.Delete(c.Request().Context(), route.Caller(c), c.Param("fieldId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// ValuesJSON writes custom values as the contract shows them: name → {"<type>": value, "order": n}, plus "_id"
// on templates.
func ValuesJSON(vals customfield.Values) map[string]map[string]any {
	out := make(map[string]map[string]any, len(vals))
	for name, v := range vals {
		m := map[string]any{string(v.Type): v.Value, "order": v.Order}
		if v.ID != "" {
			m["_id"] = v.ID
		}
		out[name] = m
	}
	return out
}

// Inputs reads the customFields of a request: each value is {"<type>": value, "order": n} (other keys,
// such as a template's "_id", are ignored) or a bare value.
func Inputs(raw map[string]json.RawMessage) (map[string]customfield.Input, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]customfield.Input, len(raw))
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		field := "customFields." + name
		if len(name) > 64 {
			field = "customFields"
		}
		bad := apperr.Fields(apperr.FieldError{Name: field,
			Message: `expected {"<type>": value, "order": n} with a type among string, integer, float, boolean, date`})
		v, err := decodeAny(raw[name])
		if err != nil {
			return nil, bad
		}
		obj, isObj := v.(map[string]any)
		if !isObj {
			if _, isList := v.([]any); isList {
				return nil, bad
			}
			out[name] = customfield.Input{Value: v}
			continue
		}
		var in customfield.Input
		for k, x := range obj {
			switch {
			case k == "order":
				n, ok := x.(json.Number)
				o, err := strconv.Atoi(string(n))
				if !ok || err != nil {
					return nil, apperr.Fields(apperr.FieldError{Name: field + ".order", Message: "expected an integer"})
				}
				in.Order = &o
			case isFieldType(k):
				if in.Type != "" {
					return nil, bad
				}
				in.Type, in.Value = k, x
			}
		}
		if in.Type == "" {
			return nil, bad
		}
		out[name] = in
	}
	return out, nil
}

func isFieldType(k string) bool {
	for _, t := range customfield.Types() {
		if string(t) == k {
			return true
		}
	}
	return false
}

func decodeAny(b json.RawMessage) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return v, nil
}
