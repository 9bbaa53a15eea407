package main

// Section 7, automation rules (docs/automation.md): observables created one at a time with three rules
// evaluated on each versus none, and the time from an observable's creation to the job its rule makes being
// submitted to the analysis server, versus a user's own analyzer job request.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore"
)

// createOne posts one observable (one value) to a case and returns its id.
func createOne(ctx context.Context, c *benchkit.Client, caseID, data string, tags []string) (string, error) {
	var obs []struct {
		ID string `json:"id"`
	}
	if _, err := c.Call(ctx, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{data},
		"tags": tags}, http.StatusCreated, &obs); err != nil {
		return "", err
	}
	if len(obs) != 1 {
		return "", fmt.Errorf("%d observables created", len(obs))
	}
	return obs[0].ID, nil
}

// newCaseID creates a case as c and returns its id.
func newCaseID(ctx context.Context, c *benchkit.Client, title string) (string, error) {
	var cs struct {
		ID string `json:"id"`
	}
	_, err := c.Call(ctx, http.MethodPost, "/api/case", map[string]any{"title": title, "description": "automation bench"}, http.StatusCreated, &cs)
	return cs.ID, err
}

// automationRounds is how many times each of the two rates is measured (alternately).
const automationRounds = 3

// median returns the median of xs (not empty).
func median(xs []float64) float64 {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	if len(ys)%2 == 1 {
		return ys[len(ys)/2]
	}
	return (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
}

// rates writes rates per second for a note.
func rates(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}

// runAutomation is the automation rows, on the connector's stack (a fresh database with a real analysis-svc).
func runAutomation(ctx context.Context, b *bench, s *stack, ap *analysisProc) error {
	b.Service = "connector"
	n, m := b.sizes.AutomationObservables, b.sizes.AutomationRuns
	if n == 0 {
		return nil
	}
	var noRules, withRules float64
	var rounds string
	var latency, floor []time.Duration
	if err := b.Phase("automation", func() error {
		// An org-admin manages the set and the rules (manageAutomation); the analyst creates the observables.
		if _, err := s.super.Call(ctx, http.MethodPost, "/api/user", map[string]any{"login": "bench-admin", "organisation": benchOrg,
			"profile": "org-admin"}, http.StatusCreated, nil); err != nil {
			return err
		}
		r, err := s.super.Call(ctx, http.MethodPost, "/api/user/bench-admin/key/renew", nil, http.StatusOK, nil)
		if err != nil {
			return err
		}
		admin := benchkit.NewClient(s.url, string(r.Body))
		if _, err := admin.Call(ctx, http.MethodPost, "/api/automation/set", map[string]any{"name": "bench", "analyzers": map[string]any{
			"ip": []any{map[string]any{"analysisId": serverName, "name": "Echo"}}}}, http.StatusCreated, nil); err != nil {
			return err
		}
		// The two measurements alternate, three rounds of each, and each figure is the median of its rounds: on
		// a shared machine the rate of one round of n observables varies by up to 2× from one round to the
		// next, whatever the rules.
		create := func(caseID string, prefix, round int) ([]string, error) {
			ids := make([]string, 0, n)
			for i := range n {
				id, err := createOne(ctx, s.analyst, caseID, fmt.Sprintf("10.%d.%d.%d", prefix, round*4+i/250, i%250+1), nil)
				if err != nil {
					return nil, err
				}
				ids = append(ids, id)
			}
			return ids, nil
		}
		// Three rules on every observable created, whose conditions the bench's observables do not meet: each
		// observable costs three firings (the condition evaluated, the record written). They are disabled
		// (PATCH) for the rounds without rules.
		var rules []string
		for i, cond := range []any{map[string]any{"tags": "bench-never"}, map[string]any{"_and": []any{map[string]any{"dataType": "domain"},
			map[string]any{"tags": "x"}}}, map[string]any{"ioc": true}} {
			var rule struct {
				ID string `json:"id"`
			}
			if _, err := admin.Call(ctx, http.MethodPost, "/api/automation/rule", map[string]any{"name": fmt.Sprint("bench-", i), "event": "observableCreated",
				"conditions": cond, "actions": []any{map[string]any{"type": "runSet", "set": "bench"}}, "enabled": false}, http.StatusCreated, &rule); err != nil {
				return err
			}
			rules = append(rules, rule.ID)
		}
		enable := func(on bool) error {
			for _, id := range rules {
				if _, err := admin.Call(ctx, http.MethodPatch, "/api/automation/rule/"+id, map[string]any{"enabled": on}, http.StatusOK, nil); err != nil {
					return err
				}
			}
			return nil
		}
		firings, err := collection(ctx, s.db, "firings")
		if err != nil {
			return err
		}
		noCase, err := newCaseID(ctx, s.analyst, "no rules")
		if err != nil {
			return err
		}
		caseID, err := newCaseID(ctx, s.analyst, "three rules")
		if err != nil {
			return err
		}
		var without, with []float64
		for round := range automationRounds {
			t0 := time.Now()
			if _, err := create(noCase, 220, round); err != nil {
				return err
			}
			without = append(without, float64(n)/time.Since(t0).Seconds())
			if err := enable(true); err != nil {
				return err
			}
			t0 = time.Now()
			ids, err := create(caseID, 221, round)
			if err != nil {
				return err
			}
			// Done when the rules recorded the 3n firings of the round's observables (none Pending): counted in
			// the database, so that the wait does not load the service it measures.
			deadline := time.Now().Add(5 * time.Minute)
			for {
				k, err := firings.Count(ctx, docstore.And(docstore.In("rule", rules...), docstore.In("objectId", ids...), docstore.Ne("status", "Pending")))
				if err != nil {
					return err
				}
				if k >= int64(3*n) {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the rules' firings were not all recorded within 5 minutes (%d of %d)", k, 3*n)
				}
				time.Sleep(pollEvery)
			}
			with = append(with, float64(n)/time.Since(t0).Seconds())
			if err := enable(false); err != nil {
				return err
			}
		}
		noRules, withRules = median(without), median(with)
		rounds = fmt.Sprintf("rounds: without %s, with %s /s", rates(without), rates(with))
		if err := enable(true); err != nil { // the latency rows run with the three rules active
			return err
		}

		// A fourth rule runs the set on the observables tagged bench-auto: from the POST of the observable to
		// its job accepted by analysis-svc (the record has the server's job id).
		if _, err := admin.Call(ctx, http.MethodPost, "/api/automation/rule", map[string]any{"name": "bench-auto", "event": "observableCreated",
			"conditions": map[string]any{"tags": "bench-auto"}, "actions": []any{map[string]any{"type": "runSet", "set": "bench"}}},
			http.StatusCreated, nil); err != nil {
			return err
		}
		const warm = 3
		for i := range m + warm {
			t0 := time.Now()
			id, err := createOne(ctx, s.analyst, caseID, fmt.Sprintf("10.222.%d.%d", i/250, i%250+1), []string{"bench-auto"})
			if err != nil {
				return err
			}
			for {
				var jobs []struct {
					AnalysisJobID string `json:"analysisJobId"`
				}
				if _, err := s.analyst.Call(ctx, http.MethodPost, "/api/connector/analysis/job/_search",
					map[string]any{"query": map[string]any{"observable": id}}, http.StatusOK, &jobs); err != nil {
					return err
				}
				if len(jobs) > 0 && jobs[0].AnalysisJobID != "" {
					break
				}
				if time.Since(t0) > time.Minute {
					return fmt.Errorf("observable %s: its rule's job was not submitted within a minute", id)
				}
				time.Sleep(pollEvery)
			}
			if i >= warm {
				latency = append(latency, time.Since(t0))
			}
			// The floor: the same observable creation and a user's own job request, submitted before it answers.
			t0 = time.Now()
			fid, err := createOne(ctx, s.analyst, caseID, fmt.Sprintf("10.223.%d.%d", i/250, i%250+1), nil)
			if err != nil {
				return err
			}
			if _, err := s.analyst.Call(ctx, http.MethodPost, "/api/connector/analysis/job", map[string]any{"analysisId": serverName,
				"artifactId": fid, "analyzerId": ap.echoID}, http.StatusCreated, nil); err != nil {
				return err
			}
			if i >= warm {
				floor = append(floor, time.Since(t0))
			}
		}
		return nil
	}); err != nil {
		return err
	}
	b.Add(benchkit.RateKind, secConnector, "observables created one at a time with 3 rules evaluated on each", "/s", withRules, noRules,
		"the same without rules", fmt.Sprintf("%d observables; with rules, until the 3×%d firings are recorded (SkippedByCondition); "+
			"the median of %d rounds of each, alternating (%s)", n, n, automationRounds, rounds))
	note := fmt.Sprintf("%d observables one at a time, tag bench-auto, 4 rules active; the job record polled every %s; floor: the same "+
		"creation then POST /api/connector/analysis/job (submitted before it answers)", m, pollEvery)
	b.Add(benchkit.TimeKind, secConnector, "observable created → its rule's job submitted, p50", "ms", benchkit.Percentile(latency, .5),
		benchkit.Percentile(floor, .5), "creation + a user's job request p50", note)
	b.Add(benchkit.TimeKind, secConnector, "observable created → its rule's job submitted, p99", "ms", benchkit.Percentile(latency, .99),
		benchkit.Percentile(floor, .99), "creation + a user's job request p99", "")
	return nil
}
