package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/app"
)

// gate holds the test analyzer's jobs that name it (parameter "gate") until the test opens it.
type gate struct {
	enter   sync.Once
	entered chan struct{} // closed when a job reached the gate
	open    chan struct{}
	mu      sync.Mutex
	group   *gateGroup // the group the job at the gate counts in, until it leaves or is detached
}

// gateGroup counts the jobs of one group (parameter "group") held at their gates at once.
type gateGroup struct{ now, max atomic.Int64 }

var gates, gateGroups sync.Map

func gateNamed(name string) *gate {
	g, _ := gates.LoadOrStore(name, &gate{entered: make(chan struct{}), open: make(chan struct{})})
	return g.(*gate)
}

func groupNamed(name string) *gateGroup {
	g, _ := gateGroups.LoadOrStore(name, &gateGroup{})
	return g.(*gateGroup)
}

// passGate is the analyzer's side: it marks the gate entered and waits until the gate opens (true) or the
// job is cancelled (false).
func passGate(ctx context.Context, name, group string) bool {
	g := gateNamed(name)
	if group != "" {
		gr := groupNamed(group)
		g.mu.Lock()
		g.group = gr
		n := gr.now.Add(1)
		for m := gr.max.Load(); n > m && !gr.max.CompareAndSwap(m, n); m = gr.max.Load() {
		}
		g.mu.Unlock()
		defer g.detach()
	}
	g.enter.Do(func() { close(g.entered) })
	select {
	case <-g.open:
		return true
	case <-ctx.Done():
		return false
	}
}

// detach stops counting the job at the gate in its group (it left, or the test deleted it: its run goes on
// until its worker sees the lease lost, while its slot is already another job's).
func (g *gate) detach() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.group != nil {
		g.group.now.Add(-1)
		g.group = nil
	}
}

// firstEntered waits (deadline 30 s) until a job reached one of the gates and returns its index.
func firstEntered(t *testing.T, names ...string) int {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		for i, n := range names {
			select {
			case <-gateNamed(n).entered:
				return i
			default:
			}
		}
		select {
		case <-deadline.C:
			t.Fatalf("no job reached any of the gates %v within 30 s", names)
		case <-time.After(10 * time.Millisecond): // polling interval of several gates; the deadline bounds it
		}
	}
}

// fairFixture is jobFixture with Test_Echo also enabled in the other organization, without job cache.
type fairFixture struct {
	*jobFixture
	otherAnalyzer string
	prefix        string // unique per test: gates are process-wide
}

func newFairFixture(t *testing.T) *fairFixture {
	f := newJobFixture(t, withoutWorkers())
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"jobCache": 0}).Want(t, http.StatusOK)
	otherAdmin := f.e.user(t, "other-admin", "other", roleOrgAdmin)
	id := otherAdmin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{"jobCache": 0}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	return &fairFixture{jobFixture: f, otherAnalyzer: id, prefix: fmt.Sprintf("%s-%d-", t.Name(), time.Now().UnixNano())}
}

// submit queues a gated job in the organization of as (the fixture's analyst: soc; other: the other one).
func (f *fairFixture) submit(t *testing.T, as *client, gate, group string) string {
	t.Helper()
	analyzer := f.analyzer
	if as == f.other {
		analyzer = f.otherAnalyzer
	}
	return as.Call(t, http.MethodPost, "/api/analyzer/"+analyzer+"/run", map[string]any{"dataType": "ip", "data": "10.9.0.1",
		"parameters": map[string]any{"gate": f.prefix + gate, "group": f.prefix + group}}).Want(t, http.StatusOK).Object(t)["id"].(string)
}

// waitStatusAs polls a job as a user of its organization until it has the status (deadline 30 s).
func (f *fairFixture) waitStatusAs(t *testing.T, as *client, id, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if f.status(t, as, id) == status {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation: the deadline bounds it
	}
	t.Fatalf("job %s never reached %s", id, status)
}

func (f *fairFixture) open(gate string) { close(gateNamed(f.prefix + gate).open) }

func (f *fairFixture) status(t *testing.T, as *client, id string) any {
	t.Helper()
	return as.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)["status"]
}

// running returns the indexes of the jobs ids that are InProgress, as as sees them.
func (f *fairFixture) running(t *testing.T, as *client, ids []string) []int {
	t.Helper()
	var out []int
	for i, id := range ids {
		if f.status(t, as, id) == "InProgress" {
			out = append(out, i)
		}
	}
	return out
}

// waitRunning polls until n of the jobs ids are InProgress (deadline 30 s) and returns their indexes. Jobs
// submitted within one millisecond start in any order, so tests do not assume which.
func (f *fairFixture) waitRunning(t *testing.T, as *client, ids []string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := f.running(t, as, ids)
		if len(r) == n {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs InProgress (%v), want %d; the queue: %v", len(r), r, n, f.e.rawDocs(t, "queue"))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation: the deadline bounds it
	}
}

// Issue 15: workers were shared first come first served, so one organization's backlog held every worker and
// another organization's job waited for the whole backlog. Org A queues five slow jobs on two workers (two
// replicas of one worker each); org B then queues one: the first worker to free itself takes B's job while
// A's three others still wait.
func TestQueue_FairBetweenOrganizations(t *testing.T) {
	f := newFairFixture(t)
	var a []string
	for i := range 5 {
		a = append(a, f.submit(t, f.analyst, fmt.Sprint("a", i), "a"))
	}
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1}))
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 1}))
	held := f.waitRunning(t, f.analyst, a, 2) // A's jobs hold both workers
	b := f.submit(t, f.other, "b", "b")
	if st := f.status(t, f.other, b); st != "Waiting" {
		t.Fatalf("B's job %v with both workers busy", st)
	}

	f.open(fmt.Sprint("a", held[0]))
	gates := []string{f.prefix + "b"}
	var waiting []int
	for i := range a {
		if i != held[0] && i != held[1] {
			waiting = append(waiting, i)
			gates = append(gates, f.prefix+fmt.Sprint("a", i))
		}
	}
	if first := firstEntered(t, gates...); first != 0 {
		t.Fatalf("A's job %d started before B's first", waiting[first-1])
	}
	if st := f.status(t, f.other, b); st != "InProgress" {
		t.Fatalf("B's job %v", st)
	}
	for i, id := range a {
		want := "Waiting"
		switch i {
		case held[0]:
			want = "Success"
		case held[1]:
			want = "InProgress"
		}
		if st := f.status(t, f.analyst, id); st != want {
			t.Fatalf("A's job %d is %v while B's runs, want %s", i, st, want)
		}
	}
	// Org isolation holds: neither sees the other's job.
	f.analyst.Call(t, http.MethodGet, "/api/job/"+b, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.other.Call(t, http.MethodGet, "/api/job/"+a[waiting[0]], nil).WantError(t, http.StatusNotFound, "NotFoundError")

	f.open("b")
	for i := range a {
		if i != held[0] {
			f.open(fmt.Sprint("a", i))
		}
	}
	for _, id := range append(a, b) {
		as := f.analyst
		if id == b {
			as = f.other
		}
		if st := f.wait(t, as, id)["status"]; st != "Success" {
			t.Fatalf("job %s: %v", id, st)
		}
	}
}

// job.org_max caps an organization's running jobs across replicas: with org_max 1 and four workers on two
// replicas, A runs one job at a time while B runs beside it; a deleted running job frees A's slot.
func TestQueue_OrgMaxCapsAnOrganization(t *testing.T) {
	f := newFairFixture(t)
	var a []string
	for i := range 4 {
		a = append(a, f.submit(t, f.analyst, fmt.Sprint("a", i), "a"))
	}
	b := f.submit(t, f.other, "b", "b")
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 2, OrgMax: 1}))
	startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 2, OrgMax: 1}))
	f.waitRunning(t, f.other, []string{b}, 1)
	cur := f.waitRunning(t, f.analyst, a, 1)[0]
	// Two workers are idle, A has three Waiting jobs: a claim finds nothing it may take.
	ctx := context.Background()
	if j, err := f.e.jobStore.Claim(ctx, "probe", time.Now().Add(time.Minute), time.Now(), analysis.ClaimRule{OrgMax: 1}); !errors.Is(err, analysis.ErrNoJob) {
		t.Fatalf("a claim under the cap took %s (%v)", j.ID, err)
	}
	// A's jobs one at a time: the first, second and fourth finish; the third is deleted while it runs (its slot
	// is free at once, while its run stops at its next lease renewal: it is not counted in A's group).
	final := map[int]string{}
	done := map[int]bool{}
	for step := range 4 {
		if step == 2 {
			// Uncounted first: the next job may start as soon as the deletion frees the slot. InProgress is the
			// claim: the run counts in its group only once at its gate, so the detach waits for that.
			g := gateNamed(f.prefix + fmt.Sprint("a", cur))
			waitClosed(t, g.entered, "A's running job reaching its gate")
			g.detach()
			f.analyst.Call(t, http.MethodDelete, "/api/job/"+a[cur], nil).Want(t, http.StatusNoContent)
			final[cur] = "Deleted"
		} else {
			f.open(fmt.Sprint("a", cur))
			final[cur] = "Success"
		}
		done[cur] = true
		if step == 3 {
			break
		}
		// The next one starts, alone.
		deadline := time.Now().Add(30 * time.Second)
		for next := -1; next < 0; {
			for _, i := range f.running(t, f.analyst, a) {
				if !done[i] {
					next = i
				}
			}
			if next >= 0 {
				cur = next
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no next job of A started; the queue: %v", f.e.rawDocs(t, "queue"))
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation: the deadline bounds it
		}
		for _, i := range f.running(t, f.analyst, a) {
			if i != cur && !done[i] {
				t.Fatalf("A's jobs %d and %d run at once", cur, i)
			}
		}
	}
	f.open("b")
	for i, id := range a {
		if st := f.wait(t, f.analyst, id)["status"]; st != final[i] {
			t.Fatalf("A's job %d: %v, want %s", i, st, final[i])
		}
	}
	if st := f.wait(t, f.other, b)["status"]; st != "Success" {
		t.Fatalf("B's job: %v", st)
	}
	if m := groupNamed(f.prefix + "a").max.Load(); m != 1 {
		t.Fatalf("A ran %d jobs at once, cap 1", m)
	}
	if m := groupNamed(f.prefix + "b").max.Load(); m != 1 {
		t.Fatalf("B ran %d jobs at once", m)
	}
}

// Issue 28: with the default job.org_max 0, one organization's six slow jobs held all four workers and
// another's first job waited for one of them to end (29 s). With the service's defaults (job.reserve 1) on two
// replicas of three workers, A's six jobs take two workers on each: each replica keeps its last free worker
// for an organization running nothing, so B's first job and then C's start at once beside A's, whose other
// jobs wait.
func TestQueue_FairByDefault(t *testing.T) {
	f := newFairFixture(t)
	def, err := app.Default() // the service's settings when none is given
	if err != nil {
		t.Fatal(err)
	}
	if def.Job.OrgMax != 0 || def.Job.Reserve != 1 {
		t.Fatalf("defaults: job.org_max %d, job.reserve %d; the test is of org_max 0, reserve 1", def.Job.OrgMax, def.Job.Reserve)
	}
	f.e.createOrg(t, "third")
	third := f.e.user(t, "third-analyst", "third", roleAnalyze)
	thirdAnalyzer := f.e.user(t, "third-admin", "third", roleOrgAdmin).Call(t, http.MethodPost,
		"/api/organization/analyzer/Test_Echo_1_0", map[string]any{"jobCache": 0}).Want(t, http.StatusCreated).Object(t)["id"].(string)

	var a []string
	for i := range 6 {
		a = append(a, f.submit(t, f.analyst, fmt.Sprint("a", i), "a"))
	}
	for range 2 {
		startWorkers(t, f.e.replica(analysis.JobsConfig{Workers: 3, OrgMax: def.Job.OrgMax, Reserve: def.Job.Reserve}))
	}
	f.waitRunning(t, f.analyst, a, 4)

	b := f.submit(t, f.other, "b", "b")
	waitClosed(t, gateNamed(f.prefix+"b").entered, "B's first job starting while A's six hold their gates")
	c := third.Call(t, http.MethodPost, "/api/analyzer/"+thirdAnalyzer+"/run", map[string]any{"dataType": "ip", "data": "10.9.0.3",
		"parameters": map[string]any{"gate": f.prefix + "c", "group": f.prefix + "c"}}).Want(t, http.StatusOK).Object(t)["id"].(string)
	waitClosed(t, gateNamed(f.prefix+"c").entered, "C's first job starting on the other replica's reserved worker")
	// Every worker is busy now, and A still runs four, whatever the order of the claims.
	if r := f.running(t, f.analyst, a); len(r) != 4 {
		t.Fatalf("A runs %d jobs beside B's and C's, want 4 (%v)", len(r), r)
	}

	f.open("b")
	f.open("c")
	for i := range a {
		f.open(fmt.Sprint("a", i))
	}
	for _, w := range []struct {
		as *client
		id string
	}{{f.other, b}, {third, c}} {
		if st := f.wait(t, w.as, w.id)["status"]; st != "Success" {
			t.Fatalf("job %s: %v", w.id, st)
		}
	}
	for i, id := range a {
		if st := f.wait(t, f.analyst, id)["status"]; st != "Success" {
			t.Fatalf("A's job %d: %v", i, st)
		}
	}
	if m := groupNamed(f.prefix + "a").max.Load(); m != 4 {
		t.Fatalf("A ran %d jobs at once on six workers, want 4 (two kept free)", m)
	}
}
