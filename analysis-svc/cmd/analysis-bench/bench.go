package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/openir/platform/pkg/benchkit"
)

// sizes are the counts of one run.
type sizes struct {
	Clients      int `json:"clients"`      // concurrent HTTP clients (and goroutines of the floors)
	PipelineJobs int `json:"pipelineJobs"` // 1: Echo jobs submitted
	CacheHits    int `json:"cacheHits"`    // 2: repeated submissions
	WaitJobs     int `json:"waitJobs"`     // 3: jobs whose waitreport wake-up is timed
	WaitSleepMS  int `json:"waitSleepMs"`  // 3: Echo's sleep, so the waiter is waiting when the job ends
	ProcessJobs  int `json:"processJobs"`  // 4: external analyzer runs, through the service and directly
	ReadsSmall   int `json:"readsSmall"`   // 5: jobs stored for the first read measurement
	ReadsLarge   int `json:"readsLarge"`   // 5: jobs stored for the second
	// 5: GET /api/job/{id} (and the floor's get) and searches (and the floor's find+count) at each size.
	GetReps         int `json:"getReps"`
	SearchReps      int `json:"searchReps"`
	GetRepsLarge    int `json:"getRepsLarge"`
	SearchRepsLarge int `json:"searchRepsLarge"`
	// 6 web interface: jobs stored (InsertMany, as in 5) for the job history, the size of the report of the
	// job whose report page is timed, and the requests of each page and of its API request.
	PageJobs    int `json:"pageJobs"`
	ReportBytes int `json:"reportBytes"`
	PageReps    int `json:"pageReps"`
}

var (
	fullSizes = sizes{Clients: 16, PipelineJobs: 2000, CacheHits: 5000, WaitJobs: 200, WaitSleepMS: 50,
		ProcessJobs: 200, ReadsSmall: 100_000, ReadsLarge: 1_000_000, GetReps: 200, SearchReps: 100, GetRepsLarge: 200,
		SearchRepsLarge: 100, PageJobs: 1_000_000, ReportBytes: 1 << 20, PageReps: 20}
	quickSizes = sizes{Clients: 16, PipelineJobs: 100, CacheHits: 300, WaitJobs: 20, WaitSleepMS: 50,
		ProcessJobs: 20, ReadsSmall: 1_000, ReadsLarge: 3_000, GetReps: 20, SearchReps: 3, GetRepsLarge: 10,
		SearchRepsLarge: 3, PageJobs: 3_000, ReportBytes: 1 << 20, PageReps: 3}
)

type benchOptions struct {
	quick   bool
	out     string
	profile string          // folder for one CPU profile per phase
	keep    bool            // keep the temporary folder
	only    map[string]bool // the phases to run (empty: all)
	pages   bool            // only the web interface rows (-pages)
	sizes   sizes
}

func parseFlags(args []string, stderr io.Writer) (benchOptions, error) {
	fs := flag.NewFlagSet("analysis-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOptions
	fs.BoolVar(&o.quick, "quick", false, "small counts (a smoke test of about half a minute)")
	fs.StringVar(&o.out, "out", "bench/results.json", "write the results as JSON to this file (empty: do not write)")
	fs.StringVar(&o.profile, "cpuprofile", "", "write profiles of each phase into this folder (CPU <phase>.pprof, <phase>.block.pprof, <phase>.mutex.pprof)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary folder (database, job folders)")
	only := fs.String("only", "", "run only these phases, comma-separated (pipeline, cache, waitreport, process, reads, events, pages; memory)")
	fs.BoolVar(&o.pages, "pages", false, "run only the web interface rows (section 6, phase pages), without the memory rows; "+
		"written to bench/results-pages.json (-out names another file)")
	if err := fs.Parse(args); err != nil {
		return benchOptions{}, err
	}
	if fs.NArg() > 0 {
		return benchOptions{}, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *only != "" {
		if o.pages {
			return benchOptions{}, fmt.Errorf("-pages and -only: use one")
		}
		o.only = map[string]bool{}
		for _, p := range strings.Split(*only, ",") {
			o.only[strings.TrimSpace(p)] = true
		}
	}
	if o.pages {
		o.only = map[string]bool{"pages": true}
		// A file of a full run keeps its rows: the pages' rows alone go to their own file.
		o.out = benchkit.NamedOut(fs, "pages")
	}
	o.sizes = fullSizes
	if o.quick {
		o.sizes = quickSizes
	}
	return o, nil
}

// bench is one run of this program: the shared run scaffolding with this program's options and sizes.
type bench struct {
	*benchkit.Run
	opts  benchOptions
	sizes sizes
}

func newBench(o benchOptions, log io.Writer) (*bench, error) {
	r, err := benchkit.NewRun(benchkit.RunOptions{Program: "analysis-bench", Quick: o.quick, Profile: o.profile, Keep: o.keep}, log)
	if err != nil {
		return nil, err
	}
	return &bench{Run: r, opts: o, sizes: o.sizes}, nil
}

// runs says whether the phase is to run (-only).
func (b *bench) runs(phase string) bool { return len(b.opts.only) == 0 || b.opts.only[phase] }
