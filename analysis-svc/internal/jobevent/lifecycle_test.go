package jobevent_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/jobevent"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
)

// lifecycle is a job store wrapped with its events, on a real database; the event log refuses writes while
// failing is set (the database cannot be made to fail one collection alone).
type lifecycle struct {
	jobs   *store.JobStore
	log    *events.EventLog
	outbox *events.Outbox
	w      *jobevent.Store
	now    time.Time
	fail   *failingLog
}

// failingLog is the real event log with writes refused while failing.
type failingLog struct {
	events.Log
	failing bool
}

func (l *failingLog) InsertEvents(ctx context.Context, es []events.Event, held bool) error {
	if l.failing {
		return errors.New("event log unavailable")
	}
	return l.Log.InsertEvents(ctx, es, held)
}

func newLifecycle(t *testing.T) *lifecycle {
	t.Helper()
	ctx := context.Background()
	db := docstoretest.New(t)
	jobs, err := store.NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.NewEventLog(ctx, db, store.EventSpec())
	if err != nil {
		t.Fatal(err)
	}
	outbox, err := events.NewOutbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	fail := &failingLog{Log: l}
	bus := events.NewBus(fail, outbox, nil, events.NewMetrics("test", "job"), events.Config{}, time.Now)
	return &lifecycle{jobs: jobs, log: l, outbox: outbox, fail: fail, w: jobevent.Wrap(jobs, bus, render),
		now: time.Now().UTC().Truncate(time.Millisecond)}
}

func (c *lifecycle) enqueue(t *testing.T, id string) {
	t.Helper()
	j := analysis.Job{ID: id, Kind: analysis.KindAnalyzer, Organization: "soc", WorkerID: "w", DataType: "ip", Data: "10.0.0.1",
		Status: analysis.JobWaiting, CreatedAt: c.now, CreatedBy: "ann", UpdatedAt: c.now, UpdatedBy: "ann", Parameters: map[string]any{}}
	if err := c.jobs.Enqueue(context.Background(), j); err != nil {
		t.Fatal(err)
	}
}

func (c *lifecycle) events(t *testing.T) []events.Event {
	t.Helper()
	evs, err := c.log.EventsSince(context.Background(), c.now.Add(-time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestStore_Claim: each claim is one start event (Update, details status InProgress and startDate, the job's
// organisation); a claim whose event cannot be written puts the job back, its attempt refunded, and records
// nothing.
func TestStore_Claim(t *testing.T) {
	ctx := context.Background()
	t.Run("recorded", func(t *testing.T) {
		c := newLifecycle(t)
		c.enqueue(t, "job-a")
		j, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{})
		if err != nil || j.ID != "job-a" || j.Status != analysis.JobInProgress {
			t.Fatalf("claim: %+v %v", j, err)
		}
		evs := c.events(t)
		if len(evs) != 1 {
			t.Fatalf("events %+v, want one", evs)
		}
		e := evs[0]
		if e.Operation != events.Update || e.ObjectType != "job" || e.ObjectID != "job-a" || e.Org != "soc" ||
			e.Details["status"] != analysis.JobInProgress || e.Details["startDate"] != float64(c.now.UnixMilli()) ||
			e.Object["status"] != analysis.JobInProgress || e.User != "ann" || !e.Date.Equal(c.now) {
			t.Errorf("start event %+v", e)
		}
		if _, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{}); err != analysis.ErrNoJob {
			t.Errorf("second claim: %v, want no job", err)
		}
		if n := len(c.events(t)); n != 1 {
			t.Errorf("%d events after a claim that found no job", n)
		}
	})
	t.Run("event unwritable", func(t *testing.T) {
		c := newLifecycle(t)
		c.enqueue(t, "job-b")
		c.fail.failing = true
		if j, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{}); err == nil {
			t.Fatalf("claim answered %+v without its event", j)
		}
		j, err := c.jobs.Job(ctx, "job-b")
		if err != nil || j.Status != analysis.JobWaiting || j.Attempts != 0 {
			t.Errorf("job after the failed claim: %+v %v, want Waiting with no attempt counted", j, err)
		}
		c.fail.failing = false
		if j, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{}); err != nil || j.ID != "job-b" || j.Attempts != 1 {
			t.Fatalf("claim once the events are writable: %+v %v", j, err)
		}
		if evs := c.events(t); len(evs) != 1 || evs[0].Details["status"] != analysis.JobInProgress {
			t.Errorf("events %+v, want the start", evs)
		}
	})
}

// TestStore_MarkDeleted: a deletion is one Delete event with the job as deleted, however often it is asked
// (a repeated DELETE, or a retry after its event failed); an unknown job records nothing.
func TestStore_MarkDeleted(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		claim bool
	}{{"waiting", false}, {"running", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newLifecycle(t)
			c.enqueue(t, "job-c")
			if tc.claim {
				if _, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{}); err != nil {
					t.Fatal(err)
				}
			}
			for i, by := range []string{"bob", "carl"} {
				if err := c.w.MarkDeleted(ctx, "job-c", by, c.now.Add(time.Duration(i+1)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			var deletes []events.Event
			for _, e := range c.events(t) {
				if e.Operation == events.Delete {
					deletes = append(deletes, e)
				}
			}
			if len(deletes) != 1 {
				t.Fatalf("delete events %+v, want one", deletes)
			}
			if e := deletes[0]; e.ObjectID != "job-c" || e.Org != "soc" || e.User != "bob" || e.Object["status"] != analysis.JobDeleted ||
				len(e.Details) != 0 || !e.Date.Equal(c.now.Add(time.Second)) {
				t.Errorf("delete event %+v", e)
			}
		})
	}
	t.Run("event failed, then retried", func(t *testing.T) {
		c := newLifecycle(t)
		c.enqueue(t, "job-d")
		c.fail.failing = true
		if err := c.w.MarkDeleted(ctx, "job-d", "bob", c.now); err == nil {
			t.Fatal("the deletion answered without its event")
		}
		c.fail.failing = false
		for range 2 {
			if err := c.w.MarkDeleted(ctx, "job-d", "bob", c.now.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if evs := c.events(t); len(evs) != 1 || evs[0].Operation != events.Delete {
			t.Errorf("events %+v, want one Delete", evs)
		}
	})
	t.Run("unknown job", func(t *testing.T) {
		c := newLifecycle(t)
		if err := c.w.MarkDeleted(ctx, "nope", "bob", c.now); err == nil {
			t.Error("deleted an unknown job")
		}
		if evs := c.events(t); len(evs) != 0 {
			t.Errorf("events %+v", evs)
		}
	})
}

// TestStore_Finish: a job's end is one JobFinished event, stored with the final job (held when a webhook is to
// receive it, its delivery then queued) and released once it can be read (before Finish returns); a worker
// that lost the lease stores neither the end nor an event; ending a job twice (a lost lease that ran it
// again) is still one event and one delivery.
func TestStore_Finish(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		t.Run("webhook "+strconv.FormatBool(webhook), func(t *testing.T) { testFinish(t, webhook) })
	}
}

func testFinish(t *testing.T, webhook bool) {
	ctx := context.Background()
	c := newLifecycle(t)
	if webhook {
		if err := c.outbox.CreateEndpoint(ctx, events.Endpoint{ID: "e1", Org: "soc", Name: "jobs", URL: "http://127.0.0.1:1/",
			Auth: "none", Enabled: true, CreatedAt: c.now}); err != nil {
			t.Fatal(err)
		}
	}
	c.enqueue(t, "job-f")
	j, err := c.w.Claim(ctx, "worker", c.now.Add(time.Minute), c.now, analysis.ClaimRule{})
	if err != nil {
		t.Fatal(err)
	}
	final := j
	final.Status, final.EndDate = analysis.JobSuccess, c.now.Add(time.Second)
	if err := c.w.Finish(ctx, final, &analysis.Report{Success: true}, "other"); !errors.Is(err, analysis.ErrLeaseLost) {
		t.Fatalf("Finish without the lease: %v, want ErrLeaseLost", err)
	}
	finished := func() (n int) {
		for _, e := range c.events(t) {
			if e.Details["endDate"] != nil {
				n++
			}
		}
		return n
	}
	held, err := c.log.Held(ctx, c.now.Add(time.Hour), 10)
	if err != nil || len(held) != 0 || finished() != 0 {
		t.Fatalf("after a refused Finish: held %v (%v), %d JobFinished; want none", held, err, finished())
	}
	readable := false
	hook := analysis.OnFinishedReadable(ctx, func(*analysis.Ended) {
		readable = true
		if got, err := c.jobs.Job(ctx, "job-f"); err != nil || got.Status != analysis.JobSuccess {
			t.Errorf("at the callback the job reads %v (%v)", got.Status, err)
		}
	})
	if err := c.w.Finish(hook, final, &analysis.Report{Success: true}, "worker"); err != nil {
		t.Fatal(err)
	}
	if !readable {
		t.Error("the caller's FinishedReadable was not called")
	}
	if held, err := c.log.Held(ctx, c.now.Add(time.Hour), 10); err != nil || len(held) != 0 {
		t.Errorf("held events after Finish: %v (%v), want none", held, err)
	}
	if n := finished(); n != 1 {
		t.Fatalf("%d released JobFinished events, want 1", n)
	}
	d, err := c.outbox.Head(ctx, "e1")
	if webhook != (err == nil) || (webhook && d.EventID == "") {
		t.Fatalf("the endpoint's first delivery: %+v (%v); want one: %v", d, err, webhook)
	}
	// The same end stored again (no lease: a job that never was queued): still one event.
	if err := c.w.Finish(ctx, final, &analysis.Report{Success: true}, ""); err != nil {
		t.Fatal(err)
	}
	if n := finished(); n != 1 {
		t.Errorf("%d JobFinished events after the second end, want 1", n)
	}
	if d2, err := c.outbox.Head(ctx, "e1"); webhook && (err != nil || d2.ID != d.ID) {
		t.Errorf("the endpoint's first delivery after the second end: %+v (%v), want %+v", d2, err, d)
	}
}

// TestStore_Enqueue: a queued job is one Creation event, released (for the streams), written with it.
func TestStore_Enqueue(t *testing.T) {
	ctx := context.Background()
	c := newLifecycle(t)
	j := analysis.Job{ID: "job-e", Kind: analysis.KindAnalyzer, Organization: "soc", WorkerID: "w", DataType: "ip", Data: "10.0.0.1",
		Status: analysis.JobWaiting, CreatedAt: c.now, CreatedBy: "ann", UpdatedAt: c.now, UpdatedBy: "ann", Parameters: map[string]any{}}
	if err := c.w.Enqueue(ctx, j); err != nil {
		t.Fatal(err)
	}
	if got, err := c.jobs.Job(ctx, "job-e"); err != nil || got.Status != analysis.JobWaiting {
		t.Fatalf("the job reads %v (%v), want Waiting", got.Status, err)
	}
	evs := c.events(t)
	if len(evs) != 1 || evs[0].Operation != events.Creation || evs[0].ObjectID != "job-e" || evs[0].Org != "soc" ||
		evs[0].User != "ann" || !evs[0].Date.Equal(c.now) {
		t.Fatalf("events %+v, want the creation", evs)
	}
	if err := c.w.Enqueue(ctx, j); err == nil {
		t.Error("the same job id was queued twice")
	}
}
