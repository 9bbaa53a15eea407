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

// With BENCH_MONGO_URI the bench runs its phases a second time on that MongoDB (here the embedded FerretDB of
// mongotest, or MONGOTEST_URI): the SQLite rows stay as they are, and every section has rows marked
// " (MongoDB)" with positive figures and floors, the memory rows excepted (measured once, on SQLite).
func TestBenchQuick_Mongo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick bench twice, on SQLite and on a MongoDB")
	}
	t.Setenv(benchkit.MongoEnv, mongotest.Config(t).URI)
	opts, err := parseFlags([]string{"-quick", "-only", "pipeline,cache,reads",
		"-out", filepath.Join(t.TempDir(), "results.json")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
		if strings.HasSuffix(r.Section, " (MongoDB)") && strings.Contains(r.FloorWhat, "SQL") {
			t.Errorf("row %s / %s: a SQL floor on MongoDB: %s", r.Section, r.Metric, r.FloorWhat)
		}
	}
	for _, s := range []string{secPipeline, secCache, secReads} {
		if sections[s] == 0 || sections[s] != sections[s+" (MongoDB)"] {
			t.Errorf("%s: %d rows on SQLite, %d on MongoDB", s, sections[s], sections[s+" (MongoDB)"])
		}
	}
	if sections[secMemory+" (MongoDB)"] != 0 {
		t.Errorf("memory rows on the MongoDB pass")
	}
}
