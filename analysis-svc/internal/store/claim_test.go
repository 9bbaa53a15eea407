package store

import (
	"context"
	"errors"
	"fmt"
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
