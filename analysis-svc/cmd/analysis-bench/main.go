// Command analysis-bench measures the services against floors measured in the same run, and prints one table
// (also written as JSON, bench/results.json by default). `make bench` runs the full bench; -quick uses small
// counts for a smoke test.
//
// Every row holds a figure, the floor it is compared with (measured in the same run, on the same machine, with
// the same clients) and their ratio: figure/floor for times, floor/figure for rates, so a ratio above 1 always
// means "slower than the floor".
//
// The service runs in this process, wired as cmd/analysis-svc wires it, on the embedded database in a
// temporary folder, and is called over real HTTP on 127.0.0.1. With BENCH_MONGO_URI set, every phase but
// memory runs again with the service on that MongoDB (benchkit.Run.Passes), its rows' sections marked
// " (MongoDB)".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/openir/platform/pkg/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "analysis-bench:", err)
		os.Exit(1)
	}
}

// suite is one group of rows. The suites run one after the other, each on its own stack.
type suite struct {
	name string
	run  func(ctx context.Context, b *bench) error
}

// suites in the order they run.
//
// Where the rest goes: the case-svc rows (its own section numbers, after analysis-svc's 1–5) and the
// connector rows (case-svc driving analysis-svc over HTTP) get a suite each here, in a file of their own
// (casesvc.go, connector.go), adding rows with b.add under Service "case-svc" / "connector". Memory (section
// 8) is measured by the suite that owns the process state, so it stays last in analysis-svc's suite.
var suites = []suite{
	{name: "analysis-svc", run: runAnalysis},
	{name: "analysis-svc memory under load", run: func(ctx context.Context, b *bench) error {
		return b.MemoryRow(ctx, secMemory, "github.com/openir/platform/analysis-svc/internal/api")
	}},
	// {name: "case-svc", run: runCase},           // later: case/alert/observable create, reads, search
	// {name: "connector", run: runConnector},     // later: case-svc → analysis-svc job round trip
}

// run parses the flags, runs every suite, prints the table and writes the JSON results.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return runWith(ctx, opts, stdout, stderr)
}

// runWith runs every suite with opts, prints the table and writes the JSON results.
func runWith(ctx context.Context, opts benchOptions, stdout, stderr io.Writer) error {
	b, err := newBench(opts, stderr)
	if err != nil {
		return err
	}
	defer b.Cleanup()
	err = b.Passes(ctx, func() error {
		b.sizes = b.opts.sizes
		if b.OnMongo() {
			b.sizes.ReadsLarge = min(b.sizes.ReadsLarge, mongoReadsLarge)
			b.sizes.PageJobs = min(b.sizes.PageJobs, mongoReadsLarge)
		}
		defer func() { b.sizes = b.opts.sizes }()
		for _, s := range suites {
			// The memory row measures the service on its embedded database: once, on the SQLite pass.
			if s.name == "analysis-svc memory under load" && (!b.runs("memory") || b.OnMongo()) {
				continue
			}
			if err := s.run(ctx, b); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := b.Results(b.sizes)
	res.Print(stdout)
	if opts.out != "" {
		if err := benchkit.WriteJSON(opts.out, res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwritten to %s\n", opts.out)
	}
	return nil
}
