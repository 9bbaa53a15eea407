package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// The queue's counts by organization: waiting and running jobs, the oldest waiting job's date, one
// organization's or every organization's; a finished job is no longer counted.
func TestJobStore_QueueCounts(t *testing.T) {
	db := docstoretest.New(t)
	ctx := context.Background()
	s, err := NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.QueueCounts(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("an empty queue: %v %v", got, err)
	}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	for i, org := range []string{"a", "a", "a", "b"} {
		j := analysis.Job{ID: fmt.Sprintf("job-%d", i), Kind: analysis.KindAnalyzer, Organization: org,
			Status: analysis.JobWaiting, CreatedAt: at(i), Parameters: map[string]any{}}
		if err := s.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// Two claims: a's oldest (the fewest running first: a, then b).
	until := time.Now().Add(time.Hour)
	first, err := s.Claim(ctx, "w1", until, time.Now(), analysis.ClaimRule{})
	if err != nil || first.ID != "job-0" {
		t.Fatalf("first claim: %v %v", first.ID, err)
	}
	if second, err := s.Claim(ctx, "w2", until, time.Now(), analysis.ClaimRule{}); err != nil || second.ID != "job-3" {
		t.Fatalf("second claim: %v %v", second.ID, err)
	}
	want := []analysis.OrgQueue{{Organization: "a", Waiting: 2, Running: 1, Oldest: at(1)}, {Organization: "b", Running: 1}}
	if got, err := s.QueueCounts(ctx, ""); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("every organization: %+v %v, want %+v", got, err, want)
	}
	if got, err := s.QueueCounts(ctx, "b"); err != nil || !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("organization b: %+v %v", got, err)
	}
	if got, err := s.QueueCounts(ctx, "c"); err != nil || len(got) != 0 {
		t.Errorf("an organization with nothing queued: %+v %v", got, err)
	}
	first.Status, first.EndDate = analysis.JobSuccess, time.Now().UTC().Truncate(time.Millisecond)
	if err := s.Finish(ctx, first, &analysis.Report{Success: true}, "w1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.QueueCounts(ctx, "a"); err != nil || len(got) != 1 || got[0].Running != 0 || got[0].Waiting != 2 {
		t.Errorf("after a's job finished: %+v %v", got, err)
	}
}
