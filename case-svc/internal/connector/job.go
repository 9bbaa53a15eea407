package connector

import (
	"context"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Analyzer job statuses (spec §2).
const (
	JobWaiting    = "Waiting"
	JobInProgress = "InProgress"
	JobSuccess    = "Success"
	JobFailure    = "Failure"
	JobDeleted    = "Deleted"
)

// Job is an analyzer job run on an observable of a case through an analysis server (_type
// case_artifact_job). The connector creates and updates jobs; the query API lists them.
type Job struct {
	ID                 string
	Org                string
	ObservableID       string
	CaseID             string
	AlertID            string // the observable's alert, for an observable of an alert (bulk runs and rules)
	AnalyzerID         string
	AnalyzerName       string
	AnalyzerDefinition string
	Status             string
	StartDate          time.Time
	EndDate            time.Time
	AnalysisID         string // the analysis server's name
	AnalysisJobID      string // the job's id on that server
	// Report is nil until the job ends; then {success, full, artifacts} (or {success: false, errorMessage}),
	// any JSON-compatible values (map[string]any, []any, string, float64, int64, bool, nil, json.Number).
	Report map[string]any
	// Message says why a Waiting job has not reached its server yet (the server is unreachable); "" once it has.
	Message string
	// Parameters are sent with the job (an analyzer set's); nil for none.
	Parameters map[string]any
	// Rule is the automation rule whose firing made the job ("" for a user's request), Firing that firing.
	Rule, Firing string
	record.Meta
}

// JobStore persists analyzer jobs (the collection jobs). Update writes the named fields: status, startDate,
// endDate, report, analysisJobId, analysisId, analyzerId, analyzerName, analyzerDefinition, message.
type JobStore interface {
	// Create fails with ErrJobExists when the id is taken.
	Create(ctx context.Context, j Job) error
	// Job fails with ErrJobNotFound.
	Job(ctx context.Context, id string) (Job, error)
	Update(ctx context.Context, j Job, fields []string, by string, at time.Time) (Job, error)
	// ListByObservable lists the jobs of an observable, newest first unless p sorts otherwise.
	ListByObservable(ctx context.Context, observableID string, f search.Node, p search.Page) ([]Job, int64, error)
	// Jobs lists and searches jobs.
	Jobs(ctx context.Context, f search.Node, p search.Page) ([]Job, int64, error)
	// Delete removes a job whose submission failed.
	Delete(ctx context.Context, id string) error
	// CountRuleJobs counts the organisation's jobs made by a rule (by any rule when rule is "") since a time.
	CountRuleJobs(ctx context.Context, org, rule string, since time.Time) (int64, error)
}

// ErrJobNotFound is returned for an unknown job or another organisation's.
var ErrJobNotFound = apperr.New(apperr.NotFound, "Job not found")

// ErrJobExists is returned by JobStore.Create for an id that is taken (a bulk run's job made again by a
// retried request).
var ErrJobExists = apperr.New(apperr.Conflict, "Job exists")

// Storage path of a job's observable.
const PathObservableID = "observable"

// JobFields is the allow-list of job searches.
var JobFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "analyzerId": {Path: "analyzerId"},
	"analyzerName": {Path: "analyzerName"}, "analyzerDefinition": {Path: "analyzerDefinition"},
	"status": {Path: "status"}, "startDate": {Path: "startDate", Type: search.Number},
	"endDate": {Path: "endDate", Type: search.Number}, "analysisId": {Path: "analysisId"},
	"analysisJobId": {Path: "analysisJobId"}, "cortexId": {Path: "analysisId"}, "cortexJobId": {Path: "analysisJobId"},
	"observable": {Path: PathObservableID}, "observableId": {Path: PathObservableID},
	"case": {Path: cases.PathCaseID}, "caseId": {Path: cases.PathCaseID},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
	"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
}

// Jobs lists and searches the analyzer jobs of the caller's organisation.
func (a *Analyses) Jobs(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Job, int64, error) {
	return a.jobs.Jobs(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// AnalyzerJob returns an analyzer job of the caller's organisation (with its report once finished).
func (a *Analyses) AnalyzerJob(ctx context.Context, c identity.Caller, id string) (Job, error) {
	j, err := a.jobs.Job(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if j.Org != c.Org {
		return Job{}, ErrJobNotFound
	}
	return j, nil
}
