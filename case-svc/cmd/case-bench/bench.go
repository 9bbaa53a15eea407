package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
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
	// ones) or "bulk": insertMany into the collections (documents shaped as the API's) up to
	// CasesLarge-CreateSample, then the last CreateSample cases through the API. Through the API the fill
	// takes too long for the 15-minute budget of `make bench`, so the full run uses bulk.
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
	// 7: analyzer runs through case-svc's connector and directly, on a fresh case database; then
	// ConnectorRunsLarge more through the connector on the database of section 6.
	ConnectorRuns      int `json:"connectorRuns"`
	ConnectorRunsLarge int `json:"connectorRunsLarge"`
}

var (
	fullSizes = sizes{Clients: 8, CasesSmall: 1000, CasesLarge: 100_000, ObservablesPerCase: 10, TasksPerCase: 2,
		Fill: "bulk", CreateSample: 200, QueryReps: 10, QueryRepsLarge: 20, SimilarReps: 5, SimilarRepsLarge: 20,
		BulkValues: 1000, BulkReps: 10, BulkRepsLarge: 10, ConnectorRuns: 200, ConnectorRunsLarge: 10}
	quickSizes = sizes{Clients: 8, CasesSmall: 100, CasesLarge: 300, ObservablesPerCase: 10, TasksPerCase: 2,
		Fill: "bulk", CreateSample: 50, QueryReps: 3, QueryRepsLarge: 2, SimilarReps: 2, SimilarRepsLarge: 2,
		BulkValues: 200, BulkReps: 2, BulkRepsLarge: 2, ConnectorRuns: 20, ConnectorRunsLarge: 3}
)

type benchOptions struct {
	quick   bool
	out     string
	profile string // folder for one CPU profile per phase
	keep    bool   // keep the temporary folder
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
	fill := fs.String("fill", "", "how cases beyond the first measurement are made: api or bulk (default: bulk)")
	cases := fs.Int("cases", 0, "cases at the second measurement (default 100000, -quick 300)")
	if err := fs.Parse(args); err != nil {
		return benchOptions{}, err
	}
	if fs.NArg() > 0 {
		return benchOptions{}, fmt.Errorf("unexpected arguments %v", fs.Args())
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

// Row is one line of the table.
type Row struct {
	Section string  `json:"section"` // "1 job pipeline"
	Service string  `json:"service"` // analysis-svc, case-svc, connector
	Metric  string  `json:"metric"`
	Unit    string  `json:"unit"`
	Figure  float64 `json:"figure"`
	// Floor is the same measure of the floor, nil when the row has none (memory).
	Floor *float64 `json:"floor,omitempty"`
	// Ratio is figure/floor for times and floor/figure for rates: above 1 = slower than the floor.
	Ratio     *float64 `json:"ratio,omitempty"`
	FloorWhat string   `json:"floorWhat,omitempty"` // what the floor is
	Note      string   `json:"note,omitempty"`
}

type kind int

const (
	timeKind  kind = iota // lower is better: ratio = figure/floor
	rateKind              // higher is better: ratio = floor/figure
	plainKind             // no floor
)

type bench struct {
	opts       benchOptions
	sizes      sizes
	log        io.Writer // progress, on stderr
	tmp        string
	rows       []Row
	phases     []Phase
	started    time.Time
	service    string // the suite adding rows
	rssAtStart float64
	loadStart  string
}

// Phase is how long one part of the run took.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

func newBench(o benchOptions, log io.Writer) (*bench, error) {
	tmp, err := os.MkdirTemp("", "case-bench-")
	if err != nil {
		return nil, err
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, err
		}
	}
	rss, _ := vmRSS()
	return &bench{opts: o, sizes: o.sizes, log: log, tmp: tmp, started: time.Now(), rssAtStart: rss, loadStart: loadavg()}, nil
}

func (b *bench) cleanup() {
	if b.opts.keep {
		fmt.Fprintf(b.log, "kept %s\n", b.tmp)
		return
	}
	_ = os.RemoveAll(b.tmp)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] ", time.Since(b.started).Seconds())
	fmt.Fprintf(b.log, format+"\n", args...)
}

// phase runs f as a named phase: timed, logged, and CPU-profiled with -cpuprofile.
func (b *bench) phase(name string, f func() error) error {
	b.logf("%s ...", name)
	if b.opts.profile != "" {
		file := filepath.Join(b.opts.profile, strings.Map(func(r rune) rune {
			if r == ' ' || r == '/' {
				return '_'
			}
			return r
		}, name)+".pprof")
		pf, err := os.Create(file)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	b.phases = append(b.phases, Phase{Name: name, Seconds: round(d.Seconds(), 1)})
	b.logf("%s done in %.1fs", name, d.Seconds())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// add appends a row. floor < 0 means no floor.
func (b *bench) add(k kind, section, metric, unit string, figure, floor float64, floorWhat, note string) {
	r := Row{Section: section, Service: b.service, Metric: metric, Unit: unit, Figure: sig(figure),
		FloorWhat: floorWhat, Note: note}
	if k != plainKind && floor > 0 && figure > 0 {
		f := sig(floor)
		ratio := figure / floor
		if k == rateKind {
			ratio = floor / figure
		}
		ratio = round(ratio, 2)
		r.Floor, r.Ratio = &f, &ratio
	}
	b.rows = append(b.rows, r)
}

// Results is the JSON document and the printed table.
type Results struct {
	Date            string  `json:"date"`
	Machine         Machine `json:"machine"`
	Quick           bool    `json:"quick"`
	Sizes           sizes   `json:"sizes"`
	DurationSeconds float64 `json:"durationSeconds"`
	Phases          []Phase `json:"phases"`
	Rows            []Row   `json:"rows"`
}

// Machine describes where the run happened.
type Machine struct {
	NProc  int     `json:"nproc"`
	CPU    string  `json:"cpu"`
	Go     string  `json:"go"`
	OS     string  `json:"os"`
	MemGiB float64 `json:"memGiB,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg when the run started and ended: other work on the machine
	// slows figures and floors alike.
	LoadStart string `json:"loadavgStart,omitempty"`
	LoadEnd   string `json:"loadavgEnd,omitempty"`
}

func (b *bench) results() Results {
	m := machine()
	m.LoadStart, m.LoadEnd = b.loadStart, loadavg()
	return Results{Date: time.Now().Format(time.RFC3339), Machine: m, Quick: b.opts.quick, Sizes: b.sizes,
		DurationSeconds: round(time.Since(b.started).Seconds(), 1), Phases: b.phases, Rows: b.rows}
}

// loadavg is the 1, 5 and 15 minute load averages.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), CPU: "unknown", Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if kb, err := procField("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemGiB = round(kb/(1<<20), 1)
	}
	return m
}

func (r Results) print(w io.Writer) {
	fmt.Fprintf(w, "\ncase-bench %s  quick=%v  duration %.0fs\n", r.Date, r.Quick, r.DurationSeconds)
	fmt.Fprintf(w, "machine: %d × %s, %.0f GiB, %s %s; load average %s at the start, %s at the end\n\n", r.Machine.NProc,
		r.Machine.CPU, r.Machine.MemGiB, r.Machine.Go, r.Machine.OS, r.Machine.LoadStart, r.Machine.LoadEnd)
	header := []string{"section", "metric", "figure", "floor", "ratio", "floor is"}
	lines := [][]string{header}
	for _, row := range r.Rows {
		floor, ratio := "—", "—"
		if row.Floor != nil {
			floor = num(*row.Floor) + " " + row.Unit
		}
		if row.Ratio != nil {
			ratio = strconv.FormatFloat(*row.Ratio, 'f', 2, 64) + "×"
		}
		what := row.FloorWhat
		if row.Note != "" {
			if what != "" {
				what += "; "
			}
			what += row.Note
		}
		lines = append(lines, []string{row.Section, row.Metric, num(row.Figure) + " " + row.Unit, floor, ratio, what})
	}
	width := make([]int, len(header)-1)
	for _, l := range lines {
		for i := range width {
			width[i] = max(width[i], len([]rune(l[i])))
		}
	}
	for n, l := range lines {
		var sb strings.Builder
		for i, cell := range l {
			if i == len(l)-1 {
				sb.WriteString(cell)
				break
			}
			pad := width[i] - len([]rune(cell))
			if i >= 2 && i <= 4 { // numbers right-aligned
				sb.WriteString(strings.Repeat(" ", pad) + cell + "  ")
			} else {
				sb.WriteString(cell + strings.Repeat(" ", pad) + "  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
		if n == 0 {
			total := 0
			for _, x := range width {
				total += x + 2
			}
			fmt.Fprintln(w, strings.Repeat("-", total+8))
		}
	}
	fmt.Fprint(w, "\nphases:")
	for _, p := range r.Phases {
		fmt.Fprintf(w, " %s %.1fs;", p.Name, p.Seconds)
	}
	fmt.Fprintln(w)
}

// --- numbers ---

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of ds, in milliseconds.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return ms(s[max(0, min(i, len(s)-1))])
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// sig keeps 3 significant digits (at least 2 decimals below 10).
func sig(v float64) float64 {
	switch a := math.Abs(v); {
	case a == 0:
		return 0
	case a < 10:
		return round(v, 3)
	case a < 100:
		return round(v, 2)
	case a < 1000:
		return round(v, 1)
	}
	return math.Round(v)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// --- process memory ---

// vmRSS is this process's resident set, in MiB.
func vmRSS() (float64, error) {
	kb, err := procField("/proc/self/status", "VmRSS:")
	return kb / 1024, err
}

// procField reads a "Name:   123 kB" line of a /proc file, in kB.
func procField(file, name string) (float64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseFloat(f[0], 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", file, name)
}

// heapInUse is the Go heap in use, in MiB.
func heapInUse() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}
