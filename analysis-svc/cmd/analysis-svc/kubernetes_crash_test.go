package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/k8stest"
)

// Issue 26: kill -9 of analysis-svc while the kubernetes runner runs an analyzer and a responder as Kubernetes
// Jobs, then a restart on the same database and job folder. The pods outlive the process; the restarted
// process deletes the Jobs its predecessor left and waits until their pods are gone before it claims jobs, so:
// the analyzer runs again once (attempt 2) and never beside its first pod, the responder is failed
// ("interrupted; not retried") and never runs again, and no Job of the killed process is left.
func TestRun_KubernetesKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane and the service twice")
	}
	if why := k8stest.Missing(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the kubernetes tests must run in CI: %s", why)
		}
		t.Skip("no Kubernetes test control plane: " + why)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bin, err := k8stest.Binaries(os.Stderr)
	must(err)
	worker, err := k8stest.BuildWorkerImage()
	must(err)
	defer exec.Command("docker", "rmi", "-f", worker).Run()
	jobio, err := k8stest.BuildJobioImage()
	must(err)
	defer exec.Command("docker", "rmi", "-f", jobio).Run()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	c, err := k8stest.Start(ctx, bin, t.TempDir(), "analysis-jobs")
	cancel()
	must(err)
	defer c.Stop()
	kc, err := c.Kubeconfig("svc", c.RunnerToken, c.Namespace)
	must(err)

	// The workers hold until the test releases them.
	var released sync.Once
	release := make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hold.Close()
	defer released.Do(func() { close(release) })

	root, jobDir, dbDir := t.TempDir(), t.TempDir(), t.TempDir()
	for _, w := range []struct{ dir, types string }{{"Holder", `["ip"]`}, {"HoldResponder", `["thehive:case"]`}} {
		must(os.MkdirAll(filepath.Join(root, w.dir), 0o755))
		def := fmt.Sprintf(`{"name":%q,"version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"holds",
  "dataTypeList":%s,"dockerImage":%q,"baseConfig":%q,
  "configurationItems":[{"name":"release_url","description":"u","type":"string","multi":false,"required":true}]}`,
			w.dir, w.types, worker, w.dir)
		must(os.WriteFile(filepath.Join(root, w.dir, w.dir+".json"), []byte(def), 0o644))
	}
	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := append(os.Environ(), "ANALYSIS_CRASH_HELPER=1",
		"ANALYSIS_HTTP_ADDR=127.0.0.1:0", "ANALYSIS_DATABASE_PATH="+dbDir, "ANALYSIS_DATABASE_URI=",
		"ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY="+key,
		"ANALYSIS_ANALYZER_PATHS="+root, "ANALYSIS_RESPONDER_PATHS="+root,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true", "ANALYSIS_JOB_LEASE=3s", "ANALYSIS_JOB_CACHE=0",
		"ANALYSIS_JOB_DIRECTORY="+jobDir, "ANALYSIS_JOB_RUNNER=kubernetes",
		"ANALYSIS_JOB_KUBERNETES_KUBECONFIG="+kc, "ANALYSIS_JOB_KUBERNETES_JOBIO_IMAGE="+jobio,
		"ANALYSIS_JOB_KUBERNETES_CALLBACK_LISTEN=127.0.0.1:0", "ANALYSIS_JOB_KUBERNETES_POD_IP=127.0.0.1",
		"ANALYSIS_JOB_KUBERNETES_SERVICE_ACCOUNT=analysis-job")
	cmd, base := startChild(t, env)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	if code, _ := call(t, "POST", base+"/api/organization", key, `{"name":"soc"}`); code != 201 {
		t.Fatalf("create org: %d", code)
	}
	if code, _ := call(t, "POST", base+"/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`); code != 201 {
		t.Fatalf("create user: %d", code)
	}
	_, raw := call(t, "POST", base+"/api/user/adm/key/renew", key, "")
	adm := raw["_raw"].(string)
	enable := func(kind, def string) string {
		code, w := call(t, "POST", base+"/api/organization/"+kind+"/"+def, adm,
			fmt.Sprintf(`{"configuration":{"release_url":%q}}`, hold.URL))
		if code != 201 {
			t.Fatalf("enable %s: %d %v", def, code, w)
		}
		return w["id"].(string)
	}
	analyzer, responder := enable("analyzer", "Holder_1_0"), enable("responder", "HoldResponder_1_0")
	code, j := call(t, "POST", base+"/api/analyzer/"+analyzer+"/run", adm, `{"dataType":"ip","data":"stubborn"}`)
	if code != 200 {
		t.Fatalf("run the analyzer: %d %v", code, j)
	}
	analyzerJob := j["id"].(string)
	code, j = call(t, "POST", base+"/api/responder/"+responder+"/run", adm, `{"dataType":"thehive:case","data":{"title":"stubborn"}}`)
	if code != 200 {
		t.Fatalf("run the responder: %d %v", code, j)
	}
	responderJob := j["id"].(string)

	// A watcher lists the two jobs' pods every 100 ms until the end and records every attempt it saw and any
	// moment two attempts of one job had live pods.
	w := &podWatch{c: c, jobs: map[string]string{kubernetes.LabelValue(analyzerJob): "analyzer", kubernetes.LabelValue(responderJob): "responder"}}
	wctx, stopWatch := context.WithCancel(t.Context())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); w.run(wctx) }()
	defer func() { stopWatch(); <-watchDone }()

	first := map[string]string{} // kind → the Job of attempt 1
	for kind, id := range map[string]string{"analyzer": analyzerJob, "responder": responderJob} {
		k := analysis.KindAnalyzer
		if kind == "responder" {
			k = analysis.KindResponder
		}
		first[kind] = kubernetes.JobName(k, id, 1)
		if !waitWorker(t, c, first[kind], 2*time.Minute) {
			_, j := call(t, "GET", base+"/api/job/"+id+"/report", adm, "")
			t.Fatalf("the %s's worker did not start within 2 minutes: %v\n%s", kind, j, c.Logs())
		}
	}
	must(cmd.Process.Signal(os.Kill))
	_ = cmd.Wait()
	// The pods outlive the process.
	for _, name := range first {
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs/"+name, nil, nil); err != nil {
			t.Fatalf("the Job %s is gone before the restart: %v", name, err)
		}
	}

	cmd, base = startChild(t, env)
	second := kubernetes.JobName(analysis.KindAnalyzer, analyzerJob, 2)
	if !waitWorker(t, c, second, 2*time.Minute) {
		_, j := call(t, "GET", base+"/api/job/"+analyzerJob+"/report", adm, "")
		t.Fatalf("attempt 2's worker did not start within 2 minutes: %v\n%s", j, c.Logs())
	}
	for _, name := range first {
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs/"+name, nil, nil); err == nil {
			t.Errorf("the Job %s of the killed process is still there while attempt 2 runs", name)
		}
	}
	released.Do(func() { close(release) })

	final := map[string]map[string]any{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(final) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not end within 2 minutes: %v", final)
		}
		for _, id := range []string{analyzerJob, responderJob} {
			if final[id] != nil {
				continue
			}
			code, j := call(t, "GET", base+"/api/job/"+id+"/report", adm, "")
			if code != 200 {
				t.Fatalf("job %s: %d %v", id, code, j)
			}
			if s := j["status"]; s == "Success" || s == "Failure" {
				final[id] = j
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if j := final[analyzerJob]; j["status"] != "Success" {
		t.Errorf("the analyzer after the restart: %v", j)
	}
	if j := final[responderJob]; j["status"] != "Failure" {
		t.Errorf("the responder after the restart: %v", j)
	} else if rep, _ := j["report"].(map[string]any); rep == nil || rep["errorMessage"] != analysis.ErrInterrupted {
		t.Errorf("the interrupted responder's report: %v", j)
	}
	// Every Job of the two jobs is deleted in the end (attempt 2's by its run, the others by the sweep).
	waitNoJobs(t, c, 2*time.Minute)
	stopWatch()
	<-watchDone
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overlap != "" {
		t.Error(w.overlap)
	}
	if fmt.Sprint(w.attempts["analyzer"]) != "map[1:true 2:true]" || fmt.Sprint(w.attempts["responder"]) != "map[1:true]" {
		t.Errorf("attempts seen: %v", w.attempts)
	}
	must(cmd.Process.Signal(os.Interrupt))
	_ = cmd.Wait()
}

// podWatch records the attempts whose pods it sees, by job, and the first moment two attempts of one job had
// live pods (not Succeeded or Failed).
type podWatch struct {
	c        *k8stest.Cluster
	jobs     map[string]string // job-id label → kind
	mu       sync.Mutex
	attempts map[string]map[int]bool
	overlap  string
}

func (w *podWatch) run(ctx context.Context) {
	w.attempts = map[string]map[int]bool{}
	for ctx.Err() == nil {
		var pods struct{ Items []kubernetes.Pod }
		err := w.c.Do(ctx, w.c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+w.c.Namespace+"/pods?labelSelector="+
			kubernetes.LabelManagedBy+"%3D"+kubernetes.ManagedBy, nil, &pods)
		if err == nil {
			live := map[string]map[int]bool{}
			w.mu.Lock()
			for _, p := range pods.Items {
				kind := w.jobs[p.Metadata.Labels[kubernetes.LabelJob]]
				attempt, _ := strconv.Atoi(p.Metadata.Labels[kubernetes.LabelAttempt])
				if kind == "" {
					continue
				}
				if w.attempts[kind] == nil {
					w.attempts[kind] = map[int]bool{}
				}
				if live[kind] == nil {
					live[kind] = map[int]bool{}
				}
				w.attempts[kind][attempt] = true
				if p.Status.Phase != "Succeeded" && p.Status.Phase != "Failed" {
					live[kind][attempt] = true
				}
				if len(live[kind]) > 1 && w.overlap == "" {
					w.overlap = fmt.Sprintf("two attempts of the %s had live pods at once: %v", kind, live[kind])
				}
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitWorker waits until the worker container of the Job name runs, and says whether it did.
func waitWorker(t *testing.T, c *k8stest.Cluster, name string, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var pods struct{ Items []kubernetes.Pod }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+c.Namespace+"/pods?labelSelector="+
			kubernetes.LabelJobName+"%3D"+name, nil, &pods); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == kubernetes.WorkerContainer && st.State.Running != nil {
					return true
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// waitNoJobs waits until the namespace holds no Job of the runner.
func waitNoJobs(t *testing.T, c *k8stest.Cluster, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var jobs struct{ Items []kubernetes.Job }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs?labelSelector="+
			kubernetes.LabelManagedBy+"%3D"+kubernetes.ManagedBy, nil, &jobs); err != nil {
			t.Fatal(err)
		}
		if len(jobs.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			names := []string{}
			for _, j := range jobs.Items {
				names = append(names, j.Metadata.Name)
			}
			t.Fatalf("Jobs left after %s: %v", within, names)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
