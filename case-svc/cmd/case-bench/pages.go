package main

// Section 6, the web interface (issue 24): pages of internal/webui rendered by the server, each against the
// API request that returns the same data (same filter, sort and page), timed one after the other by the same
// client in the same run. They run on section 6's database after the connector's runs on it: 100k cases
// (CasesLarge), filled up to Alerts alerts by InsertMany of documents shaped as the API writes them (the shape
// of the alert of the similarity rows), and a case made through the API with ViewObservables observables.
// Targets of the issue: p50 within 2× of the API request, at most 30 ms for the lists and 100 ms for the case
// view on this machine type.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore"
)

const secPages = "6 web interface"

// pageCheck is a page and the API request that returns its data: the page must show every item of the API's
// answer (check: a string of the page for one item of the answer).
type pageCheck struct {
	metric      string // the row's name
	page        string // GET path of the page
	method      string // the API request
	api         string
	body        any
	want        int // items the API answers
	check       func(item map[string]any) string
	floorIs     string // the API request, in words
	note        string
	lat, apiLat []time.Duration
}

// runPages is the web interface's part of section 6, on the database of runCases.
func runPages(ctx context.Context, b *bench, cr *caseRun) error {
	b.Service = "case-svc"
	z := b.sizes
	var alerts int
	if err := b.Phase("fill "+count(z.Alerts)+" alerts", func() (err error) {
		alerts, err = cr.fillAlerts(ctx, z.Alerts)
		return err
	}); err != nil {
		return err
	}
	var viewID string
	if err := b.Phase(fmt.Sprintf("case with %d observables", z.ViewObservables), func() (err error) {
		viewID, err = cr.viewCase(ctx, z.ViewObservables)
		return err
	}); err != nil {
		return err
	}
	link := func(prefix string) func(map[string]any) string {
		return func(m map[string]any) string { return `href="` + prefix + fmt.Sprint(m["_id"]) + `"` }
	}
	checks := []*pageCheck{
		{metric: "case list page GET /ui/cases?status=Open&severity=3&size=50", page: "/ui/cases?status=Open&severity=3&size=50",
			method: http.MethodPost, api: "/api/case/_search?range=0-50&sort=-caseId",
			body: map[string]any{"query": map[string]any{"_and": []any{map[string]any{"status": "Open"}, map[string]any{"severity": 3}}}},
			want: 50, check: link("/ui/cases/"), floorIs: "POST /api/case/_search?range=0-50&sort=-caseId, status Open and severity 3",
			note: fmt.Sprintf("%s cases; target ≤ 30 ms and ≤ 2× the API", count(len(cr.ids)))},
		{metric: "alert list page GET /ui/alerts?status=New (25 a page)", page: "/ui/alerts?status=New",
			method: http.MethodPost, api: "/api/alert/_search?range=0-25&sort=-date",
			body: map[string]any{"query": map[string]any{"status": "New"}},
			want: 25, check: link("/ui/alerts/"), floorIs: "POST /api/alert/_search?range=0-25&sort=-date, status New",
			note: fmt.Sprintf("%s alerts; the API's answer also lists each alert's observables; target ≤ 30 ms and ≤ 2× the API", count(alerts))},
		{metric: fmt.Sprintf("case view GET /ui/cases/{id}?tab=observables, %d observables", z.ViewObservables),
			page: "/ui/cases/" + viewID + "?tab=observables", method: http.MethodGet,
			api:  fmt.Sprintf("/api/case/%s/artifact?range=0-%d&sort=createdAt", viewID, z.ViewObservables),
			want: z.ViewObservables, check: func(m map[string]any) string { return html.EscapeString(fmt.Sprint(m["data"])) },
			floorIs: fmt.Sprintf("GET /api/case/{id}/artifact?range=0-%d&sort=createdAt", z.ViewObservables),
			note: "the page also reads the case, its counts, the case's analyzer jobs and the analyzers offered " +
				"(a request to the analysis server); target ≤ 100 ms and ≤ 2× the API"},
	}
	return b.Phase("measure pages", func() error {
		for _, pc := range checks {
			if err := cr.timePage(ctx, z.PageReps, pc); err != nil {
				return err
			}
			b.Logf("  %s: p50 %.1f ms, API p50 %.1f ms", pc.metric, benchkit.Percentile(pc.lat, .5), benchkit.Percentile(pc.apiLat, .5))
			for _, q := range []float64{.5, .99} {
				name := fmt.Sprintf("p%d", int(q*100))
				b.Add(benchkit.TimeKind, secPages, pc.metric+" "+name, "ms", benchkit.Percentile(pc.lat, q),
					benchkit.Percentile(pc.apiLat, q), pc.floorIs+" "+name,
					fmt.Sprintf("%d of each, one client, alternated; %s", len(pc.lat), pc.note))
			}
		}
		return nil
	})
}

// timePage times reps GETs of the page and as many of its API request, alternated (after one of each as a
// warm-up), and checks that the page shows every item the API answers.
func (r *caseRun) timePage(ctx context.Context, reps int, pc *pageCheck) error {
	for k := range reps + 1 {
		var page *benchkit.Response
		d, err := benchkit.Timed(func() error {
			var err error
			page, err = r.s.analyst.Call(ctx, http.MethodGet, pc.page, nil, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return err
		}
		if ct := page.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			return fmt.Errorf("GET %s: Content-Type %q", pc.page, ct)
		}
		var items []map[string]any
		ad, err := benchkit.Timed(func() error {
			_, err := r.s.analyst.Call(ctx, pc.method, pc.api, pc.body, http.StatusOK, &items)
			return err
		})
		if err != nil {
			return err
		}
		if len(items) != pc.want {
			return fmt.Errorf("%s %s: %d items, want %d", pc.method, pc.api, len(items), pc.want)
		}
		if k == 0 { // the page shows what the API answers
			body := string(page.Body)
			for _, it := range items {
				if s := pc.check(it); !strings.Contains(body, s) {
					return fmt.Errorf("GET %s: no %s in the page (%d bytes)", pc.page, s, len(body))
				}
			}
			continue
		}
		pc.lat, pc.apiLat = append(pc.lat, d), append(pc.apiLat, ad)
	}
	return nil
}

// fillAlerts inserts alerts with InsertMany (batches of 1000) up to n alerts in the bench organisation: copies
// of the similarity rows' alert as the service stored it, each with its own sourceRef (and so _id), title,
// severity, tags and date, no observables, status New. It returns how many alerts the organisation has.
func (r *caseRun) fillAlerts(ctx context.Context, n int) (int, error) {
	alerts, err := r.coll(ctx, "alerts")
	if err != nil {
		return 0, err
	}
	raw, err := alerts.FindRaw(ctx, docstore.Query{Filter: docstore.ID(r.alertID), Limit: 1})
	if err != nil || len(raw) != 1 {
		return 0, fmt.Errorf("read the alert %s: %d, %v", r.alertID, len(raw), err)
	}
	shape, err := decodeDoc(raw[0])
	if err != nil {
		return 0, err
	}
	have, err := alerts.Count(ctx, docstore.Eq("organisation", benchOrg))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	now := start.UnixMilli()
	for i := int(have); i < n; {
		batch := min(1000, n-i)
		docs := make([]any, batch)
		for k := range docs {
			ref := fmt.Sprintf("bulk-%d", i+k)
			docs[k] = shape.with("_id", cases.AlertID(benchOrg, "bench", "case-bench", ref), "sourceRef", ref,
				"title", fmt.Sprintf("Bench alert %d", i+k), "severity", 1+(i+k)%4,
				"tags", []string{"bench", fmt.Sprintf("group-%d", (i+k)%10)}, "observables", []string{},
				"status", "New", "read", false, "date", now-int64(i+k)*1000, "lastSyncDate", now, "createdAt", now)
		}
		if err := insertAll(ctx, alerts, docs); err != nil {
			return 0, fmt.Errorf("bulk insert of alerts: %w", err)
		}
		i += batch
	}
	total, err := alerts.Count(ctx, docstore.Eq("organisation", benchOrg))
	if err != nil {
		return 0, err
	}
	r.b.Logf("alerts: %d stored (%d by InsertMany in %.1fs)", total, total-have, time.Since(start).Seconds())
	return int(total), nil
}

// viewCase makes a case through the API with n observables (one POST with n domains) and returns its id.
func (r *caseRun) viewCase(ctx context.Context, n int) (string, error) {
	var cs struct {
		ID string `json:"id"`
	}
	if _, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/case", r.caseBody(len(r.ids)), http.StatusCreated, &cs); err != nil {
		return "", err
	}
	values := make([]string, n)
	for k := range values {
		values[k] = fmt.Sprintf("view-%d.example.org", k)
	}
	var obs []json.RawMessage
	if _, err := r.s.analyst.Call(ctx, http.MethodPost, "/api/case/"+cs.ID+"/artifact",
		map[string]any{"dataType": "domain", "data": values, "message": "case view"}, http.StatusCreated, &obs); err != nil {
		return "", err
	}
	if len(obs) != n {
		return "", fmt.Errorf("case %s: %d observables created, want %d", cs.ID, len(obs), n)
	}
	return cs.ID, nil
}
