package main

// The analysis-svc suite: sections 1–5 and 8 of the benchmark issue, and its web interface's rows of
// section 6 (pages.go).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/process"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore"
)

const (
	secPipeline = "1 job pipeline"
	secCache    = "2 cache hits"
	secWait     = "3 waitreport wake-up"
	secProcess  = "4 process runner"
	secReads    = "5 reads"
	secEvents   = "5b job events"
	secMemory   = "8 memory"
)

// jobView is the part of a job response the bench reads.
type jobView struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	CreatedAt int64           `json:"createdAt"`
	EndDate   *int64          `json:"endDate"`
	FromCache bool            `json:"fromCache"`
	Report    json.RawMessage `json:"report"`
}

type analysisRun struct {
	b     *bench
	dbDir string // the folder of every section's embedded database (and the floors')
	logs  *benchkit.LogSink
	s     *stack // the current section's service
	bare  *benchkit.Bare
	// rawJob is a finished Echo job as the store wrote it in `jobs`: the shape of the floors' documents and
	// of the documents section 5 inserts.
	rawJob map[string]any
	// rawReport is that job's report as the store wrote it in `reports` (the pipeline floor stores one per job).
	rawReport map[string]any
}

// runAnalysis runs sections 1–5, 6 (web interface) and 8. Each section gets a service of its own on a fresh embedded database
// (so its rows do not depend on what the sections before it stored; how the stored volume matters is what
// section 5 measures), and the floors run on a database of their own through the same collection API.
func runAnalysis(ctx context.Context, b *bench) error {
	b.Service = "analysis-svc"
	a := &analysisRun{b: b, bare: benchkit.NewBare(), dbDir: filepath.Join(b.Tmp, "db"), logs: &benchkit.LogSink{Out: b.Log}}
	defer a.bare.Close()
	var first *stack
	if err := b.Phase("start", func() (err error) {
		first, err = a.startStack(ctx, "pipeline")
		return err
	}); err != nil {
		return err
	}
	rssIdle, _ := benchkit.VMRSS()
	heapIdle := benchkit.HeapInUse()

	// The pages phase runs on the reads phase's service when both run: the job history's jobs are the ones
	// section 5 stored (a second fill of a million jobs would add minutes to the run).
	var reads *stack
	defer func() {
		if reads != nil {
			reads.close()
		}
	}()
	for _, p := range []struct {
		name string
		f    func(context.Context) error
	}{
		{"pipeline", a.pipeline},
		{"cache", a.cacheHits},
		{"waitreport", a.waitReport},
		{"process", a.processRunner},
		{"reads", a.reads},
		{"pages", a.pages},
		{"events", a.events},
	} {
		if !b.runs(p.name) {
			continue
		}
		err := b.Phase(p.name, func() error {
			s := first
			if p.name == "pages" && reads != nil {
				s, reads = reads, nil
			}
			if s == nil {
				var err error
				if s, err = a.startStack(ctx, p.name); err != nil {
					return err
				}
			}
			first, a.s = nil, s
			err := p.f(ctx)
			if p.name == "reads" && err == nil && b.runs("pages") {
				reads = s
				return nil
			}
			s.close()
			return err
		})
		if err != nil {
			return err
		}
	}

	// The process's memory is that of the SQLite pass (MongoDB's is the server's), of a whole run.
	if b.OnMongo() || b.opts.pages {
		return nil
	}
	rssAfter, _ := benchkit.VMRSS()
	heapAfter := benchkit.HeapInUse()
	note := "VmRSS of the whole process: service + embedded SQLite + bench clients"
	b.Add(benchkit.PlainKind, secMemory, "RSS idle (after start and setup)", "MiB", rssIdle, -1, "",
		fmt.Sprintf("%s; %.0f MiB before the service started", note, b.RSSAtStart))
	b.Add(benchkit.PlainKind, secMemory, "RSS after the runs", "MiB", rssAfter, -1, "", note+"; the last database holds "+
		count(b.sizes.ReadsLarge)+" jobs")
	b.Add(benchkit.PlainKind, secMemory, "Go heap in use idle", "MiB", heapIdle, -1, "", "runtime.MemStats.HeapInuse")
	b.Add(benchkit.PlainKind, secMemory, "Go heap in use after the runs", "MiB", heapAfter, -1, "", "runtime.MemStats.HeapInuse")
	return nil
}

// startStack starts a service on the fresh database analysis_<name> of the current pass.
func (a *analysisRun) startStack(ctx context.Context, name string) (*stack, error) {
	dir := filepath.Join(a.b.Tmp, name)
	if a.b.OnMongo() {
		dir += "-mongo"
	}
	return startStack(ctx, a.b.DB(a.dbDir, "analysis_"+name), a.logs, dir)
}

// --- 1: job pipeline ---

func (a *analysisRun) pipeline(ctx context.Context) error {
	n, clients := a.b.sizes.PipelineJobs, a.b.sizes.Clients
	path := "/api/analyzer/" + a.s.echoID + "/run"
	ids := make([]string, n)
	lat := make([]time.Duration, n)
	var sample []byte // a submit's response, the floor's body
	start := time.Now()
	err := benchkit.Parallel(clients, n, func(i int) error {
		body := fmt.Sprintf(`{"dataType":"ip","data":"10.1.%d.%d","message":"pipeline"}`, i/250, i%250+1)
		var j jobView
		var res *benchkit.Response
		d, err := benchkit.Timed(func() error {
			var err error
			res, err = a.s.admin.Call(ctx, http.MethodPost, path, body, http.StatusOK, &j)
			return err
		})
		if err != nil {
			return err
		}
		if j.FromCache {
			return fmt.Errorf("job %d came from the cache", i)
		}
		if i == 0 {
			sample = res.Body
		}
		ids[i], lat[i] = j.ID, d
		return nil
	})
	if err != nil {
		return err
	}
	submitted := time.Since(start)
	// Completion, without loading the service with a long poll per job while it works: wait for the last
	// submitted job (claims go by creation date), then read every job back with one search; the end is the
	// last endDate (the same clock).
	if err := a.waitSuccess(ctx, ids[n-1], &jobView{}); err != nil {
		return err
	}
	var views []jobView
	for {
		r, err := a.s.admin.Call(ctx, http.MethodPost, "/api/job/_search?range=all",
			`{"query":{"message":"pipeline"}}`, http.StatusOK, &views)
		if err != nil {
			return err
		}
		done := 0
		for _, v := range views {
			if v.Status == "Success" && v.EndDate != nil {
				done++
			} else if v.Status == "Failure" || v.Status == "Deleted" {
				return fmt.Errorf("job %s: %s", v.ID, v.Status)
			}
		}
		if len(views) != n || r.Header.Get("X-Total") != strconv.Itoa(n) {
			return fmt.Errorf("search: %d jobs, X-Total %s, want %d", len(views), r.Header.Get("X-Total"), n)
		}
		if done == n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	first, last := start.UnixMilli(), *views[0].EndDate
	var ends []int64
	for _, v := range views {
		last = max(last, *v.EndDate)
		ends = append(ends, *v.EndDate)
	}
	total := time.Duration(last-first) * time.Millisecond
	submitEnd, backlog := start.Add(submitted).UnixMilli(), n
	for _, e := range ends {
		if e <= submitEnd {
			backlog--
		}
	}
	// How the rate changes while the queue holds the backlog: the first and the last quarter of the jobs.
	slices.Sort(ends)
	q := n / 4
	firstQ := float64(q) / (float64(ends[q-1]-first) / 1000)
	lastQ := float64(q) / (float64(ends[n-1]-ends[n-1-q]) / 1000)
	if err := a.readRawJob(ctx, ids[0]); err != nil {
		return err
	}

	floorRate, floorLat, err := a.pipelineFloor(ctx, sample)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	a.b.Logf("pipeline: %d jobs submitted in %.1fs, the last Success after %.1fs; floor %.0f jobs/s", n, submitted.Seconds(),
		total.Seconds(), floorRate)
	rate := float64(n) / total.Seconds()
	what := fmt.Sprintf("%d goroutines, each job: its submit over HTTP to a bare handler (4 reads by _id + insert queue), then through the collection API "+
		"findOneAndUpdate claim + insert reports + insert jobs + delete queue", clients)
	a.b.Add(benchkit.RateKind, secPipeline, fmt.Sprintf("throughput, %d Echo jobs, %d clients", n, clients), "jobs/s", rate, floorRate, what,
		fmt.Sprintf("first submit → last endDate; submits took %.1fs and left %d jobs queued; first quarter of the jobs %.1f jobs/s, last quarter %.1f jobs/s",
			submitted.Seconds(), backlog, firstQ, lastQ))
	a.b.Add(benchkit.TimeKind, secPipeline, "submit latency p50", "ms", benchkit.Percentile(lat, .5), benchkit.Percentile(floorLat, .5),
		"the floor's submit p50: HTTP to a bare handler making the submit's reads (user, organization, analyzer, cache entry) and the queue insert, same goroutines", "")
	a.b.Add(benchkit.TimeKind, secPipeline, "submit latency p99", "ms", benchkit.Percentile(lat, .99), benchkit.Percentile(floorLat, .99),
		"the floor's submit p99", "")
	return nil
}

// waitSuccess long-polls a job's report and wants Success.
func (a *analysisRun) waitSuccess(ctx context.Context, id string, out *jobView) error {
	for {
		if _, err := a.s.admin.Call(ctx, http.MethodGet, "/api/job/"+id+"/waitreport?atMost=5minutes", nil, http.StatusOK, out); err != nil {
			return err
		}
		if out.Status != "Waiting" && out.Status != "InProgress" {
			break
		}
	}
	if out.Status != "Success" || out.EndDate == nil {
		return fmt.Errorf("job %s: status %s, report %.300s", id, out.Status, out.Report)
	}
	return nil
}

// pipelineFloor does what a job needs at least, with the same concurrency: its submit over HTTP to a bare
// handler that makes the submit's reads (caller, analyzer, cache entry: raw SQL by primary key on the
// service's database) and inserts the job into the queue, then through the collection API the store's Claim
// and Finish (its report, the finished job, the queue entry removed), on documents of the same shape, in an
// embedded database of its own with the store's collections and indexes. It returns jobs/s and the submit
// latencies.
func (a *analysisRun) pipelineFloor(ctx context.Context, body []byte) (float64, []time.Duration, error) {
	n, clients := a.b.sizes.PipelineJobs, a.b.sizes.Clients
	fdb, err := openDB(ctx, a.b.DB(a.dbDir, "bench_floor"), a.logs)
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		_ = fdb.Close(context.WithoutCancel(ctx))
		for _, suffix := range []string{".db", ".db-wal", ".db-shm", ".lock"} {
			_ = os.Remove(filepath.Join(a.dbDir, "bench_floor"+suffix))
		}
	}()
	// The store creates its collections and indexes (inserts pay for them too); the floor then uses them bare.
	if _, err := store.NewJobStore(ctx, fdb); err != nil {
		return 0, nil, err
	}
	queue, err := store.Collection(ctx, fdb, "queue")
	if err != nil {
		return 0, nil, err
	}
	jobs, err := store.Collection(ctx, fdb, "jobs")
	if err != nil {
		return 0, nil, err
	}
	reports, err := store.Collection(ctx, fdb, "reports")
	if err != nil {
		return 0, nil, err
	}
	read, err := a.byID(ctx, found("users", adminLogin), found("organizations", benchOrg), found("workers", a.s.echoID),
		missing("jobcache", randomID(40)))
	if err == nil {
		err = read(ctx)
	}
	if err != nil {
		return 0, nil, err
	}
	var submits atomic.Int64
	a.bare.Set("POST /submit", body, func(ctx context.Context) error {
		if err := read(ctx); err != nil {
			return err
		}
		i, now, qid := submits.Add(1), time.Now().UnixMilli(), randomID(20)
		return queue.Insert(ctx, with(a.rawJob, "_id", qid, "slot", qid, "status", "Waiting", "data", fmt.Sprintf("10.2.%d.%d", i/250, i%250+1),
			"createdAt", now, "updatedAt", now, "startDate", int64(0), "endDate", int64(0), "attempts", 0))
	})
	c := benchkit.NewClient(a.bare.URL, a.s.admin.Key())
	lat := make([]time.Duration, n)
	// The claim's final step (store.JobStore.Claim): an organization's oldest Waiting job; its reads before
	// (running jobs, organizations with Waiting jobs) are not in the floor.
	claimFilter := docstore.And(docstore.Eq("status", "Waiting"), docstore.Eq("organization", a.rawJob["organization"]))
	claimSort := docstore.Sort("createdAt", "_id")
	start := time.Now()
	err = benchkit.Parallel(clients, n, func(i int) error {
		t0 := time.Now()
		if _, err := c.Call(ctx, http.MethodPost, "/submit", `{"dataType":"ip","data":"10.2.0.1","message":"pipeline"}`, http.StatusOK, nil); err != nil {
			return err
		}
		lat[i] = time.Since(t0)
		now := time.Now().UnixMilli()
		var claimed map[string]any
		err := queue.FindOneAndUpdate(ctx, claimFilter, claimSort,
			docstore.Set("status", "InProgress").Set("owner", "floor").Set("leaseUntil", now+30_000).
				Set("startDate", now).Inc("attempts", 1),
			docstore.FindAndUpdate{}, &claimed)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		end := time.Now().UnixMilli()
		id, _ := claimed["_id"].(string)
		if err := reports.Insert(ctx, with(a.rawReport, "_id", id)); err != nil {
			return err
		}
		done := with(claimed, "status", "Success", "endDate", end, "updatedAt", end)
		if err := jobs.Insert(ctx, done); err != nil {
			return err
		}
		_, err = queue.DeleteOne(ctx, docstore.ID(id))
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return float64(n) / time.Since(start).Seconds(), lat, nil
}

// --- 2: cache hits ---

func (a *analysisRun) cacheHits(ctx context.Context) error {
	n, clients := a.b.sizes.CacheHits, a.b.sizes.Clients
	path := "/api/analyzer/" + a.s.echoID + "/run"
	body := `{"dataType":"ip","data":"203.0.113.77","message":"cache"}`
	var first jobView
	if _, err := a.s.admin.Call(ctx, http.MethodPost, path, body, http.StatusOK, &first); err != nil {
		return err
	}
	if err := a.waitSuccess(ctx, first.ID, &jobView{}); err != nil {
		return err
	}
	hit, err := a.s.admin.Call(ctx, http.MethodPost, path, body, http.StatusOK, nil)
	if err != nil {
		return err
	}
	if !bytes.Contains(hit.Body, []byte(`"fromCache":true`)) {
		return fmt.Errorf("the repeated submission is not a cache hit: %.300s", hit.Body)
	}
	// The floor's reads are the hit's: its caller (the key entry is remembered; the user and its organization
	// are read on every request), the analyzer, the cache entry of the observable, and the job it names.
	tag, err := a.cacheTag(ctx, first.ID)
	if err != nil {
		return err
	}
	hitReads, err := a.byID(ctx, found("users", adminLogin), found("organizations", benchOrg), found("workers", a.s.echoID),
		found("jobcache", tag), found("jobs", first.ID))
	if err == nil {
		err = hitReads(ctx) // once before: a floor whose reads find nothing would be no floor
	}
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	a.bare.Set("POST /run", hit.Body, hitReads)

	measure := func(c *benchkit.Client, p string) (float64, []time.Duration, error) {
		lat := make([]time.Duration, n)
		start := time.Now()
		err := benchkit.Parallel(clients, n, func(i int) error {
			d, err := benchkit.Timed(func() error {
				r, err := c.Call(ctx, http.MethodPost, p, body, http.StatusOK, nil)
				if err == nil && !bytes.Contains(r.Body, []byte(`"fromCache":true`)) {
					err = fmt.Errorf("not a cache hit: %.300s", r.Body)
				}
				return err
			})
			lat[i] = d
			return err
		})
		return float64(n) / time.Since(start).Seconds(), lat, err
	}
	rate, lat, err := measure(a.s.admin, path)
	if err != nil {
		return err
	}
	floorRate, floorLat, err := measure(benchkit.NewClient(a.bare.URL, a.s.admin.Key()), "/run")
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	// For the analysis: the same round trips without the reads.
	a.bare.Set("POST /rtt", hit.Body, nil)
	rttRate, rttLat, err := measure(benchkit.NewClient(a.bare.URL, a.s.admin.Key()), "/rtt")
	if err != nil {
		return fmt.Errorf("bare round trip: %w", err)
	}
	what := fmt.Sprintf("bare Echo handler: the hit's 5 reads (%s), then the same %d-byte JSON, same %d clients",
		a.readKind(), len(hit.Body), clients)
	a.b.Add(benchkit.RateKind, secCache, fmt.Sprintf("throughput, %d hits, %d clients", n, clients), "req/s", rate, floorRate, what,
		fmt.Sprintf("a hit reads 5 documents by _id (user, organization, analyzer, cache entry, job; the key entry is remembered); "+
			"the bare handler without the reads: %.0f req/s, p50 %.3f ms", rttRate, benchkit.Percentile(rttLat, .5)))
	a.b.Add(benchkit.TimeKind, secCache, "latency p50", "ms", benchkit.Percentile(lat, .5), benchkit.Percentile(floorLat, .5), "bare handler + reads p50", "")
	a.b.Add(benchkit.TimeKind, secCache, "latency p99", "ms", benchkit.Percentile(lat, .99), benchkit.Percentile(floorLat, .99), "bare handler + reads p99", "")
	return nil
}

// --- 3: waitreport wake-up ---

func (a *analysisRun) waitReport(ctx context.Context) error {
	n, sleep := a.b.sizes.WaitJobs, a.b.sizes.WaitSleepMS
	path := "/api/analyzer/" + a.s.echoID + "/run"
	var delays []time.Duration
	late := 0
	var sample []byte
	ids := make([]string, n)
	for i := range n {
		body := fmt.Sprintf(`{"dataType":"ip","data":"10.3.%d.%d","parameters":{"sleep":%d}}`, i/250, i%250+1, sleep)
		var j jobView
		if _, err := a.s.admin.Call(ctx, http.MethodPost, path, body, http.StatusOK, &j); err != nil {
			return err
		}
		ids[i] = j.ID
		sent := time.Now()
		var v jobView
		r, err := a.s.admin.Call(ctx, http.MethodGet, "/api/job/"+j.ID+"/waitreport?atMost=1minute", nil, http.StatusOK, &v)
		recv := time.Now()
		if err != nil {
			return err
		}
		if v.Status != "Success" || v.EndDate == nil {
			return fmt.Errorf("job %s: %s", j.ID, v.Status)
		}
		sample = r.Body
		end := time.UnixMilli(*v.EndDate)
		if !sent.Before(end) { // the waiter was not waiting yet when the job ended
			late++
			continue
		}
		delays = append(delays, recv.Sub(end))
	}
	if len(delays) == 0 {
		return errors.New("no waitreport was waiting when its job ended")
	}
	floor, err := a.waitReportFloor(ctx, n, sample, ids[len(ids)-1])
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	// For the analysis: a bare round trip of the same body.
	a.bare.Set("GET /rtt", sample, nil)
	c := benchkit.NewClient(a.bare.URL, a.s.admin.Key())
	rtt := make([]time.Duration, n)
	for i := range n {
		d, err := benchkit.Timed(func() error {
			_, err := c.Call(ctx, http.MethodGet, "/rtt", nil, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return fmt.Errorf("bare round trip: %w", err)
		}
		rtt[i] = d
	}
	note := fmt.Sprintf("%d jobs with sleep %d ms, waiter already waiting; endDate has ms resolution (+0–1 ms)", len(delays), sleep)
	if late > 0 {
		note += fmt.Sprintf("; %d jobs ended before the waiter asked (left out)", late)
	}
	slow := 0
	for _, d := range delays {
		if d >= 500*time.Millisecond {
			slow++
		}
	}
	note += fmt.Sprintf("; %d of %d wake-ups took ≥ 500 ms", slow, len(delays))
	note += fmt.Sprintf("; a bare round trip of the body: p50 %.3f ms", benchkit.Percentile(rtt, .5))
	what := fmt.Sprintf("from the end's ms timestamp: its report and job written in one InsertAll, a waiting bare long poll woken, "+
		"both read back (%s), the same %d-byte body answered; p50", a.readKind(), len(sample))
	a.b.Add(benchkit.TimeKind, secWait, "endDate → waitreport returns, p50", "ms", benchkit.Percentile(delays, .5), benchkit.Percentile(floor, .5), what, note)
	a.b.Add(benchkit.TimeKind, secWait, "endDate → waitreport returns, p99", "ms", benchkit.Percentile(delays, .99), benchkit.Percentile(floor, .99),
		"the same floor, p99", "")
	return nil
}

// --- 4: process runner ---

func (a *analysisRun) processRunner(ctx context.Context) error {
	n := a.b.sizes.ProcessJobs
	path := "/api/analyzer/" + a.s.shID + "/run"
	through := make([]time.Duration, n)
	var input map[string]any
	for i := range n {
		body := fmt.Sprintf(`{"dataType":"ip","data":"10.4.%d.%d","message":"process"}`, i/250, i%250+1)
		var v jobView
		d, err := benchkit.Timed(func() error {
			var j jobView
			if _, err := a.s.admin.Call(ctx, http.MethodPost, path, body, http.StatusOK, &j); err != nil {
				return err
			}
			return a.waitSuccess(ctx, j.ID, &v)
		})
		if err != nil {
			return err
		}
		through[i] = d
		if input == nil {
			var rep struct {
				Full struct {
					Input map[string]any `json:"input"`
				} `json:"full"`
			}
			if err := json.Unmarshal(v.Report, &rep); err != nil || rep.Full.Input == nil {
				return fmt.Errorf("the bench analyzer's report has no input: %.300s", v.Report)
			}
			input = rep.Full.Input
		}
	}

	// Directly: the same script, a job folder with the same input.json, the runner's clean environment.
	script := filepath.Join(a.s.analyzersRoot, "Bench", "bench.sh")
	direct := make([]time.Duration, n)
	for i := range n {
		input["data"] = fmt.Sprintf("10.5.%d.%d", i/250, i%250+1)
		in, err := json.Marshal(input)
		if err != nil {
			return err
		}
		d, err := benchkit.Timed(func() error { return runDirect(ctx, a.s.jobDir, a.s.analyzersRoot, script, in) })
		if err != nil {
			return fmt.Errorf("direct run: %w", err)
		}
		direct[i] = d
	}
	// For the analysis: the same round trip with the built-in Echo (no process), on the same database.
	echo := make([]time.Duration, max(n/4, 10))
	for i := range echo {
		body := fmt.Sprintf(`{"dataType":"ip","data":"10.6.%d.%d","message":"process"}`, i/250, i%250+1)
		d, err := benchkit.Timed(func() error {
			var j jobView
			if _, err := a.s.admin.Call(ctx, http.MethodPost, "/api/analyzer/"+a.s.echoID+"/run", body, http.StatusOK, &j); err != nil {
				return err
			}
			return a.waitSuccess(ctx, j.ID, &jobView{})
		})
		if err != nil {
			return err
		}
		echo[i] = d
	}
	over := benchkit.Mean(through) - benchkit.Mean(direct)
	note := fmt.Sprintf("%d runs each, one at a time; mean overhead %.1f ms per job; the built-in Echo the same way: p50 %.1f ms",
		n, over, benchkit.Percentile(echo, .5))
	a.b.Add(benchkit.TimeKind, secProcess, "sh analyzer job, submit → report, p50", "ms", benchkit.Percentile(through, .5), benchkit.Percentile(direct, .5),
		"the same script run directly (job folder, input.json, exec, read output.json) p50", note)
	a.b.Add(benchkit.TimeKind, secProcess, "sh analyzer job, submit → report, p99", "ms", benchkit.Percentile(through, .99), benchkit.Percentile(direct, .99),
		"run directly p99", "")
	return nil
}

// runDirect does what the process runner must do at least: make the job folder, write input.json, run the
// program with the analyzers root as working directory, read and parse output.json, remove the folder.
func runDirect(ctx context.Context, jobDir, root, script string, input []byte) error {
	dir, err := os.MkdirTemp(jobDir, "direct-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, sub := range []string{"input", "output"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "input", "input.json"), input, 0o600); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, script, dir)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + process.DefaultPath, "HOME=" + dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "output", "output.json"))
	if err != nil {
		return err
	}
	var out struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(data, &out); err != nil || !out.Success {
		return fmt.Errorf("output %s: %v", data, err)
	}
	return nil
}

// --- 5: reads ---

// reads stores jobs directly (jobFill) up to ReadsSmall and then ReadsLarge, and times GET /api/job/{id} and
// POST /api/job/_search against the collection API doing the same reads.
func (a *analysisRun) reads(ctx context.Context) error {
	fill, err := a.newJobFill(ctx, "198.51.100.1")
	if err != nil {
		return err
	}
	jobs := fill.jobs
	rng := mrand.New(mrand.NewPCG(1, 2))
	type result struct{ get, getFloor, search, searchFloor, countAll []time.Duration }
	filter := docstore.And(docstore.Eq("organization", benchOrg), docstore.Eq("status", "Success"), docstore.Eq("dataType", "ip"))
	query := `{"query":{"_and":[{"status":"Success"},{"dataType":"ip"}]}}`
	find := docstore.Query{Filter: filter, Sort: docstore.Sort("-createdAt", "_id"), Limit: 50}
	bare := benchkit.NewClient(a.bare.URL, a.s.admin.Key())
	caller, err := a.byID(ctx, found("users", adminLogin), found("organizations", benchOrg))
	if err != nil {
		return err
	}
	measure := func(getReps, searchReps int) (result, error) {
		var r result
		for k := range getReps + 1 {
			id := fill.id(fill.first + rng.IntN(fill.have-fill.first))
			var body []byte
			d, err := benchkit.Timed(func() error {
				res, err := a.s.admin.Call(ctx, http.MethodGet, "/api/job/"+id, nil, http.StatusOK, nil)
				if err == nil {
					body = res.Body
				}
				return err
			})
			if err != nil {
				return r, err
			}
			// Floor: a bare handler making the request's reads (its caller's user and organization, the job)
			// and answering the same body.
			read, err := a.byID(ctx, found("users", adminLogin), found("organizations", benchOrg), found("jobs", id))
			if err != nil {
				return r, err
			}
			a.bare.Set("GET /job", body, read)
			fd, err := benchkit.Timed(func() error {
				_, err := bare.Call(ctx, http.MethodGet, "/job", nil, http.StatusOK, nil)
				return err
			})
			if err != nil {
				return r, fmt.Errorf("get floor: %w", err)
			}
			if k > 0 { // the first is a warm-up
				r.get, r.getFloor = append(r.get, d), append(r.getFloor, fd)
			}
		}
		for k := range searchReps {
			var total string
			var got []jobView
			var res *benchkit.Response
			d, err := benchkit.Timed(func() error {
				var err error
				res, err = a.s.admin.Call(ctx, http.MethodPost, "/api/job/_search?range=0-50&sort=-createdAt", query, http.StatusOK, &got)
				if err == nil {
					total = res.Header.Get("X-Total")
				}
				return err
			})
			if err != nil {
				return r, err
			}
			if len(got) != 50 || total == "" || total == "0" {
				return r, fmt.Errorf("search: %d results, X-Total %q", len(got), total)
			}
			// Floor: behind a bare handler answering the same body, the reads of the caller (user,
			// organization) and the two SQL statements the request needs at least (the page of 50 documents,
			// written by hand on the expressions of the index the store declares, and the count: the sum of
			// the jobs tally's rows of those values), run on the same database's read connections. MongoDB has
			// no SQL (nor tallies): there they are the collection API's find and count.
			var rows int
			var n int64
			a.bare.Set("POST /search", res.Body, func(ctx context.Context) error {
				if err := caller(ctx); err != nil {
					return err
				}
				var err error
				if a.b.OnMongo() {
					var page []map[string]any
					if err = jobs.Find(ctx, find, &page); err != nil {
						return err
					}
					rows = len(page)
					n, err = jobs.Count(ctx, filter)
					return err
				}
				if rows, err = a.s.db.RawSQL(ctx, searchPageSQL, benchOrg, "Success", "ip"); err != nil {
					return err
				}
				n, err = a.s.db.RawSQLInt(ctx, searchCountSQL, benchOrg, "Success", "ip")
				return err
			})
			fd, err := benchkit.Timed(func() error {
				_, err := bare.Call(ctx, http.MethodPost, "/search", query, http.StatusOK, nil)
				return err
			})
			if err != nil {
				return r, fmt.Errorf("search floor: %w", err)
			}
			if rows != 50 || strconv.FormatInt(n, 10) != total {
				return r, fmt.Errorf("search floor: %d rows, count %d, the service X-Total %s", rows, n, total)
			}
			if k == 0 { // the collection API's find + count too, once, to show it matches the raw SQL
				var page []map[string]any
				if err := jobs.Find(ctx, find, &page); err != nil {
					return r, err
				}
			}
			if !a.b.OnMongo() { // for the analysis: the count without the tally, every matching index entry
				var c int64
				cd, err := benchkit.Timed(func() error {
					var err error
					c, err = a.s.db.RawSQLInt(ctx, searchCountAllSQL, benchOrg, "Success", "ip")
					return err
				})
				if err != nil || strconv.FormatInt(c, 10) != total {
					return r, fmt.Errorf("count(*): %d, %v; the service X-Total %s", c, err, total)
				}
				r.countAll = append(r.countAll, cd)
			}
			r.search, r.searchFloor = append(r.search, d), append(r.searchFloor, fd)
		}
		return r, nil
	}
	searchFloor, searchFloorShort := "bare handler, the same body: user and organization reads, raw SQL SELECT doc … ORDER BY createdAt DESC LIMIT 50 (same index) + SELECT sum(n) of the tally,",
		"bare handler + raw SQL page + tally sum"
	if a.b.OnMongo() {
		searchFloor = "bare handler, the same body: user and organization gets, collection API find (same filter, -createdAt, limit 50) + count, same index,"
		searchFloorShort = "bare handler + collection find + count"
	}
	var res [2]result
	for i, size := range []struct{ target, gets, searches int }{
		{a.b.sizes.ReadsSmall, a.b.sizes.GetReps, a.b.sizes.SearchReps},
		{a.b.sizes.ReadsLarge, a.b.sizes.GetRepsLarge, a.b.sizes.SearchRepsLarge},
	} {
		if err := fill.to(ctx, size.target); err != nil {
			return err
		}
		if res[i], err = measure(size.gets, size.searches); err != nil {
			return err
		}
		r, label := res[i], count(fill.have)
		a.b.Add(benchkit.TimeKind, secReads, "GET /api/job/{id} p50, "+label+" jobs", "ms", benchkit.Percentile(r.get, .5), benchkit.Percentile(r.getFloor, .5),
			"bare handler: user, organization and job read ("+a.readKind()+"), the same body; p50",
			fmt.Sprintf("%d requests, one client", len(r.get))+a.mongoSizeNote())
		a.b.Add(benchkit.TimeKind, secReads, "GET /api/job/{id} p99, "+label+" jobs", "ms", benchkit.Percentile(r.get, .99), benchkit.Percentile(r.getFloor, .99),
			"bare handler + reads p99", "")
		a.b.Add(benchkit.TimeKind, secReads, "_search status+dataType, -createdAt, 0-50 p50, "+label+" jobs", "ms",
			benchkit.Percentile(r.search, .5), benchkit.Percentile(r.searchFloor, .5), searchFloor+" p50",
			fmt.Sprintf("%d searches, one client", len(r.search))+countAllNote(r.countAll))
		a.b.Add(benchkit.TimeKind, secReads, "_search status+dataType, -createdAt, 0-50 p99, "+label+" jobs", "ms",
			benchkit.Percentile(r.search, .99), benchkit.Percentile(r.searchFloor, .99), searchFloorShort+" p99", "")
	}
	small, large := count(a.b.sizes.ReadsSmall), count(a.b.sizes.ReadsLarge)
	growth := func(s []time.Duration, l []time.Duration) float64 {
		return benchkit.Percentile(l, .5) / benchkit.Percentile(s, .5)
	}
	a.b.Add(benchkit.TimeKind, secReads, "GET /api/job/{id} growth "+small+" → "+large+" (p50)", "×",
		growth(res[0].get, res[1].get), growth(res[0].getFloor, res[1].getFloor), "growth of the bare handler + reads", "")
	a.b.Add(benchkit.TimeKind, secReads, "_search growth "+small+" → "+large+" (p50)", "×",
		growth(res[0].search, res[1].search), growth(res[0].searchFloor, res[1].searchFloor), "growth of the "+searchFloorShort,
		"index organization_status_dataType_createdAt serves the filter and the order"+a.mongoSizeNote())
	return nil
}

// jobFill stores jobs in `jobs` directly, by InsertMany in batches of 1000: copies of the stored job rawJob
// (the documents as the store writes them) with another _id, status (one in ten Failure, else Success), data
// type (ip, domain, hash, url, mail in turn), data and dates, one a second going back from an hour ago.
type jobFill struct {
	a           *analysisRun
	jobs        *docstore.Collection
	first, have int // the jobs stored before the fill, and now
	base        int64
}

// newJobFill runs an Echo job of the value data through the current section's service, keeps it as a.rawJob
// and fills the service's `jobs` with copies of it.
func (a *analysisRun) newJobFill(ctx context.Context, data string) (*jobFill, error) {
	var j jobView
	if _, err := a.s.admin.Call(ctx, http.MethodPost, "/api/analyzer/"+a.s.echoID+"/run",
		map[string]any{"dataType": "ip", "data": data, "message": "template"}, http.StatusOK, &j); err != nil {
		return nil, err
	}
	if err := a.waitSuccess(ctx, j.ID, &jobView{}); err != nil {
		return nil, err
	}
	if err := a.readRawJob(ctx, j.ID); err != nil {
		return nil, err
	}
	jobs, err := a.s.collection(ctx, "jobs")
	if err != nil {
		return nil, err
	}
	have, err := jobs.Count(ctx, docstore.All())
	if err != nil {
		return nil, err
	}
	return &jobFill{a: a, jobs: jobs, first: int(have), have: int(have), base: time.Now().Add(-time.Hour).UnixMilli()}, nil
}

// id is the _id of the i-th job stored (first ≤ i < have: a filled one).
func (f *jobFill) id(i int) string { return fmt.Sprintf("R%019d", i) }

// to stores jobs until `jobs` holds target.
func (f *jobFill) to(ctx context.Context, target int) error {
	dataTypes := []string{"ip", "domain", "hash", "url", "mail"}
	t0, from := time.Now(), f.have
	for f.have < target {
		batch := min(1000, target-f.have)
		docs := make([]any, batch)
		for k := range docs {
			i := f.have + k
			status := "Success"
			if i%10 == 0 {
				status = "Failure"
			}
			created := f.base - int64(i)*1000
			docs[k] = with(f.a.rawJob, "_id", f.id(i), "status", status, "dataType", dataTypes[i%len(dataTypes)],
				"data", fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256), "createdAt", created,
				"updatedAt", created+120, "startDate", created+20, "endDate", created+120)
		}
		res, err := f.jobs.InsertMany(ctx, docs)
		if err == nil {
			err = errors.Join(res...)
		}
		if err != nil {
			return fmt.Errorf("store %d jobs: %w", target, err)
		}
		f.have += batch
		if f.have%100_000 == 0 {
			f.a.b.Logf("%d jobs stored", f.have)
		}
	}
	f.a.b.Logf("%d jobs stored (%d inserted in %.1fs)", f.have, f.have-from, time.Since(t0).Seconds())
	return nil
}

// mongoReadsLarge caps ReadsLarge and PageJobs on the MongoDB pass: a million direct inserts over the network
// would take longer than the rest of the bench.
const mongoReadsLarge = 200_000

// mongoSizeNote says, on the MongoDB pass of a run whose ReadsLarge it capped, that it did.
func (a *analysisRun) mongoSizeNote() string {
	if !a.b.OnMongo() || a.b.opts.sizes.ReadsLarge <= mongoReadsLarge {
		return ""
	}
	return fmt.Sprintf("; MongoDB pass: %s jobs rather than %s (direct inserts over the network)", count(mongoReadsLarge),
		count(a.b.opts.sizes.ReadsLarge))
}

// The job search's floor: its page and its count in SQL, on the expressions of the index
// organization_status_dataType_createdAt (docstore: json_extract(doc,'$."path"'), then id).
const (
	searchWhere   = `json_extract(doc,'$."organization"') = ? AND json_extract(doc,'$."status"') = ? AND json_extract(doc,'$."dataType"') = ?`
	searchPageSQL = `SELECT doc FROM "jobs" WHERE ` + searchWhere + ` ORDER BY json_extract(doc,'$."createdAt"') DESC, id LIMIT 50`
	// The count of X-Total: the jobs tally (store.Specs) keeps one row per organization, status, data type
	// and analyzer, its columns v0,t0 … the value and JSON type of each.
	searchCountSQL = `SELECT coalesce(sum(n),0) FROM "jobs$tally_search" WHERE v0 = ? AND v1 = ? AND v2 = ?`
	// The same count over the documents: every matching entry of the index.
	searchCountAllSQL = `SELECT count(*) FROM "jobs" WHERE ` + searchWhere
)

// countAllNote gives the p50 of the count over the documents (searchCountAllSQL), when it was measured.
func countAllNote(d []time.Duration) string {
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprintf("; the same count over the matching index entries (SELECT count(*)) p50 %.3f ms", benchkit.Percentile(d, .5))
}

// count writes 10000 as 10k.
func count(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// waitReportFloor measures n times what a waitreport wake-up needs at least, the way the figure is measured
// (from the end's millisecond timestamp to the client's receipt): a bare long poll is waiting; the job's end is
// written, its report and the final job in one InsertAll as the store writes them; the poll is woken, reads
// both back by primary key and answers the same body. Its documents are copies of job id's, under new ids.
func (a *analysisRun) waitReportFloor(ctx context.Context, n int, body []byte, id string) ([]time.Duration, error) {
	if err := a.readRawJob(ctx, id); err != nil {
		return nil, err
	}
	jobs, err := a.s.collection(ctx, "jobs")
	if err != nil {
		return nil, err
	}
	reports, err := a.s.collection(ctx, "reports")
	if err != nil {
		return nil, err
	}
	c := benchkit.NewClient(a.bare.URL, a.s.admin.Key())
	delays := make([]time.Duration, n)
	for i := range n {
		fid := randomID(20)
		read, err := a.byID(ctx, found("jobs", fid), found("reports", fid))
		if err != nil {
			return nil, err
		}
		arrived, wake := make(chan struct{}), make(chan struct{})
		a.bare.Set("GET /wait", body, func(ctx context.Context) error {
			close(arrived)
			select {
			case <-wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			return read(ctx)
		})
		type answer struct {
			at  time.Time
			err error
		}
		got := make(chan answer, 1)
		go func() {
			_, err := c.Call(ctx, http.MethodGet, "/wait", nil, http.StatusOK, nil)
			got <- answer{time.Now(), err}
		}()
		select {
		case <-arrived:
		case r := <-got:
			return nil, fmt.Errorf("the long poll answered before it was woken: %v", r.err)
		case <-time.After(time.Minute):
			return nil, errors.New("the long poll did not arrive within 1 min")
		}
		end := time.Now().UnixMilli()
		errs, err := a.s.db.InsertAll(ctx,
			docstore.Insertion{Coll: reports, Doc: with(a.rawReport, "_id", fid)},
			docstore.Insertion{Coll: jobs, Doc: with(a.rawJob, "_id", fid, "endDate", end, "updatedAt", end)})
		if err == nil {
			err = errors.Join(errs...)
		}
		close(wake)
		select {
		case r := <-got:
			if r.err != nil {
				return nil, r.err
			}
			delays[i] = r.at.Sub(time.UnixMilli(end))
		case <-time.After(time.Minute):
			return nil, errors.New("the long poll did not answer within 1 min")
		}
		if err != nil {
			return nil, fmt.Errorf("write the end: %w", err)
		}
	}
	return delays, nil
}

// --- helpers ---

// readRawJob keeps the stored document of a finished job and of its report as the templates of the floors'
// documents.
func (a *analysisRun) readRawJob(ctx context.Context, id string) error {
	jobs, err := a.s.collection(ctx, "jobs")
	if err != nil {
		return err
	}
	raws, err := jobs.FindRaw(ctx, docstore.Query{Filter: docstore.ID(id)})
	if err != nil {
		return fmt.Errorf("read a stored job: %w", err)
	}
	if len(raws) == 0 {
		return fmt.Errorf("read a stored job: %s is not in jobs", id)
	}
	dec := json.NewDecoder(bytes.NewReader(raws[0]))
	dec.UseNumber() // integers stay integers when the copies are stored
	var d map[string]any
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("decode a stored job: %w", err)
	}
	a.rawJob = d
	reports, err := a.s.collection(ctx, "reports")
	if err != nil {
		return err
	}
	if raws, err = reports.FindRaw(ctx, docstore.Query{Filter: docstore.ID(id)}); err != nil || len(raws) == 0 {
		return fmt.Errorf("read a stored report: %d found, %v", len(raws), err)
	}
	dec = json.NewDecoder(bytes.NewReader(raws[0]))
	dec.UseNumber()
	var r map[string]any
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("decode a stored report: %w", err)
	}
	a.rawReport = r
	return nil
}

// with returns a copy of d with the given key/value pairs set.
func with(d map[string]any, kv ...any) map[string]any {
	out := maps.Clone(d)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomID is an id like the service's job ids.
func randomID(n int) string {
	b := make([]byte, n)
	m := big.NewInt(int64(len(idAlphabet)))
	for i := range b {
		k, _ := rand.Int(rand.Reader, m)
		b[i] = idAlphabet[k.Int64()]
	}
	return string(b)
}

// readKind says how the floors read a document by _id on the current pass.
func (a *analysisRun) readKind() string {
	if a.b.OnMongo() {
		return "collection API get by _id"
	}
	return "raw SQL by primary key"
}

// doc names a document by its collection and _id; absent: the read must find nothing (a cache miss).
type doc struct {
	coll, id string
	absent   bool
}

func found(coll, id string) doc   { return doc{coll: coll, id: id} }
func missing(coll, id string) doc { return doc{coll: coll, id: id, absent: true} }

// byID returns the floors' reads of the given documents of the current section's database, one after the
// other as a request makes them: each a raw SQL SELECT by primary key (the collection API's Get on the MongoDB
// pass), each of which must find its document.
func (a *analysisRun) byID(ctx context.Context, docs ...doc) (func(context.Context) error, error) {
	gets := make([]func(context.Context) error, len(docs))
	for i, d := range docs {
		if a.b.OnMongo() {
			c, err := a.s.collection(ctx, d.coll)
			if err != nil {
				return nil, err
			}
			gets[i] = func(ctx context.Context) error {
				var m map[string]any
				err := c.Get(ctx, d.id, &m)
				if d.absent && errors.Is(err, docstore.ErrNotFound) {
					return nil
				}
				if err == nil && d.absent {
					err = fmt.Errorf("%s %s: found", d.coll, d.id)
				}
				return err
			}
			continue
		}
		q := `SELECT doc FROM "` + d.coll + `" WHERE id = ?`
		gets[i] = func(ctx context.Context) error {
			n, err := a.s.db.RawSQL(ctx, q, d.id)
			if want := map[bool]int{false: 1, true: 0}[d.absent]; err == nil && n != want {
				err = fmt.Errorf("%s %s: %d documents, want %d", d.coll, d.id, n, want)
			}
			return err
		}
	}
	return func(ctx context.Context) error {
		for _, g := range gets {
			if err := g(ctx); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// cacheTag returns the _id of the cache entry that names job id (read once, by a scan: the entries are few).
func (a *analysisRun) cacheTag(ctx context.Context, id string) (string, error) {
	c, err := a.s.collection(ctx, "jobcache")
	if err != nil {
		return "", err
	}
	var entries []struct {
		ID string `json:"_id"`
	}
	if err := c.Find(ctx, docstore.Query{Filter: docstore.Eq("jobId", id)}, &entries); err != nil {
		return "", err
	}
	if len(entries) != 1 {
		return "", fmt.Errorf("cache entries of job %s: %d", id, len(entries))
	}
	return entries[0].ID, nil
}
