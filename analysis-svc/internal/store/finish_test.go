package store

import (
	"context"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// Finish calls analysis.FinishedReadable once, when the final job and its report can already be read (the job
// service wakes its waitreport waiters then), and the job leaves the queue afterwards.
func TestJobStore_FinishReadableBeforeItEnds(t *testing.T) {
	db := docstoretest.New(t)
	ctx := context.Background()
	s, err := NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	j := analysis.Job{ID: "finish-readable-1", Kind: analysis.KindAnalyzer, Organization: "o", Status: analysis.JobWaiting,
		CreatedAt: now, Parameters: map[string]any{}}
	if err := s.Enqueue(ctx, j); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, "w1", now.Add(time.Minute), now, 0)
	if err != nil || claimed.ID != j.ID {
		t.Fatalf("claim: %v %v", claimed.ID, err)
	}
	final := claimed
	final.Status, final.EndDate = analysis.JobSuccess, now
	calls := 0
	hook := analysis.OnFinishedReadable(ctx, func() {
		calls++
		got, err := s.Job(ctx, j.ID)
		if err != nil || got.Status != analysis.JobSuccess {
			t.Errorf("at the callback the job reads %v (%v), want Success", got.Status, err)
		}
		r, err := s.Report(ctx, j.ID)
		if err != nil || !r.Success || r.Summary == nil {
			t.Errorf("at the callback the report reads %+v (%v)", r, err)
		}
	})
	if err := s.Finish(hook, final, &analysis.Report{Success: true, Summary: map[string]any{"k": "v"}}, "w1"); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("FinishedReadable called %d times, want 1", calls)
	}
	if _, err := s.Owner(ctx, j.ID); err != analysis.ErrJobNotFound {
		t.Fatalf("the job is still queued after Finish: %v", err)
	}
	// Without the callback in the context (any other caller), Finish works the same.
	if err := s.Finish(ctx, final, &analysis.Report{Success: true}, ""); err != nil {
		t.Fatalf("finish again without owner: %v", err)
	}
}
