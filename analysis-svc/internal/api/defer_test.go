package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/pkg/apitest"
)

// A job its executor defers (analysis.DeferError: the kubernetes runner's answer to a ResourceQuota refusal)
// goes back to the queue, Waiting, without using an attempt, and is claimed again after a backoff that grows
// with the time it has been deferred (DeferMin, then the time deferred so far); once there is room it runs
// as attempt 1; /metrics counts the deferrals. Deferred for longer than its timeout, it fails saying why, as
// a job that never ran.
func TestQueue_DeferredJobWaitsWithoutUsingAttempts(t *testing.T) {
	const deferMin = 150 * time.Millisecond
	f := newJobFixture(t, withJobs(analysis.JobsConfig{Workers: 1, DeferMin: deferMin, DeferMax: time.Second, MaxAttempts: 2}))
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"jobCache": 0}).Want(t, http.StatusOK)
	key := fmt.Sprintf("defer-%d", time.Now().UnixNano())
	start := time.Now()
	// Three deferrals: more than MaxAttempts, so a deferral that used an attempt would fail the job.
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.9.0.1",
		"parameters": map[string]any{"n": key, "defer": 3}})["id"].(string)
	j := f.wait(t, f.analyst, id)
	elapsed := time.Since(start)
	if j["status"] != "Success" {
		t.Fatalf("job %v", j)
	}
	if c, _ := runs.Load(key); c.(*atomic.Int64).Load() != 4 {
		t.Fatalf("runs %d, want 4 (3 deferred, then the run)", c.(*atomic.Int64).Load())
	}
	stored, err := f.e.jobStore.Job(t.Context(), id)
	if err != nil || stored.Attempts != 1 {
		t.Fatalf("stored job attempts %d (%v), want 1: deferrals used attempts", stored.Attempts, err)
	}
	// Waits of deferMin, deferMin (deferred that long so far), then 2 × deferMin at least.
	if min := 4 * deferMin; elapsed < min {
		t.Fatalf("the job ended %s after its submission, before the deferrals' backoff (%s)", elapsed, min)
	}
	if n := strings.Count(f.e.logs.String(), `"msg":"job deferred","job":"`+id+`"`); n != 3 {
		t.Fatalf("%d deferral log lines, want 3:\n%s", n, f.e.logs.String())
	}
	// /metrics counts the runs by runner and outcome, within closed sets.
	m := apitest.ScrapeMetrics(t, f.e.srv.URL)
	for outcome, want := range map[string]float64{runner.RunDeferred: 3, runner.RunSuccess: 1, runner.RunError: 0} {
		if got, ok := m.Value("analysis_runs_total", map[string]string{"runner": runner.RunnerBuiltin, "outcome": outcome}); !ok || got != want {
			t.Errorf("analysis_runs_total{runner=builtin,outcome=%s} = %v (%v), want %v", outcome, got, ok, want)
		}
	}
	if n, ok := m.Value("analysis_run_seconds", map[string]string{"runner": runner.RunnerBuiltin}); !ok || n != 1 {
		t.Errorf("analysis_run_seconds{runner=builtin} count %v (%v), want 1 (deferrals ran nothing)", n, ok)
	}
	m.CheckLabels(t, "analysis_runs_total", map[string][]string{"runner": {"builtin", "process", "docker", "kubernetes"},
		"outcome": {"success", "failure", "deferred", "error"}})

	// Deferred past its timeout: a failure that says it never ran.
	g := newJobFixture(t, withJobs(analysis.JobsConfig{Workers: 1, DeferMin: 20 * time.Millisecond, DeferMax: 50 * time.Millisecond,
		DefaultTimeout: 400 * time.Millisecond}))
	key2 := key + "-timeout"
	id2 := g.run(t, g.analyst, map[string]any{"dataType": "ip", "data": "10.9.0.2",
		"parameters": map[string]any{"n": key2, "defer": 1000000}})["id"].(string)
	j2 := g.wait(t, g.analyst, id2)
	msg, _ := j2["report"].(map[string]any)["errorMessage"].(string)
	if j2["status"] != "Failure" || !strings.HasPrefix(msg, "The job ended after ") ||
		!strings.HasSuffix(msg, " without running: no room for the test's job.") {
		t.Fatalf("job %v", j2)
	}
	if stored, err := g.e.jobStore.Job(t.Context(), id2); err != nil || stored.Attempts != 1 {
		t.Fatalf("stored job attempts %d (%v), want 1", stored.Attempts, err)
	}
}
