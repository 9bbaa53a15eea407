package main

// Section 7: an analyzer run driven by case-svc's connector against a real analysis-svc process, versus the
// same run asked of analysis-svc directly.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openir/platform/pkg/benchkit"
)

// pollEvery is the pause between two reads of a connector job record while waiting for its Success.
const pollEvery = 2 * time.Millisecond

// maxVanished is how many runs may end in analysis-svc's "job not found" before the bench gives up.
const maxVanished = 10

// errVanished is a run whose job analysis-svc answered "not found" for while it finished: its JobStore.Job reads
// the jobs collection, then the queue, so a job that moves from the queue to jobs between the two reads is
// found in neither. The connector takes that 404 as final and fails the record. Such runs are counted,
// reported, and made again with another value.
var errVanished = errors.New("analysis-svc answered job not found for a job it was finishing")

type connectorRun struct {
	b  *bench
	ap *analysisProc
	// direct runs, the floor of every connector row
	direct []time.Duration
	polls  int // GET /api/connector/job/{id} calls so far
}

type connJob struct {
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	UpdatedAt *int64         `json:"updatedAt"`
	Report    map[string]any `json:"report"`
}

// viaConnector runs the analyzer on the observable through case-svc: POST /api/connector/analysis/job, then
// GET /api/connector/job/{id} every pollEvery until Success. It returns the time from the POST to the read
// that saw Success, and to the record's updatedAt (when the tracker wrote Success; ms resolution).
func (c *connectorRun) viaConnector(ctx context.Context, s *stack, observableID string) (time.Duration, time.Duration, error) {
	t0 := time.Now()
	var j connJob
	if _, err := s.analyst.Call(ctx, http.MethodPost, "/api/connector/analysis/job", map[string]any{"analysisId": serverName,
		"artifactId": observableID, "analyzerId": c.ap.echoID}, http.StatusCreated, &j); err != nil {
		return 0, 0, err
	}
	deadline := t0.Add(time.Minute)
	for {
		var v connJob
		c.polls++
		if _, err := s.analyst.Call(ctx, http.MethodGet, "/api/connector/job/"+j.ID, nil, http.StatusOK, &v); err != nil {
			return 0, 0, err
		}
		switch v.Status {
		case "Success":
			seen := time.Since(t0)
			written := seen
			if v.UpdatedAt != nil {
				written = time.UnixMilli(*v.UpdatedAt).Sub(t0)
			}
			if v.Report["success"] != true {
				return 0, 0, fmt.Errorf("job %s: report %v", j.ID, v.Report)
			}
			return seen, written, nil
		case "Failure", "Deleted":
			if msg, _ := v.Report["errorMessage"].(string); strings.Contains(msg, "job not found") {
				return 0, 0, fmt.Errorf("record %s: %w (%s)", j.ID, errVanished, msg)
			}
			return 0, 0, fmt.Errorf("job %s: %s %v", j.ID, v.Status, v.Report)
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("job %s: still %s after a minute", j.ID, v.Status)
		}
		time.Sleep(pollEvery)
	}
}

// runDirect asks analysis-svc itself: POST /api/analyzer/{id}/run, then waitreport until Success.
func (c *connectorRun) runDirect(ctx context.Context, data string) (time.Duration, error) {
	cl := benchkit.NewClient(c.ap.url, c.ap.key)
	t0 := time.Now()
	var j connJob
	if _, err := cl.Call(ctx, http.MethodPost, "/api/analyzer/"+c.ap.echoID+"/run",
		map[string]any{"dataType": "ip", "data": data, "tlp": 2, "pap": 2}, http.StatusOK, &j); err != nil {
		return 0, err
	}
	for {
		var v connJob
		r, err := cl.Call(ctx, http.MethodGet, "/api/job/"+j.ID+"/waitreport?atMost=1minute", nil, http.StatusOK, &v)
		if r != nil && r.Status == http.StatusNotFound {
			return 0, fmt.Errorf("job %s: %w", j.ID, errVanished)
		}
		if err != nil {
			return 0, err
		}
		switch v.Status {
		case "Success":
			return time.Since(t0), nil
		case "Waiting", "InProgress":
			continue
		}
		return 0, fmt.Errorf("direct job %s: %s", j.ID, v.Status)
	}
}

// runConnector is section 7 on a fresh case-svc (conn); then, when cr is not nil, a few connector runs on the
// section 6 database (its many cases and observables).
func runConnector(ctx context.Context, b *bench, conn *stack, ap *analysisProc, cr *caseRun) error {
	b.Service = "connector"
	c := &connectorRun{b: b, ap: ap}
	n := b.sizes.ConnectorRuns
	const warm = 3
	var through, written []time.Duration
	vanished, vanishedDirect := 0, 0
	var pollsPerRun float64
	if err := b.Phase("connector", func() error {
		// One case with an observable per run (fresh values: analysis-svc's job cache must not answer).
		var cs struct {
			ID string `json:"id"`
		}
		if _, err := conn.analyst.Call(ctx, http.MethodPost, "/api/case", map[string]any{"title": "Connector bench",
			"description": "analyzer runs"}, http.StatusCreated, &cs); err != nil {
			return err
		}
		values := make([]string, n+warm+maxVanished)
		for i := range values {
			values[i] = fmt.Sprintf("10.200.%d.%d", i/250, i%250+1)
		}
		var obs []struct {
			ID   string `json:"id"`
			Data string `json:"data"`
		}
		if _, err := conn.analyst.Call(ctx, http.MethodPost, "/api/case/"+cs.ID+"/artifact",
			map[string]any{"dataType": "ip", "data": values}, http.StatusCreated, &obs); err != nil {
			return err
		}
		if len(obs) != len(values) {
			return fmt.Errorf("%d observables, want %d", len(obs), len(values))
		}
		polls := c.polls
		runs := 0
		for _, o := range obs {
			if len(through) == n {
				break
			}
			seen, wr, err := c.viaConnector(ctx, conn, o.ID)
			runs++
			if errors.Is(err, errVanished) && vanished < maxVanished {
				vanished++
				b.Logf("connector: %v", err)
				continue
			}
			if err != nil {
				return err
			}
			if runs > warm {
				through, written = append(through, seen), append(written, wr)
			}
		}
		if len(through) < n {
			return fmt.Errorf("%d connector runs, want %d", len(through), n)
		}
		pollsPerRun = float64(c.polls-polls) / float64(runs)
		b.Logf("connector: per run %.1f polls", pollsPerRun)
		for i := 0; len(c.direct) < n; i++ {
			d, err := c.runDirect(ctx, fmt.Sprintf("10.201.%d.%d", i/250, i%250+1))
			if errors.Is(err, errVanished) && vanishedDirect < maxVanished {
				vanishedDirect++
				b.Logf("direct: %v", err)
				continue
			}
			if err != nil {
				return err
			}
			if i-vanishedDirect >= warm {
				c.direct = append(c.direct, d)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	note := fmt.Sprintf("%d runs each, one at a time, built-in Echo on a real analysis-svc process; the record polled every %s; "+
		"POST → the record's updatedAt (Success written): p50 %.1f ms, p99 %.1f ms", n, pollEvery, benchkit.Percentile(written, .5), benchkit.Percentile(written, .99))
	if vanished+vanishedDirect > 0 {
		note += fmt.Sprintf("; %d connector runs failed and %d direct waitreports answered 404 \"job not found\" (analysis-svc's "+
			"JobStore.Job race, made again with another value)", vanished, vanishedDirect)
	}
	b.Add(benchkit.TimeKind, secConnector, "analyzer run via case-svc, POST job → record Success, p50", "ms", benchkit.Percentile(through, .5),
		benchkit.Percentile(c.direct, .5), "analysis-svc directly: POST run + waitreport p50", note)
	b.Add(benchkit.TimeKind, secConnector, "analyzer run via case-svc, POST job → record Success, p99", "ms", benchkit.Percentile(through, .99),
		benchkit.Percentile(c.direct, .99), "analysis-svc directly p99", fmt.Sprintf("the record polled %.1f times per run", pollsPerRun))

	if cr == nil || b.sizes.ConnectorRunsLarge == 0 {
		return nil
	}
	var large []time.Duration
	var largeDB string
	if err := b.Phase("connector on "+count(len(cr.ids))+" cases", func() error {
		polls := c.polls
		defer func() {
			n := b.sizes.ConnectorRunsLarge + 1
			largeDB = fmt.Sprintf("%.1f times", float64(c.polls-polls)/float64(n))
		}()
		for i := range b.sizes.ConnectorRunsLarge + 1 {
			// Observable 1 of one of the newest cases: a value of its own (the id derives from the case and the
			// value). Newest: where analysts work.
			k := len(cr.ids) - 1 - i
			caseID, value := cr.ids[k], cr.caseValue(k, 1)
			sum := sha256.Sum256([]byte(value))
			idSum := sha256.Sum256([]byte("case:" + caseID + "\x00ip\x00d:" + hex.EncodeToString(sum[:])))
			seen, _, err := c.viaConnector(ctx, cr.s, "~"+hex.EncodeToString(idSum[:16]))
			if errors.Is(err, errVanished) && vanished < maxVanished {
				vanished++
				b.Logf("connector: %v", err)
				continue
			}
			if err != nil {
				return err
			}
			if i > 0 {
				large = append(large, seen)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	obs := len(cr.ids)*b.sizes.ObservablesPerCase + 2*alertShared
	b.Add(benchkit.TimeKind, secConnector, fmt.Sprintf("the same run with %s cases / %s observables stored, p50", count(len(cr.ids)), count(obs)),
		"ms", benchkit.Percentile(large, .5), benchkit.Percentile(c.direct, .5), "analysis-svc directly p50",
		fmt.Sprintf("%d runs on section 6's database; p99 %.1f ms; the record polled %s per run", len(large), benchkit.Percentile(large, .99), largeDB))
	return nil
}
