package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/openir/platform/pkg/benchkit"
)

// sizes are the counts of one run.
type sizes struct {
	Clients int `json:"clients"` // concurrent HTTP clients creating cases (and driver goroutines of the floor)
	// 6: cases, each with ObservablesPerCase observables (one POST with that many values) and TasksPerCase tasks
	// (given in the case's POST); measured at CasesSmall, then filled up to CasesLarge and measured again.
	CasesSmall         int `json:"casesSmall"`
	CasesLarge         int `json:"casesLarge"`
	ObservablesPerCase int `json:"observablesPerCase"`
	TasksPerCase       int `json:"tasksPerCase"`
	// Fill is how the cases beyond CasesSmall are made: "api" (POST /api/case and /artifact, like the first
	// ones) up to CasesLarge-CreateSample, or "bulk": insertMany into the collections (documents shaped as the
	// API's) up to CasesLarge-2·CreateSample, then CreateSample cases through the API. The last CreateSample
	// cases up to CasesLarge are the creation floor at that size (the floor's Collection calls in the same
	// database). Through the API the fill takes too long for the 15-minute budget of `make bench`, so the full
	// run uses bulk.
	Fill         string `json:"fill"`
	CreateSample int    `json:"createSample"`
	// Repetitions at each size (the floors run as often): waitingTasks and case search, similar cases,
	// 1000-observable additions.
	QueryReps        int `json:"queryReps"`
	QueryRepsLarge   int `json:"queryRepsLarge"`
	SimilarReps      int `json:"similarReps"`
	SimilarRepsLarge int `json:"similarRepsLarge"`
	BulkValues       int `json:"bulkValues"` // values of the big observable request
	BulkReps         int `json:"bulkReps"`
	BulkRepsLarge    int `json:"bulkRepsLarge"`
	// AuditCases is how many cases are created on each of two instances, with and without the audit trail.
	AuditCases int `json:"auditCases"`
	// 7: analyzer runs through case-svc's connector and directly, on a fresh case database; then
	// ConnectorRunsLarge more through the connector on the database of section 6.
	ConnectorRuns      int `json:"connectorRuns"`
	ConnectorRunsLarge int `json:"connectorRunsLarge"`
	// 6 web interface (after 7, on section 6's database): alerts of the organisation (filled by InsertMany),
	// observables of the case whose view is timed, and the requests of each page and of its API request.
	Alerts          int `json:"alerts"`
	ViewObservables int `json:"viewObservables"`
	PageReps        int `json:"pageReps"`
	// 7, automation: observables created with and without three rules evaluated on each; rule-made jobs
	// timed from the observable's creation to their submission.
	AutomationObservables int `json:"automationObservables"`
	AutomationRuns        int `json:"automationRuns"`
	// 9, hardening: POST /api/case timed on the idle service and while slow bodies are held; observables of
	// the case whose links are timed (two other cases share them all) and the requests; streams opened by one
	// read-only user, then changes, on each service alone.
	SlowReps        int `json:"slowReps"`
	LinkObservables int `json:"linkObservables"`
	LinkReps        int `json:"linkReps"`
	Streams         int `json:"streams"`
	StreamChanges   int `json:"streamChanges"`
}

var (
	fullSizes = sizes{Clients: 8, CasesSmall: 1000, CasesLarge: 100_000, ObservablesPerCase: 10, TasksPerCase: 2,
		Fill: "bulk", CreateSample: 200, QueryReps: 10, QueryRepsLarge: 20, SimilarReps: 5, SimilarRepsLarge: 20,
		BulkValues: 1000, BulkReps: 10, BulkRepsLarge: 10, AuditCases: 1000, ConnectorRuns: 200, ConnectorRunsLarge: 10,
		Alerts: 100_000, ViewObservables: 1000, PageReps: 20, AutomationObservables: 500, AutomationRuns: 100,
		SlowReps: 200, LinkObservables: 22_000, LinkReps: 10, Streams: 300, StreamChanges: 10_000}
	quickSizes = sizes{Clients: 8, CasesSmall: 100, CasesLarge: 300, ObservablesPerCase: 10, TasksPerCase: 2,
		Fill: "bulk", CreateSample: 50, QueryReps: 3, QueryRepsLarge: 2, SimilarReps: 2, SimilarRepsLarge: 2,
		BulkValues: 200, BulkReps: 2, BulkRepsLarge: 2, AuditCases: 100, ConnectorRuns: 20, ConnectorRunsLarge: 3,
		Alerts: 300, ViewObservables: 100, PageReps: 3, AutomationObservables: 20, AutomationRuns: 5,
		SlowReps: 5, LinkObservables: 200, LinkReps: 3, Streams: 30, StreamChanges: 100}
)

type benchOptions struct {
	quick   bool
	out     string
	profile string // folder for one CPU profile per phase
	keep    bool   // keep the temporary folder
	audit   bool   // only the audit overhead row
	auto    bool   // only the automation rows
	harden  bool   // only section 9 (hardening)
	sizes   sizes
}

func parseFlags(args []string, stderr io.Writer) (benchOptions, error) {
	fs := flag.NewFlagSet("case-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOptions
	fs.BoolVar(&o.quick, "quick", false, "small counts (a smoke test of about half a minute)")
	fs.StringVar(&o.out, "out", "bench/results.json", "merge the rows into this JSON file (empty: do not write); "+
		"rows of the services case-svc and connector are replaced, the others kept")
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of each phase into this folder (<phase>.pprof)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary folder (databases)")
	fs.BoolVar(&o.audit, "audit", false, "run only the row audit overhead on case creation (section 6)")
	fs.BoolVar(&o.auto, "automation", false, "run only the automation rows (section 7)")
	fs.BoolVar(&o.harden, "hardening", false, "run only the hardening rows (section 9: slow bodies, links, streams memory)")
	fill := fs.String("fill", "", "how cases beyond the first measurement are made: api or bulk (default: bulk)")
	cases := fs.Int("cases", 0, "cases at the second measurement (default 100000, -quick 300)")
	if err := fs.Parse(args); err != nil {
		return benchOptions{}, err
	}
	if fs.NArg() > 0 {
		return benchOptions{}, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	// A file of a full run keeps its rows: the rows of one mode alone go to their own file
	// (bench/results-audit.json…).
	switch { // in the order main runs them: one mode runs
	case o.audit:
		o.out = benchkit.NamedOut(fs, "audit")
	case o.harden:
		o.out = benchkit.NamedOut(fs, "hardening")
	case o.auto:
		o.out = benchkit.NamedOut(fs, "automation")
	}
	o.sizes = fullSizes
	if o.quick {
		o.sizes = quickSizes
	}
	switch *fill {
	case "":
	case "api", "bulk":
		o.sizes.Fill = *fill
	default:
		return benchOptions{}, fmt.Errorf("-fill %q: want api or bulk", *fill)
	}
	if *cases > 0 {
		if *cases < o.sizes.CasesSmall {
			return benchOptions{}, fmt.Errorf("-cases %d: at least %d", *cases, o.sizes.CasesSmall)
		}
		o.sizes.CasesLarge = *cases
	}
	return o, nil
}

// bench is one run of this program: the shared run scaffolding with this program's options and sizes.
type bench struct {
	*benchkit.Run
	opts  benchOptions
	sizes sizes
	bin   string // the analysis-svc binary the connector drives
}

func newBench(o benchOptions, log io.Writer) (*bench, error) {
	r, err := benchkit.NewRun(benchkit.RunOptions{Program: "case-bench", Quick: o.quick, Profile: o.profile, Keep: o.keep}, log)
	if err != nil {
		return nil, err
	}
	return &bench{Run: r, opts: o, sizes: o.sizes}, nil
}
