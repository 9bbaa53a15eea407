package store

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// Finish calls analysis.FinishedReadable once, when the final job and its report can already be read (the job
// service wakes its waitreport waiters then), and the job leaves the queue afterwards.
func TestJobStore_FinishReadableBeforeItEnds(t *testing.T) {
	ctx := context.Background()
	s := newJobStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	claimed := queueAndClaim(t, s, "finish-readable-1", now.Add(time.Minute), now)
	final := claimed
	final.Status, final.EndDate = analysis.JobSuccess, now
	calls := 0
	var handed *analysis.Ended
	hook := analysis.OnFinishedReadable(ctx, func(end *analysis.Ended) {
		calls++
		handed = end
		got, err := s.Job(ctx, claimed.ID)
		if err != nil || got.Status != analysis.JobSuccess {
			t.Errorf("at the callback the job reads %v (%v), want Success", got.Status, err)
		}
		r, err := s.Report(ctx, claimed.ID)
		if err != nil || !r.Success || r.Summary == nil {
			t.Errorf("at the callback the report reads %+v (%v)", r, err)
		}
		// The end handed over is what reading it gives.
		if end == nil || end.Report == nil || !reflect.DeepEqual(end.Job, got) || !reflect.DeepEqual(*end.Report, r) {
			t.Errorf("the end handed over %+v differs from the one read: %+v, %+v", end, got, r)
		}
	})
	report := &analysis.Report{Success: true, Summary: map[string]any{"k": "v", "n": 1.5, "big": int64(1) << 62},
		Full:      map[string]any{"html": "<b>&</b>", "list": []any{1, "x", nil}},
		Artifacts: []analysis.Artifact{{ID: "a1", DataType: "ip", Data: "10.0.0.1", CreatedAt: now}}}
	if err := s.Finish(hook, final, report, "w1"); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || handed == nil {
		t.Fatalf("FinishedReadable called %d times (end %v), want once with the end", calls, handed)
	}
	if _, err := s.Owner(ctx, claimed.ID); err != analysis.ErrJobNotFound {
		t.Fatalf("the job is still queued after Finish: %v", err)
	}
	// Without the callback in the context (any other caller), Finish works the same.
	if err := s.Finish(ctx, final, &analysis.Report{Success: true}, ""); err != nil {
		t.Fatalf("finish again without owner: %v", err)
	}
	// A report left by an end cut short (MongoDB writes the report, then the job): it stays, and the end is
	// not handed over, since reading gives that report.
	claimed2 := queueAndClaim(t, s, "finish-readable-2", now.Add(time.Minute), now)
	left, err := toReportDoc(claimed2.ID, &analysis.Report{Success: false, ErrorMessage: "left"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.reports.Insert(ctx, left); err != nil {
		t.Fatal(err)
	}
	final2 := claimed2
	final2.Status, final2.EndDate = analysis.JobSuccess, now
	handed = &analysis.Ended{}
	hook = analysis.OnFinishedReadable(ctx, func(end *analysis.Ended) { handed = end })
	if err := s.Finish(hook, final2, &analysis.Report{Success: true}, "w1"); err != nil || handed != nil {
		t.Fatalf("finish over a left report: %v, end handed over %+v; want none", err, handed)
	}
	// An end stored again is a duplicate: the first stays, and no end is handed over.
	hook = analysis.OnFinishedReadable(ctx, func(end *analysis.Ended) { handed = end })
	if err := s.Finish(hook, final, &analysis.Report{Success: false}, ""); err != nil || handed != nil {
		t.Fatalf("finish a finished job: %v, end handed over %+v; want none", err, handed)
	}
}

// FinishWith confirms the lease before it writes anything: a worker that does not hold it stores nothing (nor
// its caller's documents, whose function runs beside the check). A lease with more than finishMargin left is confirmed by reading it (unchanged at
// the end), a shorter one is extended; the caller's documents are stored with the report and the final job.
func TestJobStore_FinishWithLease(t *testing.T) {
	db := docstoretest.New(t)
	ctx := context.Background()
	s, err := NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := db.Collection(ctx, docstore.Spec{Name: "finish_extra"})
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		ID string `json:"_id"`
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, c := range []struct {
		name     string
		lease    time.Duration
		extended bool
	}{
		{"lease far from its end: read", time.Hour, false},
		{"lease near its end: extended", 2 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "finish-lease-" + strconv.FormatBool(c.extended)
			until := time.Now().Add(c.lease).Truncate(time.Millisecond)
			claimed := queueAndClaim(t, s, id, until, now)
			final := claimed
			final.Status, final.EndDate = analysis.JobSuccess, now
			with := func() ([]docstore.Insertion, error) {
				return []docstore.Insertion{{Coll: extra, Doc: doc{ID: id}}}, nil
			}

			err = s.FinishWith(ctx, final, &analysis.Report{Success: true}, "w2", with)
			if !errors.Is(err, analysis.ErrLeaseLost) {
				t.Fatalf("another worker's FinishWith: %v, want ErrLeaseLost", err)
			}
			if got, err := s.Job(ctx, id); err != nil || got.Status != analysis.JobInProgress {
				t.Fatalf("after a refused FinishWith the job reads %v (%v), want InProgress", got.Status, err)
			}
			if ok, err := extra.Exists(ctx, docstore.ID(id)); err != nil || ok {
				t.Fatalf("a refused FinishWith stored its caller's document (%v, %v)", ok, err)
			}

			var leaseAtEnd time.Time
			hook := analysis.OnFinishedReadable(ctx, func(*analysis.Ended) {
				var q jobDoc
				if err := s.queue.Get(ctx, id, &q); err != nil {
					t.Errorf("the queued job at the callback: %v", err)
				}
				leaseAtEnd = docstore.Time(q.LeaseUntil)
			})
			if err := s.FinishWith(hook, final, &analysis.Report{Success: true}, "w1", with); err != nil {
				t.Fatal(err)
			}
			if c.extended != leaseAtEnd.After(until.Add(time.Minute)) || (!c.extended && !leaseAtEnd.Equal(until)) {
				t.Errorf("lease at the end %v (claimed until %v); want extended: %v", leaseAtEnd, until, c.extended)
			}
			if got, err := s.Job(ctx, id); err != nil || got.Status != analysis.JobSuccess {
				t.Errorf("the job reads %v (%v), want Success", got.Status, err)
			}
			if ok, err := extra.Exists(ctx, docstore.ID(id)); err != nil || !ok {
				t.Errorf("the caller's document was not stored (%v, %v)", ok, err)
			}
		})
	}
}

// newJobStore is a JobStore on a fresh embedded database.
func newJobStore(t *testing.T) *JobStore {
	t.Helper()
	s, err := NewJobStore(t.Context(), docstoretest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// queueAndClaim queues a job of organization "o" and claims it for worker w1 until until.
func queueAndClaim(t *testing.T, s *JobStore, id string, until, now time.Time) analysis.Job {
	t.Helper()
	j := analysis.Job{ID: id, Kind: analysis.KindAnalyzer, Organization: "o", Status: analysis.JobWaiting,
		CreatedAt: now, Parameters: map[string]any{}}
	if err := s.Enqueue(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(t.Context(), "w1", until, now, analysis.ClaimRule{})
	if err != nil || claimed.ID != id {
		t.Fatalf("claim: %v %v", claimed.ID, err)
	}
	return claimed
}
