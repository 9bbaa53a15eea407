package analysis_test

import (
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// submitFixture is the job service on a fresh SQLite database with real stores, an analyzer enabled in soc
// and a clock the test moves. No worker runs: submitted jobs stay Waiting, so every outcome is decided by
// Submit alone.
type submitFixture struct {
	jobs   *analysis.Jobs
	store  *store.JobStore
	now    time.Time
	caller identity.Caller
}

func newSubmitFixture(t *testing.T, w analysis.Worker) *submitFixture {
	t.Helper()
	ctx := t.Context()
	db := docstoretest.New(t)
	jstore, err := store.NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	wstore, err := store.NewWorkerStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	files, err := store.NewFileStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	f := &submitFixture{store: jstore, now: time.Date(2026, 1, 5, 10, 30, 0, 0, time.UTC),
		caller: identity.Caller{Login: "ann", Org: "soc", Roles: []identity.Role{identity.RoleAnalyze}}}
	w.ID, w.Kind, w.Organization, w.Name, w.DataTypeList = "soc-echo", analysis.KindAnalyzer, "soc", "Echo", []string{"ip"}
	if err := wstore.CreateWorker(ctx, w); err != nil {
		t.Fatal(err)
	}
	f.jobs = analysis.NewJobs(jstore, wstore, analysis.NewCatalog(), files, analysis.JobsConfig{CacheMinutes: 10},
		func() time.Time { return f.now })
	return f
}

func intp(n int) *int { return &n }

// submission is one request of a scenario and what it must get.
type submission struct {
	data  string
	tlp   *int
	pap   *int
	force bool
	key   string        // Idempotency-Key
	after time.Duration // the clock moves by this much before the request
	want  string        // queued, failure (TLP/PAP refusal stored), same (the job of request `of`), 429, 422
	of    int           // for same: the index of the earlier request
	cache bool          // for same: answered from the cache (fromCache), not through the Idempotency-Key
}

// TestJobs_SubmitOrder pins the order of Submit's checks (DECISIONS.md "analysis-svc"): the cache first (a hit
// skips the Idempotency-Key, the rate limit and the TLP/PAP check), then the Idempotency-Key (a retry gets its
// job even over the rate limit; a reused key is refused before the rate is counted), then the rate limit (a
// refusal counts nothing and frees the key), then TLP/PAP (a refusal is a stored Failure, counted by the
// rate, never cached).
func TestJobs_SubmitOrder(t *testing.T) {
	hourly := func(n int) analysis.Worker { return analysis.Worker{Rate: intp(n), RateUnit: "Hour"} }
	checksTLP := analysis.Worker{Configuration: map[string]any{"check_tlp": true, "max_tlp": 2, "check_pap": true, "max_pap": 1}}
	for _, tc := range []struct {
		name   string
		worker analysis.Worker
		steps  []submission
	}{
		{"a cache hit skips the rate limit", hourly(1), []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.1", want: "same", of: 0, cache: true},
			{data: "10.0.0.2", want: "429"},
		}},
		{"force skips the cache, not the rate limit", hourly(1), []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.1", force: true, want: "429"},
		}},
		{"the cache answers before the Idempotency-Key is taken", analysis.Worker{}, []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.1", key: "k", want: "same", of: 0, cache: true},
			{data: "10.0.0.2", key: "k", want: "queued"}, // the key was never reserved
		}},
		{"a retried key gets its job over the rate limit", hourly(1), []submission{
			{data: "10.0.0.1", force: true, key: "k", want: "queued"},
			{data: "10.0.0.1", force: true, key: "k", want: "same", of: 0},
			{data: "10.0.0.2", key: "k", want: "422"}, // reused for another request: refused before the rate
			{data: "10.0.0.3", want: "429"},
		}},
		{"a rate refusal counts nothing and frees its key", hourly(1), []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.2", key: "k", want: "429"},
			{data: "10.0.0.3", want: "429"},
			{data: "10.0.0.4", key: "k", after: time.Hour, want: "queued"}, // next window; the key is free
			{data: "10.0.0.5", want: "429"},
		}},
		{"the rate limit comes before the TLP check", analysis.Worker{Rate: intp(1), RateUnit: "Hour",
			Configuration: checksTLP.Configuration}, []submission{
			{data: "10.0.0.1", tlp: intp(3), want: "failure"}, // counted by the rate
			{data: "10.0.0.2", tlp: intp(3), want: "429"},     // refused, not a second Failure
			{data: "10.0.0.3", want: "429"},
		}},
		{"TLP and PAP refusals are never cached", checksTLP, []submission{
			{data: "10.0.0.1", tlp: intp(3), want: "failure"},
			{data: "10.0.0.1", tlp: intp(3), want: "failure"},
			{data: "10.0.0.1", pap: intp(2), want: "failure"},
			{data: "10.0.0.1", tlp: intp(2), pap: intp(1), want: "queued"},
			{data: "10.0.0.1", tlp: intp(2), pap: intp(1), want: "same", of: 3, cache: true},
		}},
		{"the cache window", analysis.Worker{}, []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.1", after: 10 * time.Minute, want: "same", of: 0, cache: true},
			{data: "10.0.0.1", after: time.Millisecond, want: "queued"},
		}},
		{"a job cache of 0 turns the cache off", analysis.Worker{JobCache: intp(0)}, []submission{
			{data: "10.0.0.1", want: "queued"},
			{data: "10.0.0.1", want: "queued"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSubmitFixture(t, tc.worker)
			var ids []string
			seen := map[string]bool{}
			for i, s := range tc.steps {
				f.now = f.now.Add(s.after)
				j, err := f.jobs.Submit(t.Context(), f.caller, analysis.KindAnalyzer, "soc-echo", analysis.Submission{
					DataType: "ip", Data: s.data, TLP: s.tlp, PAP: s.pap, Force: s.force, IdempotencyKey: s.key})
				ids = append(ids, j.ID)
				switch s.want {
				case "429", "422":
					want := map[string]apperr.Kind{"429": apperr.RateLimited, "422": apperr.Unprocessable}[s.want]
					if k := apperr.KindOf(err); err == nil || k != want {
						t.Fatalf("request %d: %+v, %v; want a %s refusal", i, j, err, s.want)
					}
					continue
				case "same":
					if err != nil || j.ID != ids[s.of] || j.FromCache != s.cache {
						t.Fatalf("request %d: %+v, %v; want the job of request %d (fromCache %v)", i, j, err, s.of, s.cache)
					}
					continue
				}
				if err != nil || seen[j.ID] || j.FromCache {
					t.Fatalf("request %d: %+v, %v; want a new job", i, j, err)
				}
				seen[j.ID] = true
				stored, err := f.store.Job(t.Context(), j.ID)
				if err != nil {
					t.Fatalf("request %d: job %s not stored: %v", i, j.ID, err)
				}
				switch s.want {
				case "queued":
					if stored.Status != analysis.JobWaiting {
						t.Errorf("request %d: stored %s, want Waiting", i, stored.Status)
					}
				case "failure":
					msg := "TLP is higher than allowed."
					if s.tlp == nil {
						msg = "PAP is higher than allowed."
					}
					if stored.Status != analysis.JobFailure || stored.ErrorMessage != msg || j.Status != analysis.JobFailure {
						t.Errorf("request %d: stored %s %q, want Failure %q", i, stored.Status, stored.ErrorMessage, msg)
					}
				}
			}
			// Every job stored is one of the answers: refusals stored nothing.
			all, n, err := f.jobs.Search(t.Context(), f.caller, search.Node{Op: search.OpAll}, search.Page{Limit: 100})
			if err != nil || int(n) != len(seen) || len(all) != len(seen) {
				t.Errorf("stored jobs %d (%v), want the %d created", n, err, len(seen))
			}
		})
	}
}
