package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// Claims racing from many workers (as replicas would: one store each, one database) each take a different
// job, never more than orgMax of one organization at once, and serve the organization with the fewest running
// jobs first: the claim, the cap (a unique slot) and the requeue that frees a slot are atomic in the database.
func TestJobStore_ClaimFairAndCappedConcurrent(t *testing.T) {
	db := docstoretest.New(t)
	ctx := context.Background()
	const orgMax, workers = 2, 6
	stores := make([]*JobStore, 3)
	for i := range stores {
		s, err := NewJobStore(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	enqueue := func(org string, i int) {
		t.Helper()
		j := analysis.Job{ID: fmt.Sprintf("%s-%03d", org, i), Kind: analysis.KindAnalyzer, Organization: org,
			Status: analysis.JobWaiting, CreatedAt: base.Add(time.Duration(i) * time.Millisecond), Parameters: map[string]any{}}
		if err := stores[0].Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// A backlog of 20 in org a, then one job in org b.
	for i := range 20 {
		enqueue("a", i)
	}
	enqueue("b", 100)
	until := time.Now().Add(time.Hour)

	// Six workers claim at once: a takes its two slots, b its one job, the others find nothing they may take.
	claimed := make([]analysis.Job, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claimed[w], errs[w] = stores[w%len(stores)].Claim(ctx, fmt.Sprint("w", w), until, time.Now(), analysis.ClaimRule{OrgMax: orgMax})
		}()
	}
	wg.Wait()
	byOrg := map[string][]string{}
	for w := range workers {
		switch {
		case errs[w] == nil:
			byOrg[claimed[w].Organization] = append(byOrg[claimed[w].Organization], claimed[w].ID)
		case !errors.Is(errs[w], analysis.ErrNoJob):
			t.Fatalf("worker %d: %v", w, errs[w])
		}
	}
	if len(byOrg["a"]) != orgMax || len(byOrg["b"]) != 1 {
		t.Fatalf("claimed %v, want %d of a and b's job", byOrg, orgMax)
	}
	if byOrg["a"][0] == byOrg["a"][1] {
		t.Fatalf("one job claimed twice: %v", byOrg["a"])
	}
	// A requeued job frees its slot: the next claim takes a's oldest waiting job again.
	first := byOrg["a"][0]
	owner := ""
	for w := range workers {
		if errs[w] == nil && claimed[w].ID == first {
			owner = fmt.Sprint("w", w)
		}
	}
	if err := stores[1].Requeue(ctx, first, owner, true); err != nil {
		t.Fatal(err)
	}
	j, err := stores[2].Claim(ctx, "w9", until, time.Now(), analysis.ClaimRule{OrgMax: orgMax})
	if err != nil || j.Organization != "a" {
		t.Fatalf("after a requeue: %+v, %v", j, err)
	}
	if _, err := stores[0].Claim(ctx, "w10", until, time.Now(), analysis.ClaimRule{OrgMax: orgMax}); !errors.Is(err, analysis.ErrNoJob) {
		t.Fatalf("a third job of a: %v", err)
	}
	// Without a cap the fewest-running rule alone: c's first job goes before a's backlog.
	enqueue("c", 200)
	if j, err := stores[0].Claim(ctx, "w11", until, time.Now(), analysis.ClaimRule{}); err != nil || j.Organization != "c" {
		t.Fatalf("uncapped claim: %+v, %v", j, err)
	}
	if j, err := stores[0].Claim(ctx, "w12", until, time.Now(), analysis.ClaimRule{}); err != nil || j.Organization != "a" {
		t.Fatalf("uncapped claim: %+v, %v", j, err)
	}
	// A reserved worker's claim (NewOnly) takes no job of an organization that runs one, here or elsewhere,
	// even when it is the only one waiting; it takes d's first job, and d's second is then not for it.
	if j, err := stores[1].Claim(ctx, "w13", until, time.Now(), analysis.ClaimRule{NewOnly: true}); !errors.Is(err, analysis.ErrNoJob) {
		t.Fatalf("a reserved worker took %+v (%v) of an organization running jobs", j, err)
	}
	enqueue("d", 300)
	enqueue("d", 301)
	if j, err := stores[1].Claim(ctx, "w14", until, time.Now(), analysis.ClaimRule{NewOnly: true}); err != nil || j.ID != "d-300" {
		t.Fatalf("reserved claim: %+v, %v", j, err)
	}
	if j, err := stores[2].Claim(ctx, "w15", until, time.Now(), analysis.ClaimRule{NewOnly: true}); !errors.Is(err, analysis.ErrNoJob) {
		t.Fatalf("a reserved worker took %+v (%v): d's second job", j, err)
	}
}

// A deferred job (Defer) goes back to Waiting with its attempt refunded and is not claimed before its
// notBefore, while the jobs behind it, of its organization or another, are; from notBefore on it is claimed
// with its deferral's start. Requeue forgets the deferral.
func TestJobStore_DeferWaitsUntilNotBefore(t *testing.T) {
	s, err := NewJobStore(t.Context(), docstoretest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	until := t0.Add(24 * time.Hour)
	for i, id := range []string{"a-1", "a-2", "b-1"} {
		j := analysis.Job{ID: id, Kind: analysis.KindAnalyzer, Organization: id[:1], Status: analysis.JobWaiting,
			CreatedAt: t0.Add(time.Duration(i) * time.Millisecond), Parameters: map[string]any{}}
		if err := s.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	j, err := s.Claim(ctx, "w1", until, t0, analysis.ClaimRule{})
	if err != nil || j.ID != "a-1" || j.Attempts != 1 || !j.DeferredSince.IsZero() {
		t.Fatalf("first claim: %+v, %v", j, err)
	}
	if err := s.Defer(ctx, "a-1", "other-worker", t0, t0.Add(time.Minute)); !errors.Is(err, analysis.ErrLeaseLost) {
		t.Fatalf("a defer by a worker that does not hold the job: %v", err)
	}
	if err := s.Defer(ctx, "a-1", "w1", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if q, err := s.Job(ctx, "a-1"); err != nil || q.Status != analysis.JobWaiting || q.Attempts != 0 || !q.DeferredSince.Equal(t0) {
		t.Fatalf("deferred job: %+v, %v", q, err)
	}
	// Before notBefore: the others go, a-1 does not.
	var got []string
	for {
		j, err := s.Claim(ctx, "w2", until, t0.Add(59*time.Second), analysis.ClaimRule{})
		if errors.Is(err, analysis.ErrNoJob) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, j.ID)
	}
	if strings.Join(got, ",") != "a-2,b-1" && strings.Join(got, ",") != "b-1,a-2" {
		t.Fatalf("claimed before notBefore: %v, want a-2 and b-1", got)
	}
	j, err = s.Claim(ctx, "w3", until, t0.Add(time.Minute), analysis.ClaimRule{})
	if err != nil || j.ID != "a-1" || j.Attempts != 1 || !j.DeferredSince.Equal(t0) {
		t.Fatalf("claim at notBefore: %+v, %v", j, err)
	}
	if err := s.Requeue(ctx, "a-1", "w3", true); err != nil {
		t.Fatal(err)
	}
	j, err = s.Claim(ctx, "w4", until, t0, analysis.ClaimRule{})
	if err != nil || j.ID != "a-1" || !j.DeferredSince.IsZero() {
		t.Fatalf("after a requeue: %+v, %v", j, err)
	}
}
