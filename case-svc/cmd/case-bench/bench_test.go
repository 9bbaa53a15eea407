package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/benchkit"
)

// The bench with the -quick sizes, as a smoke test: it must run end to end (case-svc in process, a real
// analysis-svc process), print one table and write results with every section, and every floor and ratio it
// reports must be a positive number.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts case-svc and analysis-svc and runs the quick bench (about 1 min)")
	}
	opts, err := parseFlags([]string{"-quick", "-out", filepath.Join(t.TempDir(), "results.json")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := runWith(ctx, opts, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(opts.out)
	if err != nil {
		t.Fatal(err)
	}
	var res benchkit.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if sz, _ := res.Sizes.(map[string]any); !res.Quick || res.Machine.NProc == 0 || res.Machine.Go == "" || res.Date == "" ||
		sz["casesLarge"] == nil || sz["casesLarge"] == 0.0 {
		t.Errorf("results header: %+v", res)
	}
	sections := map[string]int{}
	for _, r := range res.Rows {
		sections[r.Section]++
		if r.Figure <= 0 {
			t.Errorf("row %s / %s: figure %v", r.Section, r.Metric, r.Figure)
		}
		if r.Section != secMemory && r.Unit != "MiB" && (r.Floor == nil || *r.Floor <= 0 || r.Ratio == nil || *r.Ratio <= 0) {
			t.Errorf("row %s / %s: floor %v ratio %v", r.Section, r.Metric, r.Floor, r.Ratio)
		}
		if !slices.Contains([]string{"case-svc", "connector"}, r.Service) {
			t.Errorf("row %s / %s: service %q", r.Section, r.Metric, r.Service)
		}
	}
	for _, s := range []string{secCases, secPages, secConnector, secMemory, secHardening} {
		if sections[s] == 0 {
			t.Errorf("no row for %s", s)
		}
	}
	if table := stdout.String(); strings.Count(table, "\nsection ") != 1 || !strings.Contains(table, "machine: ") {
		t.Errorf("printed table:\n%s", table)
	}
}

// A merge keeps another program's rows and keys, replaces this program's rows, and orders rows by section.
func TestMergeResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	floor, ratio := 1.0, 2.0
	other := map[string]any{
		"date": "earlier", "quick": false, "sizes": map[string]any{"clients": 16}, "phases": []any{},
		"rows": []benchkit.Row{
			{Section: "1 job pipeline", Service: "analysis-svc", Metric: "throughput", Figure: 5, Floor: &floor, Ratio: &ratio},
			{Section: "6 case-svc", Service: "case-svc", Metric: "stale", Figure: 9},
			{Section: "8 memory", Service: "analysis-svc", Metric: "RSS idle", Figure: 100},
		},
	}
	data, _ := json.Marshal(other)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := benchkit.Results{Date: "now", Quick: true, Rows: []benchkit.Row{
		{Section: secCases, Service: "case-svc", Metric: "new", Figure: 1},
		{Section: secConnector, Service: "connector", Metric: "run", Figure: 2},
		{Section: secMemory, Service: "case-svc", Metric: "case-svc RSS", Figure: 3},
	}}
	how, err := mergeResults(path, res)
	if err != nil || how != "merged into" {
		t.Fatalf("merge: %q %v", how, err)
	}
	data, _ = os.ReadFile(path)
	var got struct {
		Date      string           `json:"date"`
		Sizes     any              `json:"sizes"`
		Rows      []benchkit.Row   `json:"rows"`
		CaseBench benchkit.Results `json:"caseBench"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	var metrics []string
	for _, r := range got.Rows {
		metrics = append(metrics, r.Metric)
	}
	if want := []string{"throughput", "new", "run", "RSS idle", "case-svc RSS"}; !slices.Equal(metrics, want) {
		t.Errorf("rows %v, want %v", metrics, want)
	}
	if got.Date != "earlier" || got.Sizes == nil || got.CaseBench.Date != "now" || !got.CaseBench.Quick || got.CaseBench.Rows != nil {
		t.Errorf("merged header: %s", data)
	}
	if !strings.HasPrefix(string(data), "{\n  \"date\": \"earlier\"") {
		t.Errorf("key order or indentation lost: %.80s", data)
	}
	// A file with only this program's rows is replaced.
	if how, err := mergeResults(path, res); err != nil || how != "merged into" {
		t.Fatalf("second merge: %q %v", how, err)
	}
	onlyOwn := filepath.Join(t.TempDir(), "own.json")
	data, _ = json.Marshal(benchkit.Results{Date: "old", Rows: []benchkit.Row{{Section: secCases, Service: "case-svc", Metric: "old", Figure: 1}}})
	_ = os.WriteFile(onlyOwn, data, 0o644)
	if how, err := mergeResults(onlyOwn, res); err != nil || how != "written to" {
		t.Fatalf("own-only merge: %q %v", how, err)
	}
	data, _ = os.ReadFile(onlyOwn)
	if !strings.Contains(string(data), `"date": "now"`) || strings.Contains(string(data), `"old"`) {
		t.Errorf("own-only file: %s", data)
	}
}

// A mode's rows go to the mode's own file, never merged in place of a full run's rows.
func TestParseFlags_ModeOut(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "bench/results.json"},
		{[]string{"-audit"}, "bench/results-audit.json"},
		{[]string{"-automation", "-out", "bench/results.json"}, "bench/results-automation.json"},
		{[]string{"-hardening"}, "bench/results-hardening.json"},
		{[]string{"-audit", "-out", "/tmp/a.json"}, "/tmp/a.json"},
		{[]string{"-automation", "-out", ""}, ""},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil || o.out != c.want {
			t.Errorf("%v: out %q, %v; want %q", c.args, o.out, err, c.want)
		}
	}
}
