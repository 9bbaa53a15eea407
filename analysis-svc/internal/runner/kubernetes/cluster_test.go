package kubernetes

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/k8stest"
	"github.com/openir/platform/pkg/apperr"
)

// These tests run the runner against a real kube-apiserver and kube-controller-manager with the fakelet
// (package k8stest), as the analysis-svc service account limited by deploy/k8s's Role. The pods' containers
// run on the local Docker engine from images built here: a worker speaking the public job-folder protocol
// and the real analysis-svc binary for jobio.

var (
	setupOnce  sync.Once
	cluster    *k8stest.Cluster
	setupErr   error // the cluster could not be started although the tools are there: a failure
	skipReason string
	images     struct{ analyzer, jobio string }
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
		os.RemoveAll(cluster.Dir)
	}
	for _, img := range []string{images.analyzer, images.jobio} {
		if img != "" {
			exec.Command("docker", "rmi", "-f", img).Run()
		}
	}
	os.Exit(code)
}

// needCluster starts the control plane and builds the images once, or skips the test when a tool is missing
// (in CI, where .ci/run installs them, it fails instead).
func needCluster(t *testing.T) *k8stest.Cluster {
	t.Helper()
	setupOnce.Do(func() {
		if skipReason = k8stest.Missing(); skipReason != "" {
			return
		}
		bin, err := k8stest.Binaries(os.Stderr)
		if err != nil {
			setupErr = err
			return
		}
		if images.analyzer, err = k8stest.BuildWorkerImage(); err != nil {
			setupErr = err
			return
		}
		if images.jobio, err = k8stest.BuildJobioImage(); err != nil {
			setupErr = err
			return
		}
		dir, err := os.MkdirTemp("", "k8stest-")
		if err != nil {
			setupErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cluster, setupErr = k8stest.Start(ctx, bin, dir, "analysis-jobs")
		if setupErr != nil {
			cluster = nil
		}
	})
	if skipReason != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Kubernetes runner's tests must run in CI: %s", skipReason)
		}
		t.Skip("no Kubernetes test control plane: " + skipReason)
	}
	if setupErr != nil {
		t.Fatalf("start the test control plane: %v", setupErr)
	}
	return cluster
}

// newRunner is a runner of the cluster as the analysis-svc service account, with its callback listener.
func newRunner(t *testing.T, c *k8stest.Cluster, owner string, settings Settings) *Runner {
	t.Helper()
	kc, err := c.Kubeconfig("runner", c.RunnerToken, c.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKubeconfig(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if settings.ServiceAccount == "" {
		settings.ServiceAccount = "analysis-job"
	}
	r, err := New(Options{Client: client, Settings: settings, Owner: owner, JobioImage: images.jobio,
		CallbackURL: "http://" + l.Addr().String(), Poll: 200 * time.Millisecond, Grace: 20 * time.Second,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.ServeCallbacks(ctx, l)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func analyzerDef(image string) analysis.Definition {
	return analysis.Definition{ID: "Test_Analyzer_1_0", Kind: analysis.KindAnalyzer, Name: "Test_Analyzer", DockerImage: image}
}

// run runs one job of def on data as attempt 1 of a fresh job id within timeout.
func run(t *testing.T, r *Runner, def analysis.Definition, jobID string, in analysis.RunInput, timeout time.Duration) (analysis.RunOutput, string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(runner.WithJob(t.Context(), runner.Job{ID: jobID, Attempt: 1, Organization: "Acme Corp"}), timeout)
	defer cancel()
	out, err := r.Run(ctx, def, in, dir)
	return out, dir, err
}

// assertGone checks that the run's Job was deleted and waits (with a deadline) for the garbage collector to
// remove its pods.
func assertGone(t *testing.T, c *k8stest.Cluster, name string) {
	t.Helper()
	err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs/"+name, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the Job %s is still there after the run: %v", name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var pods struct{ Items []Pod }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+c.Namespace+"/pods?labelSelector="+LabelJobName+"%3D"+name, nil, &pods); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pods of %s were not removed within a minute", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantRuns checks the runner's count of runs of outcome (analysis_kubernetes_runs_total).
func wantRuns(t *testing.T, r *Runner, outcome string, want float64) {
	t.Helper()
	if got := testutil.ToFloat64(r.Metrics().Runs(outcome)); got != want {
		t.Errorf("runs_total{outcome=%s} = %v, want %v", outcome, got, want)
	}
}

// histogramCount is the number of observations of the runner's histogram name.
func histogramCount(t *testing.T, r *Runner, name string) uint64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Metrics().Collectors()...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0
}

func TestCluster_SuccessWithArtifacts(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x1", Settings{})
	out, dir, err := run(t, r, analyzerDef(images.analyzer), "AVxSuccess_1", analysis.RunInput{Data: "8.8.8.8", DataType: "ip",
		TLP: 2, Config: map[string]any{"api_key": "s3cret"}}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Success {
		t.Fatalf("failure: %s", out.ErrorMessage)
	}
	in, _ := out.Full["input"].(map[string]any)
	if in["data"] != "8.8.8.8" || in["dataType"] != "ip" || in["config"].(map[string]any)["api_key"] != "s3cret" {
		t.Fatalf("the worker did not get the input: %v", out.Full)
	}
	if len(out.Artifacts) != 2 {
		t.Fatalf("artifacts: %+v", out.Artifacts)
	}
	file := out.Artifacts[0]
	if file.DataType != "file" || file.Filename != "extracted.bin" || file.ContentType != "application/x-test" ||
		!strings.HasPrefix(file.File, dir+string(filepath.Separator)) {
		t.Fatalf("file artifact: %+v (job folder %s)", file, dir)
	}
	if b, err := os.ReadFile(file.File); err != nil || string(b) != "artifact from the pod" {
		t.Fatalf("artifact content: %q, %v", b, err)
	}
	if out.Artifacts[1].Data != "evil.example" {
		t.Fatalf("value artifact: %+v", out.Artifacts[1])
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "AVxSuccess_1", 1))
	// The metrics: one Job, a success, the fetch and the upload, its pending and run times.
	wantRuns(t, r, OutcomeSuccess, 1)
	wantRuns(t, r, OutcomeFailure, 0)
	if n := testutil.ToFloat64(r.Metrics().Created()); n != 1 {
		t.Errorf("jobs_created_total = %v, want 1", n)
	}
	for _, route := range []string{"input", "output"} {
		if n := testutil.ToFloat64(r.Metrics().Callbacks(route, "ok")); n != 1 {
			t.Errorf("callbacks_total{route=%s,result=ok} = %v, want 1", route, n)
		}
	}
	for _, h := range []string{"analysis_kubernetes_pending_seconds", "analysis_kubernetes_run_seconds"} {
		if n := histogramCount(t, r, h); n != 1 {
			t.Errorf("%s: %d observations, want 1", h, n)
		}
	}
}

func TestCluster_WorkerErrorKeepsItsMessage(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x2", Settings{})
	out, _, err := run(t, r, analyzerDef(images.analyzer), "job-error", analysis.RunInput{Data: "error", DataType: "ip"}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The worker wrote output.json, then exited 1 (as cortexutils does): the pod failure policy failed the
	// Job at once, and the upload still brought the message.
	if out.Success || out.ErrorMessage != "the API key was refused" {
		t.Fatalf("got %+v", out)
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "job-error", 1))
	wantRuns(t, r, OutcomeFailure, 1)
}

func TestCluster_NoOutputGivesLogTail(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x3", Settings{})
	out, _, err := run(t, r, analyzerDef(images.analyzer), "job-silent", analysis.RunInput{Data: "silent", DataType: "ip"}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || !strings.Contains(out.ErrorMessage, "stdout line") || !strings.Contains(out.ErrorMessage, "stderr line") {
		t.Fatalf("want the worker's log tail, got %+v", out)
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "job-silent", 1))
	wantRuns(t, r, OutcomeNoOutput, 1)
}

func TestCluster_Timeout(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x4", Settings{})
	dir := filepath.Join(t.TempDir(), "run")
	name := JobName(analysis.KindAnalyzer, "job-sleep", 1)
	// The job's timeout fires once the worker runs (whatever the pod's start took on this machine).
	ctx := newTimeoutCtx(runner.WithJob(t.Context(), runner.Job{ID: "job-sleep", Attempt: 1}), 3*time.Minute)
	var out analysis.RunOutput
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, err = r.Run(ctx, analyzerDef(images.analyzer), analysis.RunInput{Data: "sleep", DataType: "ip"}, dir)
	}()
	waitWorkerRunning(t, c, name)
	waitLog(t, c, name, "sleeping")
	ctx.fire()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || !strings.Contains(out.ErrorMessage, "The job timed out after") || !strings.Contains(out.ErrorMessage, "sleeping") {
		t.Fatalf("want the timeout with the log tail, got %+v", out)
	}
	assertGone(t, c, name)
	wantRuns(t, r, OutcomeTimeout, 1)
}

// timeoutCtx is a context whose deadline the test fires: Err is then context.DeadlineExceeded, as for the
// executor's context.WithTimeout.
type timeoutCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
}

func newTimeoutCtx(parent context.Context, d time.Duration) *timeoutCtx {
	return &timeoutCtx{Context: parent, deadline: time.Now().Add(d), done: make(chan struct{})}
}

func (c *timeoutCtx) fire()                       { c.once.Do(func() { close(c.done) }) }
func (c *timeoutCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *timeoutCtx) Done() <-chan struct{}       { return c.done }
func (c *timeoutCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// waitLog waits (with a deadline) until the worker of Job name has logged want.
func waitLog(t *testing.T, c *k8stest.Cluster, name, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var pods struct{ Items []Pod }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+c.Namespace+"/pods?labelSelector="+LabelJobName+"%3D"+name, nil, &pods); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			var logs strings.Builder
			client, _ := NewClient(ClientConfig{Server: c.Server, Token: c.AdminToken, Insecure: true})
			if client.PodLog(t.Context(), c.Namespace, p.Metadata.Name, WorkerContainer, 10, 0, &logs) == nil && strings.Contains(logs.String(), want) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the worker of %s did not log %q within a minute", name, want)
}

// waitWorkerRunning waits (with a deadline) until the worker container of Job name runs.
func waitWorkerRunning(t *testing.T, c *k8stest.Cluster, name string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var pods struct{ Items []Pod }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+c.Namespace+"/pods?labelSelector="+LabelJobName+"%3D"+name, nil, &pods); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if st := containerStatus(p.Status.ContainerStatuses, WorkerContainer); st != nil && st.State.Running != nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the worker of %s did not start within 2 minutes", name)
}

func TestCluster_MissingImage(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x5", Settings{})
	out, _, err := run(t, r, analyzerDef("openir-k8stest-missing:none"), "job-noimage", analysis.RunInput{Data: "x", DataType: "ip"}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := "The worker's image openir-k8stest-missing:none could not be pulled (ImagePullBackOff)."
	if out.Success || out.ErrorMessage != want {
		t.Fatalf("want %q, got %+v", want, out)
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "job-noimage", 1))
	wantRuns(t, r, OutcomeImagePull, 1)
}

func TestCluster_OutOfMemory(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x6", Settings{Limits: map[string]string{"memory": "64Mi"}})
	out, _, err := run(t, r, analyzerDef(images.analyzer), "job-oom", analysis.RunInput{Data: "oom", DataType: "ip"}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || !strings.HasPrefix(out.ErrorMessage, "The worker ran out of memory (limit 64Mi) and was killed.") ||
		!strings.Contains(out.ErrorMessage, "allocating") {
		t.Fatalf("got %+v", out)
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "job-oom", 1))
	wantRuns(t, r, OutcomeOOM, 1)
}

// A ResourceQuota that leaves no room for a Job (count/jobs.batch 0, counted by the quota controller): the
// start-up dry run still passes (jobs wait, the runner is not disabled), a run creates no Job and returns an
// analysis.DeferError (the job service puts the job back without using an attempt); once the quota is gone a
// run of the same attempt succeeds.
func TestCluster_QuotaRefusalDefers(t *testing.T) {
	c := needCluster(t)
	r := newRunner(t, c, "replica-a.x8", Settings{})
	quotas := "/api/v1/namespaces/" + c.Namespace + "/resourcequotas"
	quota := map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": "test-no-jobs"},
		"spec": map[string]any{"hard": map[string]any{"count/jobs.batch": "0"}}}
	if err := c.Do(t.Context(), c.AdminToken, http.MethodPost, quotas, quota, nil); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			if err := c.Do(context.WithoutCancel(t.Context()), c.AdminToken, http.MethodDelete, quotas+"/test-no-jobs", nil, nil); err != nil {
				t.Errorf("delete the quota: %v", err)
			}
		}
	}
	defer remove()
	// The API server enforces a quota once the controller has counted its usage.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var q struct {
			Status struct{ Hard, Used map[string]string }
		}
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, quotas+"/test-no-jobs", nil, &q); err != nil {
			t.Fatal(err)
		}
		if _, ok := q.Status.Used["count/jobs.batch"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the quota controller did not count the quota's usage within a minute")
		}
	}
	// ... and once its admission has seen the counted quota (its informer may lag the controller's write: a run
	// made in between was not refused): a server-side dry run of a Job is refused by the quota.
	probe := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "quota-probe"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "probe"}}}}}}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		err := c.Do(t.Context(), c.AdminToken, http.MethodPost, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs?dryRun=All", probe, nil)
		if err != nil && strings.Contains(err.Error(), "exceeded quota") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not enforce the quota within a minute: %v", err)
		}
	}
	if err := r.Check(t.Context()); err != nil {
		t.Fatalf("the start-up check with the quota used up: %v", err)
	}
	const jobID = "job-quota"
	name := JobName(analysis.KindAnalyzer, jobID, 1)
	in := analysis.RunInput{Data: "8.8.8.8", DataType: "ip"}
	out, _, err := run(t, r, analyzerDef(images.analyzer), jobID, in, 3*time.Minute)
	var d *analysis.DeferError
	if !errors.As(err, &d) || d.Reason != QuotaReason || !strings.Contains(d.Err.Error(), "exceeded quota") || out.Success {
		t.Fatalf("a run under a full quota: %+v, %v; want a DeferError", out, err)
	}
	if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs/"+name, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "404") {
		t.Fatalf("a Job exists after the refusal: %v", err)
	}

	// Room again: the same attempt runs (as the job service's next claim would, after its backoff). The API
	// server sees the quota's deletion within moments; each run until then is deferred again.
	remove()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, _, err = run(t, r, analyzerDef(images.analyzer), jobID, in, 3*time.Minute)
		if !errors.As(err, &d) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still deferred a minute after the quota was deleted: %v", err)
		}
	}
	if err != nil || !out.Success {
		t.Fatalf("the run once the quota is gone: %+v, %v", out, err)
	}
	assertGone(t, c, name)
	wantRuns(t, r, OutcomeSuccess, 1)
	if n := testutil.ToFloat64(r.Metrics().Runs(OutcomeQuota)); n < 1 {
		t.Errorf("runs_total{outcome=quota} = %v, want at least 1", n)
	}
	if n := testutil.ToFloat64(r.Metrics().Created()); n != 1 {
		t.Errorf("jobs_created_total = %v, want 1 (the refusals created none)", n)
	}
}

// Two replicas that both believe they hold one attempt (a stale lease) create one Job: the second create is
// refused and its run fails at once, while the first completes.
func TestCluster_TwoReplicasOneJob(t *testing.T) {
	c := needCluster(t)
	a := newRunner(t, c, "replica-a.x7", Settings{})
	b := newRunner(t, c, "replica-b.x7", Settings{})
	release := make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hold.Close()
	jobID := "Race_Job_With_A_Long_Identifier_That_Needs_Hashing_0123456789"
	in := analysis.RunInput{Data: "hold", DataType: "ip", Config: map[string]any{"release_url": hold.URL}}
	name := JobName(analysis.KindAnalyzer, jobID, 1)
	var outA analysis.RunOutput
	var errA error
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		outA, _, errA = run(t, a, analyzerDef(images.analyzer), jobID, in, 3*time.Minute)
	}()
	waitWorkerRunning(t, c, name)

	// The Job as the API server stored it.
	var job Job
	if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs/"+name, nil, &job); err != nil {
		t.Fatal(err)
	}
	checkStoredJob(t, job, jobID)

	_, _, errB := run(t, b, analyzerDef(images.analyzer), jobID, in, 3*time.Minute)
	// The second replica's run is deferred (back to the queue without using an attempt), not failed.
	var deferred *analysis.DeferError
	if !errors.As(errB, &deferred) || deferred.Reason != ConflictReason || !apperr.Is(errB, apperr.Conflict) ||
		!strings.Contains(errB.Error(), "already runs as the Kubernetes Job "+name) {
		t.Fatalf("the second replica: want a deferral for the conflict, got %v", errB)
	}
	close(release)
	<-doneA
	if errA != nil || !outA.Success {
		t.Fatalf("the first replica: %+v, %v", outA, errA)
	}
	assertGone(t, c, name)
	wantRuns(t, a, OutcomeSuccess, 1)
	wantRuns(t, b, OutcomeConflict, 1)
}

func checkStoredJob(t *testing.T, job Job, jobID string) {
	t.Helper()
	m, s := job.Metadata, job.Spec
	if len(m.Name) > 63 || m.Labels[LabelJob] != LabelValue(jobID) || m.Annotations[AnnotationJob] != jobID ||
		m.Labels[LabelAttempt] != "1" || m.Labels[LabelOwner] != "replica-a.x7" || m.Labels[LabelOrg] != LabelValue("Acme Corp") ||
		m.Annotations[AnnotationOrg] != "Acme Corp" || m.Labels[LabelServer] != "analysis-svc" || m.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("metadata: %+v", m)
	}
	if *s.BackoffLimit != 0 || s.PodFailurePolicy == nil || s.PodFailurePolicy.Rules[0].Action != "FailJob" ||
		s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds < 180 || s.TTLSecondsAfterFinished == nil {
		t.Errorf("spec: %+v", s)
	}
	p := s.Template.Spec
	if p.RestartPolicy != "Never" || *p.AutomountServiceAccountToken || p.SecurityContext.SeccompProfile.Type != "RuntimeDefault" ||
		len(p.InitContainers) != 2 || *p.InitContainers[1].RestartPolicy != "Always" || p.ServiceAccountName != "analysis-job" {
		t.Errorf("pod: %+v", p)
	}
	w := p.Containers[0]
	if w.Name != WorkerContainer || *w.SecurityContext.AllowPrivilegeEscalation || w.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("worker: %+v", w)
	}
	for _, c := range p.InitContainers {
		for _, e := range c.Env {
			if strings.Contains(e.Name, "TOKEN") && len(e.Value) < 40 {
				t.Errorf("token %s too short", e.Name)
			}
		}
	}
}

// The sweep of a restarted process deletes the Jobs its earlier process left (same host, other suffix) and
// leaves those of other replicas; the run whose Job was swept away fails with that reason.
func TestCluster_SweepDeletesEarlierProcessJobs(t *testing.T) {
	c := needCluster(t)
	old := newRunner(t, c, "pod-1.oldproc", Settings{})
	other := newRunner(t, c, "pod-2.proc", Settings{})
	restarted := newRunner(t, c, "pod-1.newproc", Settings{})
	release := make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hold.Close()
	in := analysis.RunInput{Data: "hold", DataType: "ip", Config: map[string]any{"release_url": hold.URL}}
	type result struct {
		out analysis.RunOutput
		err error
	}
	start := func(r *Runner, id string) chan result {
		ch := make(chan result, 1)
		go func() {
			out, _, err := run(t, r, analyzerDef(images.analyzer), id, in, 3*time.Minute)
			ch <- result{out, err}
		}()
		waitWorkerRunning(t, c, JobName(analysis.KindAnalyzer, id, 1))
		return ch
	}
	oldDone := start(old, "job-of-old-process")
	otherDone := start(other, "job-of-other-replica")

	n, err := restarted.Sweep(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("sweep: deleted %d, %v", n, err)
	}
	got := <-oldDone
	if got.err != nil || got.out.Success || !strings.Contains(got.out.ErrorMessage, "was deleted before it finished") {
		t.Fatalf("the swept run: %+v", got)
	}
	close(release)
	if got := <-otherDone; got.err != nil || !got.out.Success {
		t.Fatalf("the other replica's run: %+v", got)
	}
	assertGone(t, c, JobName(analysis.KindAnalyzer, "job-of-old-process", 1))
	wantRuns(t, old, OutcomeDeleted, 1)
	if n := testutil.ToFloat64(restarted.Metrics().swept); n != 1 {
		t.Errorf("swept_jobs_total = %v, want 1", n)
	}
}

// The kustomize overlays of deploy/k8s and the kubernetes runner's manifests, as kubectl renders them, pass a
// server-side dry run on the test API server (validation, defaulting, admission): a manifest the API server
// would refuse fails here. Their namespaces are created for real first (a dry-run namespace does not exist
// for the objects in it).
func TestCluster_ManifestsPassServerDryRun(t *testing.T) {
	c := needCluster(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kubectl is needed to render and apply the overlays")
		}
		t.Skip("kubectl is not installed")
	}
	root, err := k8stest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := c.Kubeconfig("admin", c.AdminToken, "default")
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(root, "deploy", "k8s", "kubernetes-runner")}
	overlays, _ := filepath.Glob(filepath.Join(root, "deploy", "k8s", "overlays", "*", "kustomization.yaml"))
	for _, o := range overlays {
		dirs = append(dirs, filepath.Dir(o))
	}
	if len(dirs) < 3 {
		t.Fatalf("overlays not found: %v", dirs)
	}
	for _, dir := range dirs {
		rendered, err := exec.Command(kubectl, "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		for _, ns := range []string{"openir", "openir-dev", "openir-analysis-jobs"} {
			if strings.Contains(string(rendered), "namespace: "+ns+"\n") {
				c.Do(t.Context(), c.AdminToken, http.MethodPost, "/api/v1/namespaces",
					map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}, nil) // may exist
			}
		}
		cmd := exec.Command(kubectl, "--kubeconfig", kc, "apply", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(string(rendered))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: the API server refused: %v\n%s", filepath.Base(dir), err, out)
			continue
		}
		t.Logf("%s: %d objects pass", filepath.Base(dir), strings.Count(string(out), "(server dry run)"))
	}
}
