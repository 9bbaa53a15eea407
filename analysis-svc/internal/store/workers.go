package store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// WorkerStore keeps the analyzers and responders enabled in organizations (a small collection).
type WorkerStore struct {
	c    *docstore.Collection
	base *docstore.Collection // the organizations' base configurations
}

var _ analysis.BaseConfigStore = (*WorkerStore)(nil)

var _ analysis.WorkerStore = (*WorkerStore)(nil)

// NewWorkerStore returns the store, opening its collection and its indexes.
func NewWorkerStore(ctx context.Context, db *docstore.DB) (*WorkerStore, error) {
	cs, err := open(ctx, db, workersName, baseName)
	if err != nil {
		return nil, err
	}
	return &WorkerStore{c: cs[0], base: cs[1]}, nil
}

// workerDoc stores configuration as JSON text: its keys are the operator's and may hold "." or "$".
type workerDoc struct {
	ID            string   `json:"_id"`
	Kind          string   `json:"kind"`
	Organization  string   `json:"organization"`
	DefinitionID  string   `json:"definitionId"`
	Name          string   `json:"name"`
	Configuration string   `json:"configuration"`
	Rate          *int     `json:"rate"`
	RateUnit      string   `json:"rateUnit"`
	JobCache      *int     `json:"jobCache"`
	JobTimeout    *int     `json:"jobTimeout"`
	DataTypeList  []string `json:"dataTypeList"`
	Version       string   `json:"version"`
	Description   string   `json:"description"`
	Author        string   `json:"author"`
	URL           string   `json:"url"`
	License       string   `json:"license"`
	BaseConfig    string   `json:"baseConfig"`
	CreatedAt     int64    `json:"createdAt"`
	CreatedBy     string   `json:"createdBy"`
	UpdatedAt     int64    `json:"updatedAt"`
	UpdatedBy     string   `json:"updatedBy"`
}

func toWorkerDoc(w analysis.Worker) (workerDoc, error) {
	conf, err := json.Marshal(w.Configuration)
	if err != nil {
		return workerDoc{}, fmt.Errorf("encode configuration: %w", err)
	}
	return workerDoc{ID: w.ID, Kind: string(w.Kind), Organization: w.Organization, DefinitionID: w.DefinitionID,
		Name: w.Name, Configuration: string(conf), Rate: w.Rate, RateUnit: w.RateUnit, JobCache: w.JobCache,
		JobTimeout: w.JobTimeout, DataTypeList: w.DataTypeList, Version: w.Version, Description: w.Description,
		Author: w.Author, URL: w.URL, License: w.License, BaseConfig: w.BaseConfig,
		CreatedAt: docstore.Millis(w.CreatedAt), CreatedBy: w.CreatedBy, UpdatedAt: docstore.Millis(w.UpdatedAt), UpdatedBy: w.UpdatedBy}, nil
}

func (d workerDoc) worker() analysis.Worker {
	var conf map[string]any
	_ = decodeNumbers(d.Configuration, &conf) // numbers as the orgadmin wrote them
	if conf == nil {
		conf = map[string]any{}
	}
	return analysis.Worker{ID: d.ID, Kind: analysis.Kind(d.Kind), Organization: d.Organization, DefinitionID: d.DefinitionID,
		Name: d.Name, Configuration: conf, Rate: d.Rate, RateUnit: d.RateUnit, JobCache: d.JobCache, JobTimeout: d.JobTimeout,
		DataTypeList: d.DataTypeList, Version: d.Version, Description: d.Description, Author: d.Author, URL: d.URL,
		License: d.License, BaseConfig: d.BaseConfig, CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
		UpdatedAt: docstore.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

// CreateWorker inserts an enabled worker; its id derives from organization, name and kind.
func (s *WorkerStore) CreateWorker(ctx context.Context, w analysis.Worker) error {
	d, err := toWorkerDoc(w)
	if err != nil {
		return err
	}
	err = s.c.Insert(ctx, d)
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("enable %s: %w", w.Name, analysis.ErrWorkerExists)
	}
	if err != nil {
		return fmt.Errorf("enable %s: %w", w.Name, err)
	}
	return nil
}

// Worker finds an enabled worker by id.
func (s *WorkerStore) Worker(ctx context.Context, id string) (analysis.Worker, error) {
	var d workerDoc
	err := s.c.Get(ctx, id, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return analysis.Worker{}, fmt.Errorf("find worker %s: %w", id, analysis.ErrWorkerNotFound)
	}
	if err != nil {
		return analysis.Worker{}, fmt.Errorf("find worker %s: %w", id, err)
	}
	return d.worker(), nil
}

// Workers lists enabled workers.
func (s *WorkerStore) Workers(ctx context.Context, f search.Node, p search.Page) ([]analysis.Worker, int64, error) {
	var docs []workerDoc
	total, err := s.c.FindPage(ctx, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]analysis.Worker, len(docs))
	for i, d := range docs {
		out[i] = d.worker()
	}
	return out, total, nil
}

// ReplaceWorker stores a changed worker.
func (s *WorkerStore) ReplaceWorker(ctx context.Context, w analysis.Worker) error {
	d, err := toWorkerDoc(w)
	if err != nil {
		return err
	}
	err = s.c.Replace(ctx, d, false)
	if errors.Is(err, docstore.ErrNotFound) {
		return analysis.ErrWorkerNotFound
	}
	if err != nil {
		return fmt.Errorf("update worker %s: %w", w.ID, err)
	}
	return nil
}

// DeleteWorker removes an enabled worker.
func (s *WorkerStore) DeleteWorker(ctx context.Context, id string) error {
	found, err := s.c.DeleteOne(ctx, docstore.ID(id))
	if err != nil {
		return fmt.Errorf("delete worker %s: %w", id, err)
	}
	if !found {
		return analysis.ErrWorkerNotFound
	}
	return nil
}

// baseDoc is one organization's base configuration; config is JSON text (the operator's keys).
type baseDoc struct {
	ID           string `json:"_id"`
	Organization string `json:"organization"`
	Kind         string `json:"kind"`
	Name         string `json:"name"`
	Config       string `json:"config"`
	UpdatedAt    int64  `json:"updatedAt"`
	UpdatedBy    string `json:"updatedBy"`
}

// BaseConfigs returns an organization's base configuration values of a kind, by name.
func (s *WorkerStore) BaseConfigs(ctx context.Context, org string, kind analysis.Kind) (map[string]map[string]any, error) {
	var docs []baseDoc
	if err := s.base.Find(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("organization", org),
		docstore.Eq("kind", string(kind)))}, &docs); err != nil {
		return nil, fmt.Errorf("read base configurations: %w", err)
	}
	out := make(map[string]map[string]any, len(docs))
	for _, d := range docs {
		var conf map[string]any
		if err := decodeNumbers(d.Config, &conf); err != nil {
			return nil, fmt.Errorf("decode base configuration %s: %w", d.Name, err)
		}
		out[d.Name] = conf
	}
	return out, nil
}

// SetBaseConfig replaces (or creates) one base configuration of an organization.
func (s *WorkerStore) SetBaseConfig(ctx context.Context, org string, kind analysis.Kind, name string, conf map[string]any, by string) error {
	text, err := json.Marshal(conf)
	if err != nil {
		return fmt.Errorf("encode base configuration: %w", err)
	}
	id := md5.Sum([]byte(org + "\x00" + string(kind) + "\x00" + name))
	d := baseDoc{ID: hex.EncodeToString(id[:]), Organization: org, Kind: string(kind), Name: name,
		Config: string(text), UpdatedAt: docstore.Millis(time.Now()), UpdatedBy: by}
	if err := s.base.Replace(ctx, d, true); err != nil {
		return fmt.Errorf("store base configuration %s: %w", name, err)
	}
	return nil
}
