package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/openir/platform/pkg/apperr"
)

// ErrInterrupted is the errorMessage of a responder job whose run was interrupted (the service stopped or
// crashed while it ran): it is failed, never run a second time.
const ErrInterrupted = "interrupted; not retried"

// interrupted is j failed with ErrInterrupted.
func (s *Jobs) interrupted(j Job) Job {
	now := s.clock()
	j.Status, j.ErrorMessage, j.EndDate, j.UpdatedAt = JobFailure, ErrInterrupted, now, now
	return j
}

// Run starts cfg.Workers workers and the sweeper and blocks until ctx ends. Analyzer jobs running at
// shutdown go back to the queue, so a restart runs them again; responder jobs fail (a responder acts on the
// world and is never run twice).
func (s *Jobs) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.workLoop(ctx, fmt.Sprintf("%s-w%d", s.instance, i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.sweepLoop(ctx)
	}()
	<-ctx.Done()
	s.closeOnce.Do(func() { close(s.closing) })
	wg.Wait()
	return nil
}

func (s *Jobs) workLoop(ctx context.Context, owner string) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for ctx.Err() == nil {
		j, err := s.claim(ctx, owner)
		if err == nil {
			s.execute(ctx, owner, j)
			s.claimMu.Lock()
			s.busy--
			s.claimMu.Unlock()
			continue
		}
		if !errors.Is(err, ErrNoJob) && ctx.Err() == nil {
			s.cfg.Log.Error("claim a job", "worker", owner, "err", err)
		}
		idle.Reset(s.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-s.kick:
		case <-idle.C:
		}
	}
}

// claim takes a job for one of this replica's workers. The replica's claims are made one at a time, so each
// knows how many of its workers are free: the last cfg.Reserve free workers (at most Workers-1) take only a job
// of an organization that runs none, anywhere. So however many jobs one organization queues, another's first
// job finds a free worker on every replica (fair by default, with job.org_max 0), at the cost of that idle
// worker while no such job waits.
func (s *Jobs) claim(ctx context.Context, owner string) (Job, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	reserve := min(s.cfg.Reserve, s.cfg.Workers-1)
	now := s.clock()
	j, err := s.store.Claim(ctx, owner, now.Add(s.cfg.Lease), now,
		ClaimRule{OrgMax: s.cfg.OrgMax, NewOnly: s.cfg.Workers-s.busy <= reserve})
	if err == nil {
		s.busy++
	}
	return j, err
}

// execute runs one claimed job while renewing its lease, then stores the outcome, unless the service is
// stopping (the job is requeued) or the lease was lost (deleted, or taken over by another worker).
func (s *Jobs) execute(ctx context.Context, owner string, j Job) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.running[j.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, j.ID)
		s.mu.Unlock()
	}()

	lost := make(chan struct{})
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		t := time.NewTicker(s.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				err := s.store.Renew(runCtx, j.ID, owner, s.clock().Add(s.cfg.Lease))
				if errors.Is(err, ErrLeaseLost) {
					close(lost)
					cancel()
					return
				}
				if err != nil && runCtx.Err() == nil {
					s.cfg.Log.Warn("renew lease", "job", j.ID, "err", err)
				}
			}
		}
	}()

	final, report, release, started := s.runJob(runCtx, j)
	defer release() // after the end is stored: removing a job folder takes a while (0.5 ms for an empty one)
	// Whether the service is stopping is read once, here: the outcome is the worker's own when the stop came
	// after it; a stop that comes later must not turn a stored end into a lost one.
	stopping := ctx.Err() != nil
	cancel()
	// The renewer stops on its own. Finish confirms the lease itself, so the end of the job does not wait for
	// it (on a loaded machine that wait, two goroutine hand-offs, was a millisecond on every job's end).
	defer func() { <-renewDone }()
	// The end is written on a context the stop does not cancel: a stop between here and the write would
	// otherwise leave the job InProgress until its lease ran out and the sweeper took it.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer wcancel()

	if stopping { // give the job back, whatever the renewer saw: Requeue and Finish act only while owner holds it
		s.giveBack(wctx, owner, j, started)
		return
	}
	select {
	case <-lost:
		s.cfg.Log.Info("job lease lost; result dropped", "job", j.ID)
		return
	default:
	}
	if final.Status == JobWaiting { // deferred (see runJob)
		s.deferJob(wctx, owner, final)
		return
	}
	if err := s.store.Finish(OnFinishedReadable(wctx, func(end *Ended) { s.notify(j.ID, end) }), final, report, owner); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			s.cfg.Log.Info("job lease lost; result dropped", "job", j.ID)
		} else {
			s.cfg.Log.Error("finish job", "job", j.ID, "err", err)
		}
		return
	}
	s.notify(j.ID, nil)
}

// giveBack ends the run of a job that the service's stop interrupted: an analyzer goes back to the queue with
// its attempt refunded, so another replica (or the restart) runs it at once; a responder whose worker started
// may have acted already and fails rather than run again, one that never started goes back like an analyzer.
func (s *Jobs) giveBack(ctx context.Context, owner string, j Job, started bool) {
	if j.Kind == KindResponder && started {
		if err := s.store.Finish(ctx, s.interrupted(j), &Report{Success: false, ErrorMessage: ErrInterrupted}, owner); err != nil {
			s.cfg.Log.Warn("fail an interrupted responder at shutdown", "job", j.ID, "err", err)
			return
		}
		s.notify(j.ID, nil)
		return
	}
	if err := s.store.Requeue(ctx, j.ID, owner, true); err != nil {
		s.cfg.Log.Warn("requeue at shutdown", "job", j.ID, "err", err)
		return
	}
	select { // a worker of this process that is still claiming (another replica polls) takes it at once
	case s.kick <- struct{}{}:
	default:
	}
}

// deferJob puts back a job its executor deferred (DeferError), claimable again after the time it has been
// deferred so far, within JobsConfig.DeferMin and DeferMax, with its attempt refunded.
func (s *Jobs) deferJob(ctx context.Context, owner string, j Job) {
	now := s.clock()
	wait := min(max(now.Sub(j.DeferredSince), s.cfg.DeferMin), s.cfg.DeferMax)
	s.cfg.Log.Info("job deferred", "job", j.ID, "reason", j.ErrorMessage, "retry_in", wait.String(),
		"deferred_for", now.Sub(j.DeferredSince).Round(time.Millisecond).String())
	if err := s.store.Defer(ctx, j.ID, owner, j.DeferredSince, now.Add(wait)); err != nil && !errors.Is(err, ErrLeaseLost) {
		s.cfg.Log.Warn("defer a job", "job", j.ID, "err", err) // its lease expires and the sweeper requeues it
	}
}

// runJob prepares the input, has the definition's executor run the worker with its timeout and turns the
// output into the final job and report; release removes the job folder once they are stored. started says
// whether the executor was asked to run the worker (from then on it may have acted). A job the executor
// deferred (DeferError: nothing ran) comes back Waiting, without a report, with DeferredSince set and the reason
// as ErrorMessage; one deferred for longer than its timeout fails instead.
func (s *Jobs) runJob(ctx context.Context, j Job) (final Job, report *Report, release func(), started bool) {
	release = func() {}
	var secrets jobSecrets // the worker's credentials, removed where the job echoes its configuration (secrets.go)
	fail := func(msg string) (Job, *Report, func(), bool) {
		j.Status, j.ErrorMessage, j.EndDate, j.UpdatedAt = JobFailure, msg, s.clock(), s.clock()
		j, r := scrubJob(j, &Report{Success: false, ErrorMessage: msg}, secrets)
		return j, r, release, started
	}
	// failOn fails the job with a message safe for its readers (no paths, no Docker or driver text) and logs
	// the cause, once.
	failOn := func(err error, fallback string) (Job, *Report, func(), bool) {
		s.cfg.Log.Error("job failed", "job", j.ID, "definition", j.WorkerName, "err", err)
		return fail(apperr.SafeMessage(err, fallback))
	}
	w, err := s.workers.Worker(ctx, j.WorkerID)
	if err != nil {
		return fail(fmt.Sprintf("the %s %s is no longer enabled", j.Kind, j.WorkerName))
	}
	def, ok := s.catalog.Definition(j.Kind, w.DefinitionID)
	if !ok {
		return fail(fmt.Sprintf("the %s definition %s is no longer available on this server", j.Kind, w.DefinitionID))
	}
	if def.executor == nil {
		return fail(fmt.Sprintf("no enabled runner can run %s (job.runner)", def.ID))
	}
	base, err := baseValues(ctx, s.workers, j.Organization, def)
	if err != nil {
		return failOn(err, "the worker's configuration could not be read")
	}
	w.Configuration = withBase(w.Configuration, base)
	in := RunInput{Data: j.Data, DataType: j.DataType, TLP: j.TLP, PAP: j.PAP, Message: j.Message,
		Parameters: j.Parameters, Config: runConfig(def, w)}
	secrets = secretValues(def, in.Config)
	if j.Attachment != nil { // the executor sets in.File, the path of its copy in the job folder
		in.Filename, in.ContentType, in.Data = j.Attachment.Name, j.Attachment.ContentType, nil
	}
	timeout := s.cfg.DefaultTimeout
	if w.JobTimeout != nil {
		timeout = time.Duration(*w.JobTimeout) * time.Minute
	} else if m := number(w.Configuration["jobTimeout"], 0); m > 0 {
		timeout = time.Duration(m * float64(time.Minute))
	}
	started = true
	out, folder, err := def.executor.Execute(ctx, Execution{JobID: j.ID, Attempt: j.Attempts, Organization: j.Organization, Input: in, File: j.Attachment, Timeout: timeout})
	if d := (*DeferError)(nil); errors.As(err, &d) {
		now := s.clock()
		since := j.DeferredSince
		if since.IsZero() {
			since = now
		}
		if now.Sub(since) >= timeout {
			s.cfg.Log.Warn("job deferred for longer than its timeout; failing it", "job", j.ID, "err", err)
			return fail(fmt.Sprintf("The job ended after %s without running: %s.", now.Sub(since).Round(time.Second), d.Reason))
		}
		j.Status, j.ErrorMessage, j.DeferredSince = JobWaiting, d.Reason, since
		return j, nil, release, false
	}
	if err != nil {
		if e := (*ExecError)(nil); errors.As(err, &e) {
			return failOn(e.Err, e.Message)
		}
		return failOn(err, "the worker could not be started")
	}
	release = func() { def.executor.Release(folder) }
	now := s.clock()
	j.EndDate, j.UpdatedAt = now, now
	if !out.Success {
		j.Status, j.ErrorMessage = JobFailure, out.ErrorMessage
		j, r := scrubJob(j, &Report{Success: false, ErrorMessage: out.ErrorMessage, Input: out.Input}, secrets)
		return j, r, release, started
	}
	r := &Report{Success: true, Summary: out.Summary, Full: out.Full, Operations: out.Operations}
	if r.Summary == nil {
		r.Summary = map[string]any{}
	}
	if r.Full == nil {
		r.Full = map[string]any{}
	}
	arts := out.Artifacts
	if auto, _ := in.Config["auto_extract_artifacts"].(bool); auto && def.Builtin != nil && j.Kind == KindAnalyzer && s.cfg.Extract != nil {
		ignore, _ := j.Data.(string)
		arts = append(arts, s.cfg.Extract(out.Full, ignore)...)
	}
	if r.Artifacts, err = s.artifacts(ctx, j, arts, now); err != nil {
		return failOn(err, "report creation failure")
	}
	j.Status = JobSuccess
	j, r = scrubJob(j, r, secrets)
	return j, r, release, started
}

// runConfig is the job's config: the definition's fixed config, then the worker's configuration, then the
// proxy settings as the public protocol nests them.
func runConfig(def Definition, w Worker) map[string]any {
	conf := deepMerge(deepMerge(map[string]any{}, def.Config), w.Configuration)
	proxy := map[string]any{}
	if v, ok := w.Configuration["proxy_http"].(string); ok && v != "" {
		proxy["http"] = v
	}
	if v, ok := w.Configuration["proxy_https"].(string); ok && v != "" {
		proxy["https"] = v
	}
	if len(proxy) > 0 {
		conf = deepMerge(conf, map[string]any{"proxy": proxy})
	}
	return conf
}

func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = deepMerge(dm, sm)
				continue
			}
			dst[k] = deepMerge(map[string]any{}, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}

// artifacts stores file artifacts and merges duplicates (same data type and value or file).
func (s *Jobs) artifacts(ctx context.Context, j Job, in []OutputArtifact, now time.Time) ([]Artifact, error) {
	seen := map[string]bool{}
	var out []Artifact
	for _, a := range in {
		if a.DataType == "" {
			continue
		}
		art := Artifact{DataType: a.DataType, Data: a.Data, Message: a.Message, Tags: a.Tags, TLP: j.TLP,
			CreatedAt: now, CreatedBy: j.CreatedBy}
		if a.TLP != nil {
			art.TLP = *a.TLP
		}
		key := a.DataType + "|" + a.Data
		if a.File != "" {
			att, err := s.storeFile(ctx, j.Organization, a)
			if err != nil {
				return nil, err
			}
			art.Attachment, art.Data = att, ""
			key = a.DataType + "|file:" + att.ID
		} else if a.Data == "" {
			continue
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		art.ID = fmt.Sprintf("%s-%d", j.ID, len(out))
		out = append(out, art)
	}
	return out, nil
}

func (s *Jobs) storeFile(ctx context.Context, org string, a OutputArtifact) (*Attachment, error) {
	name := a.Filename
	if name == "" {
		name = filepath.Base(a.File)
	}
	return s.store1(ctx, org, &Upload{Name: name, ContentType: a.ContentType,
		Open: func() (io.ReadCloser, error) { return os.Open(a.File) }})
}

// sweepLoop re-queues jobs whose worker stopped renewing its lease (a crashed replica), fails those
// interrupted too often, and prunes old rate windows and cache entries.
func (s *Jobs) sweepLoop(ctx context.Context) {
	every := s.cfg.Lease / 2
	if every < 100*time.Millisecond {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("sweep", "err", err)
		}
		if now := s.clock(); now.Sub(lastPrune) > 10*time.Minute {
			lastPrune = now
			if err := s.store.Prune(ctx, now, now.Add(-31*24*time.Hour)); err != nil && ctx.Err() == nil {
				s.cfg.Log.Warn("prune", "err", err)
			}
		}
	}
}

// Sweep handles the jobs whose lease has expired once.
func (s *Jobs) Sweep(ctx context.Context) error {
	now := s.clock()
	expired, err := s.store.Expired(ctx, now)
	if err != nil {
		return err
	}
	for _, j := range expired {
		owner, err := s.store.Owner(ctx, j.ID)
		if err != nil {
			continue
		}
		if j.Kind == KindResponder {
			// Its worker stopped (a crash, kill -9): the responder may have acted, so it is not run again.
			s.cfg.Log.Warn("fail a responder whose worker stopped renewing its lease", "job", j.ID)
			if err := s.store.Finish(ctx, s.interrupted(j), &Report{Success: false, ErrorMessage: ErrInterrupted}, owner); err != nil &&
				!errors.Is(err, ErrLeaseLost) {
				return err
			}
			s.notify(j.ID, nil)
			continue
		}
		if j.Attempts >= s.cfg.MaxAttempts {
			msg := fmt.Sprintf("the job was interrupted %d times (its worker stopped or was lost); giving up", j.Attempts)
			j.Status, j.ErrorMessage, j.EndDate, j.UpdatedAt = JobFailure, msg, now, now
			if err := s.store.Finish(ctx, j, &Report{Success: false, ErrorMessage: msg}, owner); err != nil {
				return err
			}
			s.notify(j.ID, nil)
			continue
		}
		s.cfg.Log.Warn("requeue a job whose worker stopped renewing its lease", "job", j.ID, "attempts", j.Attempts)
		if err := s.store.Requeue(ctx, j.ID, owner, false); err != nil && !errors.Is(err, ErrLeaseLost) {
			return err
		}
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}
