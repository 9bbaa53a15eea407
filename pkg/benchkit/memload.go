package benchkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The memory row of issue 15: the peak RSS of a service under 64 concurrent maximum-size requests of every
// kind. The load and the measure are the service's TestLimits_MemoryUnderConcurrency (the service alone in a
// child process, its kernel high-water mark), run by `go test` from the benchmark with two variables: the
// requests of each kind (LIMITS_EACH) and a file for the figures (LIMITS_RESULT).

// MemoryLoad is what TestLimits_MemoryUnderConcurrency measured.
type MemoryLoad struct {
	Kinds      int     `json:"kinds"`      // kinds of request
	Each       int     `json:"each"`       // concurrent requests of each kind
	PeakMiB    float64 `json:"peakMiB"`    // the service's peak RSS under the load (VmHWM)
	BeforeMiB  float64 `json:"beforeMiB"`  // its RSS when the load started
	Answered   bool    `json:"answered"`   // the service answered after the load
	Unexpected int     `json:"unexpected"` // requests answered otherwise than the test expects
}

// Environment variables of the memory test.
const (
	MemoryEachEnv   = "LIMITS_EACH"
	MemoryResultEnv = "LIMITS_RESULT"
)

// MemoryEach is the number of concurrent requests of each kind the memory test sends: LIMITS_EACH, else 64.
func MemoryEach() int {
	if n, err := strconv.Atoi(os.Getenv(MemoryEachEnv)); err == nil && n > 0 {
		return n
	}
	return 64
}

// WriteMemoryResult writes m where LIMITS_RESULT says (nothing when it is unset).
func WriteMemoryResult(m MemoryLoad) error {
	p := os.Getenv(MemoryResultEnv)
	if p == "" {
		return nil
	}
	return WriteJSON(p, m)
}

// RunMemoryLoad runs the memory test of the Go package pkg (an import path) with each requests of each kind
// and returns its figures; the test's output goes to log.
func (b *Run) RunMemoryLoad(ctx context.Context, pkg string, each int, log io.Writer) (MemoryLoad, error) {
	out := filepath.Join(b.Tmp, "memory-"+strconv.Itoa(len(b.Rows))+".json")
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestLimits_Memory", "-v", pkg)
	cmd.Env = append(os.Environ(), MemoryEachEnv+"="+strconv.Itoa(each), MemoryResultEnv+"="+out)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return MemoryLoad{}, fmt.Errorf("memory test of %s: %w", pkg, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return MemoryLoad{}, fmt.Errorf("memory test of %s wrote no figures (skipped?): %w", pkg, err)
	}
	var m MemoryLoad
	if err := json.Unmarshal(data, &m); err != nil {
		return MemoryLoad{}, fmt.Errorf("memory test of %s: %w", pkg, err)
	}
	return m, nil
}

// MemoryRow adds the memory row of the service whose API package is pkg (an import path): the peak RSS of
// the service alone under its memory test's load, 64 requests of each kind at once (4 with -quick).
func (b *Run) MemoryRow(ctx context.Context, section, pkg string) error {
	each := 64
	if b.Opts.Quick {
		each = 4
	}
	var m MemoryLoad
	err := b.Phase("memory under concurrent maximum-size requests", func() (err error) {
		m, err = b.RunMemoryLoad(ctx, pkg, each, b.Log)
		return err
	})
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d requests of each of %d kinds at once (TestLimits_MemoryUnderConcurrency): VmHWM of the service's own process, %.0f MiB before; target under 300 MiB",
		m.Each, m.Kinds, m.BeforeMiB)
	if !m.Answered || m.Unexpected > 0 {
		note += fmt.Sprintf("; %d unexpected answers, answering after: %v", m.Unexpected, m.Answered)
	}
	b.Add(PlainKind, section, fmt.Sprintf("peak RSS under %d concurrent maximum-size requests of every kind", m.Each), "MiB", m.PeakMiB, -1, "", note)
	return nil
}
