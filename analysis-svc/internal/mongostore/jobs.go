package mongostore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// JobStore is the durable job queue. `queue` holds only Waiting and InProgress jobs (small, so claims and
// lease updates stay cheap on the embedded engine, whose updates cost per document in the collection);
// a finished job is inserted into `jobs` with its report in `reports`, then removed from the queue. Cache
// tags and rate windows are documents found by _id.
type JobStore struct {
	queue   *mongo.Collection
	jobs    *mongo.Collection
	reports *mongo.Collection
	cache   *mongo.Collection
	rates   *mongo.Collection
	idem    *mongo.Collection
}

var _ analysis.JobStore = (*JobStore)(nil)

// NewJobStore returns the store and creates the indexes its queries use on MongoDB.
func NewJobStore(ctx context.Context, db *mongox.DB) (*JobStore, error) {
	s := &JobStore{queue: db.Collection("queue"), jobs: db.Collection("jobs"), reports: db.Collection("reports"),
		cache: db.Collection("jobcache"), rates: db.Collection("ratelimits"),
		idem: db.Collection("idempotency")}
	if err := mongox.EnsureIndexes(ctx, s.queue,
		mongox.Index{Name: "status_createdAt", Keys: bson.D{{Key: "status", Value: 1}, {Key: "createdAt", Value: 1}}},
		mongox.Index{Name: "status_leaseUntil", Keys: bson.D{{Key: "status", Value: 1}, {Key: "leaseUntil", Value: 1}}},
	); err != nil {
		return nil, err
	}
	if err := mongox.EnsureIndexes(ctx, s.jobs,
		mongox.Index{Name: "organization_createdAt", Keys: bson.D{{Key: "organization", Value: 1}, {Key: "createdAt", Value: -1}}},
		mongox.Index{Name: "organization_status_createdAt", Keys: bson.D{{Key: "organization", Value: 1}, {Key: "status", Value: 1}, {Key: "createdAt", Value: -1}}},
		mongox.Index{Name: "workerId_createdAt", Keys: bson.D{{Key: "workerId", Value: 1}, {Key: "createdAt", Value: -1}}},
	); err != nil {
		return nil, err
	}
	return s, nil
}

type attachDoc struct {
	ID          string   `bson:"id"`
	Name        string   `bson:"name"`
	Hashes      []string `bson:"hashes"`
	Size        int64    `bson:"size"`
	ContentType string   `bson:"contentType"`
}

// jobDoc is a job in `queue` or `jobs`. Responder data and parameters are JSON text: their keys come from
// clients and may hold "." or "$".
type jobDoc struct {
	ID           string     `bson:"_id"`
	Kind         string     `bson:"kind"`
	Organization string     `bson:"organization"`
	WorkerID     string     `bson:"workerId"`
	WorkerName   string     `bson:"workerName"`
	DefinitionID string     `bson:"definitionId"`
	DataType     string     `bson:"dataType"`
	Data         string     `bson:"data,omitempty"`
	DataJSON     string     `bson:"dataJSON,omitempty"`
	Attachment   *attachDoc `bson:"attachment,omitempty"`
	Parameters   string     `bson:"parameters"`
	Message      string     `bson:"message"`
	Label        string     `bson:"label,omitempty"`
	TLP          int        `bson:"tlp"`
	PAP          int        `bson:"pap"`
	Status       string     `bson:"status"`
	ErrorMessage string     `bson:"errorMessage,omitempty"`
	CacheTag     string     `bson:"cacheTag,omitempty"`
	StartDate    int64      `bson:"startDate,omitempty"`
	EndDate      int64      `bson:"endDate,omitempty"`
	CreatedAt    int64      `bson:"createdAt"`
	CreatedBy    string     `bson:"createdBy"`
	UpdatedAt    int64      `bson:"updatedAt"`
	UpdatedBy    string     `bson:"updatedBy"`
	Attempts     int        `bson:"attempts"`
	Owner        string     `bson:"owner,omitempty"`
	LeaseUntil   int64      `bson:"leaseUntil,omitempty"`
}

func toJobDoc(j analysis.Job) (jobDoc, error) {
	d := jobDoc{ID: j.ID, Kind: string(j.Kind), Organization: j.Organization, WorkerID: j.WorkerID,
		WorkerName: j.WorkerName, DefinitionID: j.DefinitionID, DataType: j.DataType, Message: j.Message,
		Label: j.Label, TLP: j.TLP, PAP: j.PAP, Status: j.Status, ErrorMessage: j.ErrorMessage, CacheTag: j.CacheTag,
		StartDate: mongox.Millis(j.StartDate), EndDate: mongox.Millis(j.EndDate), CreatedAt: mongox.Millis(j.CreatedAt),
		CreatedBy: j.CreatedBy, UpdatedAt: mongox.Millis(j.UpdatedAt), UpdatedBy: j.UpdatedBy, Attempts: j.Attempts}
	switch v := j.Data.(type) {
	case nil:
	case string:
		d.Data = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return jobDoc{}, fmt.Errorf("encode job data: %w", err)
		}
		d.DataJSON = string(b)
	}
	params, err := json.Marshal(j.Parameters)
	if err != nil {
		return jobDoc{}, fmt.Errorf("encode job parameters: %w", err)
	}
	d.Parameters = string(params)
	if a := j.Attachment; a != nil {
		d.Attachment = &attachDoc{ID: a.ID, Name: a.Name, Hashes: a.Hashes, Size: a.Size, ContentType: a.ContentType}
	}
	return d, nil
}

func (d jobDoc) job() analysis.Job {
	j := analysis.Job{ID: d.ID, Kind: analysis.Kind(d.Kind), Organization: d.Organization, WorkerID: d.WorkerID,
		WorkerName: d.WorkerName, DefinitionID: d.DefinitionID, DataType: d.DataType, Message: d.Message,
		Label: d.Label, TLP: d.TLP, PAP: d.PAP, Status: d.Status, ErrorMessage: d.ErrorMessage, CacheTag: d.CacheTag,
		StartDate: mongox.Time(d.StartDate), EndDate: mongox.Time(d.EndDate), CreatedAt: mongox.Time(d.CreatedAt),
		CreatedBy: d.CreatedBy, UpdatedAt: mongox.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy, Attempts: d.Attempts}
	if d.DataJSON != "" {
		var v any
		_ = json.Unmarshal([]byte(d.DataJSON), &v)
		j.Data = v
	} else if d.Data != "" {
		j.Data = d.Data
	}
	_ = json.Unmarshal([]byte(d.Parameters), &j.Parameters)
	if j.Parameters == nil {
		j.Parameters = map[string]any{}
	}
	if a := d.Attachment; a != nil {
		j.Attachment = &analysis.Attachment{ID: a.ID, Name: a.Name, Hashes: a.Hashes, Size: a.Size, ContentType: a.ContentType}
	}
	return j
}

// Enqueue adds a Waiting job.
func (s *JobStore) Enqueue(ctx context.Context, j analysis.Job) error {
	d, err := toJobDoc(j)
	if err != nil {
		return err
	}
	if _, err := s.queue.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("enqueue job %s: %w", j.ID, err)
	}
	return nil
}

func (s *JobStore) find(ctx context.Context, c *mongo.Collection, id string) (jobDoc, error) {
	var d jobDoc
	err := c.FindOne(ctx, byID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return jobDoc{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return jobDoc{}, fmt.Errorf("find job %s: %w", id, err)
	}
	return d, nil
}

// Job finds a job: in the queue first, then among the finished ones. That order never misses a job that is
// finishing meanwhile, because a job is inserted into `jobs` before it leaves the queue.
func (s *JobStore) Job(ctx context.Context, id string) (analysis.Job, error) {
	d, err := s.find(ctx, s.queue, id)
	if errors.Is(err, analysis.ErrJobNotFound) {
		d, err = s.find(ctx, s.jobs, id)
	}
	if err != nil {
		return analysis.Job{}, err
	}
	return d.job(), nil
}

type artifactDoc struct {
	ID         string     `bson:"id"`
	DataType   string     `bson:"dataType"`
	Data       string     `bson:"data,omitempty"`
	Attachment *attachDoc `bson:"attachment,omitempty"`
	Message    string     `bson:"message,omitempty"`
	TLP        int        `bson:"tlp"`
	Tags       []string   `bson:"tags"`
	CreatedAt  int64      `bson:"createdAt"`
	CreatedBy  string     `bson:"createdBy"`
}

// reportDoc keeps the analyzer's free-form output as JSON text (its keys are arbitrary); artifacts are
// embedded so that listing them is one read by _id.
type reportDoc struct {
	ID           string        `bson:"_id"` // the job id
	Success      bool          `bson:"success"`
	Summary      string        `bson:"summary,omitempty"`
	Full         string        `bson:"full,omitempty"`
	Operations   string        `bson:"operations,omitempty"`
	Artifacts    []artifactDoc `bson:"artifacts"`
	ErrorMessage string        `bson:"errorMessage,omitempty"`
	Input        string        `bson:"input,omitempty"`
}

func toReportDoc(id string, r *analysis.Report) (reportDoc, error) {
	d := reportDoc{ID: id, Success: r.Success, ErrorMessage: r.ErrorMessage, Input: r.Input, Artifacts: []artifactDoc{}}
	for _, x := range []struct {
		v   any
		dst *string
	}{{r.Summary, &d.Summary}, {r.Full, &d.Full}, {r.Operations, &d.Operations}} {
		b, err := json.Marshal(x.v)
		if err != nil {
			return reportDoc{}, fmt.Errorf("encode report: %w", err)
		}
		*x.dst = string(b)
	}
	for _, a := range r.Artifacts {
		ad := artifactDoc{ID: a.ID, DataType: a.DataType, Data: a.Data, Message: a.Message, TLP: a.TLP, Tags: a.Tags,
			CreatedAt: mongox.Millis(a.CreatedAt), CreatedBy: a.CreatedBy}
		if ad.Tags == nil {
			ad.Tags = []string{}
		}
		if at := a.Attachment; at != nil {
			ad.Attachment = &attachDoc{ID: at.ID, Name: at.Name, Hashes: at.Hashes, Size: at.Size, ContentType: at.ContentType}
		}
		d.Artifacts = append(d.Artifacts, ad)
	}
	return d, nil
}

func (d reportDoc) report() analysis.Report {
	r := analysis.Report{Success: d.Success, ErrorMessage: d.ErrorMessage, Input: d.Input}
	_ = json.Unmarshal([]byte(d.Summary), &r.Summary)
	_ = json.Unmarshal([]byte(d.Full), &r.Full)
	_ = json.Unmarshal([]byte(d.Operations), &r.Operations)
	for _, a := range d.Artifacts {
		art := analysis.Artifact{ID: a.ID, DataType: a.DataType, Data: a.Data, Message: a.Message, TLP: a.TLP,
			Tags: a.Tags, CreatedAt: mongox.Time(a.CreatedAt), CreatedBy: a.CreatedBy}
		if at := a.Attachment; at != nil {
			art.Attachment = &analysis.Attachment{ID: at.ID, Name: at.Name, Hashes: at.Hashes, Size: at.Size, ContentType: at.ContentType}
		}
		r.Artifacts = append(r.Artifacts, art)
	}
	return r
}

// Report returns a finished job's report.
func (s *JobStore) Report(ctx context.Context, id string) (analysis.Report, error) {
	var d reportDoc
	err := s.reports.FindOne(ctx, byID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.Report{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return analysis.Report{}, fmt.Errorf("find report %s: %w", id, err)
	}
	return d.report(), nil
}

// Claim takes the oldest Waiting job. One findOneAndUpdate: atomic on MongoDB, and on the embedded engine
// because it has one connection.
func (s *JobStore) Claim(ctx context.Context, owner string, until, now time.Time) (analysis.Job, error) {
	var d jobDoc
	err := s.queue.FindOneAndUpdate(ctx,
		bson.D{{Key: "status", Value: analysis.JobWaiting}},
		bson.D{
			{Key: "$set", Value: bson.D{{Key: "status", Value: analysis.JobInProgress}, {Key: "owner", Value: owner},
				{Key: "leaseUntil", Value: mongox.Millis(until)}, {Key: "startDate", Value: mongox.Millis(now)}}},
			{Key: "$inc", Value: bson.D{{Key: "attempts", Value: 1}}},
		},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}).
			SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.Job{}, analysis.ErrNoJob
	}
	if err != nil {
		return analysis.Job{}, fmt.Errorf("claim a job: %w", err)
	}
	return d.job(), nil
}

func owned(id, owner string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}, {Key: "status", Value: analysis.JobInProgress}}
}

// Renew extends a lease.
func (s *JobStore) Renew(ctx context.Context, id, owner string, until time.Time) error {
	res, err := s.queue.UpdateOne(ctx, owned(id, owner),
		bson.D{{Key: "$set", Value: bson.D{{Key: "leaseUntil", Value: mongox.Millis(until)}}}})
	if err != nil {
		return fmt.Errorf("renew lease of %s: %w", id, err)
	}
	if res.MatchedCount == 0 {
		return analysis.ErrLeaseLost
	}
	return nil
}

// Finish stores the outcome. With an owner it first confirms (and extends) the lease, so a worker that lost
// its job to the sweeper does not store a second result; then the report and the final job are inserted (a
// duplicate means it is already finished or deleted, which wins) and the job leaves the queue.
func (s *JobStore) Finish(ctx context.Context, j analysis.Job, r *analysis.Report, owner string) error {
	if owner != "" {
		if err := s.Renew(ctx, j.ID, owner, time.Now().Add(10*time.Minute)); err != nil {
			return err
		}
	}
	if r != nil {
		rd, err := toReportDoc(j.ID, r)
		if err != nil {
			return err
		}
		if _, err := s.reports.InsertOne(ctx, rd); err != nil && !mongox.IsDuplicate(err) {
			return fmt.Errorf("store report of %s: %w", j.ID, err)
		}
	}
	d, err := toJobDoc(j)
	if err != nil {
		return err
	}
	if _, err := s.jobs.InsertOne(ctx, d); err != nil && !mongox.IsDuplicate(err) {
		return fmt.Errorf("store job %s: %w", j.ID, err)
	}
	if owner != "" {
		if _, err := s.queue.DeleteOne(ctx, byID(j.ID)); err != nil {
			return fmt.Errorf("dequeue job %s: %w", j.ID, err)
		}
	}
	return nil
}

// Expired lists InProgress jobs whose lease has ended.
func (s *JobStore) Expired(ctx context.Context, now time.Time) ([]analysis.Job, error) {
	cur, err := s.queue.Find(ctx, bson.D{{Key: "status", Value: analysis.JobInProgress},
		{Key: "leaseUntil", Value: bson.D{{Key: "$lt", Value: mongox.Millis(now)}}}})
	if err != nil {
		return nil, fmt.Errorf("find expired leases: %w", err)
	}
	var docs []jobDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read expired leases: %w", err)
	}
	out := make([]analysis.Job, len(docs))
	for i, d := range docs {
		out[i] = d.job()
	}
	return out, nil
}

// Owner returns the holder of a queued job's lease.
func (s *JobStore) Owner(ctx context.Context, id string) (string, error) {
	d, err := s.find(ctx, s.queue, id)
	return d.Owner, err
}

// Requeue puts a job back to Waiting. A job whose result was stored just before its worker died is only
// removed from the queue.
func (s *JobStore) Requeue(ctx context.Context, id, owner string, refund bool) error {
	if _, err := s.find(ctx, s.jobs, id); err == nil {
		_, err := s.queue.DeleteOne(ctx, byID(id))
		return err
	}
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: analysis.JobWaiting}, {Key: "owner", Value: ""},
		{Key: "leaseUntil", Value: int64(0)}}}}
	if refund {
		update = append(update, bson.E{Key: "$inc", Value: bson.D{{Key: "attempts", Value: -1}}})
	}
	res, err := s.queue.UpdateOne(ctx, owned(id, owner), update)
	if err != nil {
		return fmt.Errorf("requeue %s: %w", id, err)
	}
	if res.MatchedCount == 0 {
		return analysis.ErrLeaseLost
	}
	return nil
}

// MarkDeleted sets a job Deleted; a queued job moves to `jobs` as Deleted (its worker then loses the lease).
func (s *JobStore) MarkDeleted(ctx context.Context, id, by string, at time.Time) error {
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: analysis.JobDeleted},
		{Key: "updatedAt", Value: mongox.Millis(at)}, {Key: "updatedBy", Value: by}}}}
	if d, err := s.find(ctx, s.queue, id); err == nil {
		d.Status, d.UpdatedAt, d.UpdatedBy, d.Owner, d.LeaseUntil = analysis.JobDeleted, mongox.Millis(at), by, "", 0
		if _, err := s.jobs.InsertOne(ctx, d); err != nil && !mongox.IsDuplicate(err) {
			return fmt.Errorf("delete job %s: %w", id, err)
		}
		if _, err := s.queue.DeleteOne(ctx, byID(id)); err != nil {
			return fmt.Errorf("delete job %s: %w", id, err)
		}
	} else if !errors.Is(err, analysis.ErrJobNotFound) {
		return err
	}
	res, err := s.jobs.UpdateOne(ctx, byID(id), set)
	if err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	if res.MatchedCount == 0 {
		return analysis.ErrJobNotFound
	}
	return nil
}

// Search runs the filter on both collections and merges them in the page's order: the queue is small, and
// each side returns at most offset+limit documents.
func (s *JobStore) Search(ctx context.Context, f search.Node, p search.Page) ([]analysis.Job, int64, error) {
	window := search.Page{Offset: 0, Limit: p.Offset + p.Limit, Sort: p.Sort}
	if p.Limit <= 0 {
		window.Limit = 0
	}
	var queued, done []jobDoc
	nq, err := mongox.FindPage(ctx, s.queue, f, window, &queued)
	if err != nil {
		return nil, 0, err
	}
	nd, err := mongox.FindPage(ctx, s.jobs, f, window, &done)
	if err != nil {
		return nil, 0, err
	}
	finished := make(map[string]bool, len(done))
	for _, d := range done {
		finished[d.ID] = true
	}
	all := done
	for _, d := range queued {
		if !finished[d.ID] { // a job between insert into jobs and removal from the queue
			all = append(all, d)
		} else {
			nq--
		}
	}
	slices.SortStableFunc(all, func(a, b jobDoc) int { return compareJobs(a, b, p.Sort) })
	if p.Offset >= len(all) {
		all = nil
	} else {
		all = all[p.Offset:]
	}
	if p.Limit > 0 && len(all) > p.Limit {
		all = all[:p.Limit]
	}
	out := make([]analysis.Job, len(all))
	for i, d := range all {
		out[i] = d.job()
	}
	return out, nq + nd, nil
}

func compareJobs(a, b jobDoc, keys []search.SortKey) int {
	for _, k := range keys {
		c := compareAny(a.field(k.Path), b.field(k.Path))
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(a.ID, b.ID)
}

func compareAny(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return cmp.Compare(x, b.(string))
	}
	return 0
}

// field returns a sortable field of the document by its storage path (see analysis.JobFields).
func (d jobDoc) field(path string) any {
	switch path {
	case "_id":
		return d.ID
	case "status":
		return d.Status
	case "dataType":
		return d.DataType
	case "data":
		return d.Data
	case "workerId":
		return d.WorkerID
	case "workerName":
		return d.WorkerName
	case "definitionId":
		return d.DefinitionID
	case "kind":
		return d.Kind
	case "tlp":
		return int64(d.TLP)
	case "pap":
		return int64(d.PAP)
	case "message":
		return d.Message
	case "label":
		return d.Label
	case "startDate":
		return d.StartDate
	case "endDate":
		return d.EndDate
	case "createdAt":
		return d.CreatedAt
	case "createdBy":
		return d.CreatedBy
	case "updatedAt":
		return d.UpdatedAt
	case "updatedBy":
		return d.UpdatedBy
	}
	if d.Attachment != nil {
		switch path {
		case "attachment.name":
			return d.Attachment.Name
		case "attachment.id":
			return d.Attachment.ID
		case "attachment.contentType":
			return d.Attachment.ContentType
		}
	}
	return ""
}

type cacheDoc struct {
	ID    string `bson:"_id"` // the cache tag
	JobID string `bson:"jobId"`
	At    int64  `bson:"at"`
}

// CachedJob returns the job stored under a cache tag.
func (s *JobStore) CachedJob(ctx context.Context, tag string) (string, time.Time, error) {
	var d cacheDoc
	err := s.cache.FindOne(ctx, byID(tag)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", time.Time{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("find cache entry: %w", err)
	}
	return d.JobID, mongox.Time(d.At), nil
}

// CacheJob stores the job under its tag (an insert; the rarer replacement only when the tag was used before).
func (s *JobStore) CacheJob(ctx context.Context, tag, jobID string, at time.Time) error {
	d := cacheDoc{ID: tag, JobID: jobID, At: mongox.Millis(at)}
	_, err := s.cache.InsertOne(ctx, d)
	if mongox.IsDuplicate(err) {
		_, err = s.cache.ReplaceOne(ctx, byID(tag), d)
	}
	if err != nil {
		return fmt.Errorf("store cache entry: %w", err)
	}
	return nil
}

// CountRate adds delta to a rate window's counter and returns it.
func (s *JobStore) CountRate(ctx context.Context, key string, delta int, expires time.Time) (int, error) {
	var d struct {
		N int `bson:"n"`
	}
	err := s.rates.FindOneAndUpdate(ctx, byID(key),
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: delta}}},
			{Key: "$set", Value: bson.D{{Key: "expires", Value: mongox.Millis(expires)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&d)
	if err != nil {
		return 0, fmt.Errorf("count rate %s: %w", key, err)
	}
	return d.N, nil
}

// Reserve records an idempotency key (its _id), or returns the job of the request that took it first.
func (s *JobStore) Reserve(ctx context.Context, key, jobID string, at time.Time) (string, error) {
	_, err := s.idem.InsertOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "jobId", Value: jobID}, {Key: "at", Value: mongox.Millis(at)}})
	if err == nil {
		return jobID, nil
	}
	if !mongox.IsDuplicate(err) {
		return "", fmt.Errorf("reserve idempotency key: %w", err)
	}
	var d struct {
		JobID string `bson:"jobId"`
	}
	if err := s.idem.FindOne(ctx, byID(key)).Decode(&d); err != nil {
		return "", fmt.Errorf("read idempotency key: %w", err)
	}
	return d.JobID, nil
}

// Release forgets an idempotency key.
func (s *JobStore) Release(ctx context.Context, key string) error {
	_, err := s.idem.DeleteOne(ctx, byID(key))
	return err
}

// Prune removes ended rate windows, old cache entries and idempotency keys older than a day.
func (s *JobStore) Prune(ctx context.Context, now, cacheBefore time.Time) error {
	if _, err := s.idem.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: mongox.Millis(now.Add(-24 * time.Hour))}}}}); err != nil {
		return fmt.Errorf("prune idempotency keys: %w", err)
	}
	if _, err := s.rates.DeleteMany(ctx, bson.D{{Key: "expires", Value: bson.D{{Key: "$lt", Value: mongox.Millis(now)}}}}); err != nil {
		return fmt.Errorf("prune rate windows: %w", err)
	}
	if _, err := s.cache.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: mongox.Millis(cacheBefore)}}}}); err != nil {
		return fmt.Errorf("prune job cache: %w", err)
	}
	return nil
}
