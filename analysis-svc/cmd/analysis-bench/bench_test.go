package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/benchkit"
)

// The bench with the -quick sizes, as a smoke test: it must run end to end, print one table and write
// results with every section, and every floor and ratio it reports must be a positive number.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole service and runs the quick bench (about 20 s)")
	}
	opts, err := parseFlags([]string{"-quick", "-out", filepath.Join(t.TempDir(), "results.json")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	if !res.Quick || res.Machine.NProc == 0 || res.Machine.Go == "" || res.Date == "" {
		t.Errorf("results header: %+v", res)
	}
	sections := map[string]int{}
	for _, r := range res.Rows {
		sections[r.Section]++
		if r.Figure <= 0 {
			t.Errorf("row %s / %s: figure %v", r.Section, r.Metric, r.Figure)
		}
		if r.Section != secMemory && (r.Floor == nil || *r.Floor <= 0 || r.Ratio == nil || *r.Ratio <= 0) {
			t.Errorf("row %s / %s: floor %v ratio %v", r.Section, r.Metric, r.Floor, r.Ratio)
		}
	}
	for _, s := range []string{secPipeline, secCache, secWait, secProcess, secReads, secPages, secMemory} {
		if sections[s] == 0 {
			t.Errorf("no row for %s", s)
		}
	}
	if table := stdout.String(); strings.Count(table, "\nsection ") != 1 || !strings.Contains(table, "machine: ") {
		t.Errorf("printed table:\n%s", table)
	}
}

// -pages writes its rows to their own file, never over a full run's: bench/results-pages.json by default or
// when -out names the full run's file, another file named with -out as it is, nothing with -out "".
func TestParseFlags_PagesOut(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "bench/results.json"},
		{[]string{"-pages"}, "bench/results-pages.json"},
		{[]string{"-pages", "-out", "bench/results.json"}, "bench/results-pages.json"},
		{[]string{"-pages", "-out", "./bench/results.json"}, "./bench/results-pages.json"},
		{[]string{"-pages", "-out", "/tmp/x.json"}, "/tmp/x.json"},
		{[]string{"-pages", "-out", ""}, ""},
		{[]string{"-out", "/tmp/full.json"}, "/tmp/full.json"},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil || o.out != c.want {
			t.Errorf("%v: out %q, %v; want %q", c.args, o.out, err, c.want)
		}
	}
}
