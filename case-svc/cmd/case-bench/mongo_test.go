package main

import (
	"bytes"
	"context"
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
	// A deadline for a smoke run, generous for a loaded 2-core machine (240 s seen beside four other builds).
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := runWith(ctx, opts, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	t.Logf("table:\n%s", stdout.String())
	rows := benchkit.CheckMongoPass(t, opts.out, []string{secCases, secConnector}, secMemory)
	if rows[secMemory] == 0 {
		t.Errorf("no memory rows on SQLite")
	}
	if !strings.Contains(stdout.String(), " (MongoDB) ") {
		t.Errorf("printed table without MongoDB rows:\n%s", stdout.String())
	}
}
