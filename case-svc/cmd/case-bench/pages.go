package main

// Section 6, the web interface (issue 24): pages of internal/webui rendered by the server, each against the
// API request that returns the same data (same filter, sort and page), timed one after the other by the same
// client in the same run (benchkit.PageVsAPI). They run on section 6's database after the connector's runs on
// it: 100k cases (CasesLarge), filled up to Alerts alerts by InsertMany of documents shaped as the API writes
// them (the shape of the alert of the similarity rows), and a case made through the API with ViewObservables
// observables. Targets of the issue: p50 within 2× of the API request, at most 30 ms for the lists and 100 ms
// for the case view on this machine type.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore"
)

const secPages = "6 web interface"

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
	checks := []*benchkit.PageVsAPI{
		{Metric: "case list page GET /ui/cases?status=Open&severity=3&size=50", Page: "/ui/cases?status=Open&severity=3&size=50",
			Method: http.MethodPost, API: "/api/case/_search?range=0-50&sort=-caseId",
			Body:  map[string]any{"query": map[string]any{"_and": []any{map[string]any{"status": "Open"}, map[string]any{"severity": 3}}}},
			Check: benchkit.ListItems(50, link("/ui/cases/")), FloorIs: "POST /api/case/_search?range=0-50&sort=-caseId, status Open and severity 3",
			Note: fmt.Sprintf("%s cases; target ≤ 30 ms and ≤ 2× the API", count(len(cr.ids)))},
		{Metric: "alert list page GET /ui/alerts?status=New (25 a page)", Page: "/ui/alerts?status=New",
			Method: http.MethodPost, API: "/api/alert/_search?range=0-25&sort=-date",
			Body:  map[string]any{"query": map[string]any{"status": "New"}},
			Check: benchkit.ListItems(25, link("/ui/alerts/")), FloorIs: "POST /api/alert/_search?range=0-25&sort=-date, status New",
			Note: fmt.Sprintf("%s alerts; the API's answer also lists each alert's observables; target ≤ 30 ms and ≤ 2× the API", count(alerts))},
		{Metric: fmt.Sprintf("case view GET /ui/cases/{id}?tab=observables, %d observables", z.ViewObservables),
			Page: "/ui/cases/" + viewID + "?tab=observables", Method: http.MethodGet,
			API:     fmt.Sprintf("/api/case/%s/artifact?range=0-%d&sort=createdAt", viewID, z.ViewObservables),
			Check:   benchkit.ListItems(z.ViewObservables, func(m map[string]any) string { return html.EscapeString(fmt.Sprint(m["data"])) }),
			FloorIs: fmt.Sprintf("GET /api/case/{id}/artifact?range=0-%d&sort=createdAt", z.ViewObservables),
			Note: "the page also reads the case, its counts, the case's analyzer jobs and the analyzers offered " +
				"(a request to the analysis server); target ≤ 100 ms and ≤ 2× the API"},
	}
	return b.Phase("measure pages", func() error {
		for _, pc := range checks {
			if err := pc.Time(ctx, cr.s.analyst, z.PageReps); err != nil {
				return err
			}
			pc.AddRows(b.Run, secPages)
		}
		return nil
	})
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
