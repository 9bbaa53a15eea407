package store

import (
	"context"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// JobStore keeps analyzer jobs (case_artifact_job) in the collection jobs. A job's report is kept as JSON
// text: analyzer reports carry keys ("." and "$") that documents may not, and nothing searches inside them.
type JobStore struct {
	coll *docstore.Collection
}

var _ connector.JobStore = (*JobStore)(nil)

// jobSpec: the jobs of an observable newest first, the job list of an organisation in its default order
// (_id) and by status.
var jobSpec = docstore.Spec{Name: "jobs", Indexes: []docstore.Index{
	{Name: "observable_organisation_startDate", Keys: []docstore.Key{docstore.Asc(connector.PathObservableID), docstore.Asc(record.PathOrg), docstore.Desc("startDate")}},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "organisation_status__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Asc("_id")}},
	// the budgets of automation rules: the jobs a rule (or any rule) made in the last hour
	{Name: "organisation_rule_createdAt", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("rule"), docstore.Asc("createdAt")}},
}}

// NewJobStore returns the store and creates the indexes its lists use.
func NewJobStore(ctx context.Context, db *docstore.DB) (*JobStore, error) {
	coll, err := db.Collection(ctx, jobSpec)
	if err != nil {
		return nil, err
	}
	return &JobStore{coll: coll}, nil
}

type jobDoc struct {
	ID                 string  `json:"_id"`
	Org                string  `json:"organisation"`
	ObservableID       string  `json:"observable"`
	CaseID             string  `json:"case"`
	AlertID            string  `json:"alert,omitempty"`
	AnalyzerID         string  `json:"analyzerId"`
	AnalyzerName       string  `json:"analyzerName"`
	AnalyzerDefinition string  `json:"analyzerDefinition"`
	Status             string  `json:"status"`
	StartDate          *int64  `json:"startDate"`
	EndDate            *int64  `json:"endDate"`
	AnalysisID         string  `json:"analysisId"`
	AnalysisJobID      string  `json:"analysisJobId"`
	Report             *string `json:"report"`
	Message            string  `json:"message,omitempty"`
	Parameters         *string `json:"parameters,omitempty"` // JSON text, as the report
	Rule               string  `json:"rule,omitempty"`
	Firing             string  `json:"firing,omitempty"`
	CreatedAt          int64   `json:"createdAt"`
	CreatedBy          string  `json:"createdBy"`
	UpdatedAt          *int64  `json:"updatedAt"`
	UpdatedBy          string  `json:"updatedBy,omitempty"`
}

func toJobDoc(j connector.Job) (jobDoc, error) {
	d := jobDoc{ID: j.ID, Org: j.Org, ObservableID: j.ObservableID, CaseID: j.CaseID, AlertID: j.AlertID, AnalyzerID: j.AnalyzerID,
		AnalyzerName: j.AnalyzerName, AnalyzerDefinition: j.AnalyzerDefinition, Status: j.Status,
		StartDate: nullMillis(j.StartDate), EndDate: nullMillis(j.EndDate), AnalysisID: j.AnalysisID,
		AnalysisJobID: j.AnalysisJobID, Message: j.Message, Rule: j.Rule, Firing: j.Firing, CreatedAt: docstore.Millis(j.CreatedAt), CreatedBy: j.CreatedBy}
	if j.Parameters != nil {
		s, err := encodeJSON(j.Parameters)
		if err != nil {
			return jobDoc{}, fmt.Errorf("encode parameters of job %s: %w", j.ID, err)
		}
		d.Parameters = &s
	}
	if j.Report != nil {
		s, err := encodeJSON(j.Report)
		if err != nil {
			return jobDoc{}, fmt.Errorf("encode report of job %s: %w", j.ID, err)
		}
		d.Report = &s
	}
	return d, nil
}

func (d jobDoc) job() connector.Job {
	j := connector.Job{ID: d.ID, Org: d.Org, ObservableID: d.ObservableID, CaseID: d.CaseID, AlertID: d.AlertID, AnalyzerID: d.AnalyzerID,
		AnalyzerName: d.AnalyzerName, AnalyzerDefinition: d.AnalyzerDefinition, Status: d.Status,
		StartDate: timeOf(d.StartDate), EndDate: timeOf(d.EndDate), AnalysisID: d.AnalysisID,
		AnalysisJobID: d.AnalysisJobID, Message: d.Message, Rule: d.Rule, Firing: d.Firing,
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if d.Report != nil {
		if v, err := decodeJSON(*d.Report); err == nil {
			j.Report, _ = v.(map[string]any)
		}
	}
	if d.Parameters != nil {
		if v, err := decodeJSON(*d.Parameters); err == nil {
			j.Parameters, _ = docstore.Normalize(v).(map[string]any)
		}
	}
	return j
}

// Create inserts a job.
func (s *JobStore) Create(ctx context.Context, j connector.Job) error {
	d, err := toJobDoc(j)
	if err != nil {
		return err
	}
	if err := s.coll.Insert(ctx, d); err != nil {
		if docstore.IsDuplicate(err) {
			return fmt.Errorf("create job %s: %w", j.ID, connector.ErrJobExists)
		}
		return fmt.Errorf("create job: %w", err)
	}
	return nil
}

// Delete removes a job record.
func (s *JobStore) Delete(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// Job finds a job record by id.
func (s *JobStore) Job(ctx context.Context, id string) (connector.Job, error) {
	var d jobDoc
	if err := get(ctx, s.coll, id, &d, connector.ErrJobNotFound); err != nil {
		return connector.Job{}, err
	}
	return d.job(), nil
}

// Update writes the named fields of j.
func (s *JobStore) Update(ctx context.Context, j connector.Job, fields []string, by string, at time.Time) (connector.Job, error) {
	d, err := toJobDoc(j)
	if err != nil {
		return connector.Job{}, err
	}
	values := map[string]any{"status": d.Status, "startDate": d.StartDate, "endDate": d.EndDate, "report": d.Report,
		"analysisJobId": d.AnalysisJobID, "analysisId": d.AnalysisID, "analyzerId": d.AnalyzerID,
		"analyzerName": d.AnalyzerName, "analyzerDefinition": d.AnalyzerDefinition, "message": d.Message}
	u, err := setFields(stamp(by, at), "job", values, fields)
	if err != nil {
		return connector.Job{}, err
	}
	var out jobDoc
	if err := findOneAndUpdate(ctx, s.coll, docstore.ID(j.ID), u, &out, connector.ErrJobNotFound); err != nil {
		return connector.Job{}, err
	}
	return out.job(), nil
}

// ListByObservable lists the jobs of an observable, newest first unless p sorts otherwise.
func (s *JobStore) ListByObservable(ctx context.Context, observableID string, f search.Node, p search.Page) ([]connector.Job, int64, error) {
	if len(p.Sort) == 0 {
		p.Sort = docstore.Sort("-startDate")
	}
	scope := docstore.Eq(connector.PathObservableID, observableID)
	if f.Op != "" { // the zero node (no filter) would match nothing
		scope = docstore.And(f, scope)
	}
	return s.Jobs(ctx, scope, p)
}

// CountRuleJobs counts the organisation's jobs made by a rule (by any rule when rule is "") since a time.
func (s *JobStore) CountRuleJobs(ctx context.Context, org, rule string, since time.Time) (int64, error) {
	r := docstore.Gt("rule", "")
	if rule != "" {
		r = docstore.Eq("rule", rule)
	}
	n, err := s.coll.Count(ctx, docstore.And(docstore.Eq(record.PathOrg, org), r, docstore.Gte("createdAt", docstore.Millis(since))))
	if err != nil {
		return 0, fmt.Errorf("count rule jobs: %w", err)
	}
	return n, nil
}

// Jobs lists jobs.
func (s *JobStore) Jobs(ctx context.Context, f search.Node, p search.Page) ([]connector.Job, int64, error) {
	return page(ctx, s.coll, f, p, jobDoc.job)
}
