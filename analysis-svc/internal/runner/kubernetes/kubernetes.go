// Package kubernetes runs analyzers and responders packaged as container images (definitions with a
// DockerImage) as Kubernetes Jobs, one per attempt of a job, when job.runner includes kubernetes. The
// design, the Job it creates and what is and is not guaranteed are in docs/kubernetes.md; in short:
//
//   - No shared volume: the job folder is written locally by package jobdir exactly as for the other
//     runners. The pod gets an emptyDir at /job; an init container (this binary's `jobio fetch`) fetches
//     input/ from this replica's callback listener, and a native sidecar (`jobio upload`) posts output/ back
//     when the kubelet stops it after the worker exited. The upload is unpacked into the local job folder by
//     jobdir.UnpackOutput (regular files directly in output/, size limits), then jobdir.ReadOutput reads it as
//     for the docker runner. The two tokens of a run are random, work once and die when Run returns.
//   - One Job per (job, attempt), named by JobName: a second create of one attempt is refused with
//     AlreadyExists, so two replicas never run one attempt twice. backoffLimit 0, restartPolicy Never and a
//     pod failure policy make one pod per attempt; activeDeadlineSeconds (the job's timeout plus a margin)
//     and ttlSecondsAfterFinished are backstops for a dead owner. The runner's own timeout acts first: it reads
//     the worker's log tail, deletes the Job and returns the "timed out" failure.
//   - Failures a user understands: image pull errors, unschedulable or pending too long, out of memory with
//     the limit, deadline, no output with the log tail, a refused upload. A ResourceQuota refusal of the
//     create is not a failure: Run returns an analysis.DeferError and the job goes back to the queue, without
//     using an attempt, to be claimed again after a backoff.
//   - Cleanup: every Job is deleted with propagationPolicy Background when its run ends; Sweep deletes the
//     Jobs of this server's earlier processes on the same host; the Job has an owner reference to the
//     analysis-svc pod when both share a namespace.
package kubernetes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/pkg/apperr"
)

// Options configures a Runner.
type Options struct {
	Client   *Client
	Settings Settings  // for every job; Settings.Namespace "" = the client's namespace
	Profiles []Profile // the first that matches a job's definition and organization applies over Settings
	// Server names this service in the openir.io/server label (default analysis-svc): the sweep touches only
	// its Jobs.
	Server string
	// Owner names this process in the openir.io/owner label (default <host name>.<random>): the sweep deletes
	// the Jobs of the same host name with another suffix, an earlier process of this pod.
	Owner string
	// OwnerPod, when set (the analysis-svc pod's name and UID, from the downward API), makes the pod the owner
	// of the Jobs that share its namespace: deleting the pod deletes them.
	OwnerPod *OwnerReference
	// OwnerNamespace is OwnerPod's namespace.
	OwnerNamespace string
	// JobioImage is the image with this binary (the analysis-svc image); JobioCommand its path in the image
	// (default /usr/local/bin/analysis-svc).
	JobioImage, JobioCommand string
	// CallbackURL is the callback listener's base URL as the pods reach this replica
	// (http://<pod IP>:<port>).
	CallbackURL string
	// DeadlineMargin is added to the job's timeout for activeDeadlineSeconds (default 2m); TTL is
	// ttlSecondsAfterFinished (default 10m); Grace is terminationGracePeriodSeconds, the time the upload has
	// (default 60s).
	DeadlineMargin, TTL, Grace time.Duration
	// Poll is how often a running Job is looked at (default 1s).
	Poll time.Duration
	// MaxOutput bounds output.json (jobdir.DefaultMaxOutput); MaxFile each other uploaded file and the
	// upload as a whole (job.max_file; 0 = 1 GiB).
	MaxOutput, MaxFile int64
	TailSize, LogLines int // the log tail of failure messages (jobdir.DefaultTailSize, 10000 lines)
	Access             jobdir.FolderAccess
	GroupReadable      bool
	Log                *slog.Logger
	// Metrics receives the runner's counts and durations (nil: counted in collectors nobody serves).
	Metrics *Metrics
}

// DefaultPendingTimeout is how long a pod may stay unstarted when no setting says otherwise.
const DefaultPendingTimeout = 5 * time.Minute

// Runner runs DockerImage definitions as Kubernetes Jobs. It is safe for concurrent use.
type Runner struct {
	opts Options
	cb   *callbacks
}

var _ runner.Runner = (*Runner)(nil)

// cleanupTimeout bounds the calls made after a run's context is done (logs, delete).
const cleanupTimeout = 30 * time.Second

// New returns a Runner. It does not contact the API server (see Check).
func New(opts Options) (*Runner, error) {
	if opts.Client == nil {
		return nil, errors.New("kubernetes runner: no API client")
	}
	if opts.JobioImage == "" {
		return nil, errors.New("kubernetes runner: no jobio image (job.kubernetes.jobio_image: the analysis-svc image)")
	}
	if opts.CallbackURL == "" {
		return nil, errors.New("kubernetes runner: no callback URL (job.kubernetes.callback_url)")
	}
	if opts.Settings.Namespace == "" {
		opts.Settings.Namespace = opts.Client.Namespace()
	}
	if opts.Settings.Namespace == "" {
		return nil, errors.New("kubernetes runner: no namespace (job.kubernetes.namespace)")
	}
	if opts.Settings.PendingTimeout <= 0 {
		opts.Settings.PendingTimeout = DefaultPendingTimeout
	}
	if opts.Server == "" {
		opts.Server = ManagedBy
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = host + "." + strings.ToLower(rand.Text()[:8])
	}
	if opts.JobioCommand == "" {
		opts.JobioCommand = "/usr/local/bin/analysis-svc"
	}
	if opts.DeadlineMargin <= 0 {
		opts.DeadlineMargin = 2 * time.Minute
	}
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.Grace <= 0 {
		opts.Grace = time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = jobdir.DefaultMaxOutput
	}
	if opts.MaxFile <= 0 {
		opts.MaxFile = 1 << 30
	}
	if opts.TailSize <= 0 {
		opts.TailSize = jobdir.DefaultTailSize
	}
	if opts.LogLines <= 0 {
		opts.LogLines = 10000
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	opts.CallbackURL = strings.TrimSuffix(opts.CallbackURL, "/")
	limits := jobdir.OutputLimits{MaxOutput: opts.MaxOutput, MaxFile: opts.MaxFile, MaxTotal: opts.MaxFile + opts.MaxOutput}
	return &Runner{opts: opts, cb: newCallbacks(limits, opts.Access, opts.Log, opts.Metrics)}, nil
}

// Metrics are the runner's collectors.
func (r *Runner) Metrics() *Metrics { return r.opts.Metrics }

// Owner is this process's openir.io/owner label value.
func (r *Runner) Owner() string { return LabelValue(r.opts.Owner) }

// CallbackHandler serves the callback routes (CallbackPath) and nothing else.
func (r *Runner) CallbackHandler() http.Handler { return r.cb }

// ServeCallbacks serves CallbackHandler on l until ctx ends.
func (r *Runner) ServeCallbacks(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: r.cb, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(r.opts.Log.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Check asks the API server to validate a Job like the runner's (server-side dry run, as this service's
// account): it answers, the credentials and the Role allow creating Jobs, admission accepts the pod.
func (r *Runner) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	def := analysis.Definition{ID: "probe", Kind: analysis.KindAnalyzer, DockerImage: "probe"}
	s := r.settings(def.ID, "")
	job := buildJob(r.spec(JobName(def.Kind, "probe", 0), def, jobRef{id: "probe"}, "", "", "", &jobdir.Job{}, time.Minute), s)
	_, err := r.opts.Client.CreateJob(ctx, s.Namespace, job, true)
	if IsQuotaExceeded(err) { // admission got as far as the quota: the rest passed; jobs wait for room
		r.opts.Log.Warn("the Kubernetes namespace's quota is used up: jobs are deferred until it has room", "err", err)
		return nil
	}
	return err
}

// settings are the Settings of a job of definition def in organization org.
func (r *Runner) settings(def, org string) Settings {
	s := r.opts.Settings
	for _, p := range r.opts.Profiles {
		if p.matches(def, org) {
			s = s.over(p.Settings)
			break
		}
	}
	return s
}

func (r *Runner) spec(name string, def analysis.Definition, ref jobRef, base, in, out string, job *jobdir.Job, timeout time.Duration) jobSpec {
	sp := jobSpec{name: name, def: def, job: ref, owner: r.opts.Owner, server: r.opts.Server,
		jobioImage: r.opts.JobioImage, jobioCmd: r.opts.JobioCommand, callbackURL: base, inToken: in, outToken: out,
		caBundle: job.CACerts, proxyHTTP: job.HTTPProxy, proxyHTTPS: job.HTTPSProxy,
		deadline: timeout + r.opts.DeadlineMargin, ttl: r.opts.TTL, grace: r.opts.Grace}
	return sp
}

// Run executes def.DockerImage on in as a Kubernetes Job, with the job folder dir on this replica. The job's
// id and attempt come from ctx (runner.WithJob). See the package comment.
func (r *Runner) Run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, error) {
	out, outcome, err := r.run(ctx, def, in, dir)
	if outcome != "" {
		r.opts.Metrics.runs.WithLabelValues(outcome).Inc()
	}
	return out, err
}

// ctxOutcome is the outcome of a run whose context ended with err.
func ctxOutcome(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return OutcomeTimeout
	}
	return OutcomeInterrupted
}

// run is Run, with the run's outcome ("" when the job could not be prepared: no Job was tried).
func (r *Runner) run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, string, error) {
	if strings.TrimSpace(def.DockerImage) == "" {
		return analysis.RunOutput{}, "", fmt.Errorf("%s has no docker image", def.ID)
	}
	ref, ok := runner.JobFrom(ctx)
	if !ok || ref.ID == "" {
		return analysis.RunOutput{}, "", errors.New("the kubernetes runner needs the job's id (runner.WithJob)")
	}
	if err := ctx.Err(); err != nil {
		return jobdir.Interrupted(err, 0, ""), ctxOutcome(err), nil
	}
	s := r.settings(def.ID, ref.Organization)
	job, err := jobdir.Prepare(dir, def.Kind, in, jobdir.Options{Access: r.opts.Access, GroupReadable: r.opts.GroupReadable})
	if err != nil {
		return analysis.RunOutput{}, "", err
	}
	name := JobName(def.Kind, ref.ID, ref.Attempt)
	run, inTok, outTok := r.cb.register(name, job.Dir)
	defer run.close()
	timeout := 24 * time.Hour
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Second)
	}
	sp := r.spec(name, def, jobRef{id: ref.ID, attempt: ref.Attempt, org: ref.Organization},
		r.opts.CallbackURL+CallbackPath+name, inTok, outTok, job, timeout)
	if r.opts.OwnerPod != nil && r.opts.OwnerNamespace == s.Namespace {
		sp.ownerRef = r.opts.OwnerPod
	}
	spec := buildJob(sp, s)

	start := time.Now()
	if err := r.create(ctx, s.Namespace, spec); err != nil {
		switch {
		case IsQuotaExceeded(err):
			return analysis.RunOutput{}, OutcomeQuota, &analysis.DeferError{Reason: QuotaReason, Err: err}
		case ctx.Err() != nil:
			return jobdir.Interrupted(ctx.Err(), time.Since(start), ""), ctxOutcome(ctx.Err()), nil
		case apperr.Is(err, apperr.Conflict):
			// Another process's Job of this attempt is there: the attempt was given back (a stop, a deferral)
			// while its Job was still being deleted, or, with a store whose claims are not atomic, two replicas
			// hold it. Not a failure of the job: it waits in the queue, without using an attempt, until that
			// Job is gone.
			return analysis.RunOutput{}, OutcomeConflict, &analysis.DeferError{Reason: ConflictReason, Err: err}
		}
		return analysis.RunOutput{}, OutcomeAPIError, err
	}
	defer r.delete(ctx, s.Namespace, name)
	return r.wait(ctx, s, name, def, job.Dir, run, start)
}

// QuotaReason is the DeferError reason of a quota refusal (and the end of the failure message of a job
// deferred past its timeout).
const QuotaReason = "the Kubernetes namespace's quota (ResourceQuota) did not allow its Job"

// ConflictReason is the DeferError reason of a job whose attempt another process's Job still runs.
const ConflictReason = "an earlier Kubernetes Job of this attempt has not ended yet"

// create creates the Job. A quota refusal is returned as it is (the caller defers the job); AlreadyExists is
// retried once after deleting the existing Job when it is this process's or finished, else it is an error
// (another replica runs this attempt).
func (r *Runner) create(ctx context.Context, ns string, job *Job) error {
	retried := false
	for {
		_, err := r.opts.Client.CreateJob(ctx, ns, job, false)
		switch {
		case err == nil:
			r.opts.Metrics.created.Inc()
			r.opts.Log.Info("created a Kubernetes Job", "kubernetes_job", job.Metadata.Name, "attempt", job.Metadata.Labels[LabelAttempt])
			return nil
		case IsQuotaExceeded(err):
			r.opts.Log.Info("the Kubernetes namespace's quota refused a Job; the job is deferred", "kubernetes_job", job.Metadata.Name, "err", err)
			return err
		case IsAlreadyExists(err) && !retried:
			retried = true
			old, gerr := r.opts.Client.GetJob(ctx, ns, job.Metadata.Name)
			if gerr != nil {
				if IsNotFound(gerr) {
					continue
				}
				return gerr
			}
			owner := old.Metadata.Labels[LabelOwner]
			if owner != r.Owner() && !finished(old) {
				return apperr.Wrap(apperr.Conflict, fmt.Sprintf("this attempt of the job already runs as the Kubernetes Job %s (owner %s)",
					job.Metadata.Name, owner), err)
			}
			if err := r.opts.Client.DeleteJob(ctx, ns, job.Metadata.Name); err != nil {
				return err
			}
		case IsAlreadyExists(err):
			return apperr.Wrap(apperr.Conflict, fmt.Sprintf("this attempt of the job already runs as the Kubernetes Job %s", job.Metadata.Name), err)
		default:
			var ae *APIError
			if errors.As(err, &ae) && ae.Code == http.StatusUnprocessableEntity {
				// The API server refused the spec (a bad setting): its message names the field.
				return apperr.Wrap(apperr.Unavailable, "the Kubernetes Job was refused by the API server: "+ae.Message, err)
			}
			return fmt.Errorf("create the Kubernetes Job %s: %w", job.Metadata.Name, err)
		}
	}
}

func finished(j *Job) bool {
	_, c := condition(j.Status.Conditions, "Complete")
	_, f := condition(j.Status.Conditions, "Failed")
	return c || f
}

// delete deletes the Job (and its pods) even when the run's context is done.
func (r *Runner) delete(ctx context.Context, ns, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.opts.Client.DeleteJob(ctx, ns, name); err != nil {
		r.opts.Log.Warn("delete a Kubernetes Job", "job", name, "err", err)
	}
}

// wait follows the Job until it finishes, fails to start, or ctx ends. The worker's start is when a poll
// (every Options.Poll) first sees its container started or ended; it splits the Job's time into
// analysis_kubernetes_pending_seconds and run_seconds.
func (r *Runner) wait(ctx context.Context, s Settings, name string, def analysis.Definition, dir string, run *callbackRun, start time.Time) (analysis.RunOutput, string, error) {
	tick := time.NewTicker(r.opts.Poll)
	defer tick.Stop()
	upload := run.upload
	var started time.Time
	seen := func() {
		if started.IsZero() {
			started = time.Now()
			r.opts.Metrics.pending.Observe(started.Sub(start).Seconds())
		}
	}
	defer func() {
		if !started.IsZero() {
			r.opts.Metrics.running.Observe(time.Since(started).Seconds())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return r.interrupted(ctx, s.Namespace, name, start), ctxOutcome(ctx.Err()), nil
		case <-tick.C:
		case <-upload:
			upload = nil // look now: the Job finishes right after its upload
		}
		job, err := r.opts.Client.GetJob(ctx, s.Namespace, name)
		if IsNotFound(err) {
			return jobdir.Failure(fmt.Sprintf("The Kubernetes Job %s was deleted before it finished.", name)), OutcomeDeleted, nil
		}
		if err != nil {
			if ctx.Err() == nil {
				r.opts.Log.Warn("read a Kubernetes Job", "job", name, "err", err)
			}
			continue // the API server may be briefly unreachable; the job's timeout bounds the wait
		}
		if finished(job) {
			out, outcome := r.finish(ctx, s, name, job, def, dir, run, seen)
			return out, outcome, nil
		}
		pods, err := r.opts.Client.ListPods(ctx, s.Namespace, LabelJobName+"="+name)
		if err != nil {
			continue
		}
		if len(pods) > 0 && workerStarted(newest(pods)) {
			seen()
		}
		if msg, outcome := r.startProblem(pods, time.Since(start), s.PendingTimeout); msg != "" {
			return jobdir.Failure(msg), outcome, nil
		}
	}
}

// workerStarted says whether the pod's worker container has started (running or ended).
func workerStarted(pod *Pod) bool {
	st := containerStatus(pod.Status.ContainerStatuses, WorkerContainer)
	return st != nil && (st.State.Running != nil || st.State.Terminated != nil)
}

// interrupted ends a run whose context is done: the worker's log tail, then the delete (by the caller).
func (r *Runner) interrupted(ctx context.Context, ns, name string, start time.Time) analysis.RunOutput {
	elapsed := time.Since(start)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	logs := ""
	if pod := r.latestPod(cctx, ns, name); pod != nil {
		logs = r.logs(cctx, ns, pod.Metadata.Name)
	}
	return jobdir.Interrupted(ctx.Err(), elapsed, logs)
}

// finish reads the uploaded output of a finished Job, or says why there is none, with the run's outcome. seen
// marks the worker as started (a Job that finished between two polls was not seen running).
func (r *Runner) finish(ctx context.Context, s Settings, name string, job *Job, def analysis.Definition, dir string, run *callbackRun,
	seen func()) (analysis.RunOutput, string) {
	if got, err := run.uploaded(); got && err != nil {
		seen()
		r.opts.Log.Warn("a job's output upload was refused", "job", name, "err", err)
		if errors.Is(err, jobdir.ErrUploadRefused) {
			return jobdir.Failure("The worker's output was refused: " + strings.TrimPrefix(err.Error(), jobdir.ErrUploadRefused.Error()+": ")), OutcomeUploadRefused
		}
		return jobdir.Failure("The worker's output could not be received."), OutcomeUploadRefused
	}
	out, err := jobdir.ReadOutput(dir, jobdir.ReadOptions{MaxSize: r.opts.MaxOutput, Log: r.opts.Log,
		LogArgs: []any{"definition", def.ID, "kubernetes_job", name}})
	if !errors.Is(err, jobdir.ErrNoOutput) {
		seen()
		if out.Success {
			return out, OutcomeSuccess
		}
		return out, OutcomeFailure
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	pod := r.latestPod(cctx, s.Namespace, name)
	logs := ""
	if pod != nil {
		if workerStarted(pod) {
			seen()
		}
		logs = r.logs(cctx, s.Namespace, pod.Metadata.Name)
		if st := containerStatus(pod.Status.ContainerStatuses, WorkerContainer); st != nil && st.State.Terminated != nil &&
			st.State.Terminated.Reason == "OOMKilled" {
			limit := s.Limits["memory"]
			if limit == "" {
				limit = "none set; the node's or the namespace's"
			}
			return withLogs(fmt.Sprintf("The worker ran out of memory (limit %s) and was killed.", limit), logs), OutcomeOOM
		}
		if pod.Status.Reason == "Evicted" {
			return withLogs("The worker's pod was evicted: "+pod.Status.Message, logs), OutcomeEvicted
		}
	}
	if c, ok := condition(job.Status.Conditions, "Failed"); ok && c.Reason == "DeadlineExceeded" {
		return withLogs("The Kubernetes Job exceeded its deadline (activeDeadlineSeconds) and was stopped.", logs), OutcomeDeadline
	}
	if ok, _ := run.uploaded(); !ok {
		r.opts.Log.Warn("a Kubernetes Job finished without uploading its output", "job", name)
	}
	return jobdir.NoOutput(logs), OutcomeNoOutput
}

func withLogs(msg, logs string) analysis.RunOutput {
	if strings.TrimSpace(logs) != "" {
		msg += " Worker output:\n" + logs
	}
	return jobdir.Failure(msg)
}

// startProblem is the failure message of a pod that cannot start ("" while there is none), with its outcome:
// an image that cannot be pulled, a container that cannot be created, or a pod pending past pendingTimeout.
func (r *Runner) startProblem(pods []Pod, pending, pendingTimeout time.Duration) (string, string) {
	if len(pods) == 0 {
		if pending > pendingTimeout {
			return fmt.Sprintf("The Kubernetes Job made no pod within %s.", pendingTimeout.Round(time.Second)), OutcomeNotStarted
		}
		return "", ""
	}
	pod := newest(pods)
	images := map[string]string{}
	for _, c := range append(append([]Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		images[c.Name] = c.Image
	}
	late := pending > pendingTimeout
	for _, st := range append(append([]ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		w := st.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
		case "ErrImagePull":
			if !late {
				continue
			}
		case "CreateContainerConfigError", "CreateContainerError":
			r.opts.Log.Warn("a Kubernetes Job's container cannot be created", "pod", pod.Metadata.Name, "container", st.Name, "reason", w.Reason, "message", w.Message)
			return fmt.Sprintf("The container %s of the worker's pod could not be created (%s).", st.Name, w.Reason), OutcomeCreateError
		default:
			continue
		}
		r.opts.Log.Warn("a Kubernetes Job's image cannot be pulled", "pod", pod.Metadata.Name, "container", st.Name, "reason", w.Reason, "message", w.Message)
		what := "The worker's image"
		if st.Name != WorkerContainer {
			what = "The jobio image (job.kubernetes.jobio_image)"
		}
		return fmt.Sprintf("%s %s could not be pulled (%s).", what, images[st.Name], w.Reason), OutcomeImagePull
	}
	if !late || pod.Status.Phase != "Pending" {
		return "", ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" {
			return fmt.Sprintf("The worker's pod could not be scheduled within %s: %s", pendingTimeout.Round(time.Second), c.Message), OutcomeNotStarted
		}
	}
	return fmt.Sprintf("The worker's pod did not start within %s.", pendingTimeout.Round(time.Second)), OutcomeNotStarted
}

func containerStatus(sts []ContainerStatus, name string) *ContainerStatus {
	for i := range sts {
		if sts[i].Name == name {
			return &sts[i]
		}
	}
	return nil
}

func newest(pods []Pod) *Pod {
	best := &pods[0]
	for i := range pods {
		if t, b := pods[i].Metadata.CreationTimestamp, best.Metadata.CreationTimestamp; t != nil && b != nil && t.After(*b) {
			best = &pods[i]
		}
	}
	return best
}

// latestPod is the Job's newest pod (nil when it has none or the API server cannot say).
func (r *Runner) latestPod(ctx context.Context, ns, name string) *Pod {
	pods, err := r.opts.Client.ListPods(ctx, ns, LabelJobName+"="+name)
	if err != nil {
		r.opts.Log.Warn("list a Kubernetes Job's pods", "job", name, "err", err)
		return nil
	}
	if len(pods) == 0 {
		return nil
	}
	return newest(pods)
}

// logs is the tail of the worker container's log ("" when the API server cannot give it).
func (r *Runner) logs(ctx context.Context, ns, pod string) string {
	tail := jobdir.NewTail(r.opts.TailSize)
	if err := r.opts.Client.PodLog(ctx, ns, pod, WorkerContainer, r.opts.LogLines, 2*r.opts.TailSize, tail); err != nil {
		r.opts.Log.Warn("read a worker pod's log", "pod", pod, "err", err)
	}
	return tail.String()
}

// Sweep deletes the Jobs this server's earlier processes on this host left (a crash skipped their delete):
// those whose owner label names this host with another process suffix. It returns how many it deleted.
func (r *Runner) Sweep(ctx context.Context) (int, error) {
	swept, err := r.sweep(ctx)
	return len(swept), err
}

// SweepAndWait is the sweep of a process that starts: it also waits, within ctx, until the pods of the Jobs
// it deleted are gone. A job the earlier process was running goes back to the queue when its lease runs out;
// waiting here, before this process claims jobs, keeps its next attempt from running beside the old pod.
func (r *Runner) SweepAndWait(ctx context.Context) (int, error) {
	swept, err := r.sweep(ctx)
	for _, j := range swept {
		for {
			pods, perr := r.opts.Client.ListPods(ctx, j.ns, LabelJobName+"="+j.name)
			if perr != nil {
				return len(swept), errors.Join(err, perr)
			}
			if len(pods) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return len(swept), errors.Join(err, fmt.Errorf("the pods of the swept Job %s are still there: %w", j.name, ctx.Err()))
			case <-time.After(r.opts.Poll):
			}
		}
	}
	return len(swept), err
}

type sweptJob struct{ ns, name string }

func (r *Runner) sweep(ctx context.Context) ([]sweptJob, error) {
	host, _, _ := strings.Cut(r.opts.Owner, ".")
	namespaces := map[string]bool{r.opts.Settings.Namespace: true}
	for _, p := range r.opts.Profiles {
		if p.Settings.Namespace != "" {
			namespaces[p.Settings.Namespace] = true
		}
	}
	var swept []sweptJob
	for ns := range namespaces {
		jobs, err := r.opts.Client.ListJobs(ctx, ns, LabelManagedBy+"="+ManagedBy+","+LabelServer+"="+LabelValue(r.opts.Server))
		if err != nil {
			return swept, err
		}
		for _, j := range jobs {
			owner := j.Metadata.Labels[LabelOwner]
			if owner == r.Owner() || !strings.HasPrefix(owner, LabelValue(host)+".") {
				continue
			}
			if err := r.opts.Client.DeleteJob(ctx, ns, j.Metadata.Name); err != nil {
				return swept, err
			}
			r.opts.Log.Info("deleted a Kubernetes Job an earlier process left", "job", j.Metadata.Name, "owner", owner)
			r.opts.Metrics.swept.Inc()
			swept = append(swept, sweptJob{ns, j.Metadata.Name})
		}
	}
	return swept, nil
}
