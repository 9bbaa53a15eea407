package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/docstore/mongotest"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// With BENCH_MONGO_URI the bench runs a second time with case-svc and its analysis-svc on that MongoDB (here
// the embedded FerretDB of mongotest, or MONGOTEST_URI): every section but memory has rows marked
// " (MongoDB)", as many as on SQLite, with positive figures and floors.
func TestBenchQuick_Mongo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick bench twice, on SQLite and on a MongoDB")
	}
	t.Setenv(benchkit.MongoEnv, mongotest.Config(t).URI)
	opts, err := parseFlags([]string{"-quick", "-out", filepath.Join(t.TempDir(), "results.json")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := runWith(ctx, opts, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	t.Logf("table:\n%s", stdout.String())
	data, err := os.ReadFile(opts.out)
	if err != nil {
		t.Fatal(err)
	}
	var res benchkit.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
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
	for _, s := range []string{secCases, secConnector} {
		if sections[s] == 0 || sections[s] != sections[s+" (MongoDB)"] {
			t.Errorf("%s: %d rows on SQLite, %d on MongoDB", s, sections[s], sections[s+" (MongoDB)"])
		}
	}
	if sections[secMemory] == 0 || sections[secMemory+" (MongoDB)"] != 0 {
		t.Errorf("memory: %d rows on SQLite, %d on MongoDB", sections[secMemory], sections[secMemory+" (MongoDB)"])
	}
	if !strings.Contains(stdout.String(), " (MongoDB) ") {
		t.Errorf("printed table without MongoDB rows:\n%s", stdout.String())
	}
}
