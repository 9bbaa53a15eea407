package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
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

// A replica stopped while its worker runs gives the job back at once; another replica runs it to the end.
// Every replica here holds a lease of an hour, so a job that waited for its lease to run out (the sweeper)
// would miss the test's 30 s deadline: each end below is a give-back, not a rescue.
func TestQueue_StoppedWorkerJobIsPickedUp(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	key := fmt.Sprintf("stop-%d", time.Now().UnixNano())
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.3.0.1",
		"parameters": map[string]any{"n": key, "gate": key}})["id"].(string)
	stopA := startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1, Lease: time.Hour}))
	firstEntered(t, key) // the worker runs on A (InProgress alone is the claim, before the worker starts)
	stopA()
	close(gateNamed(key).open)
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1, Lease: time.Hour}))
	if st := f.wait(t, f.analyst, id)["status"]; st != "Success" {
		t.Fatalf("status %v", st)
	}
	if c, _ := runs.Load(key); c.(*atomic.Int64).Load() != 2 {
		t.Fatalf("runs %d, want 2 (interrupted, then complete)", c.(*atomic.Int64).Load())
	}
}

// heldWorkers holds the lookup of a job's analyzer, the first step of a run, until the replica stops: the stop
// lands after the claim and before the worker starts (the interleaving that once made the test above wait).
type heldWorkers struct {
	analysis.WorkerStore
	reached chan struct{}
	once    sync.Once
}

func (h *heldWorkers) Worker(ctx context.Context, id string) (analysis.Worker, error) {
	h.once.Do(func() { close(h.reached) })
	<-ctx.Done()
	return h.WorkerStore.Worker(ctx, id)
}

// heldFinish holds the write of a job's end until the test lets it go, with the context it was given.
type heldFinish struct {
	analysis.JobStore
	reached, release chan struct{}
	once             sync.Once
}

func (h *heldFinish) Finish(ctx context.Context, j analysis.Job, r *analysis.Report, owner string) error {
	h.once.Do(func() { close(h.reached) })
	<-h.release
	return h.JobStore.Finish(ctx, j, r, owner)
}

// runReplica runs a replica until the test calls the returned cancel (which does not wait); the replica's end
// is waited for at cleanup.
func runReplica(t *testing.T, jobs *analysis.Jobs) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = jobs.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("job workers did not stop within 30 s")
		}
	})
	return cancel
}

// A stop between the claim and the worker's start gives the job back at once, analyzer or responder (a
// responder that never started cannot have acted: it is run by the next replica, not failed).
func TestQueue_StopBeforeTheWorkerStarts(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	responder := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	key := fmt.Sprintf("early-%d", time.Now().UnixNano())
	for _, tc := range []struct{ kind, path, dataType string }{
		{"analyzer", "/api/analyzer/" + f.analyzer + "/run", "ip"},
		{"responder", "/api/responder/" + responder + "/run", "thehive:case"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			body := map[string]any{"dataType": tc.dataType, "data": "10.3.1.1", "parameters": map[string]any{"n": key + tc.kind}}
			if tc.kind == "responder" {
				body["data"] = map[string]any{"_type": "case", "title": "t"}
			}
			id := f.analyst.Call(t, http.MethodPost, tc.path, body).Want(t, http.StatusOK).Object(t)["id"].(string)
			held := &heldWorkers{WorkerStore: f.e.wstore, reached: make(chan struct{})}
			a := analysis.NewJobs(f.e.jobStore, held, f.e.catalog, f.e.files,
				analysis.JobsConfig{Workers: 1, Lease: time.Hour, Poll: 50 * time.Millisecond, Log: f.e.jobsCfg.Log}, time.Now)
			stopA := runReplica(t, a)
			waitClosed(t, held.reached, "the replica's claim")
			stopA()
			b := startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1, Lease: time.Hour}))
			j := f.wait(t, f.analyst, id)
			if j["status"] != "Success" {
				t.Fatalf("the %s given back before it started ended %v: %v", tc.kind, j["status"], j["errorMessage"])
			}
			b()
		})
	}
	if c, _ := runs.Load(key + "analyzer"); c.(*atomic.Int64).Load() != 1 {
		t.Fatalf("the analyzer ran %d times, want 1 (replica A never started it)", c.(*atomic.Int64).Load())
	}
}

// A stop while the job's end is being written does not lose it: the end is stored (the write does not take
// the stop's cancellation), not left InProgress for the sweeper.
func TestQueue_StopWhileTheEndIsWritten(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.3.2.1",
		"parameters": map[string]any{"n": fmt.Sprintf("end-%d", time.Now().UnixNano())}})["id"].(string)
	held := &heldFinish{JobStore: f.e.jobStore, reached: make(chan struct{}), release: make(chan struct{})}
	a := analysis.NewJobs(held, f.e.wstore, f.e.catalog, f.e.files,
		analysis.JobsConfig{Workers: 1, Lease: time.Hour, Poll: 50 * time.Millisecond, Log: f.e.jobsCfg.Log}, time.Now)
	stopA := runReplica(t, a)
	waitClosed(t, held.reached, "the write of the job's end")
	stopA()
	close(held.release)
	if j := f.wait(t, f.analyst, id); j["status"] != "Success" {
		t.Fatalf("job %v", j)
	}
}

// A responder stopped while its worker runs may have acted: it fails at once, with the interrupted message,
// and never runs again (no other replica gets it, no lease has to run out).
func TestQueue_StoppedResponderFailsAtOnce(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	responder := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	gate := fmt.Sprintf("resp-%d", time.Now().UnixNano())
	id := f.analyst.Call(t, http.MethodPost, "/api/responder/"+responder+"/run", map[string]any{"dataType": "thehive:case",
		"data": map[string]any{"_type": "case", "title": "t"}, "parameters": map[string]any{"gate": gate}}).
		Want(t, http.StatusOK).Object(t)["id"].(string)
	stopA := startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1, Lease: time.Hour}))
	firstEntered(t, gate)
	stopA()
	j := f.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK).Object(t)
	if j["status"] != "Failure" || j["report"].(map[string]any)["errorMessage"] != analysis.ErrInterrupted {
		t.Fatalf("job %v", j)
	}
}

// waitClosed waits (deadline 30 s) until ch is closed.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen within 30 s", what)
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
		j, err := f.e.jobStore.Claim(ctx, "dead-worker", past, time.Now(), analysis.ClaimRule{})
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
	if _, err := f.e.jobStore.Claim(ctx, "dead-worker", past, time.Now(), analysis.ClaimRule{}); err != nil {
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
