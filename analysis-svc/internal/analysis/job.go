// Package analysis is the domain of analysis-svc's work: the analyzers and responders a server can run
// (definitions, the catalog), those enabled in organizations, jobs and their reports. It owns the types, the
// rules (who may run what, the queue's order, cache, rate and lease) and the interfaces of the stores and of
// the execution side (Executor: job folders and runners, package runner) it consumes; who the callers are is
// package identity's.
package analysis

import (
	"context"
	"io"
	"time"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Job statuses.
const (
	JobWaiting    = "Waiting"
	JobInProgress = "InProgress"
	JobSuccess    = "Success"
	JobFailure    = "Failure"
	JobDeleted    = "Deleted"
)

// Attachment describes the file of a file observable or of a file artifact.
type Attachment struct {
	ID          string   // SHA-256 of the content
	Name        string   // file name
	Hashes      []string // sha256, sha1, md5
	Size        int64
	ContentType string
}

// Job is one run of a worker on an observable (analyzer) or an object (responder).
type Job struct {
	ID           string
	Kind         Kind
	Organization string
	WorkerID     string
	WorkerName   string
	DefinitionID string
	DataType     string
	Data         any // string for analyzers, any JSON object for responders; nil for files
	Attachment   *Attachment
	Parameters   map[string]any
	Message      string
	Label        string
	TLP          int
	PAP          int
	Status       string
	ErrorMessage string
	CacheTag     string
	StartDate    time.Time
	EndDate      time.Time
	CreatedAt    time.Time
	CreatedBy    string
	UpdatedAt    time.Time
	UpdatedBy    string
	Attempts     int
	FromCache    bool // set on a cache hit; never stored
	// DeferredSince is when the job was first deferred (DeferError) since its last run or requeue; zero when
	// it was not. Kept in the queue only.
	DeferredSince time.Time
}

// Finished reports whether the job will not change any more (except being deleted).
func (j Job) Finished() bool {
	return j.Status == JobSuccess || j.Status == JobFailure || j.Status == JobDeleted
}

// Artifact is an observable extracted from a job's report.
type Artifact struct {
	ID         string
	DataType   string
	Data       string
	Attachment *Attachment
	Message    string
	TLP        int
	Tags       []string
	CreatedAt  time.Time
	CreatedBy  string
}

// Report is the result of a finished job.
type Report struct {
	Success      bool
	Summary      map[string]any
	Full         map[string]any
	Artifacts    []Artifact
	Operations   []map[string]any
	ErrorMessage string
	Input        string // on failure: the worker's input, secrets removed
}

// FileInfo describes a stored file.
type FileInfo struct {
	ID     string
	Size   int64
	SHA256 string
	SHA1   string
	MD5    string
}

// FileStore keeps file contents, content-addressed, and which organization may read which file.
type FileStore interface {
	Put(ctx context.Context, r io.Reader, max int64) (FileInfo, error)
	Open(ctx context.Context, id string) (io.ReadCloser, FileInfo, error)
	// Grant records that org may read the file; Granted checks it.
	Grant(ctx context.Context, org, id string) error
	Granted(ctx context.Context, org, id string) (bool, error)
}

// ClaimRule says which organizations' Waiting jobs a claim may take.
type ClaimRule struct {
	OrgMax  int  // not those of an organization running this many jobs already (job.org_max; 0 = no cap)
	NewOnly bool // only those of an organization running no job (a replica's reserved worker, job.reserve)
}

// JobStore persists jobs as a durable queue: a small collection holds the Waiting and InProgress jobs, and a
// finished job is inserted, with its report, into the large one (DECISIONS.md "Database").
type JobStore interface {
	// Enqueue adds a Waiting job to the queue.
	Enqueue(ctx context.Context, j Job) error
	// Job finds a job, queued or finished; ErrJobNotFound otherwise.
	Job(ctx context.Context, id string) (Job, error)
	// Report returns a finished job's report; ErrJobNotFound when there is none.
	Report(ctx context.Context, id string) (Report, error)
	// Claim moves a Waiting job to InProgress for owner until the lease ends, fairly between organizations:
	// the oldest Waiting job of the organization with the fewest running jobs, never one of an organization
	// that runs rule.OrgMax jobs already (0 = no cap; atomic across replicas), nor, with rule.NewOnly, one of
	// an organization that runs any; ErrNoJob when none.
	Claim(ctx context.Context, owner string, until, now time.Time, rule ClaimRule) (Job, error)
	// Renew extends owner's lease; ErrLeaseLost when the job is no longer owner's.
	Renew(ctx context.Context, id, owner string, until time.Time) error
	// Finish stores the final job and its report and removes it from the queue (only if owner still holds it;
	// owner "" for jobs that never were queued). A job already finished (or deleted) stays as it is. Once the
	// final job and its report can be read, before the rest of its work, it calls FinishedReadable.
	Finish(ctx context.Context, j Job, r *Report, owner string) error
	// Expired lists InProgress jobs whose lease ended before now.
	Expired(ctx context.Context, now time.Time) ([]Job, error)
	// Requeue puts a job back to Waiting if owner still holds it; refund gives back the attempt its claim
	// counted (a graceful shutdown is not the job's fault).
	Requeue(ctx context.Context, id, owner string, refund bool) error
	// Defer puts a job back to Waiting if owner still holds it, with the attempt its claim counted given back,
	// not claimable before notBefore, and deferred since since (Job.DeferredSince).
	Defer(ctx context.Context, id, owner string, since, notBefore time.Time) error
	// Owner returns who holds a queued job's lease.
	Owner(ctx context.Context, id string) (string, error)
	// MarkDeleted sets a job Deleted (a queued job leaves the queue).
	MarkDeleted(ctx context.Context, id, by string, at time.Time) error
	// Search lists jobs, queued and finished, merged in the page's order.
	Search(ctx context.Context, f search.Node, p search.Page) ([]Job, int64, error)
	// CachedJob returns the job id stored under a cache tag and when; ErrJobNotFound when none.
	CachedJob(ctx context.Context, tag string) (string, time.Time, error)
	// CacheJob stores the job id under its cache tag.
	CacheJob(ctx context.Context, tag, jobID string, at time.Time) error
	// CountRate adds delta to the counter of a rate window and returns the new count.
	CountRate(ctx context.Context, key string, delta int, expires time.Time) (int, error)
	// Reserve records that an idempotency key belongs to jobID and to the request whose fingerprint is body;
	// when the key is taken it returns the job it holds and whether that request had the same fingerprint.
	Reserve(ctx context.Context, key, jobID, body string, at time.Time) (existing string, same bool, err error)
	// Release forgets an idempotency key (its request failed).
	Release(ctx context.Context, key string) error
	// Prune removes expired rate windows and cache entries older than before.
	Prune(ctx context.Context, now, cacheBefore time.Time) error
	// QueueCounts counts the queue's Waiting and InProgress jobs of one organization (org) or of each
	// ("": an organization with nothing queued is left out), ordered by organization.
	QueueCounts(ctx context.Context, org string) ([]OrgQueue, error)
}

// OrgQueue is one organization's part of the job queue, across every replica sharing the database.
type OrgQueue struct {
	Organization string
	Waiting      int64     // jobs waiting for a worker
	Running      int64     // jobs in progress: the workers busy with the organization's jobs
	Oldest       time.Time // when its oldest waiting job was created (zero: none waits)
}

// readableKey carries, in the context of JobStore.Finish, what to do once the finished job can be read.
type readableKey struct{}

// Ended is a job's end as JobStore.Finish stored it: the final job and its report (nil when Finish had none),
// as reading them back would give them.
type Ended struct {
	Job    Job
	Report *Report
}

// OnFinishedReadable returns ctx carrying f, which JobStore.Finish calls through FinishedReadable.
func OnFinishedReadable(ctx context.Context, f func(end *Ended)) context.Context {
	return context.WithValue(ctx, readableKey{}, f)
}

// FinishedReadable is called by JobStore.Finish once the final job and its report can be read, with them as
// stored, or nil when the job had ended already (another end, or its deletion, stays): the job service wakes
// this process's waitreport waiters then, handing them the end, without waiting for the rest of Finish (the
// job leaving the queue, its event's release). A context without the callback (any other caller) does
// nothing. It goes through the context so that every decorator of the store passes it on unchanged.
func FinishedReadable(ctx context.Context, end *Ended) {
	if f, ok := ctx.Value(readableKey{}).(func(*Ended)); ok {
		f(end)
	}
}

// Job store errors.
var (
	ErrJobNotFound = apperr.New(apperr.NotFound, "job not found")
	ErrNoJob       = apperr.New(apperr.NotFound, "no waiting job")
	ErrLeaseLost   = apperr.New(apperr.Conflict, "the job's lease was lost")
)

// JobFields is the allow-list of job searches and sorts.
var JobFields = search.Fields{
	"id": {Path: "_id"}, "status": {Path: "status"}, "dataType": {Path: "dataType"}, "data": {Path: "data"},
	"analyzerId": {Path: "workerId"}, "responderId": {Path: "workerId"}, "workerId": {Path: "workerId"},
	"analyzerName": {Path: "workerName"}, "responderName": {Path: "workerName"}, "workerName": {Path: "workerName"},
	"analyzerDefinitionId": {Path: "definitionId"}, "responderDefinitionId": {Path: "definitionId"},
	"workerDefinitionId": {Path: "definitionId"}, "type": {Path: "kind"},
	"tlp": {Path: "tlp", Type: search.Number}, "pap": {Path: "pap", Type: search.Number},
	"message": {Path: "message"}, "label": {Path: "label"},
	"attachment.name": {Path: "attachment.name"}, "attachment.id": {Path: "attachment.id"},
	"attachment.contentType": {Path: "attachment.contentType"},
	"startDate":              {Path: "startDate", Type: search.Number}, "endDate": {Path: "endDate", Type: search.Number},
	"createdAt": {Path: "createdAt", Type: search.Number}, "date": {Path: "createdAt", Type: search.Number},
	"createdBy": {Path: "createdBy"}, "updatedAt": {Path: "updatedAt", Type: search.Number},
	"updatedBy": {Path: "updatedBy"},
}
