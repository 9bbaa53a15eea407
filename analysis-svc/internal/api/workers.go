package api

import (
	"encoding/json"
	"net/http"
	"path/filepath"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/web"
)

type definitionResponse struct {
	ID                 string                `json:"id"`
	Name               string                `json:"name"`
	Version            string                `json:"version"`
	Description        string                `json:"description"`
	DataTypeList       []string              `json:"dataTypeList"`
	Author             string                `json:"author"`
	URL                string                `json:"url"`
	License            string                `json:"license"`
	BaseConfig         string                `json:"baseConfig"`
	ConfigurationItems []analysis.ConfigItem `json:"configurationItems"`
	DockerImage        string                `json:"dockerImage,omitempty"`
	Command            string                `json:"command,omitempty"` // the program's file name only
	Builtin            bool                  `json:"builtin"`
	Type               string                `json:"type"`
}

func definitionJSON(d analysis.Definition) definitionResponse {
	r := definitionResponse{ID: d.ID, Name: d.Name, Version: d.Version, Description: d.Description,
		DataTypeList: d.DataTypeList, Author: d.Author, URL: d.URL, License: d.License, BaseConfig: d.BaseConfig,
		ConfigurationItems: d.ConfigurationItems, DockerImage: d.DockerImage, Builtin: d.Builtin != nil, Type: string(d.Kind)}
	if d.Command != "" {
		r.Command = filepath.Base(d.Command)
	}
	if r.DataTypeList == nil {
		r.DataTypeList = []string{}
	}
	if r.ConfigurationItems == nil {
		r.ConfigurationItems = []analysis.ConfigItem{}
	}
	return r
}

type workerResponse struct {
	ID                    string         `json:"id"`
	Name                  string         `json:"name"`
	AnalyzerDefinitionID  string         `json:"analyzerDefinitionId,omitempty"`
	ResponderDefinitionID string         `json:"responderDefinitionId,omitempty"`
	WorkerDefinitionID    string         `json:"workerDefinitionId"`
	Version               string         `json:"version"`
	Description           string         `json:"description"`
	Author                string         `json:"author"`
	URL                   string         `json:"url"`
	License               string         `json:"license"`
	DataTypeList          []string       `json:"dataTypeList"`
	BaseConfig            string         `json:"baseConfig"`
	JobCache              *int           `json:"jobCache"`
	JobTimeout            *int           `json:"jobTimeout"`
	Rate                  *int           `json:"rate"`
	RateUnit              *string        `json:"rateUnit"`
	Configuration         map[string]any `json:"configuration,omitempty"`
	Type                  string         `json:"type"`
	Organization          string         `json:"organization"`
	CreatedAt             int64          `json:"createdAt"`
	CreatedBy             string         `json:"createdBy"`
	UpdatedAt             int64          `json:"updatedAt,omitempty"`
	UpdatedBy             string         `json:"updatedBy,omitempty"`
}

// workerJSON renders an enabled worker; withConfig is false for analyze-only callers and type listings.
func workerJSON(w analysis.Worker, withConfig bool) workerResponse {
	r := workerResponse{ID: w.ID, Name: w.Name, WorkerDefinitionID: w.DefinitionID, Version: w.Version,
		Description: w.Description, Author: w.Author, URL: w.URL, License: w.License, DataTypeList: w.DataTypeList,
		BaseConfig: w.BaseConfig, JobCache: w.JobCache, JobTimeout: w.JobTimeout, Rate: w.Rate, Type: string(w.Kind),
		Organization: w.Organization, CreatedAt: ms(w.CreatedAt), CreatedBy: w.CreatedBy, UpdatedAt: ms(w.UpdatedAt),
		UpdatedBy: w.UpdatedBy}
	if w.Kind == analysis.KindAnalyzer {
		r.AnalyzerDefinitionID = w.DefinitionID
	} else {
		r.ResponderDefinitionID = w.DefinitionID
	}
	if w.RateUnit != "" {
		r.RateUnit = &w.RateUnit
	}
	if r.DataTypeList == nil {
		r.DataTypeList = []string{}
	}
	if withConfig {
		r.Configuration = w.Configuration
	}
	return r
}

func kindOf(c echo.Context) analysis.Kind {
	if k, ok := c.Get("kind").(analysis.Kind); ok {
		return k
	}
	return analysis.KindAnalyzer
}

// kind marks a route as the analyzer or responder flavour of a shared handler.
func kind(k analysis.Kind) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set("kind", k)
			return next(c)
		}
	}
}

func (h *handler) listDefinitions(c echo.Context) error {
	defs, err := h.workers.Definitions(caller(c), kindOf(c))
	if err != nil {
		return err
	}
	return web.List(c, int64(len(defs)), mapSlice(defs, definitionJSON))
}

// workerRequest is the body of enable and update. Absent fields are unchanged on update.
type workerRequest struct {
	Name          web.Opt[string]          `json:"name"`
	Configuration web.Opt[json.RawMessage] `json:"configuration"` // decoded by settings: numbers as written
	Rate          web.Opt[int]             `json:"rate"`
	RateUnit      web.Opt[string]          `json:"rateUnit"`
	JobCache      web.Opt[int]             `json:"jobCache"`
	JobTimeout    web.Opt[int]             `json:"jobTimeout"`
}

func (r workerRequest) settings() (analysis.WorkerSettings, error) {
	var s analysis.WorkerSettings
	if r.Name.Set && !r.Name.Null {
		s.Name = &r.Name.V
	}
	if r.Configuration.Set {
		conf, err := rawObject("configuration", r.Configuration.V)
		if err != nil {
			return s, err
		}
		s.Configuration = conf
		if s.Configuration == nil {
			s.Configuration = map[string]any{}
		}
	}
	if r.Rate.Set {
		if r.Rate.Null {
			s.ClearRate = true
		} else {
			s.Rate = &r.Rate.V
		}
	}
	if r.RateUnit.Set {
		u := r.RateUnit.V
		s.RateUnit = &u
	}
	if r.JobCache.Set {
		if r.JobCache.Null {
			s.ClearJobCache = true
		} else {
			s.JobCache = &r.JobCache.V
		}
	}
	if r.JobTimeout.Set && !r.JobTimeout.Null {
		s.JobTimeout = &r.JobTimeout.V
	}
	return s, nil
}

func (h *handler) enableWorker(c echo.Context) error {
	var req workerRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	set, err := req.settings()
	if err != nil {
		return err
	}
	w, err := h.workers.Enable(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "definitionId"), set)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, workerJSON(w, true))
}

func (h *handler) listWorkers(c echo.Context) error {
	f, p, err := web.Search(c, analysis.WorkerFields, h.max)
	if err != nil {
		return err
	}
	ws, total, err := h.workers.List(c.Request().Context(), caller(c), kindOf(c), f, p)
	if err != nil {
		return err
	}
	show := analysis.ShowsConfiguration(caller(c))
	return web.List(c, total, mapSlice(ws, func(w analysis.Worker) workerResponse { return workerJSON(w, show) }))
}

func (h *handler) getWorker(c echo.Context) error {
	w, err := h.workers.Worker(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, workerJSON(w, analysis.ShowsConfiguration(caller(c))))
}

func (h *handler) workersForType(c echo.Context) error {
	ws, total, err := h.workers.ForDataType(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "dataType"))
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(ws, func(w analysis.Worker) workerResponse { return workerJSON(w, false) }))
}

func (h *handler) updateWorker(c echo.Context) error {
	var req workerRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	set, err := req.settings()
	if err != nil {
		return err
	}
	w, err := h.workers.Update(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "id"), set)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, workerJSON(w, true))
}

func (h *handler) disableWorker(c echo.Context) error {
	if err := h.workers.Disable(c.Request().Context(), caller(c), kindOf(c), web.Param(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
