package analysis

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Rate units and their length.
var rateUnits = map[string]time.Duration{
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
	"Day": 24 * time.Hour, "Month": 30 * 24 * time.Hour,
}

// WorkerStore persists enabled analyzers and responders.
type WorkerStore interface {
	// CreateWorker fails with ErrWorkerExists when the organization already has one of that kind and name.
	CreateWorker(ctx context.Context, w Worker) error
	// Worker fails with ErrWorkerNotFound.
	Worker(ctx context.Context, id string) (Worker, error)
	Workers(ctx context.Context, f search.Node, p search.Page) ([]Worker, int64, error)
	ReplaceWorker(ctx context.Context, w Worker) error
	DeleteWorker(ctx context.Context, id string) error
}

// Worker errors.
var (
	ErrWorkerNotFound = apperr.New(apperr.NotFound, "analyzer not found")
	ErrWorkerExists   = apperr.New(apperr.Conflict, "an analyzer or responder with this name is already enabled in the organization")
)

// WorkerFields is the allow-list of analyzer and responder searches.
var WorkerFields = search.Fields{
	"id": {Path: "_id"}, "name": {Path: "name"}, "analyzerDefinitionId": {Path: "definitionId"},
	"responderDefinitionId": {Path: "definitionId"}, "workerDefinitionId": {Path: "definitionId"},
	"dataTypeList": {Path: "dataTypeList"}, "version": {Path: "version"}, "author": {Path: "author"},
	"description": {Path: "description"}, "license": {Path: "license"}, "baseConfig": {Path: "baseConfig"},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"rate": {Path: "rate", Type: search.Number}, "rateUnit": {Path: "rateUnit"},
	"jobCache": {Path: "jobCache", Type: search.Number},
}

// Workers manages the analyzers and responders enabled in organizations.
type Workers struct {
	store   WorkerStore
	catalog *Catalog
	now     func() time.Time
}

// NewWorkers returns the service.
func NewWorkers(store WorkerStore, catalog *Catalog, now func() time.Time) *Workers {
	if now == nil {
		now = time.Now
	}
	return &Workers{store: store, catalog: catalog, now: now}
}

func (s *Workers) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// Catalog returns the definitions this server knows.
func (s *Workers) Catalog() *Catalog { return s.catalog }

// Definitions lists the definitions of a kind (orgadmin, superadmin).
func (s *Workers) Definitions(c identity.Caller, kind Kind) ([]Definition, error) {
	if err := c.Require(identity.RoleOrgAdmin, identity.RoleSuperAdmin); err != nil {
		return nil, err
	}
	return s.catalog.Definitions(kind), nil
}

// WorkerSettings are the fields an orgadmin gives on enable and update. Nil fields are unchanged on update.
type WorkerSettings struct {
	Name          *string
	Configuration map[string]any // nil = unchanged (update) or none (enable)
	Rate          *int
	RateUnit      *string
	ClearRate     bool // rate set to null
	JobCache      *int
	ClearJobCache bool // jobCache set to null: the job.cache default
	JobTimeout    *int
}

// WorkerID is the id of the worker of that kind and name in the organization: a duplicate enable collides.
func WorkerID(org, name string, kind Kind) string {
	sum := md5.Sum([]byte(org + "_" + name + "_" + string(kind)))
	return hex.EncodeToString(sum[:])
}

// Enable enables a definition in the caller's organization (orgadmin).
func (s *Workers) Enable(ctx context.Context, c identity.Caller, kind Kind, definitionID string, set WorkerSettings) (Worker, error) {
	if err := c.Require(identity.RoleOrgAdmin); err != nil {
		return Worker{}, err
	}
	def, ok := s.catalog.Definition(kind, definitionID)
	if !ok {
		return Worker{}, apperr.Errorf(apperr.NotFound, "%s definition %s not found", kind, definitionID)
	}
	name := def.Name
	if set.Name != nil {
		name = strings.TrimSpace(*set.Name)
	}
	if name == "" || len(name) > 128 {
		return Worker{}, apperr.Fields(apperr.FieldError{Name: "name", Message: "1 to 128 characters"})
	}
	base, err := baseValues(ctx, s.store, c.Org, def)
	if err != nil {
		return Worker{}, err
	}
	conf, err := ValidateConfiguration(def, prefill(def, set.Configuration, base))
	if err != nil {
		return Worker{}, err
	}
	now := s.clock()
	w := Worker{ID: WorkerID(c.Org, name, kind), Kind: kind, Organization: c.Org, DefinitionID: def.ID, Name: name,
		Configuration: conf, DataTypeList: slices.Clone(def.DataTypeList), Version: def.Version,
		Description: def.Description, Author: def.Author, URL: def.URL, License: def.License, BaseConfig: def.BaseConfig,
		CreatedAt: now, CreatedBy: c.Login, UpdatedAt: now, UpdatedBy: c.Login}
	if err := applyLimits(&w, set); err != nil {
		return Worker{}, err
	}
	if err := s.store.CreateWorker(ctx, w); err != nil {
		return Worker{}, err
	}
	return w, nil
}

func applyLimits(w *Worker, set WorkerSettings) error {
	var probs []apperr.FieldError
	if set.ClearRate {
		w.Rate, w.RateUnit = nil, ""
	}
	if set.Rate != nil {
		if *set.Rate < 0 {
			probs = append(probs, apperr.FieldError{Name: "rate", Message: "a number ≥ 0"})
		}
		w.Rate = set.Rate
	}
	if set.RateUnit != nil {
		if _, ok := rateUnits[*set.RateUnit]; !ok && *set.RateUnit != "" {
			probs = append(probs, apperr.FieldError{Name: "rateUnit", Message: "Second, Minute, Hour, Day or Month"})
		}
		w.RateUnit = *set.RateUnit
	}
	if w.Rate != nil && w.RateUnit == "" {
		probs = append(probs, apperr.FieldError{Name: "rateUnit", Message: "required with rate"})
	}
	if set.ClearJobCache {
		w.JobCache = nil
	}
	if set.JobCache != nil {
		if *set.JobCache < 0 {
			probs = append(probs, apperr.FieldError{Name: "jobCache", Message: "minutes ≥ 0, or null"})
		}
		w.JobCache = set.JobCache
	}
	if set.JobTimeout != nil {
		if *set.JobTimeout <= 0 || *set.JobTimeout > 7*24*60 {
			probs = append(probs, apperr.FieldError{Name: "jobTimeout", Message: "minutes, 1 to 10080"})
		}
		w.JobTimeout = set.JobTimeout
	}
	if probs != nil {
		return apperr.Fields(probs...)
	}
	return nil
}

// GlobalItems are the settings every worker of the kind accepts besides its definition's (the web
// interface's enable form offers them).
func GlobalItems(kind Kind) []ConfigItem { return globalItems(kind) }

// globalItems are the settings every worker accepts besides its definition's (reference BaseConfig).
func globalItems(kind Kind) []ConfigItem {
	items := []ConfigItem{
		{Name: "proxy_http", Type: "string"}, {Name: "proxy_https", Type: "string"}, {Name: "cacerts", Type: "text"},
		{Name: "jobTimeout", Type: "number"},
		{Name: "check_tlp", Type: "boolean", DefaultValue: false}, {Name: "max_tlp", Type: "number", DefaultValue: 2},
		{Name: "check_pap", Type: "boolean", DefaultValue: false}, {Name: "max_pap", Type: "number", DefaultValue: 2},
	}
	if kind == KindAnalyzer {
		items = append(items, ConfigItem{Name: "auto_extract_artifacts", Type: "boolean", DefaultValue: false},
			ConfigItem{Name: "jobCache", Type: "number"})
	}
	return items
}

// ValidateConfiguration checks a configuration against the definition's items and the global ones: unknown
// names, wrong types and missing required values are 400; missing optional values get their default, [] for
// multi items, or null.
func ValidateConfiguration(def Definition, conf map[string]any) (map[string]any, error) {
	items := append(slices.Clone(def.ConfigurationItems), globalItems(def.Kind)...)
	known := map[string]ConfigItem{}
	for _, it := range items {
		known[it.Name] = it
	}
	var probs []apperr.FieldError
	names := make([]string, 0, len(conf))
	for k := range conf {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := known[k]; !ok {
			probs = append(probs, apperr.FieldError{Name: "configuration." + k, Message: "unknown configuration item"})
		}
	}
	out := map[string]any{}
	for _, it := range items {
		v, present := conf[it.Name]
		if !present || v == nil {
			switch {
			case it.DefaultValue != nil:
				v = it.DefaultValue
			case it.Multi:
				v = []any{}
			case it.Required:
				probs = append(probs, apperr.FieldError{Name: "configuration." + it.Name, Message: "required"})
				continue
			default:
				v = nil
			}
			out[it.Name] = v
			continue
		}
		cv, ok := checkItem(it, v)
		if !ok {
			want := it.Type
			if it.Multi {
				want = "an array of " + it.Type
			}
			probs = append(probs, apperr.FieldError{Name: "configuration." + it.Name, Message: "expected " + want})
			continue
		}
		out[it.Name] = cv
	}
	if probs != nil {
		return nil, apperr.Fields(probs...)
	}
	return out, nil
}

func checkItem(it ConfigItem, v any) (any, bool) {
	if it.Multi {
		arr, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := make([]any, len(arr))
		for i, x := range arr {
			cx, ok := checkScalar(it.Type, x)
			if !ok {
				return nil, false
			}
			out[i] = cx
		}
		return out, true
	}
	return checkScalar(it.Type, v)
}

func checkScalar(typ string, v any) (any, bool) {
	switch typ {
	case "string", "text":
		s, ok := v.(string)
		return s, ok
	case "number":
		switch n := v.(type) {
		case float64:
			return n, true
		case int:
			return float64(n), true
		case int64:
			return float64(n), true
		case json.Number: // kept as written (1.0 stays 1.0), once checked to be a finite number
			f, err := strconv.ParseFloat(n.String(), 64)
			return n, err == nil && !math.IsInf(f, 0)
		}
		return nil, false
	case "boolean":
		b, ok := v.(bool)
		return b, ok
	}
	return nil, false
}

// visibleWorker returns a worker of the caller's organization (404 otherwise).
func (s *Workers) visibleWorker(ctx context.Context, c identity.Caller, kind Kind, id string) (Worker, error) {
	w, err := s.store.Worker(ctx, id)
	if err != nil {
		return Worker{}, notFoundFor(kind, err)
	}
	if w.Organization != c.Org || w.Kind != kind {
		return Worker{}, notFoundFor(kind, ErrWorkerNotFound)
	}
	return w, nil
}

func notFoundFor(kind Kind, err error) error {
	if apperr.Is(err, apperr.NotFound) {
		return apperr.Errorf(apperr.NotFound, "%s not found", kind)
	}
	return err
}

// Worker returns an enabled worker (analyze or orgadmin of its organization).
func (s *Workers) Worker(ctx context.Context, c identity.Caller, kind Kind, id string) (Worker, error) {
	if err := c.Require(identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return Worker{}, err
	}
	return s.visibleWorker(ctx, c, kind, id)
}

// List searches the enabled workers of the caller's organization.
func (s *Workers) List(ctx context.Context, c identity.Caller, kind Kind, f search.Node, p search.Page) ([]Worker, int64, error) {
	if err := c.Require(identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return nil, 0, err
	}
	scoped := search.Node{Op: search.OpAnd, Children: []search.Node{f,
		{Op: search.OpEq, Path: "organization", Value: c.Org}, {Op: search.OpEq, Path: "kind", Value: string(kind)}}}
	return s.store.Workers(ctx, scoped, p)
}

// ForDataType lists the caller's enabled workers that accept a data type.
func (s *Workers) ForDataType(ctx context.Context, c identity.Caller, kind Kind, dataType string) ([]Worker, int64, error) {
	f := search.Node{Op: search.OpEq, Path: "dataTypeList", Value: dataType}
	return s.List(ctx, c, kind, f, search.Page{Limit: 0})
}

// Update changes name, configuration, rate, rateUnit, jobCache and jobTimeout (orgadmin). A configuration
// replaces the stored one whole, except the credential items it omits, which keep their value (keepSecrets).
func (s *Workers) Update(ctx context.Context, c identity.Caller, kind Kind, id string, set WorkerSettings) (Worker, error) {
	if err := c.Require(identity.RoleOrgAdmin); err != nil {
		return Worker{}, err
	}
	w, err := s.visibleWorker(ctx, c, kind, id)
	if err != nil {
		return Worker{}, err
	}
	if set.Name != nil {
		name := strings.TrimSpace(*set.Name)
		if name == "" || len(name) > 128 {
			return Worker{}, apperr.Fields(apperr.FieldError{Name: "name", Message: "1 to 128 characters"})
		}
		w.Name = name // the id stays: it was derived from the name at enable time
	}
	if set.Configuration != nil {
		def, ok := s.catalog.Definition(kind, w.DefinitionID)
		if !ok {
			return Worker{}, apperr.Errorf(apperr.BadRequest, "the definition %s is no longer available", w.DefinitionID)
		}
		if w.Configuration, err = ValidateConfiguration(def, keepSecrets(def, set.Configuration, w.Configuration)); err != nil {
			return Worker{}, err
		}
	}
	if err := applyLimits(&w, set); err != nil {
		return Worker{}, err
	}
	w.UpdatedAt, w.UpdatedBy = s.clock(), c.Login
	if err := s.store.ReplaceWorker(ctx, w); err != nil {
		return Worker{}, err
	}
	return w, nil
}

// keepSecrets is an update's configuration with the stored value of each credential item it omits
// (IsSecretItem): the configuration is replaced whole, but a credential only goes away when the update sends
// it as null (or replaces it).
func keepSecrets(def Definition, conf, stored map[string]any) map[string]any {
	out := make(map[string]any, len(conf))
	for k, v := range conf {
		out[k] = v
	}
	for _, it := range append(slices.Clone(def.ConfigurationItems), globalItems(def.Kind)...) {
		if _, given := conf[it.Name]; given || !IsSecretItem(it) {
			continue
		}
		if v, ok := stored[it.Name]; ok && v != nil {
			out[it.Name] = v
		}
	}
	return out
}

// Disable removes an enabled worker (orgadmin). Its jobs are kept.
func (s *Workers) Disable(ctx context.Context, c identity.Caller, kind Kind, id string) error {
	if err := c.Require(identity.RoleOrgAdmin); err != nil {
		return err
	}
	if _, err := s.visibleWorker(ctx, c, kind, id); err != nil {
		return err
	}
	return s.store.DeleteWorker(ctx, id)
}

// ShowsConfiguration reports whether the caller may see workers' configuration (analyze-only users may not).
func ShowsConfiguration(c identity.Caller) bool { return c.Has(identity.RoleOrgAdmin) }

var _ = fmt.Sprintf
