package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
)

// RemoteWorker is an analyzer or responder as an analysis server lists it.
type RemoteWorker struct {
	ID           string
	Name         string
	Version      string
	Description  string
	DefinitionID string
	DataTypeList []string
	// MaxTLP and MaxPAP are the highest TLP and PAP the worker accepts, when its server says (nil: no limit
	// known).
	MaxTLP, MaxPAP *int
}

// RemoteFile is a file sent with a job.
type RemoteFile struct {
	Name        string
	ContentType string
	Open        func() (io.ReadCloser, error)
}

// RemoteRequest is what a job runs on.
type RemoteRequest struct {
	DataType string
	Data     any // a string (analyzers) or an object (responders)
	File     *RemoteFile
	TLP      int
	PAP      int
	Message  string
	// Parameters are the job's parameters (an analyzer set's), nil for none.
	Parameters map[string]any
}

// RemoteArtifact is an observable a job extracted; FileID/FileName are set for files (download by FileID).
type RemoteArtifact struct {
	DataType    string
	Data        string
	Message     string
	TLP         *int
	Tags        []string
	FileID      string
	FileName    string
	ContentType string
}

// RemoteReport is a finished job's report.
type RemoteReport struct {
	Success      bool
	Summary      map[string]any
	Full         map[string]any
	Artifacts    []RemoteArtifact
	Operations   []map[string]any
	ErrorMessage string
}

// RemoteJob is a job on an analysis server; Report is set once it finished.
type RemoteJob struct {
	ID           string
	Status       string
	WorkerID     string
	WorkerName   string
	DefinitionID string
	StartDate    time.Time
	EndDate      time.Time
	Report       *RemoteReport
}

// Finished reports whether the remote job ended.
func (j RemoteJob) Finished() bool {
	return j.Status == JobSuccess || j.Status == JobFailure || j.Status == JobDeleted
}

// AnalysisServer is one configured analysis server (the connector adapter implements it).
type AnalysisServer interface {
	Name() string
	// Serves reports whether the server is open to the organisation.
	Serves(org string) bool
	// Workers lists the enabled analyzers (responder false) or responders, of a data type ("" = all).
	Workers(ctx context.Context, responder bool, dataType string) ([]RemoteWorker, error)
	// Run creates a job; idempotencyKey makes a retried call create one job only.
	Run(ctx context.Context, responder bool, workerID string, r RemoteRequest, idempotencyKey string) (RemoteJob, error)
	// WaitReport long-polls a job for at most atMost.
	WaitReport(ctx context.Context, jobID string, atMost time.Duration) (RemoteJob, error)
	// Download fetches a file artifact.
	Download(ctx context.Context, fileID string) (io.ReadCloser, error)
}

// Pending is a job or action whose result has not been imported yet. The tracker works from these records,
// kept in a small collection, so it resumes after a restart.
type Pending struct {
	ID       string // the job or action record's id
	Kind     string // "job" or "action"
	Server   string
	Org      string
	RemoteID string // "" until the server accepted the job
	Since    time.Time
	// Unreachable is when the server stopped answering this record's calls; zero while it answers. GiveUp
	// counts from here, so a long job on a server that goes down briefly is not failed.
	Unreachable time.Time
}

// PendingStore keeps the pending records.
type PendingStore interface {
	AddPending(ctx context.Context, p Pending) error
	PendingOf(ctx context.Context, server string) ([]Pending, error)
	SetRemote(ctx context.Context, id, remoteID string) error
	// SetUnreachable records since when the record's server has not answered (zero: it answers again).
	SetUnreachable(ctx context.Context, id string, since time.Time) error
	RemovePending(ctx context.Context, id string) error
}

// AnalysisConfig tunes the connector's background tracker.
type AnalysisConfig struct {
	LongPoll  time.Duration // one waitreport (default 60 s)
	Scan      time.Duration // how often a server's pending list is read for new work (default 2 s)
	GiveUp    time.Duration // a record whose server stays unreachable this long, without a break, fails (default 24 h)
	MaxBusy   int           // concurrent long polls per server (default 64)
	BackoffLo time.Duration // first retry delay after a server error (default 1 s)
	BackoffHi time.Duration // longest retry delay (default 1 min)
	Log       *slog.Logger
}

func (c *AnalysisConfig) defaults() {
	if c.LongPoll <= 0 {
		c.LongPoll = time.Minute
	}
	if c.Scan <= 0 {
		c.Scan = 2 * time.Second
	}
	if c.GiveUp <= 0 {
		c.GiveUp = 24 * time.Hour
	}
	if c.MaxBusy <= 0 {
		c.MaxBusy = 64
	}
	if c.BackoffLo <= 0 {
		c.BackoffLo = time.Second
	}
	if c.BackoffHi <= 0 {
		c.BackoffHi = time.Minute
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Stores are what the connector consumes: its own records (analyzer jobs, responder actions, the pending
// ones) and the case-svc records that its work is about, read by id: the request that made a job or an
// action checked its caller, and the tracker imports the result later on that caller's behalf.
type Stores struct {
	Jobs        JobStore
	Actions     ActionStore
	Pending     PendingStore
	Cases       CaseReader
	Observables ObservableStore
	Alerts      AlertReader
	Files       FileReader
}

// CaseReader reads a case by id (cases.CaseStore implements it).
type CaseReader interface {
	Case(ctx context.Context, id string) (cases.Case, error)
}

// ObservableStore reads an observable by id and adds an analyzer's summary to its reports (cases.ObservableStore
// implements it).
type ObservableStore interface {
	Observable(ctx context.Context, id string) (cases.Observable, error)
	MergeReport(ctx context.Context, id, analyzer string, summary any) error
}

// AlertReader reads an alert by id (cases.AlertStore implements it).
type AlertReader interface {
	Alert(ctx context.Context, id string) (cases.Alert, error)
}

// FileReader opens a stored file, the attachment of a file observable sent to an analyzer (record.FileStore
// implements it).
type FileReader interface {
	Open(ctx context.Context, id string) (io.ReadCloser, record.File, error)
}

// Analyses runs analyzers and responders of analysis servers on case-svc objects and imports their results:
// it creates the job and action records, submits them, and its tracker (Run) follows them until their report
// is imported (the artifacts and summary of an analyzer, the operations of a responder applied through the
// case service).
type Analyses struct {
	svc         *cases.Service
	tasks       *task.Service
	servers     map[string]AnalysisServer
	order       []string
	jobs        JobStore
	pending     PendingStore
	actions     ActionStore
	cases       CaseReader
	observables ObservableStore
	alerts      AlertReader
	files       FileReader
	cfg         AnalysisConfig
	now         func() time.Time

	mu    sync.Mutex
	busy  map[string]bool // record ids being tracked in this process
	kick  map[string]chan struct{}
	lists map[listKey]listEntry // analyzer lists of bulk runs (bulk.go)

	status statusCache // the last check of the servers, for /api/status (status.go)
}

// NewAnalyses returns the connector service over the configured servers (in configuration order); svc applies
// the results to cases, observables and alerts, tasks to tasks and their logs.
func NewAnalyses(svc *cases.Service, tasks *task.Service, servers []AnalysisServer, st Stores, cfg AnalysisConfig, now func() time.Time) *Analyses {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	a := &Analyses{svc: svc, tasks: tasks, servers: map[string]AnalysisServer{}, jobs: st.Jobs, pending: st.Pending, actions: st.Actions,
		cases: st.Cases, observables: st.Observables, alerts: st.Alerts, files: st.Files, cfg: cfg, now: now,
		busy: map[string]bool{}, kick: map[string]chan struct{}{}, lists: map[listKey]listEntry{}}
	for _, s := range servers {
		a.servers[s.Name()] = s
		a.order = append(a.order, s.Name())
		a.kick[s.Name()] = make(chan struct{}, 1)
	}
	return a
}

func (a *Analyses) clock() time.Time { return record.Millis(a.now()) }

// server returns the named server if the caller's organisation may use it; 400 otherwise.
func (a *Analyses) server(c identity.Caller, name string) (AnalysisServer, error) {
	s, ok := a.servers[name]
	if !ok || !s.Serves(c.Org) {
		if name == "" {
			return nil, record.FieldError("analysisId", "required")
		}
		return nil, apperr.Errorf(apperr.BadRequest, "unknown analysisId %q (configured: %v)", name, a.usable(c))
	}
	return s, nil
}

func (a *Analyses) usable(c identity.Caller) []string { return a.usableBy(c.Org) }

// usableBy lists the servers open to the organisation, in configuration order.
func (a *Analyses) usableBy(org string) []string {
	var out []string
	for _, n := range a.order {
		if a.servers[n].Serves(org) {
			out = append(out, n)
		}
	}
	return out
}

// ServerWorkers is a worker merged across the servers that offer it (by name).
type ServerWorkers struct {
	RemoteWorker // as the first of Servers lists it: its ID is that server's
	Servers      []string
	IDs          []string // IDs[i] is the worker's id on Servers[i], the one to send to that server
}

// IDOn is the worker's id on the named server, "" when that server does not offer it.
func (w ServerWorkers) IDOn(server string) string {
	for i, s := range w.Servers {
		if s == server {
			return w.IDs[i]
		}
	}
	return ""
}

// Workers lists the analyzers (or responders) of every server the caller's organisation may use, merged by
// name. A server that cannot be reached is left out and named in the warnings.
func (a *Analyses) Workers(ctx context.Context, c identity.Caller, responder bool, dataType string) ([]ServerWorkers, []string, error) {
	if err := c.Require(identity.ManageAnalyse); !responder && err != nil {
		return nil, nil, err
	}
	ws, warnings := a.workersOf(ctx, c.Org, responder, dataType)
	return ws, warnings, nil
}

// workersOf is Workers for an organisation, without the permission check.
func (a *Analyses) workersOf(ctx context.Context, org string, responder bool, dataType string) ([]ServerWorkers, []string) {
	type result struct {
		name string
		ws   []RemoteWorker
		err  error
	}
	names := a.usableBy(org)
	results := make([]result, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			ws, err := a.servers[n].Workers(cctx, responder, dataType)
			results[i] = result{n, ws, err}
		}()
	}
	wg.Wait()
	var out []ServerWorkers
	index := map[string]int{}
	var warnings []string
	for _, r := range results {
		if r.err != nil {
			msg := "analysis server " + r.name + " is unavailable"
			if e := apperr.As(r.err); e != nil {
				msg = e.Message
			}
			warnings = append(warnings, msg)
			a.cfg.Log.Warn("list workers", "server", r.name, "err", r.err)
			continue
		}
		for _, w := range r.ws {
			if i, ok := index[w.Name]; ok {
				out[i].Servers, out[i].IDs = append(out[i].Servers, r.name), append(out[i].IDs, w.ID)
				continue
			}
			index[w.Name] = len(out)
			out = append(out, ServerWorkers{RemoteWorker: w, Servers: []string{r.name}, IDs: []string{w.ID}})
		}
	}
	return out, warnings
}

// idOn maps the id of a worker sent for srv to srv's own when srv does not know it (its 404). The merged
// listing shows one server's id for a worker several servers offer (as the reference system's does), and
// clients send that id with any of these servers; a name is accepted too. ok is false when no server of the
// organisation lists such a worker, or srv does not offer it.
func (a *Analyses) idOn(ctx context.Context, org string, srv AnalysisServer, responder bool, id string) (string, bool) {
	ws, _ := a.workersOf(ctx, org, responder, "")
	for _, w := range ws {
		if w.Name == id || slices.Contains(w.IDs, id) {
			own := w.IDOn(srv.Name())
			return own, own != "" && own != id
		}
	}
	return "", false
}

// RunAnalyzer starts an analyzer of a server on an observable of a case. The job record is stored before the
// server is called, and the call carries the record id as its Idempotency-Key: when the server cannot be
// reached the job is still accepted, stays Waiting with a message naming the server, and the tracker submits
// it when the server answers. A refusal (unknown analyzer, data type, rate limit…) leaves no record.
func (a *Analyses) RunAnalyzer(ctx context.Context, c identity.Caller, analysisID, observableID, analyzerID string) (Job, error) {
	if err := c.Require(identity.ManageAnalyse); err != nil {
		return Job{}, err
	}
	srv, err := a.server(c, analysisID)
	if err != nil {
		return Job{}, err
	}
	if analyzerID == "" {
		return Job{}, record.FieldError("analyzerId", "required")
	}
	o, err := a.svc.Observable(ctx, c, observableID)
	if err != nil {
		return Job{}, err
	}
	if o.CaseID == "" {
		return Job{}, apperr.New(apperr.BadRequest, "only observables of a case can be analyzed")
	}
	now := a.clock()
	j := Job{ID: record.NewID(now), Org: c.Org, ObservableID: o.ID, CaseID: o.CaseID, AnalyzerID: analyzerID,
		Status: JobWaiting, AnalysisID: srv.Name(), Meta: record.Meta{CreatedBy: c.Login, CreatedAt: now}}
	if err := a.jobs.Create(ctx, j); err != nil {
		return Job{}, err
	}
	// This request submits the record itself: the tracker leaves it alone until the request is done.
	a.hold(j.ID)
	defer a.release(j.ID)
	if err := a.pending.AddPending(ctx, Pending{ID: j.ID, Kind: "job", Server: srv.Name(), Org: c.Org, Since: now}); err != nil {
		return Job{}, err
	}
	remote, err := a.submitJob(ctx, j)
	switch {
	case err == nil:
		return a.accepted(ctx, j, remote)
	case apperr.Is(err, apperr.Unavailable):
		msg, uerr := a.unreachable(ctx, j.ID, j.AnalysisID, now, err)
		if uerr != nil {
			return Job{}, uerr
		}
		j.Message = msg
		return a.jobs.Update(context.WithoutCancel(ctx), j, []string{"message"}, j.CreatedBy, now)
	case ctx.Err() != nil:
		// The request ended during the call: the server may have the job. The record stays pending and the
		// tracker resubmits it with the same Idempotency-Key, as after a crash.
		return Job{}, err
	}
	// Refused: a clear error and no record left behind.
	_ = a.pending.RemovePending(context.WithoutCancel(ctx), j.ID)
	_ = a.jobs.Delete(context.WithoutCancel(ctx), j.ID)
	return Job{}, err
}

// unreachable records that a record's server did not answer its submission and returns the message the
// record shows until the server takes it.
func (a *Analyses) unreachable(ctx context.Context, id, server string, at time.Time, cause error) (string, error) {
	msg := "analysis server " + server + " is unreachable"
	if e := apperr.As(cause); e != nil && e.Message != "" {
		msg = e.Message
	}
	msg += "; submitted when it answers"
	if err := a.pending.SetUnreachable(context.WithoutCancel(ctx), id, at); err != nil {
		return "", err
	}
	a.cfg.Log.Warn("analysis server unavailable; the record waits", "server", server, "record", id)
	return msg, nil
}

// submitJob sends a job record's observable to its server.
func (a *Analyses) submitJob(ctx context.Context, j Job) (RemoteJob, error) {
	srv := a.servers[j.AnalysisID]
	if srv == nil {
		return RemoteJob{}, apperr.Errorf(apperr.BadRequest, "analysis server %s is no longer configured", j.AnalysisID)
	}
	o, err := a.observables.Observable(ctx, j.ObservableID)
	if err != nil {
		return RemoteJob{}, err
	}
	var pap int
	if j.AlertID != "" {
		al, err := a.alerts.Alert(ctx, j.AlertID)
		if err != nil {
			return RemoteJob{}, err
		}
		pap = al.PAP
	} else {
		cs, err := a.cases.Case(ctx, j.CaseID)
		if err != nil {
			return RemoteJob{}, err
		}
		pap = cs.PAP
	}
	req := RemoteRequest{DataType: o.DataType, TLP: o.TLP, PAP: pap, Message: o.Message, Parameters: j.Parameters}
	if o.Attachment != nil {
		att := *o.Attachment
		req.File = &RemoteFile{Name: att.Name, ContentType: att.ContentType, Open: func() (io.ReadCloser, error) {
			r, _, err := a.files.Open(context.WithoutCancel(ctx), att.ID)
			return r, err
		}}
	} else {
		req.Data = o.Data
	}
	analyzerID := j.AnalyzerID
	if analyzerID == "" {
		// A job made by name (an analyzer set's): its id on the server is found when the server answers.
		w, err := a.workerNamed(ctx, srv, o.DataType, j.AnalyzerName)
		if err != nil {
			return RemoteJob{}, err
		}
		analyzerID = w.ID
		if _, err := a.jobs.Update(ctx, Job{ID: j.ID, AnalyzerID: w.ID}, []string{"analyzerId"}, j.CreatedBy, a.clock()); err != nil {
			return RemoteJob{}, err
		}
	}
	r, err := srv.Run(ctx, false, analyzerID, req, j.ID)
	if apperr.Is(err, apperr.NotFound) && j.AnalyzerID != "" {
		// Another server's id for this analyzer (or its name): sent again with this server's (the key is
		// free: a 404 creates nothing); accepted records it in the job.
		if own, ok := a.idOn(ctx, j.Org, srv, false, analyzerID); ok {
			return srv.Run(ctx, false, own, req, j.ID)
		}
	}
	return r, err
}

// workerNamed finds the analyzer of a server that has this name and accepts the data type; 404 when there is
// none (a refusal for good: the tracker fails the job).
func (a *Analyses) workerNamed(ctx context.Context, srv AnalysisServer, dataType, name string) (RemoteWorker, error) {
	ws, err := srv.Workers(ctx, false, dataType)
	if err != nil {
		return RemoteWorker{}, err
	}
	for _, w := range ws {
		if w.Name == name {
			return w, nil
		}
	}
	return RemoteWorker{}, apperr.Errorf(apperr.NotFound, "no analyzer %s for data type %s on analysis server %s", name, dataType, srv.Name())
}

// accepted records the server's job id and wakes the tracker.
func (a *Analyses) accepted(ctx context.Context, j Job, r RemoteJob) (Job, error) {
	if err := a.pending.SetRemote(ctx, j.ID, r.ID); err != nil {
		return Job{}, err
	}
	j.AnalysisJobID, j.AnalyzerName, j.AnalyzerDefinition = r.ID, r.WorkerName, r.DefinitionID
	fields := []string{"analysisJobId", "analyzerName", "analyzerDefinition", "status", "message"}
	if r.WorkerID != "" && r.WorkerID != j.AnalyzerID { // the id the server ran (see submitJob)
		j.AnalyzerID, fields = r.WorkerID, append(fields, "analyzerId")
	}
	// A job the server already finished (a cache hit) stays InProgress here until the tracker has imported
	// its report: Success means the results are in the case.
	j.Status = r.Status
	if j.Status == "" {
		j.Status = JobWaiting
	}
	if r.Finished() {
		j.Status = JobInProgress
	}
	j.Message = ""
	if cur, err := a.jobs.Job(ctx, j.ID); err == nil && (cur.Status == JobSuccess || cur.Status == JobFailure) {
		return cur, nil // another replica's tracker imported it already
	}
	if !r.StartDate.IsZero() {
		j.StartDate = r.StartDate
		fields = append(fields, "startDate")
	}
	out, err := a.jobs.Update(ctx, j, fields, j.CreatedBy, a.clock())
	if err != nil {
		return Job{}, err
	}
	a.wake(j.AnalysisID)
	return out, nil
}

// hold keeps the tracker of this process off a record; release gives it back.
func (a *Analyses) hold(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.busy[id] = true
}

func (a *Analyses) release(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.busy, id)
}

func (a *Analyses) wake(server string) {
	if ch := a.kick[server]; ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Run tracks every server's pending jobs and actions until ctx ends: one loop per server, so a slow or dead
// server never delays another.
func (a *Analyses) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range a.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.serverLoop(ctx, n)
		}()
	}
	wg.Wait()
}

func (a *Analyses) serverLoop(ctx context.Context, name string) {
	sem := make(chan struct{}, a.cfg.MaxBusy)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(a.cfg.Scan)
	defer t.Stop()
	for {
		ps, err := a.pending.PendingOf(ctx, name)
		if err != nil && ctx.Err() == nil {
			a.cfg.Log.Error("read pending analyses", "server", name, "err", err)
		}
		for _, p := range ps {
			a.mu.Lock()
			taken := a.busy[p.ID]
			a.busy[p.ID] = true
			a.mu.Unlock()
			if taken {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer func() {
					a.mu.Lock()
					delete(a.busy, p.ID)
					a.mu.Unlock()
				}()
				a.track(ctx, p)
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick[name]:
		}
	}
}

// track follows one pending record until its result is imported, retrying with backoff while its server is
// unreachable, and failing it after GiveUp.
func (a *Analyses) track(ctx context.Context, p Pending) {
	srv := a.servers[p.Server]
	if p.RemoteID == "" {
		// The list may be older than a submission that just finished in this process: read it again, so a
		// record the server has already accepted is not submitted twice (it would be harmless — the
		// Idempotency-Key returns the same job — but useless).
		if fresh, err := a.pending.PendingOf(ctx, p.Server); err == nil {
			found := false
			for _, q := range fresh {
				if q.ID == p.ID {
					p, found = q, true
				}
			}
			if !found { // its request failed and removed it
				return
			}
		}
	}
	backoff := a.cfg.BackoffLo
	for ctx.Err() == nil {
		var (
			remote RemoteJob
			err    error
		)
		if p.RemoteID == "" {
			remote, err = a.resubmit(ctx, p)
			if err == nil {
				p.RemoteID = remote.ID
				if err = a.pending.SetRemote(ctx, p.ID, remote.ID); err == nil {
					err = a.recordAccepted(ctx, p, remote)
				}
			}
			if err == nil {
				a.reachable(ctx, &p)
				continue // the creation answer has no report: fetch it with waitreport
			}
		} else {
			remote, err = srv.WaitReport(ctx, p.RemoteID, a.cfg.LongPoll)
		}
		if err == nil && remote.Finished() {
			if err := a.finish(ctx, p, remote); err != nil {
				if ctx.Err() == nil {
					a.cfg.Log.Error("import result", "server", p.Server, "record", p.ID, "err", err)
				}
				a.sleep(ctx, backoff)
				backoff = min(backoff*2, a.cfg.BackoffHi)
				continue
			}
			return
		}
		if err == nil {
			backoff = a.cfg.BackoffLo
			a.reachable(ctx, &p)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		gaveUp := false
		if apperr.Is(err, apperr.Unavailable) {
			if p.Unreachable.IsZero() { // the server stopped answering now: GiveUp counts from here
				p.Unreachable = a.clock()
				if serr := a.pending.SetUnreachable(ctx, p.ID, p.Unreachable); serr != nil && ctx.Err() == nil {
					a.cfg.Log.Error("record unreachable server", "record", p.ID, "err", serr)
				}
			}
			gaveUp = a.clock().Sub(p.Unreachable) > a.cfg.GiveUp
		}
		if !apperr.Is(err, apperr.Unavailable) || gaveUp {
			// Refused for good (the job vanished, the analyzer is gone…) or unreachable for too long.
			msg := "the analysis server failed"
			if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
				msg = e.Message
			} else {
				a.cfg.Log.Error("analysis record failed", "server", p.Server, "record", p.ID, "err", err)
			}
			if gaveUp {
				msg = fmt.Sprintf("%s; gave up after %s", msg, a.cfg.GiveUp)
			}
			if ferr := a.fail(ctx, p, msg); ferr != nil && ctx.Err() == nil {
				a.cfg.Log.Error("fail record", "record", p.ID, "err", ferr)
			}
			return
		}
		a.cfg.Log.Warn("analysis server unavailable; will retry", "server", p.Server, "record", p.ID, "retry_in", backoff.String())
		a.sleep(ctx, backoff)
		backoff = min(backoff*2, a.cfg.BackoffHi)
	}
}

// reachable notes that the record's server answered again, so a later outage counts GiveUp from its own start.
func (a *Analyses) reachable(ctx context.Context, p *Pending) {
	if p.Unreachable.IsZero() {
		return
	}
	p.Unreachable = time.Time{}
	if err := a.pending.SetUnreachable(ctx, p.ID, time.Time{}); err != nil && ctx.Err() == nil {
		a.cfg.Log.Error("record reachable server", "record", p.ID, "err", err)
	}
}

func (a *Analyses) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (a *Analyses) resubmit(ctx context.Context, p Pending) (RemoteJob, error) {
	if p.Kind == "action" {
		act, err := a.actions.Action(ctx, p.ID)
		if err != nil {
			return RemoteJob{}, err
		}
		return a.submitAction(ctx, act)
	}
	j, err := a.jobs.Job(ctx, p.ID)
	if err != nil {
		return RemoteJob{}, err
	}
	return a.submitJob(ctx, j)
}

func (a *Analyses) recordAccepted(ctx context.Context, p Pending, r RemoteJob) error {
	if p.Kind == "action" {
		act, err := a.actions.Action(ctx, p.ID)
		if err != nil {
			return err
		}
		act.AnalysisJobID, act.ResponderName, act.ResponderDefinition = r.ID, r.WorkerName, r.DefinitionID
		if r.WorkerID != "" {
			act.ResponderID = r.WorkerID
		}
		act.Message = ""
		return a.actions.UpdateAction(ctx, act)
	}
	j, err := a.jobs.Job(ctx, p.ID)
	if err != nil {
		return err
	}
	_, err = a.accepted(ctx, j, r)
	return err
}

// fail ends a record with a failure message.
func (a *Analyses) fail(ctx context.Context, p Pending, msg string) error {
	now := a.clock()
	if p.Kind == "action" {
		act, err := a.actions.Action(ctx, p.ID)
		if err != nil {
			return err
		}
		act.Status, act.EndDate = JobFailure, now
		act.Report = mustJSON(map[string]any{"success": false, "errorMessage": msg})
		if err := a.actions.UpdateAction(ctx, act); err != nil {
			return err
		}
	} else {
		j := Job{ID: p.ID, Status: JobFailure, EndDate: now, Report: map[string]any{"success": false, "errorMessage": msg}}
		if _, err := a.jobs.Update(ctx, j, []string{"status", "endDate", "report"}, "system", now); err != nil {
			return err
		}
	}
	return a.pending.RemovePending(ctx, p.ID)
}

// finish imports a finished remote job: the record gets its status and report; for an analyzer, the
// observable gets the summary and the case gets the artifacts; for a responder, its operations are applied.
func (a *Analyses) finish(ctx context.Context, p Pending, r RemoteJob) error {
	if p.Kind == "action" {
		if err := a.finishAction(ctx, p, r); err != nil {
			return err
		}
		return a.pending.RemovePending(ctx, p.ID)
	}
	j, err := a.jobs.Job(ctx, p.ID)
	if err != nil {
		return err
	}
	report := map[string]any{"success": false}
	if rep := r.Report; rep != nil {
		report["success"] = rep.Success
		if rep.Success {
			report["full"], report["summary"] = rep.Full, rep.Summary
			arts := make([]any, 0, len(rep.Artifacts))
			for _, art := range rep.Artifacts {
				arts = append(arts, artifactJSON(art))
			}
			report["artifacts"] = arts
		} else {
			report["errorMessage"] = rep.ErrorMessage
		}
	} else if r.Status == JobDeleted {
		report["errorMessage"] = "the job was deleted on the analysis server"
	}
	if r.Status == JobSuccess && r.Report != nil {
		if err := a.importArtifacts(ctx, j, r); err != nil {
			return err
		}
		if summary := r.Report.Summary; summary != nil {
			name := j.AnalyzerName
			if name == "" {
				name = r.WorkerName
			}
			if err := a.observables.MergeReport(ctx, j.ObservableID, name, summary); err != nil && !apperr.Is(err, apperr.NotFound) {
				return err
			}
		}
	}
	status := r.Status
	if status == JobDeleted {
		status = JobFailure
	}
	upd := Job{ID: j.ID, Status: status, StartDate: r.StartDate, EndDate: r.EndDate, Report: report,
		AnalyzerName: r.WorkerName, AnalyzerDefinition: r.DefinitionID}
	fields := []string{"status", "endDate", "report"}
	if !r.StartDate.IsZero() {
		fields = append(fields, "startDate")
	}
	if j.AnalyzerName == "" && r.WorkerName != "" {
		fields = append(fields, "analyzerName", "analyzerDefinition")
	}
	if upd.EndDate.IsZero() {
		upd.EndDate = a.clock()
	}
	if _, err := a.jobs.Update(ctx, upd, fields, j.CreatedBy, a.clock()); err != nil {
		return err
	}
	return a.pending.RemovePending(ctx, p.ID)
}

func artifactJSON(a RemoteArtifact) map[string]any {
	m := map[string]any{"dataType": a.DataType, "message": a.Message, "tags": a.Tags}
	if a.TLP != nil {
		m["tlp"] = *a.TLP
	}
	if a.FileID != "" {
		m["attachment"] = map[string]any{"id": a.FileID, "name": a.FileName, "contentType": a.ContentType}
	} else {
		m["data"] = a.Data
	}
	return m
}

// system is the identity the connector acts with when it imports results: the job's creator, in the job's
// organisation, allowed to add observables, tasks and logs.
func system(login, org string) identity.Caller {
	return identity.Caller{Login: login, Org: org, Orgs: []string{org}, Profile: "connector",
		Permissions: []identity.Permission{identity.ManageObservable, identity.ManageTask, identity.ManageCase, identity.ManageAlert, identity.ManageCustomField}}
}

// importArtifacts adds the report's artifacts to the case as observables tagged with their origin; values
// the case already has are skipped.
func (a *Analyses) importArtifacts(ctx context.Context, j Job, r RemoteJob) error {
	c := system(j.CreatedBy, j.Org)
	ctx = record.WithCause(ctx, "job:"+j.ID) // the observables' events name the job (rules read their depth from it)
	name := r.WorkerName
	if name == "" {
		name = j.AnalyzerName
	}
	parent := cases.Parent{Case: j.CaseID}
	if j.AlertID != "" {
		parent = cases.Parent{Alert: j.AlertID}
	}
	for _, art := range r.Report.Artifacts {
		if art.DataType == "" {
			continue
		}
		tags := append(append([]string(nil), art.Tags...), "src:"+name)
		n := cases.NewObservable{DataType: art.DataType, TLP: art.TLP, Tags: tags, Message: art.Message}
		if art.FileID != "" {
			body, err := a.servers[j.AnalysisID].Download(ctx, art.FileID)
			if err != nil {
				return err
			}
			n.File = &record.Upload{Name: art.FileName, ContentType: art.ContentType, Body: body}
			_, _, err = a.svc.CreateObservables(ctx, c, parent, n)
			body.Close()
			if err != nil && !errors.Is(err, cases.ErrObservableExists) && !apperr.Is(err, apperr.Invalid) {
				return err
			}
			continue
		}
		if art.Data == "" {
			continue
		}
		n.Data = []string{art.Data}
		if _, _, err := a.svc.CreateObservables(ctx, c, parent, n); err != nil &&
			!errors.Is(err, cases.ErrObservableExists) && !apperr.Is(err, apperr.Invalid) {
			return err
		}
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}
