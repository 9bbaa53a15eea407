package analysis

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/fname"
	"github.com/openir/platform/pkg/search"
)

// JobsConfig tunes the job queue and its workers.
type JobsConfig struct {
	Workers int // concurrent jobs in this process (job.workers)
	OrgMax  int // running jobs of one organization across replicas (job.org_max); 0 = no cap
	// Reserve is how many of this replica's workers, once the others are busy, only start the job of an
	// organization that runs none (job.reserve; at most Workers-1, 0 = none).
	Reserve        int
	Lease          time.Duration // how long a claim holds without renewal
	MaxAttempts    int           // claims of one job before it fails
	CacheMinutes   int           // default job cache window (job.cache)
	DefaultTimeout time.Duration // when the worker sets no jobTimeout
	WaitMax        time.Duration // cap of waitreport (atMost=Inf)
	Poll           time.Duration // how often idle workers and waiters look at the database (other replicas)
	MaxFileSize    int64         // largest observable file
	// DeferMin and DeferMax bound the wait of a deferred job (DeferError) before its next claim: the time it
	// has been deferred so far, at least DeferMin (1 s) and at most DeferMax (30 s), so the wait doubles.
	DeferMin, DeferMax time.Duration
	// Extract finds artifacts in a built-in analyzer's report when auto_extract_artifacts is on.
	Extract func(full any, ignore string) []OutputArtifact
	Log     *slog.Logger
}

func (c *JobsConfig) defaults() {
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 30 * time.Minute
	}
	if c.WaitMax <= 0 {
		c.WaitMax = 10 * time.Minute
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = 1 << 30
	}
	if c.DeferMin <= 0 {
		c.DeferMin = time.Second
	}
	if c.DeferMax < c.DeferMin {
		c.DeferMax = max(30*time.Second, c.DeferMin)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Jobs submits, runs and reports jobs.
type Jobs struct {
	store    JobStore
	workers  WorkerStore
	catalog  *Catalog
	files    FileStore
	cfg      JobsConfig
	now      func() time.Time
	instance string

	kick      chan struct{}
	closing   chan struct{} // closed when Run stops: long polls answer at once
	closeOnce sync.Once
	claimMu   sync.Mutex // one claim at a time on this replica, so busy is exact when a worker claims
	busy      int        // workers running a job; under claimMu
	mu        sync.Mutex
	waiters   map[string][]*waiter
	running   map[string]context.CancelFunc
}

// NewJobs returns the job service.
func NewJobs(store JobStore, workers WorkerStore, catalog *Catalog, files FileStore, cfg JobsConfig, now func() time.Time) *Jobs {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	host, _ := os.Hostname()
	return &Jobs{store: store, workers: workers, catalog: catalog, files: files, cfg: cfg, now: now,
		instance: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomID(6)),
		kick:     make(chan struct{}, 1), closing: make(chan struct{}), waiters: map[string][]*waiter{}, running: map[string]context.CancelFunc{}}
}

func (s *Jobs) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomID(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(idAlphabet)))
	for i := range b {
		k, _ := rand.Int(rand.Reader, max)
		b[i] = idAlphabet[k.Int64()]
	}
	return string(b)
}

// Upload is a file sent with a job.
type Upload struct {
	Name        string
	ContentType string
	Open        func() (io.ReadCloser, error)
}

// Submission is a request to run a worker.
type Submission struct {
	DataType   string
	Data       any // analyzers: a string; responders: an object
	File       *Upload
	TLP        *int
	PAP        *int
	Message    string
	Label      string
	Parameters map[string]any
	Force      bool
	// IdempotencyKey makes a retried request return the job of the first one instead of a second job.
	IdempotencyKey string
}

func level(p *int) int {
	if p == nil {
		return 2
	}
	return *p
}

// Submit creates a job for an enabled worker of the caller's organization: from the cache when an equal job
// is recent enough, refused with 429 over the rate limit, failed at once when the TLP/PAP is above the
// worker's maximum, and queued otherwise.
func (s *Jobs) Submit(ctx context.Context, c identity.Caller, kind Kind, workerID string, sub Submission) (Job, error) {
	if err := c.Require(identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return Job{}, err
	}
	w, err := s.workers.Worker(ctx, workerID)
	if err != nil || w.Organization != c.Org || w.Kind != kind {
		if err == nil || apperr.Is(err, apperr.NotFound) {
			return Job{}, apperr.Errorf(apperr.NotFound, "%s %s not found", kind, workerID)
		}
		return Job{}, err
	}
	if err := checkSubmission(kind, w, sub); err != nil {
		return Job{}, err
	}
	now := s.clock()
	j := Job{ID: randomID(20), Kind: kind, Organization: c.Org, WorkerID: w.ID, WorkerName: w.Name,
		DefinitionID: w.DefinitionID, DataType: sub.DataType, Data: sub.Data, Parameters: sub.Parameters,
		Message: sub.Message, Label: sub.Label, TLP: level(sub.TLP), PAP: level(sub.PAP), Status: JobWaiting,
		CreatedAt: now, CreatedBy: c.Login, UpdatedAt: now, UpdatedBy: c.Login}
	if j.Parameters == nil {
		j.Parameters = map[string]any{}
	}
	if sub.File != nil {
		if j.Attachment, err = s.store1(ctx, c.Org, sub.File); err != nil {
			return Job{}, err
		}
		j.Data = nil
	}

	if window := s.cacheWindow(kind, w); window > 0 {
		j.CacheTag = cacheTag(j)
		if !sub.Force {
			if hit, ok := s.cached(ctx, c.Org, j.CacheTag, now.Add(-window)); ok {
				return hit, nil
			}
		}
	}
	var idem string
	if sub.IdempotencyKey != "" {
		idem = c.Org + ":" + sub.IdempotencyKey
		existing, same, err := s.store.Reserve(ctx, idem, j.ID, fingerprint(j, sub.Force), now)
		if err != nil {
			return Job{}, err
		}
		if existing != "" && existing != j.ID {
			if !same {
				return Job{}, ErrIdempotencyReused
			}
			return s.idempotent(ctx, c, existing)
		}
	}
	release := func() {
		if idem != "" {
			if err := s.store.Release(context.WithoutCancel(ctx), idem); err != nil {
				s.cfg.Log.Warn("release idempotency key", "err", err)
			}
		}
	}
	if err := s.checkRate(ctx, w, now); err != nil {
		release()
		return Job{}, err
	}
	if msg := levelCheck(w.Configuration, j); msg != "" {
		j.Status, j.ErrorMessage, j.EndDate = JobFailure, msg, now
		j.CacheTag = ""
		if err := s.store.Finish(ctx, j, &Report{Success: false, ErrorMessage: msg}, ""); err != nil {
			release()
			return Job{}, err
		}
		return j, nil
	}
	// The cache entry is written beside the job, not after it: both writes share one commit (the embedded
	// engine groups concurrent writes). An entry whose job is not stored (yet, or ever: Enqueue failed) is a
	// cache miss (cached reads the job), as it was between the two writes before.
	var cacheErr error
	var cacheDone sync.WaitGroup
	if j.CacheTag != "" {
		cacheDone.Go(func() { cacheErr = s.store.CacheJob(ctx, j.CacheTag, j.ID, now) })
	}
	err = s.store.Enqueue(ctx, j)
	cacheDone.Wait()
	if cacheErr != nil {
		s.cfg.Log.Warn("cache job", "job", j.ID, "err", cacheErr)
	}
	if err != nil {
		release()
		return Job{}, err
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return j, nil
}

// ErrIdempotencyReused answers a request whose Idempotency-Key an earlier, different request took.
var ErrIdempotencyReused = apperr.New(apperr.Unprocessable, "this Idempotency-Key was used for a different request")

// fingerprint identifies what a job submission asks for (the worker, the observable or the file's content,
// the levels, message, label, parameters and force), so that a reused Idempotency-Key can be told apart from
// a retry of the same request.
func fingerprint(j Job, force bool) string {
	var file string
	if j.Attachment != nil {
		file = j.Attachment.ID + "\x00" + j.Attachment.Name + "\x00" + j.Attachment.ContentType
	}
	b, err := json.Marshal([]any{j.Kind, j.WorkerID, j.DataType, j.Data, file, j.TLP, j.PAP, j.Message, j.Label,
		j.Parameters, force})
	if err != nil {
		return "" // unencodable values never get here (they came from JSON); "" matches any request
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// idempotent returns the job a previous request with the same idempotency key created. That request may
// still be storing it: wait for it a little.
func (s *Jobs) idempotent(ctx context.Context, c identity.Caller, id string) (Job, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := s.store.Job(ctx, id)
		if err == nil {
			if j.Organization != c.Org {
				return Job{}, ErrJobNotFound
			}
			return j, nil
		}
		if !errors.Is(err, ErrJobNotFound) || time.Now().After(deadline) {
			return Job{}, apperr.Wrap(apperr.Conflict, "a request with this Idempotency-Key is still being processed", err)
		}
		select {
		case <-ctx.Done():
			return Job{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func checkSubmission(kind Kind, w Worker, sub Submission) error {
	var probs []apperr.FieldError
	if sub.DataType == "" {
		probs = append(probs, apperr.FieldError{Name: "dataType", Message: "required"})
	} else if !contains(w.DataTypeList, sub.DataType) {
		return apperr.Errorf(apperr.BadRequest, "%s %s does not accept the data type %q (accepted: %v)",
			kind, w.Name, sub.DataType, w.DataTypeList)
	}
	for _, l := range []struct {
		name string
		v    *int
	}{{"tlp", sub.TLP}, {"pap", sub.PAP}} {
		if l.v != nil && (*l.v < 0 || *l.v > 3) {
			probs = append(probs, apperr.FieldError{Name: l.name, Message: "0 to 3"})
		}
	}
	switch kind {
	case KindAnalyzer:
		s, isString := sub.Data.(string)
		switch {
		case sub.File != nil && sub.Data != nil:
			probs = append(probs, apperr.FieldError{Name: "data/attachment", Message: "give a value or a file, not both"})
		case sub.File == nil && (!isString || s == ""):
			probs = append(probs, apperr.FieldError{Name: "data/attachment", Message: "a non-empty string data or a file is required"})
		case sub.File != nil && sub.DataType != "file":
			probs = append(probs, apperr.FieldError{Name: "dataType", Message: "a file observable has the data type file"})
		}
	case KindResponder:
		if _, ok := sub.Data.(map[string]any); !ok || sub.File != nil {
			probs = append(probs, apperr.FieldError{Name: "data", Message: "an object is required"})
		}
	}
	if probs != nil {
		return apperr.Fields(probs...)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Jobs) store1(ctx context.Context, org string, u *Upload) (*Attachment, error) {
	r, err := u.Open()
	if err != nil {
		return nil, fmt.Errorf("open the uploaded file: %w", err) // spooled by the server: its fault, a 500
	}
	defer r.Close()
	info, err := s.files.Put(ctx, r, s.cfg.MaxFileSize)
	if err != nil {
		return nil, err
	}
	if err := s.files.Grant(ctx, org, info.ID); err != nil {
		return nil, err
	}
	ct := u.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := fname.Base(u.Name, info.ID)
	return &Attachment{ID: info.ID, Name: name, Hashes: []string{info.SHA256, info.SHA1, info.MD5}, Size: info.Size,
		ContentType: ct}, nil
}

func (s *Jobs) cacheWindow(kind Kind, w Worker) time.Duration {
	if kind != KindAnalyzer {
		return 0
	}
	m := s.cfg.CacheMinutes
	if w.JobCache != nil {
		m = *w.JobCache
	}
	return time.Duration(m) * time.Minute
}

// cacheTag identifies equal jobs: same worker (so organization), data type, TLP, value or file content, and
// parameters (canonical JSON: encoding/json sorts map keys).
func cacheTag(j Job) string {
	data := fmt.Sprint(j.Data)
	if j.Attachment != nil {
		data = "file:" + j.Attachment.ID
	}
	params, _ := json.Marshal(j.Parameters)
	sum := sha256.Sum256([]byte(j.WorkerID + "|" + j.DataType + "|" + strconv.Itoa(j.TLP) + "|" + data + "|" + string(params)))
	return hex.EncodeToString(sum[:])
}

func (s *Jobs) cached(ctx context.Context, org, tag string, since time.Time) (Job, bool) {
	id, at, err := s.store.CachedJob(ctx, tag)
	if err != nil || at.Before(since) {
		return Job{}, false
	}
	j, err := s.store.Job(ctx, id)
	if err != nil || j.Organization != org || j.Status == JobFailure || j.Status == JobDeleted {
		return Job{}, false
	}
	j.FromCache = true
	return j, true
}

func (s *Jobs) checkRate(ctx context.Context, w Worker, now time.Time) error {
	if w.Rate == nil || w.RateUnit == "" {
		return nil
	}
	unit := rateUnits[w.RateUnit]
	start := now.Truncate(unit)
	key := fmt.Sprintf("%s:%s:%d", w.ID, w.RateUnit, start.UnixMilli())
	n, err := s.store.CountRate(ctx, key, 1, start.Add(unit))
	if err != nil {
		return err
	}
	if n > *w.Rate {
		if _, err := s.store.CountRate(ctx, key, -1, start.Add(unit)); err != nil {
			s.cfg.Log.Warn("undo rate count", "worker", w.ID, "err", err)
		}
		return apperr.Errorf(apperr.RateLimited, "Rate limit of %d per %s reached for the %s %s. Job cannot be started",
			*w.Rate, w.RateUnit, w.Kind, w.Name)
	}
	return nil
}

// levelCheck applies check_tlp/max_tlp and check_pap/max_pap: the message of the refusal, or "".
func levelCheck(conf map[string]any, j Job) string {
	if b, _ := conf["check_tlp"].(bool); b && float64(j.TLP) > number(conf["max_tlp"], 2) {
		return "TLP is higher than allowed."
	}
	if b, _ := conf["check_pap"].(bool); b && float64(j.PAP) > number(conf["max_pap"], 2) {
		return "PAP is higher than allowed."
	}
	return ""
}

func number(v any, def float64) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case json.Number: // free-form values keep their JSON text
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return def
}

// visible returns a job of the caller's organization.
func (s *Jobs) visible(ctx context.Context, c identity.Caller, id string) (Job, error) {
	if err := c.Require(identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return Job{}, err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if j.Organization != c.Org {
		return Job{}, ErrJobNotFound
	}
	return j, nil
}

// Job returns a job of the caller's organization.
func (s *Jobs) Job(ctx context.Context, c identity.Caller, id string) (Job, error) {
	return s.visible(ctx, c, id)
}

// Report returns a job and, when it finished, its report (nil otherwise).
func (s *Jobs) Report(ctx context.Context, c identity.Caller, id string) (Job, *Report, error) {
	j, err := s.visible(ctx, c, id)
	if err != nil {
		return Job{}, nil, err
	}
	return s.withReport(ctx, j)
}

func (s *Jobs) withReport(ctx context.Context, j Job) (Job, *Report, error) {
	if j.Status != JobSuccess && j.Status != JobFailure {
		return j, nil, nil
	}
	r, err := s.store.Report(ctx, j.ID)
	if errors.Is(err, ErrJobNotFound) {
		return j, &Report{Success: false, ErrorMessage: j.ErrorMessage}, nil
	}
	if err != nil {
		return Job{}, nil, err
	}
	return j, &r, nil
}

// WaitReport waits until the job finishes or atMost passes (capped by job.waitreport.max), then returns it
// with its report. A job finished in this process wakes the waiter at once; one finished by another replica
// is seen at the next poll.
func (s *Jobs) WaitReport(ctx context.Context, c identity.Caller, id string, atMost time.Duration) (Job, *Report, error) {
	// Subscribe before reading the job: a job that ends between the read and the subscription would
	// otherwise be noticed only at the next poll.
	w, stop := s.subscribe(id)
	defer stop()
	j, err := s.visible(ctx, c, id)
	if err != nil {
		return Job{}, nil, err
	}
	if atMost < 0 || atMost > s.cfg.WaitMax { // negative: Inf
		atMost = s.cfg.WaitMax
	}
	if atMost == 0 {
		return s.withReport(ctx, j)
	}
	deadline := time.NewTimer(atMost)
	defer deadline.Stop()
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	for !j.Finished() {
		select {
		case <-ctx.Done():
			return Job{}, nil, ctx.Err()
		case <-deadline.C:
			return s.withReport(ctx, j)
		case <-s.closing: // the service stops: answer with the current state
			return s.withReport(ctx, j)
		case <-w.wake:
			if w.end != nil && w.end.Report != nil { // the end as this process stored it: what reading it gives
				return w.end.Job, w.end.Report, nil
			}
		case <-poll.C:
		}
		if j, err = s.store.Job(ctx, id); err != nil {
			return Job{}, nil, err
		}
	}
	return s.withReport(ctx, j)
}

// waiter is a waitreport waiting in this process: wake is closed when the job ends here, end then set to the
// end as stored (nil when the job had ended already, or was deleted: the waiter reads it).
type waiter struct {
	wake chan struct{}
	end  *Ended
}

func (s *Jobs) subscribe(id string) (*waiter, func()) {
	w := &waiter{wake: make(chan struct{})}
	s.mu.Lock()
	s.waiters[id] = append(s.waiters[id], w)
	s.mu.Unlock()
	return w, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		list := s.waiters[id]
		for i, x := range list {
			if x == w {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.waiters, id)
		} else {
			s.waiters[id] = list
		}
	}
}

// notify wakes the waiters of a job, handing them its end when it is known (nil: they read it).
func (s *Jobs) notify(id string, end *Ended) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters[id] {
		w.end = end
		close(w.wake)
	}
	delete(s.waiters, id)
}

// Artifacts returns the artifacts of a job's report (none for an unfinished or failed job).
func (s *Jobs) Artifacts(ctx context.Context, c identity.Caller, id string) ([]Artifact, error) {
	j, r, err := s.Report(ctx, c, id)
	if err != nil || r == nil || j.Status != JobSuccess {
		return nil, err
	}
	return r.Artifacts, nil
}

// Search lists the jobs of the caller's organization. Deleted jobs are hidden unless the query names status.
func (s *Jobs) Search(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Job, int64, error) {
	if err := c.Require(identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return nil, 0, err
	}
	parts := []search.Node{f, {Op: search.OpEq, Path: "organization", Value: c.Org}}
	if !namesPath(f, "status") {
		parts = append(parts, search.Node{Op: search.OpNot, Children: []search.Node{{Op: search.OpEq, Path: "status", Value: JobDeleted}}})
	}
	if len(p.Sort) == 0 {
		p.Sort = []search.SortKey{{Path: "createdAt", Desc: true}}
	}
	return s.store.Search(ctx, search.Node{Op: search.OpAnd, Children: parts}, p)
}

func namesPath(n search.Node, path string) bool {
	if n.Path == path {
		return true
	}
	for _, c := range n.Children {
		if namesPath(c, path) {
			return true
		}
	}
	return false
}

// Delete marks a job Deleted and stops it if it runs here (analyze or orgadmin). Another replica running it
// loses its lease at the next renewal and stops too.
func (s *Jobs) Delete(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return err
	}
	if _, err := s.visible(ctx, c, id); err != nil {
		return err
	}
	if err := s.store.MarkDeleted(ctx, id, c.Login, s.clock()); err != nil {
		return err
	}
	s.mu.Lock()
	cancel := s.running[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.notify(id, nil)
	return nil
}

// OpenFile returns a stored file the caller's organization may read (observable files and file artifacts).
func (s *Jobs) OpenFile(ctx context.Context, c identity.Caller, id string) (io.ReadCloser, FileInfo, error) {
	if err := c.Require(identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return nil, FileInfo{}, err
	}
	ok, err := s.files.Granted(ctx, c.Org, id)
	if err != nil {
		return nil, FileInfo{}, err
	}
	if !ok {
		return nil, FileInfo{}, apperr.New(apperr.NotFound, "file not found")
	}
	return s.files.Open(ctx, id)
}

// QueueStatus is the job queue as the status page shows it.
type QueueStatus struct {
	Orgs []OrgQueue // the caller's organization, or every organization with queued jobs (superadmin)
	// This replica's workers (job.workers), those running a job now, and job.org_max: the superadmin's only
	// (they tell about every organization's jobs).
	Workers, Busy, OrgMax int
}

// Queue returns the queue's waiting and running jobs: of the caller's organization (any role), or of every
// organization with this replica's workers (superadmin).
func (s *Jobs) Queue(ctx context.Context, c identity.Caller) (QueueStatus, error) {
	if err := c.Require(identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin, identity.RoleSuperAdmin); err != nil {
		return QueueStatus{}, err
	}
	if !c.Superadmin() {
		orgs, err := s.store.QueueCounts(ctx, c.Org)
		if err != nil {
			return QueueStatus{}, err
		}
		if len(orgs) == 0 {
			orgs = []OrgQueue{{Organization: c.Org}}
		}
		return QueueStatus{Orgs: orgs}, nil
	}
	orgs, err := s.store.QueueCounts(ctx, "")
	if err != nil {
		return QueueStatus{}, err
	}
	s.mu.Lock()
	busy := len(s.running)
	s.mu.Unlock()
	return QueueStatus{Orgs: orgs, Workers: s.cfg.Workers, Busy: busy, OrgMax: s.cfg.OrgMax}, nil
}

// MaxStatusIDs bounds the job ids of one Statuses call.
const MaxStatusIDs = 1000

// Statuses answers the status of each of several jobs (read, analyze or orgadmin): "NotFound" for an id
// that names no job of the caller's organization, as Cortex's POST /api/job/status answers.
func (s *Jobs) Statuses(ctx context.Context, c identity.Caller, ids []string) (map[string]string, error) {
	if err := c.Require(identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin); err != nil {
		return nil, err
	}
	if len(ids) > MaxStatusIDs {
		return nil, apperr.Fields(apperr.FieldError{Name: "jobIds", Message: fmt.Sprintf("at most %d job ids", MaxStatusIDs)})
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		j, err := s.store.Job(ctx, id)
		switch {
		case errors.Is(err, ErrJobNotFound) || err == nil && j.Organization != c.Org:
			out[id] = "NotFound"
		case err != nil:
			return nil, err
		default:
			out[id] = j.Status
		}
	}
	return out, nil
}
