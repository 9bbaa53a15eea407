package main

// Section 6, the web interface (issue 25): pages of internal/webui rendered by the server, each against the
// API request that returns the same data, timed one after the other by the same client in the same run
// (benchkit.PageVsAPI, as case-bench's rows of case-svc's pages). The phase runs on the service of the reads
// phase when that ran (its jobs, up to ReadsLarge), else on one of its own; either way its jobs are filled up to
// PageJobs by InsertMany (jobFill), and one job of the Bench_Report analyzer, run through the service, has a
// report of ReportBytes. Targets of the issue: p50 within 2× of the API request, at most 30 ms for the job
// history on this machine type.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/openir/platform/pkg/benchkit"
)

const secPages = "6 web interface"

// hostile is a value of the large report that must reach the page escaped.
const hostile = `<script>alert("bench")</script>`

func (a *analysisRun) pages(ctx context.Context) error {
	z := a.b.sizes
	fill, err := a.newJobFill(ctx, "198.51.100.2")
	if err != nil {
		return err
	}
	if err := fill.to(ctx, z.PageJobs); err != nil {
		return err
	}
	reportID, size, err := a.largeReportJob(ctx, z.ReportBytes)
	if err != nil {
		return err
	}
	jobs := count(fill.have) + " jobs and the large report's"
	if a.b.OnMongo() && a.b.opts.sizes.PageJobs > z.PageJobs {
		jobs += fmt.Sprintf(" (MongoDB pass: rather than %s, direct inserts over the network)", count(a.b.opts.sizes.PageJobs))
	}
	link := func(m map[string]any) string { return `href="/ui/jobs/` + fmt.Sprint(m["id"]) + `"` }
	search := "/api/job/_search?range=0-50&sort=-createdAt"
	checks := []*benchkit.PageVsAPI{
		{Metric: "job history GET /ui/jobs?size=50 (no filter)", Page: "/ui/jobs?size=50",
			Method: http.MethodPost, API: search, Body: `{}`, Check: benchkit.ListItems(50, link),
			FloorIs: "POST " + search + ", no query",
			Note:    jobs + "; both count the organization's jobs that are not Deleted; target ≤ 30 ms and ≤ 2× the API"},
		{Metric: "job history GET /ui/jobs?status=Success&dataType=ip&size=50", Page: "/ui/jobs?status=Success&dataType=ip&size=50",
			Method: http.MethodPost, API: search, Body: `{"query":{"_and":[{"status":"Success"},{"dataType":"ip"}]}}`,
			Check:   benchkit.ListItems(50, link),
			FloorIs: "POST " + search + ", status Success and dataType ip",
			Note:    jobs + "; target ≤ 30 ms and ≤ 2× the API"},
		{Metric: fmt.Sprintf("job report GET /ui/jobs/{id}, %s report", kib(size)), Page: "/ui/jobs/" + reportID,
			Method: http.MethodGet, API: "/api/job/" + reportID + "/report", Check: reportShown,
			FloorIs: "GET /api/job/{id}/report",
			Note: "the report of a Bench_Report job run through the service (records with strings to escape); the page " +
				"renders it as a tree and as indented raw JSON; target ≤ 2× the API"},
	}
	for _, pc := range checks {
		if err := pc.Time(ctx, a.s.admin, z.PageReps); err != nil {
			return err
		}
		pc.AddRows(a.b.Run, secPages)
	}
	return nil
}

// largeReportJob enables Bench_Report, has it answer a report of about n bytes and runs it once through the
// service. It returns the job's id and the size of the report the API answers.
func (a *analysisRun) largeReportJob(ctx context.Context, n int) (string, int, error) {
	out, err := largeReport(n)
	if err != nil {
		return "", 0, err
	}
	if err := os.WriteFile(filepath.Join(a.s.analyzersRoot, "Bench", "report.json"), out, 0o644); err != nil {
		return "", 0, err
	}
	var w struct {
		ID string `json:"id"`
	}
	if _, err := a.s.admin.Call(ctx, http.MethodPost, "/api/organization/analyzer/"+reportDefID, map[string]any{},
		http.StatusCreated, &w); err != nil {
		return "", 0, err
	}
	var j, done jobView
	if _, err := a.s.admin.Call(ctx, http.MethodPost, "/api/analyzer/"+w.ID+"/run",
		`{"dataType":"domain","data":"report.bench.example.org","message":"large report"}`, http.StatusOK, &j); err != nil {
		return "", 0, err
	}
	if err := a.waitSuccess(ctx, j.ID, &done); err != nil {
		return "", 0, err
	}
	if len(done.Report) < n*9/10 {
		return "", 0, fmt.Errorf("job %s: a report of %d bytes, want about %d", j.ID, len(done.Report), n)
	}
	a.b.Logf("job %s: a report of %d bytes", j.ID, len(done.Report))
	return j.ID, len(done.Report), nil
}

// largeReport is an output.json of about n bytes in the public format, shaped like a passive DNS answer: a
// list of records, each with strings, numbers, a list and a nested object; some strings hold characters HTML
// escapes, and one record in 500 the hostile script tag.
func largeReport(n int) ([]byte, error) {
	types := []string{"A", "AAAA", "CNAME", "MX", "TXT"}
	var records []any
	size := 0
	for i := 0; size < n-400; i++ {
		comment := fmt.Sprintf(`seen by "sensor %d" <b>&</b> rank %d`, i%7, i%100)
		if i%500 == 0 {
			comment = hostile
		}
		r := map[string]any{
			"rrname": fmt.Sprintf("host-%d.bench.example.org", i), "rrtype": types[i%len(types)],
			"rdata":      fmt.Sprintf("203.0.%d.%d", i/256%256, i%256),
			"first_seen": fmt.Sprintf("2026-%02d-%02dT%02d:00:00Z", 1+i%12, 1+i%28, i%24), "last_seen": "2026-11-28T12:00:00Z",
			"count": i * 7 % 1000, "score": float64(i%1000) / 10, "sources": []string{"sensor-a", "sensor-b"},
			"geo":     map[string]any{"country": "FR", "asn": 64500 + i%100, "org": "Example & Co <bench>"},
			"comment": comment,
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		size += len(b) + 1
		records = append(records, r)
	}
	return json.Marshal(map[string]any{
		"success": true,
		"summary": map[string]any{"taxonomies": []any{
			map[string]any{"level": "info", "namespace": "Bench", "predicate": "Records", "value": len(records)},
			map[string]any{"level": "suspicious", "namespace": "Bench", "predicate": "Hostile", "value": hostile},
		}},
		"full":      map[string]any{"query": "report.bench.example.org", "records": records, "total": len(records)},
		"artifacts": []any{}, "operations": []any{},
	})
}

// reportShown is the Check of the report page: every key and value of the API's report, in the tree's order
// (keys sorted, lists in order), is the whole text of an element of the page's tree; the page's raw JSON is the
// API's report; the hostile value is nowhere unescaped.
func reportShown(page, api []byte) error {
	var job struct {
		Report map[string]any `json:"report"`
	}
	dec := json.NewDecoder(bytes.NewReader(api))
	dec.UseNumber()
	if err := dec.Decode(&job); err != nil {
		return fmt.Errorf("the API's answer: %w", err)
	}
	if job.Report == nil || job.Report["full"] == nil {
		return errors.New("the API's answer has no report")
	}
	body := string(page)
	if strings.Contains(body, hostile) {
		return errors.New("the hostile value is in the page unescaped")
	}
	at := strings.Index(body, `id="job-report"`)
	if at < 0 {
		return errors.New("no report section")
	}
	var walk func(v any) error
	find := func(text string) error {
		i := strings.Index(body[at:], ">"+text+"<")
		if i < 0 {
			return fmt.Errorf("no element %q in the report's tree after byte %d", text, at)
		}
		at += i + len(text) + 1
		return nil
	}
	walk = func(v any) error {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if err := find(html.EscapeString(k)); err != nil {
					return err
				}
				if err := walk(x[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		case string:
			return find(`"` + html.EscapeString(x) + `"`)
		default: // json.Number, bool, nil
			return find(html.EscapeString(fmt.Sprint(x)))
		}
		return nil
	}
	if err := walk(job.Report["full"]); err != nil {
		return err
	}
	// The raw JSON view.
	start := strings.Index(body, `id="job-raw-text">`)
	if start < 0 {
		return errors.New("no raw JSON")
	}
	text := body[start+len(`id="job-raw-text">`):]
	end := strings.Index(text, "</pre>")
	if end < 0 {
		return errors.New("the raw JSON does not end")
	}
	var raw map[string]any
	dec = json.NewDecoder(strings.NewReader(html.UnescapeString(text[:end])))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("the raw JSON: %w", err)
	}
	for _, k := range []string{"success", "summary", "full"} {
		if !reflect.DeepEqual(raw[k], job.Report[k]) {
			return fmt.Errorf("the raw JSON's %s is not the API's", k)
		}
	}
	return nil
}

// kib writes a size in bytes as "1.0 MiB" or "512 KiB".
func kib(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
