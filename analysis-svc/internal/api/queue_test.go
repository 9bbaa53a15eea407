package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// replica is a second job service on the same database, as another instance of the service would be.
func (e *env) replica(cfg analysis.JobsConfig) *analysis.Jobs {
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	cfg.Poll, cfg.CacheMinutes, cfg.Log = 50*time.Millisecond, 10, e.jobsCfg.Log
	return analysis.NewJobs(e.jobStore, e.wstore, e.catalog, e.files, cfg, time.Now)
}

// waitStatus polls a job until it has the status (deadline 30 s).
func (f *jobFixture) waitStatus(t *testing.T, id, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if f.analyst.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)["status"] == status {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation: the deadline bounds it
	}
	t.Fatalf("job %s never reached %s", id, status)
}

// Three replicas with three workers each share one queue: every job runs exactly once.
func TestQueue_EachJobRunsOnce(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"jobCache": 0}).Want(t, http.StatusOK)
	const n = 40
	prefix := fmt.Sprintf("once-%d-", time.Now().UnixNano())
	var ids []string
	for i := range n {
		ids = append(ids, f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.2.0.1",
			"parameters": map[string]any{"n": prefix + fmt.Sprint(i)}})["id"].(string))
	}
	for range 3 {
		startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 3}))
	}
	for _, id := range ids {
		if st := f.wait(t, f.analyst, id)["status"]; st != "Success" {
			t.Fatalf("job %s: %v", id, st)
		}
	}
	for i := range n {
		c, ok := runs.Load(prefix + fmt.Sprint(i))
		if !ok || c.(*atomic.Int64).Load() != 1 {
			t.Fatalf("job %d ran %v times", i, c)
		}
	}
}

// A replica stopped mid-job gives the job back; another replica runs it to the end.
func TestQueue_StoppedWorkerJobIsPickedUp(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	key := fmt.Sprintf("stop-%d", time.Now().UnixNano())
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.3.0.1",
		"parameters": map[string]any{"n": key, "blockFirst": true}})["id"].(string)
	stopA := startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1}))
	f.waitStatus(t, id, "InProgress")
	stopA()
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1}))
	if st := f.wait(t, f.analyst, id)["status"]; st != "Success" {
		t.Fatalf("status %v", st)
	}
	if c, _ := runs.Load(key); c.(*atomic.Int64).Load() != 2 {
		t.Fatalf("runs %d, want 2 (interrupted, then complete)", c.(*atomic.Int64).Load())
	}
}

// A worker that died without a word (its lease just expires) loses the job to the sweeper; after
// MaxAttempts interruptions the job fails with a clear message.
func TestQueue_ExpiredLeaseIsRequeuedThenFails(t *testing.T) {
	f := newJobFixture(t, withoutWorkers(), withJobs(analysis.JobsConfig{MaxAttempts: 2}))
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.4.0.1"})["id"].(string)
	ctx := context.Background()
	past := time.Now().Add(-time.Second)
	for attempt := 1; attempt <= 2; attempt++ {
		j, err := f.e.jobStore.Claim(ctx, "dead-worker", past, time.Now(), 0)
		if err != nil || j.ID != id || j.Attempts != attempt {
			t.Fatalf("claim %d: %+v %v", attempt, j, err)
		}
		if err := f.e.jobs.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	j := f.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK).Object(t)
	if j["status"] != "Failure" || j["report"].(map[string]any)["errorMessage"] != "the job was interrupted 2 times (its worker stopped or was lost); giving up" {
		t.Fatalf("job %v", j)
	}

	// One interruption only: the job is requeued and a live worker completes it.
	id2 := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.4.0.2"})["id"].(string)
	if _, err := f.e.jobStore.Claim(ctx, "dead-worker", past, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.e.jobs.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if st := f.analyst.Call(t, http.MethodGet, "/api/job/"+id2, nil).Want(t, http.StatusOK).Object(t)["status"]; st != "Waiting" {
		t.Fatalf("after the sweep: %v", st)
	}
	startWorkers(t, f.e.jobs)
	if st := f.wait(t, f.analyst, id2)["status"]; st != "Success" {
		t.Fatalf("status %v", st)
	}
}

func TestQueue_TimeoutFailsTheJob(t *testing.T) {
	f := newJobFixture(t, withJobs(analysis.JobsConfig{DefaultTimeout: 300 * time.Millisecond}))
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.5.0.1", "parameters": map[string]any{"sleep": 60000}})["id"].(string)
	j := f.wait(t, f.analyst, id)
	if j["status"] != "Failure" || j["report"].(map[string]any)["errorMessage"] != "the job timed out after 300ms and was stopped" {
		t.Fatalf("job %v", j)
	}
}

// Deleting a running job stops it and frees its worker; the job stays Deleted.
func TestQueue_DeleteRunningJob(t *testing.T) {
	f := newJobFixture(t, withJobs(analysis.JobsConfig{Workers: 1}))
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"jobCache": 0}).Want(t, http.StatusOK)
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.6.0.1", "parameters": map[string]any{"sleep": 600000}})["id"].(string)
	f.waitStatus(t, id, "InProgress")
	f.analyst.Call(t, http.MethodDelete, "/api/job/"+id, nil).Want(t, http.StatusNoContent)
	next := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.6.0.2"})["id"].(string)
	if st := f.wait(t, f.analyst, next)["status"]; st != "Success" {
		t.Fatalf("the only worker is still busy: %v", st)
	}
	if st := f.analyst.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)["status"]; st != "Deleted" {
		t.Fatalf("deleted job became %v", st)
	}
}
