package jobevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/jobevent"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/events/eventstest"
)

func render(j analysis.Job) map[string]any {
	return map[string]any{"id": j.ID, "status": j.Status, "organization": j.Organization}
}

// TestStore_RepairAfterCrash: the two states a kill leaves around a job's end, on a real database. Job A's
// end was stored but its held JobFinished was not released (no delivery queued); job B's JobFinished was held
// but its end never stored (the job is still running, it will be run again). At start the repair queues A's
// delivery, with the status stored, and drops B's event; the receiver gets A once and B never.
func TestStore_RepairAfterCrash(t *testing.T) {
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
	rcv := eventstest.NewReceiver(t, "")
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := outbox.CreateEndpoint(ctx, events.Endpoint{ID: "e1", Org: "soc", Name: "jobs", URL: rcv.URL(), Auth: "none",
		Enabled: true, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	cfg := events.Config{Confirm: jobevent.Wrap(jobs, nil, render).Confirm, RepairAllAtStart: true,
		Webhooks: events.WebhookConfig{AllowPrivate: true, Tick: 20 * time.Millisecond}}
	bus := events.NewBus(l, outbox, nil, events.NewMetrics("test", "job"), cfg, time.Now)
	w := jobevent.Wrap(jobs, bus, render)

	start := func(id string) analysis.Job {
		t.Helper()
		j := analysis.Job{ID: id, Kind: analysis.KindAnalyzer, Organization: "soc", WorkerID: "w", DataType: "ip", Data: "10.0.0.1",
			Status: analysis.JobWaiting, CreatedAt: now, UpdatedAt: now, Parameters: map[string]any{}}
		if err := jobs.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
		c, err := jobs.Claim(ctx, "worker-"+id, now.Add(time.Hour), now, analysis.ClaimRule{})
		if err != nil || c.ID != id {
			t.Fatalf("claim %s: %v %v", id, c.ID, err)
		}
		return c
	}
	// A: held, then the end stored; the process dies before the release.
	a := start("job-a")
	a.Status, a.EndDate = analysis.JobSuccess, now
	if err := bus.Hold(ctx, []events.Event{w.Finished(a)}); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Finish(ctx, a, &analysis.Report{Success: true}, "worker-job-a"); err != nil {
		t.Fatal(err)
	}
	// B: held; the process dies before storing the end.
	b := start("job-b")
	b.Status, b.EndDate = analysis.JobFailure, now
	if err := bus.Hold(ctx, []events.Event{w.Finished(b)}); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); bus.Run(rctx) }()
	defer func() { cancel(); <-done }()

	v := rcv.Wait(t, 15*time.Second, eventstest.Object("job-a"))
	if d, _ := v["details"].(map[string]any); d["status"] != "Success" || v["organisation"] != "soc" {
		t.Errorf("repaired JobFinished %v", v)
	}
	var evs []events.Event
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if held, err := l.Held(ctx, time.Now().Add(time.Hour), 10); err != nil || len(held) > 0 {
			continue
		}
		if evs, err = l.EventsSince(ctx, now.Add(-time.Hour), 10); err == nil && len(evs) == 1 {
			break
		}
	}
	if len(evs) != 1 || evs[0].ObjectID != "job-a" {
		t.Errorf("events after the repair: %v, want job-a's only", evs)
	}
	if rcv.Count(eventstest.Object("job-b")) != 0 || rcv.Count(eventstest.Object("job-a")) != 1 {
		t.Errorf("deliveries: job-a %d (want 1), job-b %d (want 0)", rcv.Count(eventstest.Object("job-a")), rcv.Count(eventstest.Object("job-b")))
	}
}
