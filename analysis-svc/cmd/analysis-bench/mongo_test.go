package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	// A deadline for a smoke run, generous for a loaded 2-core machine (181 s seen beside four other builds).
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := runWith(ctx, opts, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	t.Logf("table:\n%s", stdout.String())
	benchkit.CheckMongoPass(t, opts.out, []string{secPipeline, secCache, secReads}, secMemory)
}
