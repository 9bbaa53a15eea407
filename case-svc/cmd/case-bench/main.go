// Command case-bench measures case-svc against floors measured in the same run, and prints one table in the
// format of analysis-svc's analysis-bench. Its rows (sections 6 case-svc, 6 web interface, 7 connector, the
// case-svc rows of 8 memory and 9 hardening) are merged into bench/results.json: rows of the services "case-svc" and
// "connector" are replaced, every other row and key of the file is kept. `make bench` runs it after
// analysis-bench; -quick uses small counts for a smoke test.
//
// Every row holds a figure, the floor it is compared with (measured in the same run, on the same machine, with
// the same clients) and their ratio: figure/floor for times, floor/figure for rates, so a ratio above 1 always
// means "slower than the floor".
//
// case-svc runs in this process, wired as cmd/case-svc wires it, on the embedded database (SQLite through
// pkg/docstore) in a temporary folder, and is called over real HTTP on 127.0.0.1. Its connector drives a real
// analysis-svc process that the bench builds (go build) and starts. With BENCH_MONGO_URI set, every section
// but memory runs again with both services on that MongoDB (benchkit.Run.Passes), its rows' sections marked
// " (MongoDB)".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/pkg/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "case-bench:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the sections, prints the table and merges the JSON results.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return runWith(ctx, opts, stdout, stderr)
}

// runWith runs sections 6, 7 and 8 with opts, prints the table and merges the JSON results.
func runWith(ctx context.Context, opts benchOptions, stdout, stderr io.Writer) error {
	b, err := newBench(opts, stderr)
	if err != nil {
		return err
	}
	defer b.Cleanup()
	if err := b.Passes(ctx, func() error { return runAll(ctx, b) }); err != nil {
		return err
	}
	res := b.Results(b.sizes)
	res.Print(stdout)
	if opts.out != "" {
		how, err := mergeResults(opts.out, res)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s %s\n", how, opts.out)
	}
	return nil
}

func runAll(ctx context.Context, b *bench) (err error) {
	b.Service = "case-svc"
	var (
		ap           *analysisProc
		cases, conn  *stack
		rssChildIdle float64
	)
	defer func() {
		for _, s := range []*stack{cases, conn} {
			if s != nil {
				s.close()
			}
		}
		if ap != nil {
			ap.stop()
		}
	}()
	logs := &benchkit.LogSink{Out: b.Log}
	if b.opts.audit {
		return runAudit(ctx, b, logs)
	}
	if b.opts.harden {
		return runHardening(ctx, b, logs)
	}
	if b.bin == "" { // built once, for both passes
		if err := b.Phase("build analysis-svc", func() (err error) {
			b.bin, err = buildAnalysis(ctx, filepath.Join(b.Tmp, "bin"))
			return err
		}); err != nil {
			return err
		}
	}
	if err := b.Phase("start", func() error {
		var err error
		if ap, err = startAnalysis(ctx, b.bin, b.DB(filepath.Join(b.Tmp, "analysis-db"), "analysis"), b.Log); err != nil {
			return err
		}
		dir := filepath.Join(b.Tmp, "db")
		servers := stackOptions{servers: []app.Server{{Name: serverName, URL: ap.url, Key: ap.key}}}
		if cases, err = startStack(ctx, b.DB(dir, "cases"), logs, servers); err != nil {
			return err
		}
		conn, err = startStack(ctx, b.DB(dir, "cases_connector"), logs, servers)
		return err
	}); err != nil {
		return err
	}
	if b.opts.auto {
		return runAutomation(ctx, b, conn, ap)
	}
	rssIdle, _ := benchkit.VMRSS()
	heapIdle := benchkit.HeapInUse()
	rssChildIdle, _ = ap.rss()

	cr, err := runCases(ctx, b, cases)
	if err != nil {
		return err
	}
	if err := runAudit(ctx, b, logs); err != nil {
		return err
	}
	if err := runConnector(ctx, b, conn, ap, cr); err != nil {
		return err
	}
	if err := runPages(ctx, b, cr); err != nil {
		return err
	}
	if err := runAutomation(ctx, b, conn, ap); err != nil {
		return err
	}

	b.Service = "case-svc"
	if b.OnMongo() { // the process's memory is measured on the SQLite pass; MongoDB's is the server's
		return nil
	}
	rssAfter, _ := benchkit.VMRSS()
	heapAfter := benchkit.HeapInUse()
	rssChildAfter, _ := ap.rss()
	defer func() {
		if err == nil { // after the memory rows: its own processes and stack
			err = runHardening(ctx, b, logs)
		}
	}()
	note := "VmRSS of the bench process: case-svc (two instances) + their embedded SQLite databases + bench clients"
	b.Add(benchkit.PlainKind, secMemory, "case-svc RSS idle (after start and setup)", "MiB", rssIdle, -1, "",
		fmt.Sprintf("%s; %.0f MiB before the services started", note, b.RSSAtStart))
	b.Add(benchkit.PlainKind, secMemory, "case-svc RSS after the runs", "MiB", rssAfter, -1, "",
		fmt.Sprintf("%s; its databases hold %s cases", note, count(len(cr.ids))))
	b.Add(benchkit.PlainKind, secMemory, "case-svc Go heap in use idle", "MiB", heapIdle, -1, "", "runtime.MemStats.HeapInuse")
	b.Add(benchkit.PlainKind, secMemory, "case-svc Go heap in use after the runs", "MiB", heapAfter, -1, "", "runtime.MemStats.HeapInuse")
	b.Add(benchkit.PlainKind, secMemory, "analysis-svc child RSS idle (after start and setup)", "MiB", rssChildIdle, -1, "",
		fmt.Sprintf("/proc/%d/status VmRSS: the process the connector drives, embedded database included", ap.pid))
	b.Add(benchkit.PlainKind, secMemory, "analysis-svc child RSS after the runs", "MiB", rssChildAfter, -1, "",
		fmt.Sprintf("after %d connector and %d direct Echo jobs", b.sizes.ConnectorRuns+b.sizes.ConnectorRunsLarge+4, b.sizes.ConnectorRuns+3))
	return b.MemoryRow(ctx, secMemory, "github.com/openir/platform/case-svc/internal/api")
}
