package benchkit

// The run scaffolding both benchmark programs share: rows with their floor and ratio, timed and profiled
// phases, the machine description, the printed table and the JSON results.

import (
	"bufio"
	"encoding/json"
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

// Kind says how a row compares with its floor.
type Kind int

const (
	TimeKind  Kind = iota // lower is better: ratio = figure/floor
	RateKind              // higher is better: ratio = floor/figure
	PlainKind             // no floor
)

// RunOptions are the flags every benchmark program has.
type RunOptions struct {
	Program string // "analysis-bench": the temporary folder's prefix and the table's title
	Quick   bool
	Profile string // folder for one CPU profile per phase
	Keep    bool   // keep the temporary folder
}

// Run is one benchmark run: its temporary folder, its rows and its phases.
type Run struct {
	Opts       RunOptions
	Log        io.Writer // progress, on stderr
	Tmp        string
	Rows       []Row
	Phases     []Phase
	Started    time.Time
	Service    string // the suite adding rows
	RSSAtStart float64
	LoadStart  string
	// Mongo is the MongoDB of BENCH_MONGO_URI (nil: unset); Engine is "" on the embedded SQLite pass and
	// MongoEngine on the MongoDB pass (Passes).
	Mongo  *Mongo
	Engine string
}

// Phase is how long one part of the run took.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// NewRun makes the run's temporary folder (and the profile folder).
func NewRun(o RunOptions, log io.Writer) (*Run, error) {
	tmp, err := os.MkdirTemp("", o.Program+"-")
	if err != nil {
		return nil, err
	}
	if o.Profile != "" {
		if err := os.MkdirAll(o.Profile, 0o755); err != nil {
			return nil, err
		}
	}
	m, err := MongoFromEnv()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	rss, _ := VMRSS()
	return &Run{Opts: o, Log: log, Tmp: tmp, Started: time.Now(), RSSAtStart: rss, LoadStart: Loadavg(), Mongo: m}, nil
}

// Cleanup removes the temporary folder, unless the run keeps it.
func (b *Run) Cleanup() {
	if b.Opts.Keep {
		fmt.Fprintf(b.Log, "kept %s\n", b.Tmp)
		return
	}
	_ = os.RemoveAll(b.Tmp)
}

// Logf logs a progress line with the time since the start.
func (b *Run) Logf(format string, args ...any) {
	fmt.Fprintf(b.Log, "[%6.1fs] ", time.Since(b.Started).Seconds())
	fmt.Fprintf(b.Log, format+"\n", args...)
}

// Phase runs f as a named phase: timed, logged, and profiled with a profile folder: CPU (<phase>.pprof), and
// where goroutines waited (<phase>.block.pprof, blocking of 10 µs or more sampled) and which mutexes they
// contended (<phase>.mutex.pprof). The block and mutex profiles count from the program's start: compare a
// phase with the one before it with pprof -base.
func (b *Run) Phase(name string, f func() error) error {
	name += b.engineSuffix()
	b.Logf("%s ...", name)
	if b.Opts.Profile != "" {
		base := filepath.Join(b.Opts.Profile, strings.Map(func(r rune) rune {
			if r == ' ' || r == '/' {
				return '_'
			}
			return r
		}, name))
		runtime.SetBlockProfileRate(10_000)
		runtime.SetMutexProfileFraction(10)
		defer func() {
			for _, p := range []string{"block", "mutex"} {
				if pf, err := os.Create(base + "." + p + ".pprof"); err == nil {
					_ = pprof.Lookup(p).WriteTo(pf, 0)
					_ = pf.Close()
				}
			}
			runtime.SetBlockProfileRate(0)
			runtime.SetMutexProfileFraction(0)
		}()
		file := base + ".pprof"
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
	b.Phases = append(b.Phases, Phase{Name: name, Seconds: Round(d.Seconds(), 1)})
	b.Logf("%s done in %.1fs", name, d.Seconds())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Add appends a row of the current service. floor <= 0 means no floor. On the MongoDB pass the section ends
// in " (MongoDB)".
func (b *Run) Add(k Kind, section, metric, unit string, figure, floor float64, floorWhat, note string) {
	r := Row{Section: section + b.engineSuffix(), Service: b.Service, Metric: metric, Unit: unit, Figure: Sig(figure),
		FloorWhat: floorWhat, Note: note}
	if k != PlainKind && floor > 0 && figure > 0 {
		f := Sig(floor)
		ratio := figure / floor
		if k == RateKind {
			ratio = floor / figure
		}
		ratio = Round(ratio, 2)
		r.Floor, r.Ratio = &f, &ratio
	}
	b.Rows = append(b.Rows, r)
}

// Results is the JSON document and the printed table.
type Results struct {
	Program         string  `json:"-"`
	Date            string  `json:"date"`
	Machine         Machine `json:"machine"`
	Quick           bool    `json:"quick"`
	Sizes           any     `json:"sizes"`
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

// Results are the run's rows and phases so far, with the sizes the program ran with.
func (b *Run) Results(sizes any) Results {
	m := ThisMachine()
	m.LoadStart, m.LoadEnd = b.LoadStart, Loadavg()
	return Results{Program: b.Opts.Program, Date: time.Now().Format(time.RFC3339), Machine: m, Quick: b.Opts.Quick,
		Sizes: sizes, DurationSeconds: Round(time.Since(b.Started).Seconds(), 1), Phases: b.Phases, Rows: b.Rows}
}

// Loadavg is the 1, 5 and 15 minute load averages.
func Loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// ThisMachine describes this machine.
func ThisMachine() Machine {
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
	if kb, err := ProcField("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemGiB = Round(kb/(1<<20), 1)
	}
	return m
}

// Print writes the table.
func (r Results) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s %s  quick=%v  duration %.0fs\n", r.Program, r.Date, r.Quick, r.DurationSeconds)
	fmt.Fprintf(w, "machine: %d × %s, %.0f GiB, %s %s; load average %s at the start, %s at the end\n\n", r.Machine.NProc,
		r.Machine.CPU, r.Machine.MemGiB, r.Machine.Go, r.Machine.OS, r.Machine.LoadStart, r.Machine.LoadEnd)
	header := []string{"section", "metric", "figure", "floor", "ratio", "floor is"}
	lines := [][]string{header}
	for _, row := range r.Rows {
		floor, ratio := "—", "—"
		if row.Floor != nil {
			floor = Num(*row.Floor) + " " + row.Unit
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
		lines = append(lines, []string{row.Section, row.Metric, Num(row.Figure) + " " + row.Unit, floor, ratio, what})
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

// WriteJSON writes v as indented JSON with WriteFile.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(data, '\n'))
}

// WriteFile replaces the file at once (a temporary file renamed over it).
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".results-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// --- numbers ---

// Ms is a duration in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of ds, in milliseconds.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return Ms(s[max(0, min(i, len(s)-1))])
}

// Mean is the mean of ds, in milliseconds.
func Mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return Ms(t) / float64(len(ds))
}

// Round rounds v to digits decimals.
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Sig keeps 3 significant digits (at least 2 decimals below 10).
func Sig(v float64) float64 {
	switch a := math.Abs(v); {
	case a == 0:
		return 0
	case a < 10:
		return Round(v, 3)
	case a < 100:
		return Round(v, 2)
	case a < 1000:
		return Round(v, 1)
	}
	return math.Round(v)
}

// Num formats a figure for the table.
func Num(v float64) string {
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

// VMRSS is this process's resident set, in MiB.
func VMRSS() (float64, error) {
	kb, err := ProcField("/proc/self/status", "VmRSS:")
	return kb / 1024, err
}

// ProcField reads a "Name:   123 kB" line of a /proc file, in kB.
func ProcField(file, name string) (float64, error) {
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

// HeapInUse is the Go heap in use, in MiB.
func HeapInUse() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// NamedOut is the results file of a run of one mode of a bench program (-pages, -audit, -automation…),
// given its -out flag: a mode's rows alone must neither replace a full run's file (analysis-bench writes it
// whole) nor be merged into it in place of the full run's rows (case-bench replaces its services' rows). So
// the full run's file (the flag's default, or -out naming it) becomes the mode's own file beside it,
// bench/results.json → bench/results-<mode>.json; another file named with -out is used as it is, and an
// empty -out writes nothing.
func NamedOut(fs *flag.FlagSet, mode string) string {
	f := fs.Lookup("out")
	if f == nil {
		return ""
	}
	out := f.Value.String()
	if out == "" || filepath.Clean(out) != filepath.Clean(f.DefValue) {
		return out
	}
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + "-" + mode + ext
}
