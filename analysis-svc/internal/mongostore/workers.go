package mongostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// WorkerStore keeps the analyzers and responders enabled in organizations (a small collection).
type WorkerStore struct {
	c *mongo.Collection
}

var _ analysis.WorkerStore = (*WorkerStore)(nil)

// NewWorkerStore returns the store and creates its indexes.
func NewWorkerStore(ctx context.Context, db *mongox.DB) (*WorkerStore, error) {
	s := &WorkerStore{c: db.Collection("workers")}
	err := mongox.EnsureIndexes(ctx, s.c,
		mongox.Index{Name: "organization_kind", Keys: bson.D{{Key: "organization", Value: 1}, {Key: "kind", Value: 1}}})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// workerDoc stores configuration as JSON text: its keys are the operator's and may hold "." or "$".
type workerDoc struct {
	ID            string   `bson:"_id"`
	Kind          string   `bson:"kind"`
	Organization  string   `bson:"organization"`
	DefinitionID  string   `bson:"definitionId"`
	Name          string   `bson:"name"`
	Configuration string   `bson:"configuration"`
	Rate          *int     `bson:"rate"`
	RateUnit      string   `bson:"rateUnit"`
	JobCache      *int     `bson:"jobCache"`
	JobTimeout    *int     `bson:"jobTimeout"`
	DataTypeList  []string `bson:"dataTypeList"`
	Version       string   `bson:"version"`
	Description   string   `bson:"description"`
	Author        string   `bson:"author"`
	URL           string   `bson:"url"`
	License       string   `bson:"license"`
	BaseConfig    string   `bson:"baseConfig"`
	CreatedAt     int64    `bson:"createdAt"`
	CreatedBy     string   `bson:"createdBy"`
	UpdatedAt     int64    `bson:"updatedAt"`
	UpdatedBy     string   `bson:"updatedBy"`
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
		CreatedAt: mongox.Millis(w.CreatedAt), CreatedBy: w.CreatedBy, UpdatedAt: mongox.Millis(w.UpdatedAt), UpdatedBy: w.UpdatedBy}, nil
}

func (d workerDoc) worker() analysis.Worker {
	var conf map[string]any
	_ = json.Unmarshal([]byte(d.Configuration), &conf)
	if conf == nil {
		conf = map[string]any{}
	}
	return analysis.Worker{ID: d.ID, Kind: analysis.Kind(d.Kind), Organization: d.Organization, DefinitionID: d.DefinitionID,
		Name: d.Name, Configuration: conf, Rate: d.Rate, RateUnit: d.RateUnit, JobCache: d.JobCache, JobTimeout: d.JobTimeout,
		DataTypeList: d.DataTypeList, Version: d.Version, Description: d.Description, Author: d.Author, URL: d.URL,
		License: d.License, BaseConfig: d.BaseConfig, CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
		UpdatedAt: mongox.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

// CreateWorker inserts an enabled worker; its id derives from organization, name and kind.
func (s *WorkerStore) CreateWorker(ctx context.Context, w analysis.Worker) error {
	d, err := toWorkerDoc(w)
	if err != nil {
		return err
	}
	_, err = s.c.InsertOne(ctx, d)
	if mongox.IsDuplicate(err) {
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
	err := s.c.FindOne(ctx, byID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
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
	total, err := mongox.FindPage(ctx, s.c, f, p, &docs)
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
	res, err := s.c.ReplaceOne(ctx, byID(w.ID), d)
	if err != nil {
		return fmt.Errorf("update worker %s: %w", w.ID, err)
	}
	if res.MatchedCount == 0 {
		return analysis.ErrWorkerNotFound
	}
	return nil
}

// DeleteWorker removes an enabled worker.
func (s *WorkerStore) DeleteWorker(ctx context.Context, id string) error {
	res, err := s.c.DeleteOne(ctx, byID(id))
	if err != nil {
		return fmt.Errorf("delete worker %s: %w", id, err)
	}
	if res.DeletedCount == 0 {
		return analysis.ErrWorkerNotFound
	}
	return nil
}
