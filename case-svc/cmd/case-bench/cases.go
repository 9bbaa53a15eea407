package main

// Section 6: case-svc with many cases. Cases are created through the API (each: POST /api/case with its tasks,
// then POST /api/case/{id}/artifact with its observables), measured at CasesSmall cases, filled up to
// CasesLarge (through the API, or with -fill bulk by InsertMany of documents shaped as the API writes them,
// into the stores' own collections, then CreateSample cases through the API) and measured again. The floors do
// with pkg/docstore's Collection directly what a request needs at least, on the same engine; the creation
// floor at each size: on a fresh database at CasesSmall, and for the last CreateSample cases up to CasesLarge
// in the service's own database, right after the cases made through the API.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

const (
	secCases     = "6 case-svc"
	secConnector = "7 connector"
	secMemory    = "8 memory"
	// sharedValues is how many distinct values the first CasesSmall cases share (one observable each), so an
	// alert carrying alertShared of them has the same similar cases at both sizes.
	sharedValues = 50
	alertShared  = 4
)

// caseRun is section 6's state.
type caseRun struct {
	b   *bench
	s   *stack
	ids []string // case ids ("~N") in creation order
	// creation latencies per case: POST /api/case and POST …/artifact, by case index
	caseLat, obsLat []time.Duration
	alertID         string
	// documents as the service wrote them: the shapes of the floors' and the bulk fill's documents
	rawCase, rawTask, rawObs doc
	bulkSeq                  atomic.Int64 // values of the 1000-observable requests
}

// sizeResult holds one size's measurements.
type sizeResult struct {
	cases, observables, tasks int64
	waiting, waitingFloor     []time.Duration
	search, searchFloor       []time.Duration
	stats, statsFloor         []time.Duration
	statsDocs                 []time.Duration // the groups over the documents (raw SQL), for the note
	similar, similarFloor     []time.Duration
	bulk, bulkFloor           []time.Duration
	similarCount              int
	waitingTotal, searchTotal string
}

// caseValue is observable k of case i: unique ips, and for the first CasesSmall cases one of sharedValues
// shared ips as observable 0.
func (r *caseRun) caseValue(i, k int) string {
	if k == 0 && i < r.b.sizes.CasesSmall {
		return fmt.Sprintf("198.51.100.%d", i%sharedValues)
	}
	g := i*r.b.sizes.ObservablesPerCase + k
	return fmt.Sprintf("10.%d.%d.%d", g>>16&255, g>>8&255, g&255)
}

func (r *caseRun) caseBody(i int) map[string]any {
	tasks := make([]map[string]any, r.b.sizes.TasksPerCase)
	for t := range tasks {
		tasks[t] = map[string]any{"title": fmt.Sprintf("Task %d", t+1), "group": "triage"}
	}
	return map[string]any{"title": fmt.Sprintf("Bench case %d", i), "description": "A case of the benchmark, with its tasks and observables",
		"severity": 1 + i%4, "tags": []string{"bench", fmt.Sprintf("group-%d", i%10)}, "tasks": tasks}
}

// createCase makes case i through the API.
func (r *caseRun) createCase(ctx context.Context, i int) (string, time.Duration, time.Duration, error) {
	var cs struct {
		ID string `json:"id"`
	}
	d1, err := benchkit.Timed(func() error {
		_, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/case", r.caseBody(i), http.StatusCreated, &cs)
		return err
	})
	if err != nil {
		return "", 0, 0, err
	}
	values := make([]string, r.b.sizes.ObservablesPerCase)
	for k := range values {
		values[k] = r.caseValue(i, k)
	}
	var obs []json.RawMessage
	d2, err := benchkit.Timed(func() error {
		_, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/case/"+cs.ID+"/artifact",
			map[string]any{"dataType": "ip", "data": values, "message": "bench observable"}, http.StatusCreated, &obs)
		return err
	})
	if err != nil {
		return "", 0, 0, err
	}
	if len(obs) != len(values) {
		return "", 0, 0, fmt.Errorf("case %s: %d observables created, want %d", cs.ID, len(obs), len(values))
	}
	return cs.ID, d1, d2, nil
}

// createAPI creates cases [len(r.ids), target) through the API with the bench's clients; it returns the
// elapsed time.
func (r *caseRun) createAPI(ctx context.Context, target int) (time.Duration, error) {
	from := len(r.ids)
	n := target - from
	ids := make([]string, n)
	cl, ol := make([]time.Duration, n), make([]time.Duration, n)
	var done atomic.Int64
	start := time.Now()
	var mu sync.Mutex
	last := start
	err := benchkit.Parallel(r.b.sizes.Clients, n, func(k int) error {
		id, d1, d2, err := r.createCase(ctx, from+k)
		if err != nil {
			return err
		}
		ids[k], cl[k], ol[k] = id, d1, d2
		if c := done.Add(1); c%1000 == 0 {
			mu.Lock()
			r.b.Logf("cases: %d of %d created (%.0f/s)", from+int(c), target, 1000/time.Since(last).Seconds())
			last = time.Now()
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if n%1000 != 0 {
		r.b.Logf("cases: %d created (%.0f/s)", n, float64(n)/elapsed.Seconds())
	}
	r.ids = append(r.ids, ids...)
	r.caseLat, r.obsLat = append(r.caseLat, cl...), append(r.obsLat, ol...)
	return elapsed, nil
}

// coll is a collection of the stack's database, opened with its store's spec.
func (r *caseRun) coll(ctx context.Context, name string) (*docstore.Collection, error) {
	return collection(ctx, r.s.db, name)
}

// readShapes reads a case, a task and an observable as the service stored them.
func (r *caseRun) readShapes(ctx context.Context) error {
	id := r.ids[len(r.ids)-1]
	for _, x := range []struct {
		coll string
		f    search.Node
		dst  *doc
	}{{"cases", docstore.ID(id), &r.rawCase}, {"tasks", docstore.Eq("case", id), &r.rawTask},
		{"observables", docstore.Eq("case", id), &r.rawObs}} {
		c, err := r.coll(ctx, x.coll)
		if err != nil {
			return err
		}
		raw, err := c.FindRaw(ctx, docstore.Query{Filter: x.f, Limit: 1})
		if err != nil || len(raw) == 0 {
			return fmt.Errorf("read a stored document of %s: %d, %v", x.coll, len(raw), err)
		}
		if *x.dst, err = decodeDoc(raw[0]); err != nil {
			return fmt.Errorf("read a stored document of %s: %w", x.coll, err)
		}
	}
	return nil
}

// runCases is section 6.
func runCases(ctx context.Context, b *bench, st *stack) (*caseRun, error) {
	b.Service = "case-svc"
	r := &caseRun{b: b, s: st}
	z := b.sizes
	var createSmall time.Duration
	if err := b.Phase("create "+count(z.CasesSmall), func() (err error) {
		createSmall, err = r.createAPI(ctx, z.CasesSmall)
		return err
	}); err != nil {
		return nil, err
	}
	if err := r.readShapes(ctx); err != nil {
		return nil, err
	}
	var floorRate float64
	var floorCase, floorObs []time.Duration
	if err := b.Phase("create floor", func() (err error) {
		floorRate, floorCase, floorObs, err = r.createFloor(ctx, z.CasesSmall)
		return err
	}); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("docstore Collection calls, %d goroutines, per case: FindOneAndUpdate counter + Insert case + InsertMany %d tasks + InsertMany %d observables",
		z.Clients, z.TasksPerCase, z.ObservablesPerCase)
	b.Add(benchkit.RateKind, secCases, fmt.Sprintf("create 0 → %s cases (+%d tasks, +%d observables each), %d clients", count(z.CasesSmall),
		z.TasksPerCase, z.ObservablesPerCase, z.Clients), "cases/s", float64(z.CasesSmall)/createSmall.Seconds(), floorRate, what,
		"a case = POST /api/case with its tasks + POST /api/case/{id}/artifact with its values")
	r.addCreateLatency(0, z.CasesSmall, floorCase, floorObs)

	// The alert whose similar cases are measured: alertShared of the shared values, and values no case has.
	if err := r.createAlert(ctx); err != nil {
		return nil, err
	}
	var small, large sizeResult
	if err := b.Phase("measure "+count(z.CasesSmall), func() (err error) {
		small, err = r.measure(ctx, z.QueryReps, z.SimilarReps, z.BulkReps)
		return err
	}); err != nil {
		return nil, err
	}
	r.addSize(small)

	// Cases are made up to CasesLarge less CreateSample (bulk: the last CreateSample of them through the API),
	// then the creation floor at that size: the last CreateSample cases with the floor's Collection calls, in
	// the same database (values of their observables unique: the similar cases of the alert stay the same).
	apiTarget := z.CasesLarge - z.CreateSample
	var fillTime, sampleTime time.Duration
	if err := b.Phase("fill "+count(z.CasesLarge), func() (err error) {
		if z.Fill == "bulk" {
			if fillTime, err = r.fillBulk(ctx, apiTarget-z.CreateSample); err != nil {
				return err
			}
			sampleTime, err = r.createAPI(ctx, apiTarget)
			return err
		}
		fillTime, err = r.createAPI(ctx, apiTarget)
		return err
	}); err != nil {
		return nil, err
	}
	last := len(r.ids) - min(len(r.ids)-z.CasesSmall, z.CasesSmall) // the last CasesSmall cases made through the API
	if z.Fill == "bulk" {
		last = len(r.ids) - z.CreateSample
	}
	made := len(r.ids)
	var largeRate float64
	var largeCase, largeObs []time.Duration
	if err := b.Phase("create floor "+count(z.CasesLarge), func() error {
		var ids []string
		var err error
		largeRate, largeCase, largeObs, ids, err = r.floorCases(ctx, r.s.db, made, z.CasesLarge-made)
		r.ids = append(r.ids, ids...)
		// Not API figures: left out of the percentiles.
		r.caseLat, r.obsLat = append(r.caseLat, make([]time.Duration, len(ids))...), append(r.obsLat, make([]time.Duration, len(ids))...)
		return err
	}); err != nil {
		return nil, err
	}
	largeWhat := fmt.Sprintf("the floor's Collection calls for cases %s → %s, in the same database right after these",
		count(made), count(z.CasesLarge))
	if z.Fill == "bulk" {
		b.Add(benchkit.RateKind, secCases, fmt.Sprintf("create %s → %s cases through the API, %d clients", count(last),
			count(made), z.Clients), "cases/s", float64(made-last)/sampleTime.Seconds(), largeRate, largeWhat,
			fmt.Sprintf("cases %s → %s were inserted with InsertMany (%.1f s; documents shaped as the API writes them), not "+
				"through the API, which would take too long", count(z.CasesSmall), count(last), fillTime.Seconds()))
	} else {
		n := made - z.CasesSmall
		b.Add(benchkit.RateKind, secCases, fmt.Sprintf("create %s → %s cases, %d clients", count(z.CasesSmall), count(made), z.Clients),
			"cases/s", float64(n)/fillTime.Seconds(), largeRate, largeWhat, fmt.Sprintf("%.0f s for %d cases", fillTime.Seconds(), n))
	}
	r.addCreateLatency(last, made, largeCase, largeObs)

	if err := b.Phase("measure "+count(z.CasesLarge), func() (err error) {
		large, err = r.measure(ctx, z.QueryRepsLarge, z.SimilarRepsLarge, z.BulkRepsLarge)
		return err
	}); err != nil {
		return nil, err
	}
	r.addSize(large)
	r.addGrowth(small, large)
	return r, nil
}

// addCreateLatency adds the p50 rows of case and observable creation for the cases [from, to).
func (r *caseRun) addCreateLatency(from, to int, floorCase, floorObs []time.Duration) {
	cl, ol := r.caseLat[from:to], r.obsLat[from:to]
	span := fmt.Sprintf("cases %s–%s", count(from), count(to))
	if from == 0 {
		span = "the first " + count(to) + " cases"
	}
	r.b.Add(benchkit.TimeKind, secCases, fmt.Sprintf("POST /api/case (%d tasks) p50, %s", r.b.sizes.TasksPerCase, span), "ms",
		benchkit.Percentile(cl, .5), benchkit.Percentile(floorCase, .5), "Collection FindOneAndUpdate counter + Insert case + InsertMany tasks p50",
		fmt.Sprintf("p99 %.1f ms (floor %.1f ms); %d clients at once", benchkit.Percentile(cl, .99), benchkit.Percentile(floorCase, .99), r.b.sizes.Clients))
	r.b.Add(benchkit.TimeKind, secCases, fmt.Sprintf("POST /api/case (%d tasks) p99, %s", r.b.sizes.TasksPerCase, span), "ms",
		benchkit.Percentile(cl, .99), benchkit.Percentile(floorCase, .99), "Collection FindOneAndUpdate counter + Insert case + InsertMany tasks p99",
		fmt.Sprintf("%d cases, %d clients at once", len(cl), r.b.sizes.Clients))
	r.b.Add(benchkit.TimeKind, secCases, fmt.Sprintf("POST /api/case/{id}/artifact (%d values) p50, %s", r.b.sizes.ObservablesPerCase, span), "ms",
		benchkit.Percentile(ol, .5), benchkit.Percentile(floorObs, .5), fmt.Sprintf("Collection InsertMany of %d observables p50", r.b.sizes.ObservablesPerCase),
		fmt.Sprintf("p99 %.1f ms (floor %.1f ms)", benchkit.Percentile(ol, .99), benchkit.Percentile(floorObs, .99)))
}

// createFloor does with docstore's Collection what creating n cases needs at least, with the same
// goroutines, on a database of its own whose collections get the stores' indexes (through the store
// constructors).
func (r *caseRun) createFloor(ctx context.Context, n int) (float64, []time.Duration, []time.Duration, error) {
	fdb, err := openDB(ctx, r.b.DB(filepath.Join(r.b.Tmp, "db"), "bench_floor"), nil)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = fdb.Close(context.WithoutCancel(ctx)) }()
	if _, err := store.NewCaseStore(ctx, fdb); err != nil {
		return 0, nil, nil, err
	}
	if _, err := store.NewTaskStore(ctx, fdb); err != nil {
		return 0, nil, nil, err
	}
	if _, err := store.NewObservableStore(ctx, fdb); err != nil {
		return 0, nil, nil, err
	}
	rate, cl, ol, _, err := r.floorCases(ctx, fdb, 0, n)
	return rate, cl, ol, err
}

// floorCases makes cases [from, from+n) of the bench's shapes in db as createFloor describes, and returns the
// rate, the latencies of the case part and of the observable part, and the case ids.
func (r *caseRun) floorCases(ctx context.Context, db *docstore.DB, from, n int) (float64, []time.Duration, []time.Duration, []string, error) {
	colls := map[string]*docstore.Collection{}
	for _, name := range []string{"counters", "cases", "tasks", "observables"} {
		c, err := collection(ctx, db, name)
		if err != nil {
			return 0, nil, nil, nil, err
		}
		colls[name] = c
	}
	counters, cs, ts, os := colls["counters"], colls["cases"], colls["tasks"], colls["observables"]
	cl, ol, ids := make([]time.Duration, n), make([]time.Duration, n), make([]string, n)
	start := time.Now()
	err := benchkit.Parallel(r.b.sizes.Clients, n, func(k int) error {
		now := time.Now().UnixMilli()
		t0 := time.Now()
		var seq struct {
			Seq int64 `json:"seq"`
		}
		if err := counters.FindOneAndUpdate(ctx, docstore.ID("caseNumber"), nil, docstore.Inc("seq", 1),
			docstore.FindAndUpdate{Upsert: true}, &seq); err != nil {
			return err
		}
		c, tasks, obs := r.caseDocs(from+k, seq.Seq, now)
		if err := cs.Insert(ctx, c); err != nil {
			return err
		}
		if err := insertAll(ctx, ts, tasks); err != nil {
			return err
		}
		cl[k] = time.Since(t0)
		t1 := time.Now()
		if err := insertAll(ctx, os, obs); err != nil {
			return err
		}
		ol[k] = time.Since(t1)
		ids[k] = "~" + strconv.FormatInt(seq.Seq, 10)
		return nil
	})
	rate := float64(n) / time.Since(start).Seconds()
	if err != nil {
		return rate, cl, ol, ids, err
	}
	return rate, cl, ol, ids, syncOrgCounter(ctx, counters)
}

// syncOrgCounter moves the bench organisation's case number sequence past the cases written directly (their
// numbers are values of the id sequence, higher than any number the organisation had).
func syncOrgCounter(ctx context.Context, counters *docstore.Collection) error {
	var top struct {
		Seq int64 `json:"seq"`
	}
	if err := counters.Get(ctx, "caseNumber", &top); err != nil {
		return err
	}
	_, err := counters.UpdateOne(ctx, docstore.ID(store.CaseNumberCounter(benchOrg)), docstore.Set("seq", top.Seq), true)
	return err
}

// insertAll inserts docs with one InsertMany and fails on the first document refused.
func insertAll(ctx context.Context, c *docstore.Collection, docs []any) error {
	res, err := c.InsertMany(ctx, docs)
	if err != nil {
		return err
	}
	for i, e := range res {
		if e != nil {
			return fmt.Errorf("insert into %s: document %d: %w", c.Name(), i, e)
		}
	}
	return nil
}

// caseDocs are case i's documents with the number num, shaped as the service writes them.
func (r *caseRun) caseDocs(i int, num int64, now int64) (doc, []any, []any) {
	id := "~" + strconv.FormatInt(num, 10)
	body := r.caseBody(i)
	c := r.rawCase.with("_id", id, "caseId", num, "title", body["title"], "severity", body["severity"],
		"tags", []string{"bench", fmt.Sprintf("group-%d", i%10)}, "startDate", now, "createdAt", now)
	tasks := make([]any, r.b.sizes.TasksPerCase)
	for t := range tasks {
		tasks[t] = r.rawTask.with("_id", fmt.Sprintf("~%011x%08x", now, uint32(i)<<8|uint32(t)), "case", id,
			"title", fmt.Sprintf("Task %d", t+1), "order", t, "createdAt", now)
	}
	obs := make([]any, r.b.sizes.ObservablesPerCase)
	for k := range obs {
		obs[k] = r.observableDoc(id, "ip", r.caseValue(i, k), now)
	}
	return c, tasks, obs
}

// observableDoc is an observable of the case with this value, as the service writes it (its _id derived from
// the case and the value the same way).
func (r *caseRun) observableDoc(caseID, dataType, value string, now int64) doc {
	sum := sha256.Sum256([]byte(value))
	key := "d:" + hex.EncodeToString(sum[:])
	idSum := sha256.Sum256([]byte("case:" + caseID + "\x00" + dataType + "\x00" + key))
	return r.rawObs.with("_id", "~"+hex.EncodeToString(idSum[:16]), "case", caseID, "dataType", dataType, "data", value,
		"key", key, "startDate", now, "createdAt", now)
}

// fillBulk inserts cases [len(r.ids), target) with InsertMany (batches of 500 cases) into the stores'
// collections, moves the case number sequence past them, and returns the elapsed time.
func (r *caseRun) fillBulk(ctx context.Context, target int) (time.Duration, error) {
	start := time.Now()
	colls := map[string]*docstore.Collection{}
	for _, name := range []string{"counters", "cases", "tasks", "observables"} {
		c, err := r.coll(ctx, name)
		if err != nil {
			return 0, err
		}
		colls[name] = c
	}
	var top struct {
		Seq int64 `json:"seq"`
	}
	if err := colls["counters"].Get(ctx, "caseNumber", &top); err != nil {
		return 0, err
	}
	num := top.Seq
	for len(r.ids) < target {
		batch := min(500, target-len(r.ids))
		var cs, ts, os []any
		now := time.Now().UnixMilli()
		for k := range batch {
			num++
			c, tasks, obs := r.caseDocs(len(r.ids)+k, num, now)
			cs = append(cs, c)
			ts = append(ts, tasks...)
			os = append(os, obs...)
		}
		for _, w := range []struct {
			coll string
			docs []any
		}{{"cases", cs}, {"tasks", ts}, {"observables", os}} {
			if err := insertAll(ctx, colls[w.coll], w.docs); err != nil {
				return 0, fmt.Errorf("bulk insert: %w", err)
			}
		}
		for k := range batch {
			r.ids = append(r.ids, "~"+strconv.FormatInt(num-int64(batch)+1+int64(k), 10))
		}
		if len(r.ids)%10_000 == 0 {
			r.b.Logf("cases: %d stored (%.0fs)", len(r.ids), time.Since(start).Seconds())
		}
		// The latencies of bulk cases are not API figures: leave them out of the percentiles.
		r.caseLat, r.obsLat = append(r.caseLat, make([]time.Duration, batch)...), append(r.obsLat, make([]time.Duration, batch)...)
	}
	if _, err := colls["counters"].UpdateOne(ctx, docstore.ID("caseNumber"), docstore.Set("seq", num), false); err != nil {
		return 0, err
	}
	if err := syncOrgCounter(ctx, colls["counters"]); err != nil {
		return 0, err
	}
	r.b.Logf("cases: %d stored by InsertMany in %.1fs", len(r.ids), time.Since(start).Seconds())
	return time.Since(start), nil
}

// createAlert creates the alert of the similarity measurements: alertShared shared values plus as many that no
// case has.
func (r *caseRun) createAlert(ctx context.Context) error {
	var values []string
	for k := range alertShared {
		values = append(values, fmt.Sprintf("198.51.100.%d", k))
		values = append(values, fmt.Sprintf("203.0.113.%d", k))
	}
	var a struct {
		ID string `json:"id"`
	}
	if _, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/alert", map[string]any{"type": "bench", "source": "case-bench",
		"sourceRef": "similar-1", "title": "Bench alert", "description": "Alert whose similar cases are measured",
		"artifacts": []map[string]any{{"dataType": "ip", "data": values}}}, http.StatusCreated, &a); err != nil {
		return err
	}
	r.alertID = a.ID
	return nil
}

// measure times, at the current size, the waitingTasks query, a case search page, the alert's similar cases
// and a 1000-observable request, each against its floor.
func (r *caseRun) measure(ctx context.Context, queryReps, similarReps, bulkReps int) (sizeResult, error) {
	var res sizeResult
	var err error
	org := docstore.Eq("organisation", benchOrg)
	// What the bench stored: the 1000-observable requests of the previous size were removed again, the alert
	// holds 2·alertShared observables.
	z := r.b.sizes
	res.cases, res.tasks = int64(len(r.ids)), int64(len(r.ids)*z.TasksPerCase)
	res.observables = int64(len(r.ids)*z.ObservablesPerCase + 2*alertShared)
	r.b.Logf("measure: %d cases, %d tasks, %d observables", res.cases, res.tasks, res.observables)
	part := time.Now()
	done := func(what string, lat, floor []time.Duration) {
		r.b.Logf("  %s: p50 %.1f ms, floor p50 %.1f ms (%.1fs)", what, benchkit.Percentile(lat, .5), benchkit.Percentile(floor, .5), time.Since(part).Seconds())
		part = time.Now()
	}

	// The waitingTasks query and its floor: find (same filter, sort, limit) + count.
	waitingQuery := map[string]any{"query": []any{map[string]any{"_name": "waitingTasks"},
		map[string]any{"_name": "sort", "_fields": []any{map[string]any{"startDate": "desc"}}},
		map[string]any{"_name": "page", "from": 0, "to": 50}}}
	waitingFilter := docstore.And(docstore.Eq("status", "Waiting"), org)
	if res.waiting, res.waitingFloor, res.waitingTotal, err = r.timeList(ctx, queryReps, "/api/v0/query", waitingQuery,
		"tasks", waitingFilter, docstore.Sort("-startDate")); err != nil {
		return res, fmt.Errorf("waitingTasks: %w", err)
	}
	done("waitingTasks", res.waiting, res.waitingFloor)

	// A case search page: open cases of severity ≥ 3, newest first.
	searchQuery := map[string]any{"query": map[string]any{"_and": []any{map[string]any{"status": "Open"},
		map[string]any{"_gte": map[string]any{"severity": 3}}}}}
	searchFilter := docstore.And(docstore.Eq("status", "Open"), docstore.Gte("severity", 3), org)
	if res.search, res.searchFloor, res.searchTotal, err = r.timeList(ctx, queryReps, "/api/case/_search?range=0-50&sort=-startDate",
		searchQuery, "cases", searchFilter, docstore.Sort("-startDate")); err != nil {
		return res, fmt.Errorf("case search: %w", err)
	}
	done("case search", res.search, res.searchFloor)

	// Statistics of a dashboard: the open cases by severity.
	statsQuery := map[string]any{"query": map[string]any{"status": "Open"},
		"stats": []any{map[string]any{"_agg": "field", "_field": "severity", "_select": []any{map[string]any{"_agg": "count"}}}}}
	if res.stats, res.statsFloor, err = r.timeStats(ctx, queryReps, "/api/case/_stats", statsQuery, "cases",
		docstore.And(docstore.Eq("status", "Open"), org), "severity"); err != nil {
		return res, fmt.Errorf("case stats: %w", err)
	}
	done("case stats", res.stats, res.statsFloor)
	if !r.b.OnMongo() { // for the analysis: the same groups counted over the documents (every open case's entry)
		for range queryReps {
			d, err := benchkit.Timed(func() error {
				_, err := r.s.db.RawSQL(ctx, `SELECT json_extract(doc,'$."severity"'), count(*) FROM "cases" WHERE json_extract(doc,'$."organisation"') = ? `+
					`AND json_extract(doc,'$."status"') = 'Open' GROUP BY 1`, benchOrg)
				return err
			})
			if err != nil {
				return res, fmt.Errorf("stats over the documents: %w", err)
			}
			res.statsDocs = append(res.statsDocs, d)
		}
	}

	// Similar cases of the alert, and the floor: the find by the similarity keys.
	var keys []string
	for k := range alertShared {
		for _, v := range []string{fmt.Sprintf("198.51.100.%d", k), fmt.Sprintf("203.0.113.%d", k)} {
			sum := sha256.Sum256([]byte(v))
			keys = append(keys, "d:"+hex.EncodeToString(sum[:]))
		}
	}
	observables, err := r.coll(ctx, "observables")
	if err != nil {
		return res, err
	}
	alerts, err := r.coll(ctx, "alerts")
	if err != nil {
		return res, err
	}
	casesColl, err := r.coll(ctx, "cases")
	if err != nil {
		return res, err
	}
	simFilter := docstore.And(org, docstore.In("key", keys...), docstore.Exists("case"), docstore.Eq("ignoreSimilarity", false))
	simQuery := docstore.Query{Filter: simFilter, Fields: []string{"case", "dataType", "ioc", "key"}}
	// The floor: the statements the answer needs, one after the other, without HTTP, authentication, decoding
	// or rendering: the alert, its observables, the bound count of the similar observables, the similar
	// observables, their cases, and the two counts of those cases' observables and IOCs.
	similarFloor := func() (int, error) {
		if _, err := alerts.FindRaw(ctx, docstore.Query{Filter: docstore.And(docstore.ID(r.alertID), org)}); err != nil {
			return 0, err
		}
		if _, err := observables.FindRaw(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("alert", r.alertID), org)}); err != nil {
			return 0, err
		}
		if _, err := observables.Count(ctx, simFilter); err != nil {
			return 0, err
		}
		var sim []struct {
			Case string `json:"case"`
		}
		if err := observables.Find(ctx, simQuery, &sim); err != nil {
			return 0, err
		}
		var ids []string
		for _, o := range sim {
			ids = append(ids, o.Case)
		}
		found, err := casesColl.FindRaw(ctx, docstore.Query{Filter: docstore.And(docstore.In("_id", ids...), org)})
		if err != nil {
			return 0, err
		}
		counted := docstore.And(docstore.In("case", ids...), docstore.Eq("ignoreSimilarity", false))
		if _, err := observables.GroupCount(ctx, counted, "case", 0); err != nil {
			return 0, err
		}
		if _, err := observables.GroupCount(ctx, docstore.And(counted, docstore.Eq("ioc", true)), "case", 0); err != nil {
			return 0, err
		}
		return len(found), nil
	}
	for range similarReps {
		var a struct {
			SimilarCases []json.RawMessage `json:"similarCases"`
		}
		d, err := benchkit.Timed(func() error {
			_, err := r.s.analyst.Call(ctx, http.MethodGet, "/api/alert/"+r.alertID+"?similarity=1", nil, http.StatusOK, &a)
			return err
		})
		if err != nil {
			return res, err
		}
		res.similarCount = len(a.SimilarCases)
		var found int
		fd, err := benchkit.Timed(func() error {
			var err error
			found, err = similarFloor()
			return err
		})
		if err != nil {
			return res, err
		}
		if found != res.similarCount {
			r.b.Logf("similar: the floor finds %d cases, the service %d similar cases", found, res.similarCount)
		}
		res.similar, res.similarFloor = append(res.similar, d), append(res.similarFloor, fd)
	}
	done("similar cases", res.similar, res.similarFloor)
	want := min(r.b.sizes.CasesSmall, len(r.ids)) / sharedValues * alertShared
	if res.similarCount != want {
		return res, fmt.Errorf("similar cases: %d, want %d", res.similarCount, want)
	}

	// 1000 observables in one request, and the floor: InsertMany of 1000 documents of the same shape into the
	// same collection. Both are removed afterwards (one DeleteMany on their message), so the next size starts
	// from the same volume.
	added := 0
	for i := range bulkReps {
		caseID := r.ids[i*len(r.ids)/bulkReps]
		values := make([]string, r.b.sizes.BulkValues)
		for k := range values {
			n := r.bulkSeq.Add(1)
			values[k] = fmt.Sprintf("bulk-%d.example.net", n)
		}
		var obs []struct {
			ID string `json:"id"`
		}
		d, err := benchkit.Timed(func() error {
			_, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/case/"+caseID+"/artifact",
				map[string]any{"dataType": "domain", "data": values, "message": "bulk"}, http.StatusCreated, &obs)
			return err
		})
		if err != nil {
			return res, err
		}
		if len(obs) != len(values) {
			return res, fmt.Errorf("bulk: %d observables created, want %d", len(obs), len(values))
		}
		docs := make([]any, len(values))
		now := time.Now().UnixMilli()
		for k := range docs {
			docs[k] = r.observableDoc(caseID, "domain", "floor-"+values[k], now).with("message", "bulk")
		}
		added += len(obs) + len(docs)
		fd, err := benchkit.Timed(func() error { return insertAll(ctx, observables, docs) })
		if err != nil {
			return res, err
		}
		res.bulk, res.bulkFloor = append(res.bulk, d), append(res.bulkFloor, fd)
	}
	done(fmt.Sprintf("%d observables", z.BulkValues), res.bulk, res.bulkFloor)
	if added > 0 {
		n, err := observables.DeleteMany(ctx, docstore.Eq("message", "bulk"))
		if err != nil {
			return res, err
		}
		if int(n) != added {
			return res, fmt.Errorf("bulk cleanup: %d of %d removed", n, added)
		}
		r.b.Logf("  cleanup: %d observables removed (%.1fs)", added, time.Since(part).Seconds())
	}
	return res, nil
}

// timeList times reps calls of a list route (POST path body, a page of 50 with X-Total) and as many of the
// floor: a bare handler (benchkit.Bare) that runs FindRaw of the same page (filter, sort then _id, limit 50)
// on coll, then Count with the filter (a tally's sum on SQLite where the store declares one, as for the
// service), and answers the same body. The caller's reads (authentication) are not in the floor.
func (r *caseRun) timeList(ctx context.Context, reps int, path string, body any, coll string, filter search.Node,
	sort []search.SortKey) (lat, floor []time.Duration, total string, err error) {
	c, err := r.coll(ctx, coll)
	if err != nil {
		return nil, nil, "", err
	}
	bare := benchkit.NewBare()
	defer bare.Close()
	bc := benchkit.NewClient(bare.URL, "")
	q := docstore.Query{Filter: filter, Sort: docstore.StableSort(sort), Limit: 50}
	for k := range reps + 1 {
		var got []json.RawMessage
		var res *benchkit.Response
		d, err := benchkit.Timed(func() error {
			var err error
			res, err = r.s.analyst.Call(ctx, http.MethodPost, path, body, http.StatusOK, &got)
			if err == nil {
				total = res.Header.Get("X-Total")
			}
			return err
		})
		if err != nil {
			return nil, nil, "", err
		}
		if len(got) != 50 || total == "" {
			return nil, nil, "", fmt.Errorf("%s: %d results, X-Total %q", path, len(got), total)
		}
		var raw [][]byte
		var n int64
		bare.Set("POST /list", res.Body, func(ctx context.Context) error {
			var err error
			if raw, err = c.FindRaw(ctx, q); err != nil {
				return err
			}
			n, err = c.Count(ctx, filter)
			return err
		})
		fd, err := benchkit.Timed(func() error {
			_, err := bc.Call(ctx, http.MethodPost, "/list", body, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return nil, nil, "", err
		}
		if strconv.FormatInt(n, 10) != total || len(raw) != 50 {
			return nil, nil, "", fmt.Errorf("%s: the floor finds %d and counts %d, the service X-Total %s", path, len(raw), n, total)
		}
		if k > 0 { // the first is a warm-up
			lat, floor = append(lat, d), append(floor, fd)
		}
	}
	return lat, floor, total, nil
}

// timeStats times reps calls of a statistics route (POST path body) and as many of the floor: a bare handler
// (benchkit.Bare) that runs GroupCount of the filter by path on coll (a tally's sum on SQLite where the store
// declares one, as for the service) and answers the same body.
func (r *caseRun) timeStats(ctx context.Context, reps int, path string, body any, coll string, filter search.Node,
	by string) (lat, floor []time.Duration, err error) {
	c, err := r.coll(ctx, coll)
	if err != nil {
		return nil, nil, err
	}
	bare := benchkit.NewBare()
	defer bare.Close()
	bc := benchkit.NewClient(bare.URL, "")
	for k := range reps + 1 {
		var res *benchkit.Response
		d, err := benchkit.Timed(func() error {
			var err error
			res, err = r.s.analyst.Call(ctx, http.MethodPost, path, body, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		var groups []docstore.Group
		bare.Set("POST /stats", res.Body, func(ctx context.Context) error {
			var err error
			groups, err = c.GroupCount(ctx, filter, by, 0)
			return err
		})
		fd, err := benchkit.Timed(func() error {
			_, err := bc.Call(ctx, http.MethodPost, "/stats", body, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if len(groups) == 0 || !bytes.Contains(res.Body, []byte(`"count"`)) {
			return nil, nil, fmt.Errorf("%s: %s, the floor %d groups", path, res.Body, len(groups))
		}
		if k > 0 { // the first is a warm-up
			lat, floor = append(lat, d), append(floor, fd)
		}
	}
	return lat, floor, nil
}

// addSize adds one size's rows.
func (r *caseRun) addSize(s sizeResult) {
	b, label := r.b, count(int(s.cases))+" cases"
	pair := func(metric, floorWhat, note string, lat, floor []time.Duration) {
		b.Add(benchkit.TimeKind, secCases, metric+" p50, "+label, "ms", benchkit.Percentile(lat, .5), benchkit.Percentile(floor, .5), floorWhat+" p50", note)
		b.Add(benchkit.TimeKind, secCases, metric+" p99, "+label, "ms", benchkit.Percentile(lat, .99), benchkit.Percentile(floor, .99), floorWhat+" p99", note)
	}
	listFloor := "bare handler, the same body: Collection FindRaw (same filter, sort, limit 50) + Count (the tally's sum)"
	if b.OnMongo() {
		listFloor = "bare handler, the same body: Collection FindRaw (same filter, sort, limit 50) + Count"
	}
	pair("waitingTasks query (sort startDate desc, page 0–50)", listFloor,
		fmt.Sprintf("%d queries, one client; %s tasks stored, X-Total %s", len(s.waiting), count(int(s.tasks)), s.waitingTotal),
		s.waiting, s.waitingFloor)
	pair("case _search status+severity, -startDate, 0–50", listFloor,
		fmt.Sprintf("%d searches, one client; X-Total %s", len(s.search), s.searchTotal), s.search, s.searchFloor)
	statsFloor := "bare handler, the same body: Collection GroupCount by severity (the tally's sums)"
	if b.OnMongo() {
		statsFloor = "bare handler, the same body: Collection GroupCount by severity"
	}
	statsNote := fmt.Sprintf("%d calls, one client", len(s.stats))
	if len(s.statsDocs) > 0 {
		statsNote += fmt.Sprintf("; the same groups over the documents (raw SQL GROUP BY on the cases) p50 %.3f ms", benchkit.Percentile(s.statsDocs, .5))
	}
	pair("case _stats, open cases by severity", statsFloor, statsNote, s.stats, s.statsFloor)
	pair("GET /api/alert/{id}?similarity=1", "the collection calls the answer needs (alert, its observables, count and find of the similar ones, their cases, 2 group counts)",
		fmt.Sprintf("%d calls; %d similar cases; %s observables stored; the alert has %d values", len(s.similar), s.similarCount,
			count(int(s.observables)), 2*alertShared), s.similar, s.similarFloor)
	pair(fmt.Sprintf("POST /api/case/{id}/artifact, %d values", r.b.sizes.BulkValues),
		fmt.Sprintf("Collection InsertMany of %d observables (same collection)", r.b.sizes.BulkValues),
		fmt.Sprintf("%d requests, one client", len(s.bulk)), s.bulk, s.bulkFloor)
}

// addGrowth adds how each measure's p50 grew from the small to the large size, against the floor's growth.
func (r *caseRun) addGrowth(s, l sizeResult) {
	label := count(int(s.cases)) + " → " + count(int(l.cases)) + " cases"
	growth := func(a, b []time.Duration) float64 { return benchkit.Percentile(b, .5) / benchkit.Percentile(a, .5) }
	for _, g := range []struct {
		name           string
		a, b, fa, fb   []time.Duration
		floorWhat, why string
	}{
		{"waitingTasks query", s.waiting, l.waiting, s.waitingFloor, l.waitingFloor, "growth of the FindRaw + Count", ""},
		{"case _search", s.search, l.search, s.searchFloor, l.searchFloor, "growth of the FindRaw + Count", ""},
		{"case _stats", s.stats, l.stats, s.statsFloor, l.statsFloor, "growth of the GroupCount", ""},
		{"similar cases", s.similar, l.similar, s.similarFloor, l.similarFloor, "growth of the FindRaw by key", ""},
		{fmt.Sprintf("%d observables in one request", r.b.sizes.BulkValues), s.bulk, l.bulk, s.bulkFloor, l.bulkFloor,
			"growth of the InsertMany", ""},
	} {
		r.b.Add(benchkit.TimeKind, secCases, g.name+" growth "+label+" (p50)", "×", growth(g.a, g.b), growth(g.fa, g.fb), g.floorWhat, g.why)
	}
}
