package mongostore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// JobStore keeps analyzer jobs (case_artifact_job) in the collection jobs. A job's report is kept as JSON
// text: analyzer reports carry keys ("." and "$") that documents may not, and nothing searches inside them.
type JobStore struct {
	coll *mongo.Collection
}

var _ cases.JobStore = (*JobStore)(nil)

// NewJobStore returns the store and creates the indexes its lists use.
func NewJobStore(ctx context.Context, db *mongox.DB) (*JobStore, error) {
	s := &JobStore{coll: db.Collection("jobs")}
	err := mongox.EnsureIndexes(ctx, s.coll,
		mongox.Index{Name: "observable_startDate", Keys: bson.D{{Key: cases.PathObservableID, Value: 1}, {Key: "startDate", Value: -1}}},
		mongox.Index{Name: "organisation_status", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "status", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type jobDoc struct {
	ID                 string  `bson:"_id"`
	Org                string  `bson:"organisation"`
	ObservableID       string  `bson:"observable"`
	CaseID             string  `bson:"case"`
	AnalyzerID         string  `bson:"analyzerId"`
	AnalyzerName       string  `bson:"analyzerName"`
	AnalyzerDefinition string  `bson:"analyzerDefinition"`
	Status             string  `bson:"status"`
	StartDate          *int64  `bson:"startDate"`
	EndDate            *int64  `bson:"endDate"`
	AnalysisID         string  `bson:"analysisId"`
	AnalysisJobID      string  `bson:"analysisJobId"`
	Report             *string `bson:"report"`
	CreatedAt          int64   `bson:"createdAt"`
	CreatedBy          string  `bson:"createdBy"`
	UpdatedAt          *int64  `bson:"updatedAt"`
	UpdatedBy          string  `bson:"updatedBy,omitempty"`
}

func toJobDoc(j cases.Job) (jobDoc, error) {
	d := jobDoc{ID: j.ID, Org: j.Org, ObservableID: j.ObservableID, CaseID: j.CaseID, AnalyzerID: j.AnalyzerID,
		AnalyzerName: j.AnalyzerName, AnalyzerDefinition: j.AnalyzerDefinition, Status: j.Status,
		StartDate: nullMillis(j.StartDate), EndDate: nullMillis(j.EndDate), AnalysisID: j.AnalysisID,
		AnalysisJobID: j.AnalysisJobID, CreatedAt: mongox.Millis(j.CreatedAt), CreatedBy: j.CreatedBy}
	if j.Report != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(j.Report); err != nil {
			return jobDoc{}, fmt.Errorf("encode report of job %s: %w", j.ID, err)
		}
		s := strings.TrimSpace(buf.String())
		d.Report = &s
	}
	return d, nil
}

func (d jobDoc) job() cases.Job {
	j := cases.Job{ID: d.ID, Org: d.Org, ObservableID: d.ObservableID, CaseID: d.CaseID, AnalyzerID: d.AnalyzerID,
		AnalyzerName: d.AnalyzerName, AnalyzerDefinition: d.AnalyzerDefinition, Status: d.Status,
		StartDate: timeOf(d.StartDate), EndDate: timeOf(d.EndDate), AnalysisID: d.AnalysisID,
		AnalysisJobID: d.AnalysisJobID,
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if d.Report != nil {
		if v, err := decodeJSON(*d.Report); err == nil {
			j.Report, _ = v.(map[string]any)
		}
	}
	return j
}

// Create inserts a job.
func (s *JobStore) Create(ctx context.Context, j cases.Job) error {
	d, err := toJobDoc(j)
	if err != nil {
		return err
	}
	if _, err := s.coll.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("create job: %w", err)
	}
	return nil
}

// Delete removes a job record.
func (s *JobStore) Delete(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// Job finds a job record by id.
func (s *JobStore) Job(ctx context.Context, id string) (cases.Job, error) {
	var d jobDoc
	if err := findOne(ctx, s.coll, byID(id), &d, cases.ErrJobNotFound); err != nil {
		return cases.Job{}, err
	}
	return d.job(), nil
}

// Update writes the named fields of j.
func (s *JobStore) Update(ctx context.Context, j cases.Job, fields []string, by string, at time.Time) (cases.Job, error) {
	d, err := toJobDoc(j)
	if err != nil {
		return cases.Job{}, err
	}
	values := map[string]any{"status": d.Status, "startDate": d.StartDate, "endDate": d.EndDate, "report": d.Report,
		"analysisJobId": d.AnalysisJobID, "analysisId": d.AnalysisID, "analyzerId": d.AnalyzerID,
		"analyzerName": d.AnalyzerName, "analyzerDefinition": d.AnalyzerDefinition}
	set := stamp(by, at)
	seen := map[string]bool{}
	for _, f := range fields {
		v, ok := values[f]
		if !ok {
			return cases.Job{}, fmt.Errorf("update job: unknown field %q", f)
		}
		if !seen[f] {
			seen[f] = true
			set = append(set, bson.E{Key: f, Value: v})
		}
	}
	var out jobDoc
	if err := findOneAndSet(ctx, s.coll, byID(j.ID), set, &out, cases.ErrJobNotFound); err != nil {
		return cases.Job{}, err
	}
	return out.job(), nil
}

// ListByObservable lists the jobs of an observable, newest first unless p sorts otherwise.
func (s *JobStore) ListByObservable(ctx context.Context, observableID string, f search.Node, p search.Page) ([]cases.Job, int64, error) {
	if len(p.Sort) == 0 {
		p.Sort = []search.SortKey{{Path: "startDate", Desc: true}}
	}
	scope := search.Node{Op: search.OpEq, Path: cases.PathObservableID, Value: observableID}
	if f.Op != "" { // the zero node (no filter) would match nothing
		scope = search.Node{Op: search.OpAnd, Children: []search.Node{f, scope}}
	}
	return s.Jobs(ctx, scope, p)
}

// Jobs lists jobs.
func (s *JobStore) Jobs(ctx context.Context, f search.Node, p search.Page) ([]cases.Job, int64, error) {
	var docs []jobDoc
	total, err := mongox.FindPage(ctx, s.coll, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Job, len(docs))
	for i, d := range docs {
		out[i] = d.job()
	}
	return out, total, nil
}
