package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// JobStore is the durable job queue. `queue` holds only Waiting and InProgress jobs (small, so that claims,
// lease renewals and the sweeper touch a small table and small indexes whatever the history); a finished job
// is inserted into `jobs` with its report in `reports`, then removed from the queue. Cache tags, rate windows
// and idempotency keys are documents found by _id.
type JobStore struct {
	db      *docstore.DB
	queue   *docstore.Collection
	jobs    *docstore.Collection
	reports *docstore.Collection
	cache   *docstore.Collection
	rates   *docstore.Collection
	idem    *docstore.Collection
}

var _ analysis.JobStore = (*JobStore)(nil)

// NewJobStore returns the store, opening its collections and their indexes.
func NewJobStore(ctx context.Context, db *docstore.DB) (*JobStore, error) {
	c, err := open(ctx, db, queueName, jobsName, reportsName, cacheName, ratesName, idemName)
	if docstore.IsDuplicate(err) {
		// A queue written before the slot index: its documents have no slot, which the unique index counts as
		// one value. Give each its own (its _id, as Enqueue does), then open again.
		if err = backfillSlots(ctx, db); err == nil {
			c, err = open(ctx, db, queueName, jobsName, reportsName, cacheName, ratesName, idemName)
		}
	}
	if err != nil {
		return nil, err
	}
	return &JobStore{db: db, queue: c[0], jobs: c[1], reports: c[2], cache: c[3], rates: c[4], idem: c[5]}, nil
}

// backfillSlots sets the slot of every queue document that has none (a one-off read of the small queue).
func backfillSlots(ctx context.Context, db *docstore.DB) error {
	spec, _ := Spec(queueName)
	spec.Indexes = slices.DeleteFunc(slices.Clone(spec.Indexes), func(ix docstore.Index) bool { return ix.Unique })
	q, err := db.Collection(ctx, spec)
	if err != nil {
		return fmt.Errorf("open collection %s: %w", queueName, err)
	}
	var docs []struct {
		ID string `json:"_id"`
	}
	if err := q.Find(ctx, docstore.Query{Filter: docstore.Missing("slot"), Fields: []string{"_id"}}, &docs); err != nil {
		return fmt.Errorf("find queued jobs without a slot: %w", err)
	}
	for _, d := range docs {
		if _, err := q.UpdateOne(ctx, docstore.And(docstore.ID(d.ID), docstore.Missing("slot")), docstore.Set("slot", d.ID), false); err != nil {
			return fmt.Errorf("set the slot of job %s: %w", d.ID, err)
		}
	}
	return nil
}

type attachDoc struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Hashes      []string `json:"hashes"`
	Size        int64    `json:"size"`
	ContentType string   `json:"contentType"`
}

// jobDoc is a job in `queue` or `jobs`. Responder data and parameters are JSON text: their keys come from
// clients and may hold "." or "$".
type jobDoc struct {
	ID           string     `json:"_id"`
	Kind         string     `json:"kind"`
	Organization string     `json:"organization"`
	WorkerID     string     `json:"workerId"`
	WorkerName   string     `json:"workerName"`
	DefinitionID string     `json:"definitionId"`
	DataType     string     `json:"dataType"`
	Data         string     `json:"data,omitempty"`
	DataJSON     string     `json:"dataJSON,omitempty"`
	Attachment   *attachDoc `json:"attachment,omitempty"`
	Parameters   string     `json:"parameters"`
	Message      string     `json:"message"`
	Label        string     `json:"label,omitempty"`
	TLP          int        `json:"tlp"`
	PAP          int        `json:"pap"`
	Status       string     `json:"status"`
	ErrorMessage string     `json:"errorMessage,omitempty"`
	CacheTag     string     `json:"cacheTag,omitempty"`
	StartDate    int64      `json:"startDate,omitempty"`
	EndDate      int64      `json:"endDate,omitempty"`
	CreatedAt    int64      `json:"createdAt"`
	CreatedBy    string     `json:"createdBy"`
	UpdatedAt    int64      `json:"updatedAt"`
	UpdatedBy    string     `json:"updatedBy"`
	Attempts     int        `json:"attempts"`
	Owner        string     `json:"owner,omitempty"`
	LeaseUntil   int64      `json:"leaseUntil,omitempty"`
	// DeferredSince is when a deferred job was first deferred (analysis.Job.DeferredSince) and NotBefore when
	// it may be claimed again (Defer); Requeue sets both to 0. Only queue documents have them.
	DeferredSince int64 `json:"deferredSince,omitempty"`
	NotBefore     int64 `json:"notBefore,omitempty"`
	// Slot is the queue's unique concurrency slot (see Claim): the job's own _id while Waiting or running
	// uncapped, "<organization>/<k>" while it holds one of its organization's job.org_max slots. Only queue
	// documents have one.
	Slot string `json:"slot,omitempty"`
}

func toJobDoc(j analysis.Job) (jobDoc, error) {
	d := jobDoc{ID: j.ID, Kind: string(j.Kind), Organization: j.Organization, WorkerID: j.WorkerID,
		WorkerName: j.WorkerName, DefinitionID: j.DefinitionID, DataType: j.DataType, Message: j.Message,
		Label: j.Label, TLP: j.TLP, PAP: j.PAP, Status: j.Status, ErrorMessage: j.ErrorMessage, CacheTag: j.CacheTag,
		StartDate: docstore.Millis(j.StartDate), EndDate: docstore.Millis(j.EndDate), CreatedAt: docstore.Millis(j.CreatedAt),
		CreatedBy: j.CreatedBy, UpdatedAt: docstore.Millis(j.UpdatedAt), UpdatedBy: j.UpdatedBy, Attempts: j.Attempts}
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
		StartDate: docstore.Time(d.StartDate), EndDate: docstore.Time(d.EndDate), CreatedAt: docstore.Time(d.CreatedAt),
		CreatedBy: d.CreatedBy, UpdatedAt: docstore.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy, Attempts: d.Attempts,
		DeferredSince: docstore.Time(d.DeferredSince)}
	if d.DataJSON != "" {
		var v any
		_ = decodeNumbers(d.DataJSON, &v)
		j.Data = v
	} else if d.Data != "" {
		j.Data = d.Data
	}
	_ = decodeNumbers(d.Parameters, &j.Parameters)
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
	return s.EnqueueWith(ctx, j, nil)
}

// EnqueueWith adds a Waiting job and, in the same write after it, with's documents (jobevent's creation
// event): one transaction on the embedded engine; on MongoDB the job first, so that no document of with's
// tells of a job that was not queued.
func (s *JobStore) EnqueueWith(ctx context.Context, j analysis.Job, with []docstore.Insertion) error {
	d, err := toJobDoc(j)
	if err != nil {
		return err
	}
	d.Slot = d.ID
	ins := append([]docstore.Insertion{{Coll: s.queue, Doc: d}}, with...)
	res, err := s.db.InsertAll(ctx, ins...)
	if err == nil && res[0] != nil {
		err = res[0] // a duplicate job id
	}
	if err != nil {
		return fmt.Errorf("enqueue job %s: %w", j.ID, err)
	}
	return nil
}

func (s *JobStore) find(ctx context.Context, c *docstore.Collection, id string) (jobDoc, error) {
	var d jobDoc
	err := c.Get(ctx, id, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return jobDoc{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return jobDoc{}, fmt.Errorf("find job %s: %w", id, err)
	}
	return d, nil
}

// Job finds a job: among the finished ones first (most reads are of finished jobs: one read), then in the
// queue, then among the finished ones again. The last read catches a job that finished between the first two:
// a job is inserted into `jobs` before it leaves the queue, so a job that exists is always found.
func (s *JobStore) Job(ctx context.Context, id string) (analysis.Job, error) {
	d, err := s.find(ctx, s.jobs, id)
	if errors.Is(err, analysis.ErrJobNotFound) {
		if d, err = s.find(ctx, s.queue, id); errors.Is(err, analysis.ErrJobNotFound) {
			d, err = s.find(ctx, s.jobs, id)
		}
	}
	if err != nil {
		return analysis.Job{}, err
	}
	return d.job(), nil
}

type artifactDoc struct {
	ID         string     `json:"id"`
	DataType   string     `json:"dataType"`
	Data       string     `json:"data,omitempty"`
	Attachment *attachDoc `json:"attachment,omitempty"`
	Message    string     `json:"message,omitempty"`
	TLP        int        `json:"tlp"`
	Tags       []string   `json:"tags"`
	CreatedAt  int64      `json:"createdAt"`
	CreatedBy  string     `json:"createdBy"`
}

// reportDoc keeps the analyzer's free-form output as JSON text (its keys are arbitrary; its numbers keep
// their text, see decodeNumbers); artifacts are embedded so that listing them is one read by _id.
type reportDoc struct {
	ID           string        `json:"_id"` // the job id
	Success      bool          `json:"success"`
	Summary      string        `json:"summary,omitempty"`
	Full         string        `json:"full,omitempty"`
	Operations   string        `json:"operations,omitempty"`
	Artifacts    []artifactDoc `json:"artifacts"`
	ErrorMessage string        `json:"errorMessage,omitempty"`
	Input        string        `json:"input,omitempty"`
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
			CreatedAt: docstore.Millis(a.CreatedAt), CreatedBy: a.CreatedBy}
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
	_ = decodeNumbers(d.Summary, &r.Summary)
	_ = decodeNumbers(d.Full, &r.Full)
	_ = decodeNumbers(d.Operations, &r.Operations)
	for _, a := range d.Artifacts {
		art := analysis.Artifact{ID: a.ID, DataType: a.DataType, Data: a.Data, Message: a.Message, TLP: a.TLP,
			Tags: a.Tags, CreatedAt: docstore.Time(a.CreatedAt), CreatedBy: a.CreatedBy}
		if at := a.Attachment; at != nil {
			art.Attachment = &analysis.Attachment{ID: at.ID, Name: at.Name, Hashes: at.Hashes, Size: at.Size, ContentType: at.ContentType}
		}
		r.Artifacts = append(r.Artifacts, art)
	}
	return r
}

// decodeNumbers decodes the JSON text of a free-form value with its numbers as json.Number, so that they
// are served as the client or worker wrote them (1.0 stays 1.0, 2^63-1 stays exact).
func decodeNumbers(text string, dst any) error {
	if text == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	return dec.Decode(dst)
}

// Report returns a finished job's report.
func (s *JobStore) Report(ctx context.Context, id string) (analysis.Report, error) {
	var d reportDoc
	err := s.reports.Get(ctx, id, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return analysis.Report{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return analysis.Report{}, fmt.Errorf("find report %s: %w", id, err)
	}
	return d.report(), nil
}

// Claim takes a Waiting job fairly between organizations (see pickOrg): the oldest Waiting job of the
// organization with the fewest running jobs, claimed with one atomic find-one-and-update on both engines (a
// single-document update on MongoDB, one IMMEDIATE transaction on SQLite), so two workers never claim the same
// job. With rule.NewOnly it takes only a job of an organization that runs none. With rule.OrgMax > 0 the claim
// also takes one of the organization's OrgMax slots ("<org>/<k>" in the unique
// `slot` index): a slot another replica holds makes the update a duplicate, so the cap holds across replicas
// without a lock. A job gives its slot back by leaving the queue (Finish, MarkDeleted) or by Requeue.
func (s *JobStore) Claim(ctx context.Context, owner string, until, now time.Time, rule analysis.ClaimRule) (analysis.Job, error) {
	orgMax := rule.OrgMax
	// A round ends without a claim when other workers took the picked organization's last job or free slot
	// meanwhile; the next round sees their claims. The bound only stops a pathological race: the worker polls.
	for range 8 {
		waiting, err := s.waitingOrgs(ctx, now)
		if err != nil {
			return analysis.Job{}, err
		}
		if len(waiting) == 0 {
			return analysis.Job{}, analysis.ErrNoJob
		}
		var running map[string][]string
		// One organization waiting, no cap, any organization: its running jobs do not matter.
		if orgMax > 0 || len(waiting) > 1 || rule.NewOnly {
			if running, err = s.running(ctx); err != nil {
				return analysis.Job{}, err
			}
		}
		org, err := pickOrg(waiting, running, rule)
		if err != nil {
			return analysis.Job{}, err
		}
		update := docstore.Set("status", analysis.JobInProgress).Set("owner", owner).Set("leaseUntil", docstore.Millis(until)).
			Set("startDate", docstore.Millis(now)).Inc("attempts", 1)
		slots := []string{""}
		if orgMax > 0 {
			slots = freeSlots(org, running[org], orgMax)
		}
		for _, slot := range slots {
			u := update
			if slot != "" {
				u = u.Set("slot", slot)
			}
			var d jobDoc
			err := s.queue.FindOneAndUpdate(ctx, docstore.And(claimable(now), docstore.Eq("organization", org)),
				docstore.Sort("createdAt", "_id"), u, docstore.FindAndUpdate{}, &d)
			switch {
			case err == nil:
				return d.job(), nil
			case docstore.IsDuplicate(err): // another worker took this slot since we read the running jobs
				continue
			case errors.Is(err, docstore.ErrNotFound): // the organization's last waiting job went elsewhere
			default:
				return analysis.Job{}, fmt.Errorf("claim a job: %w", err)
			}
			break
		}
	}
	return analysis.Job{}, analysis.ErrNoJob
}

// runningJob is what Claim reads of a running job.
type runningJob struct {
	Organization string `json:"organization"`
	Slot         string `json:"slot"`
}

// running returns the slots of the running jobs by organization (a few documents: at most the workers of
// all replicas, read from the status_leaseUntil index).
func (s *JobStore) running(ctx context.Context) (map[string][]string, error) {
	var docs []runningJob
	if err := s.queue.Find(ctx, docstore.Query{Filter: docstore.Eq("status", analysis.JobInProgress),
		Fields: []string{"organization", "slot"}}, &docs); err != nil {
		return nil, fmt.Errorf("read running jobs: %w", err)
	}
	out := map[string][]string{}
	for _, d := range docs {
		out[d.Organization] = append(out[d.Organization], d.Slot)
	}
	return out, nil
}

// waitingOrg is an organization with Waiting jobs and the creation date of its oldest one.
type waitingOrg struct {
	Organization string `json:"organization"`
	CreatedAt    int64  `json:"createdAt"`
}

// claimable matches the Waiting jobs that may be claimed at now: all but those deferred until later (Defer).
func claimable(now time.Time) search.Node {
	return docstore.And(docstore.Eq("status", analysis.JobWaiting),
		docstore.Or(docstore.Missing("notBefore"), docstore.Lte("notBefore", docstore.Millis(now))))
}

// waitingOrgs lists the organizations with Waiting jobs claimable at now, each with its oldest such job's
// date, by skipping through the status_organization_createdAt index: one seek per organization.
func (s *JobStore) waitingOrgs(ctx context.Context, now time.Time) ([]waitingOrg, error) {
	var out []waitingOrg
	f := claimable(now)
	for {
		var d waitingOrg
		err := s.queue.FindOne(ctx, f, docstore.Sort("organization", "createdAt", "_id"), &d)
		if errors.Is(err, docstore.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("find waiting jobs: %w", err)
		}
		out = append(out, d)
		f = docstore.And(claimable(now), docstore.Gt("organization", d.Organization))
	}
}

// QueueCounts counts the queue's Waiting and InProgress jobs by organization (of org only, unless ""), with
// the date of each organization's oldest Waiting job: two group counts and one seek per organization with
// Waiting jobs, on the small queue's status_organization_createdAt index.
func (s *JobStore) QueueCounts(ctx context.Context, org string) ([]analysis.OrgQueue, error) {
	byOrg := map[string]*analysis.OrgQueue{}
	get := func(o string) *analysis.OrgQueue {
		if byOrg[o] == nil {
			byOrg[o] = &analysis.OrgQueue{Organization: o}
		}
		return byOrg[o]
	}
	for _, st := range []string{analysis.JobWaiting, analysis.JobInProgress} {
		f := docstore.Eq("status", st)
		if org != "" {
			f = docstore.And(f, docstore.Eq("organization", org))
		}
		groups, err := s.queue.GroupCount(ctx, f, "organization", 0)
		if err != nil {
			return nil, fmt.Errorf("count queued jobs: %w", err)
		}
		for _, g := range groups {
			o, _ := g.Value.(string)
			if st == analysis.JobWaiting {
				get(o).Waiting = g.Count
			} else {
				get(o).Running = g.Count
			}
		}
	}
	for o, q := range byOrg {
		if q.Waiting == 0 {
			continue
		}
		var d waitingOrg
		err := s.queue.FindOne(ctx, docstore.And(docstore.Eq("status", analysis.JobWaiting), docstore.Eq("organization", o)),
			docstore.Sort("createdAt", "_id"), &d)
		switch {
		case err == nil:
			q.Oldest = time.UnixMilli(d.CreatedAt).UTC()
		case !errors.Is(err, docstore.ErrNotFound): // not found: claimed since it was counted
			return nil, fmt.Errorf("find the oldest waiting job: %w", err)
		}
	}
	out := make([]analysis.OrgQueue, 0, len(byOrg))
	for _, q := range byOrg {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b analysis.OrgQueue) int { return cmp.Compare(a.Organization, b.Organization) })
	return out, nil
}

// pickOrg is the fairness rule: among the organizations with a Waiting job and fewer than rule.OrgMax running
// (0 = no cap; none running with rule.NewOnly), the one with the fewest running jobs, then the one whose oldest
// Waiting job is the oldest. So an organization with nothing running gets the next free worker whatever
// another's backlog, and the workers a replica reserves (job.reserve) are free for it.
func pickOrg(waiting []waitingOrg, running map[string][]string, rule analysis.ClaimRule) (string, error) {
	best, bestN, bestAt := "", 0, int64(0)
	for _, d := range waiting {
		n := len(running[d.Organization])
		if (rule.OrgMax > 0 && n >= rule.OrgMax) || (rule.NewOnly && n > 0) {
			continue
		}
		if best == "" || n < bestN || (n == bestN && d.CreatedAt < bestAt) {
			best, bestN, bestAt = d.Organization, n, d.CreatedAt
		}
	}
	if best == "" {
		return "", analysis.ErrNoJob
	}
	return best, nil
}

// freeSlots lists the slots of org that no running job held when they were read, lowest first.
func freeSlots(org string, held []string, orgMax int) []string {
	var out []string
	for k := range orgMax {
		slot := org + "/" + strconv.Itoa(k)
		if !slices.Contains(held, slot) {
			out = append(out, slot)
		}
	}
	return out
}

// owned matches a queued job while owner holds its lease.
func owned(id, owner string) search.Node {
	return docstore.And(docstore.ID(id), docstore.Eq("owner", owner), docstore.Eq("status", analysis.JobInProgress))
}

// Renew extends a lease.
func (s *JobStore) Renew(ctx context.Context, id, owner string, until time.Time) error {
	matched, err := s.queue.UpdateOne(ctx, owned(id, owner), docstore.Set("leaseUntil", docstore.Millis(until)), false)
	if err != nil {
		return fmt.Errorf("renew lease of %s: %w", id, err)
	}
	if !matched {
		return analysis.ErrLeaseLost
	}
	return nil
}

// Finish stores the outcome: FinishWith with no documents of the caller's.
func (s *JobStore) Finish(ctx context.Context, j analysis.Job, r *analysis.Report, owner string) error {
	return s.FinishWith(ctx, j, r, owner, nil)
}

// FinishWith stores the outcome. With an owner it first confirms the lease, so a worker that lost its job to
// the sweeper does not store a second result; then with's documents (jobevent's JobFinished event), the
// report and the final job are inserted in one write (a duplicate means it is already finished or deleted,
// which wins) and the job leaves the queue. with (may be nil) runs beside the lease check, as the documents
// are encoded; an error of either stores nothing.
func (s *JobStore) FinishWith(ctx context.Context, j analysis.Job, r *analysis.Report, owner string,
	with func() ([]docstore.Insertion, error)) error {
	var leaseErr error
	var leased sync.WaitGroup
	if owner != "" {
		leased.Go(func() { leaseErr = s.confirmLease(ctx, j.ID, owner) })
	}
	ins, err := s.finalDocs(j, r, with)
	leased.Wait()
	if leaseErr != nil {
		return leaseErr
	}
	if err != nil {
		return err
	}
	res, err := s.db.InsertAll(ctx, ins...)
	if err != nil {
		return fmt.Errorf("store job %s and its report: %w", j.ID, err)
	}
	// Job reads `jobs` first: the final job and its report are read from now on, as ins encodes them, unless
	// the job had ended already (a duplicate: that end, or its deletion, wins and stays) or, on MongoDB, a
	// report of an end cut short by a crash stays.
	var end *analysis.Ended
	if res[len(res)-1] == nil && (r == nil || res[len(res)-2] == nil) {
		end = ended(ins, r != nil)
	}
	analysis.FinishedReadable(ctx, end)
	if owner != "" {
		if _, err := s.queue.DeleteOne(ctx, docstore.ID(j.ID)); err != nil {
			return fmt.Errorf("dequeue job %s: %w", j.ID, err)
		}
	}
	return nil
}

// finalDocs returns with's documents, the report, then the final job, in the order Finish writes them (one
// transaction on the embedded engine; on MongoDB in that order, as Job and Report read them: a finished job
// is read with its report).
func (s *JobStore) finalDocs(j analysis.Job, r *analysis.Report, with func() ([]docstore.Insertion, error)) ([]docstore.Insertion, error) {
	var ins []docstore.Insertion
	if with != nil {
		w, err := with()
		if err != nil {
			return nil, err
		}
		ins = append(ins, w...)
	}
	if r != nil {
		rd, err := toReportDoc(j.ID, r)
		if err != nil {
			return nil, err
		}
		ins = append(ins, docstore.Insertion{Coll: s.reports, Doc: rd})
	}
	d, err := toJobDoc(j)
	if err != nil {
		return nil, err
	}
	return append(ins, docstore.Insertion{Coll: s.jobs, Doc: d}), nil
}

// ended decodes the report and the final job of finalDocs's documents (the last two, or the last alone
// without a report) as a read of them would.
func ended(ins []docstore.Insertion, report bool) *analysis.Ended {
	end := &analysis.Ended{Job: ins[len(ins)-1].Doc.(jobDoc).job()}
	if report {
		r := ins[len(ins)-2].Doc.(reportDoc).report()
		end.Report = &r
	}
	return end
}

// finishMargin is how much of its lease a job must have left for Finish to confirm it by reading the queued
// job rather than by extending it (one write less before the final job is stored). The sweeper takes a job
// back only once its lease has ended and the worker renews it every third of job.lease, so with the default
// lease (30 s) a finishing job has 20 s or more left; Finish's writes take milliseconds, and the margin
// covers clocks of replicas that differ by seconds. With less left (a renewal failed, a short job.lease) the
// lease is extended, as a renewal does.
const finishMargin = 10 * time.Second

// confirmLease checks that owner holds the lease of a queued job with finishMargin left, else extends it;
// ErrLeaseLost when owner no longer holds it.
func (s *JobStore) confirmLease(ctx context.Context, id, owner string) error {
	d, err := s.find(ctx, s.queue, id)
	if errors.Is(err, analysis.ErrJobNotFound) {
		return analysis.ErrLeaseLost
	}
	if err != nil {
		return err
	}
	if d.Owner != owner || d.Status != analysis.JobInProgress {
		return analysis.ErrLeaseLost
	}
	now := time.Now()
	if docstore.Time(d.LeaseUntil).After(now.Add(finishMargin)) {
		return nil
	}
	return s.Renew(ctx, id, owner, now.Add(10*time.Minute))
}

// Expired lists InProgress jobs whose lease has ended.
func (s *JobStore) Expired(ctx context.Context, now time.Time) ([]analysis.Job, error) {
	var docs []jobDoc
	err := s.queue.Find(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("status", analysis.JobInProgress),
		docstore.Lt("leaseUntil", docstore.Millis(now)))}, &docs)
	if err != nil {
		return nil, fmt.Errorf("find expired leases: %w", err)
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
		if _, err := s.queue.DeleteOne(ctx, docstore.ID(id)); err != nil {
			return fmt.Errorf("dequeue job %s: %w", id, err)
		}
		return nil
	}
	update := docstore.Set("status", analysis.JobWaiting).Set("owner", "").Set("leaseUntil", int64(0)).Set("slot", id).
		Set("deferredSince", int64(0)).Set("notBefore", int64(0))
	if refund {
		update = update.Inc("attempts", -1)
	}
	return s.putBack(ctx, id, owner, update)
}

// Defer puts a job back to Waiting with its attempt refunded, claimable from notBefore on, deferred since
// since.
func (s *JobStore) Defer(ctx context.Context, id, owner string, since, notBefore time.Time) error {
	return s.putBack(ctx, id, owner, docstore.Set("status", analysis.JobWaiting).Set("owner", "").Set("leaseUntil", int64(0)).
		Set("slot", id).Set("deferredSince", docstore.Millis(since)).Set("notBefore", docstore.Millis(notBefore)).Inc("attempts", -1))
}

// putBack applies update (back to Waiting) to a job owner holds.
func (s *JobStore) putBack(ctx context.Context, id, owner string, update docstore.Update) error {
	matched, err := s.queue.UpdateOne(ctx, owned(id, owner), update, false)
	if err != nil {
		return fmt.Errorf("requeue %s: %w", id, err)
	}
	if !matched {
		return analysis.ErrLeaseLost
	}
	return nil
}

// MarkDeleted sets a job Deleted; a queued job moves to `jobs` as Deleted (its worker then loses the lease).
func (s *JobStore) MarkDeleted(ctx context.Context, id, by string, at time.Time) error {
	set := docstore.Set("status", analysis.JobDeleted).Set("updatedAt", docstore.Millis(at)).Set("updatedBy", by)
	if d, err := s.find(ctx, s.queue, id); err == nil {
		d.Status, d.UpdatedAt, d.UpdatedBy, d.Owner, d.LeaseUntil, d.Slot = analysis.JobDeleted, docstore.Millis(at), by, "", 0, ""
		d.DeferredSince, d.NotBefore = 0, 0
		if err := s.jobs.Insert(ctx, d); err != nil && !docstore.IsDuplicate(err) {
			return fmt.Errorf("delete job %s: %w", id, err)
		}
		if _, err := s.queue.DeleteOne(ctx, docstore.ID(id)); err != nil {
			return fmt.Errorf("delete job %s: %w", id, err)
		}
	} else if !errors.Is(err, analysis.ErrJobNotFound) {
		return err
	}
	matched, err := s.jobs.UpdateOne(ctx, docstore.ID(id), set, false)
	if err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	if !matched {
		return analysis.ErrJobNotFound
	}
	return nil
}

// Search runs the filter on both collections and merges them in the page's order. The queue is small, so all
// its matches are read first; `jobs` is then read without them (at most offset+limit documents, and its
// count). A job moves from the queue to `jobs` (inserted there, then removed from the queue) and never back,
// so every matching job is in one of the two reads, and counted once even while it moves: the page and the
// total agree with each other under concurrent finishing.
func (s *JobStore) Search(ctx context.Context, f search.Node, p search.Page) ([]analysis.Job, int64, error) {
	window := search.Page{Offset: 0, Limit: p.Offset + p.Limit, Sort: p.Sort}
	if p.Limit <= 0 {
		window.Limit = 0
	}
	var queued, done []jobDoc
	if err := s.queue.Find(ctx, docstore.Query{Filter: f, Sort: docstore.StableSort(p.Sort)}, &queued); err != nil {
		return nil, 0, err
	}
	jf := f
	count := func(ctx context.Context) (int64, error) { return s.jobs.Count(ctx, f) }
	if len(queued) > 0 {
		ids := make([]string, len(queued))
		for i, d := range queued {
			ids[i] = d.ID
		}
		jf = docstore.And(f, docstore.Not(docstore.In("_id", ids...)))
		// The total of jobs is f's count (on SQLite a sum over the jobs tally, whose paths f's usual filters
		// test; the _id condition would make it a visit of every match) less the queued jobs already in jobs
		// (a job is written there before it leaves the queue), counted by _id before and after: the two
		// agree when none of those jobs ended meanwhile, and then the difference is exact. A queue that keeps
		// moving is counted with the _id condition, in one statement.
		count = func(ctx context.Context) (int64, error) {
			inQueue := docstore.And(f, docstore.In("_id", ids...))
			both, err := s.jobs.Count(ctx, inQueue)
			for range 3 {
				if err != nil {
					return 0, err
				}
				var all, again int64
				if all, err = s.jobs.Count(ctx, f); err != nil {
					return 0, err
				}
				if again, err = s.jobs.Count(ctx, inQueue); err == nil && again == both {
					return all - both, nil
				}
				both = again
			}
			if err != nil {
				return 0, err
			}
			return s.jobs.Count(ctx, jf)
		}
	}
	nd, err := s.jobs.FindPageCounted(ctx, jf, window, &done, count)
	if err != nil {
		return nil, 0, err
	}
	nq := int64(len(queued))
	all := append(done, queued...)
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
	ID    string `json:"_id"` // the cache tag
	JobID string `json:"jobId"`
	At    int64  `json:"at"`
}

// CachedJob returns the job stored under a cache tag.
func (s *JobStore) CachedJob(ctx context.Context, tag string) (string, time.Time, error) {
	var d cacheDoc
	err := s.cache.Get(ctx, tag, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return "", time.Time{}, analysis.ErrJobNotFound
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("find cache entry: %w", err)
	}
	return d.JobID, docstore.Time(d.At), nil
}

// CacheJob stores the job under its tag (an insert; the rarer replacement only when the tag was used before).
func (s *JobStore) CacheJob(ctx context.Context, tag, jobID string, at time.Time) error {
	d := cacheDoc{ID: tag, JobID: jobID, At: docstore.Millis(at)}
	err := s.cache.Insert(ctx, d)
	if docstore.IsDuplicate(err) {
		err = s.cache.Replace(ctx, d, true)
	}
	if err != nil {
		return fmt.Errorf("store cache entry: %w", err)
	}
	return nil
}

// CountRate adds delta to a rate window's counter and returns it.
func (s *JobStore) CountRate(ctx context.Context, key string, delta int, expires time.Time) (int, error) {
	var d struct {
		N int `json:"n"`
	}
	err := s.rates.FindOneAndUpdate(ctx, docstore.ID(key), nil,
		docstore.Inc("n", delta).Set("expires", docstore.Millis(expires)), docstore.FindAndUpdate{Upsert: true}, &d)
	if err != nil {
		return 0, fmt.Errorf("count rate %s: %w", key, err)
	}
	return d.N, nil
}

// idemDoc is an idempotency key (its _id), the job of the request that took it and that request's
// fingerprint (empty in keys stored before fingerprints were).
type idemDoc struct {
	ID    string `json:"_id"`
	JobID string `json:"jobId"`
	Body  string `json:"body,omitempty"`
	At    int64  `json:"at"`
}

// Reserve records an idempotency key (its _id), or returns the job of the request that took it first and
// whether that request had the fingerprint body.
func (s *JobStore) Reserve(ctx context.Context, key, jobID, body string, at time.Time) (string, bool, error) {
	err := s.idem.Insert(ctx, idemDoc{ID: key, JobID: jobID, Body: body, At: docstore.Millis(at)})
	if err == nil {
		return jobID, true, nil
	}
	if !docstore.IsDuplicate(err) {
		return "", false, fmt.Errorf("reserve idempotency key: %w", err)
	}
	var d idemDoc
	if err := s.idem.Get(ctx, key, &d); err != nil {
		return "", false, fmt.Errorf("read idempotency key: %w", err)
	}
	return d.JobID, d.Body == "" || d.Body == body, nil
}

// Release forgets an idempotency key.
func (s *JobStore) Release(ctx context.Context, key string) error {
	if _, err := s.idem.DeleteOne(ctx, docstore.ID(key)); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Prune removes ended rate windows, old cache entries and idempotency keys older than a day.
func (s *JobStore) Prune(ctx context.Context, now, cacheBefore time.Time) error {
	if _, err := s.idem.DeleteMany(ctx, docstore.Lt("at", docstore.Millis(now.Add(-24*time.Hour)))); err != nil {
		return fmt.Errorf("prune idempotency keys: %w", err)
	}
	if _, err := s.rates.DeleteMany(ctx, docstore.Lt("expires", docstore.Millis(now))); err != nil {
		return fmt.Errorf("prune rate windows: %w", err)
	}
	if _, err := s.cache.DeleteMany(ctx, docstore.Lt("at", docstore.Millis(cacheBefore))); err != nil {
		return fmt.Errorf("prune job cache: %w", err)
	}
	return nil
}
