package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openir/platform/pkg/benchkit"
)

// ServeChild runs the test serveTest of this test binary in a child process (LIMITS_SERVE=1): it builds the
// service, prints "LIMITS-READY {json}" (ServeUntilStdinCloses) and serves until its stdin closes, when the
// test ends. It returns what the child printed and the child's pid. The memory test measures the service
// alone, without its client.
func ServeChild(t *testing.T, serveTest string) (map[string]string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+serveTest+"$", "-test.v", "-test.count=1", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), "LIMITS_SERVE=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "LIMITS-READY "); ok {
			var info map[string]string
			if err := json.Unmarshal([]byte(v), &info); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return info, cmd.Process.Pid
		}
	}
	t.Fatalf("the service process ended before it was ready: %v", sc.Err())
	return nil, 0
}

// IsChild reports whether this process is the child of ServeChild.
func IsChild() bool { return os.Getenv("LIMITS_SERVE") != "" }

// ServeUntilStdinCloses is the child's half of ServeChild: it hands info to the parent and returns when the
// parent ends the test.
func ServeUntilStdinCloses(info map[string]string) {
	runtime.GC()
	debug.FreeOSMemory()
	b, _ := json.Marshal(info)
	fmt.Printf("LIMITS-READY %s\n", b)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// resetPeak resets the peak resident set of process pid (Linux: through clear_refs); peakRSS reads it (VmHWM).
func resetPeak(t *testing.T, pid int) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc status")
	return 0
}

// LoadKind is one kind of request of the memory test.
type LoadKind struct {
	Name, Path, ContentType string
	Header                  http.Header
	Body                    func() (io.Reader, int64) // a fresh body and its length (-1: chunked)
	Want                    []int
	Refuse                  bool // an over-limit body: the server may close the connection while it is still being sent
}

// Shared is a body built once and shared by the requests (the client holds one copy).
func Shared(b []byte) func() (io.Reader, int64) {
	return func() (io.Reader, int64) { return bytes.NewReader(b), int64(len(b)) }
}

// Padded is prefix, x repeated, then suffix: size bytes.
func Padded(prefix, suffix string, size int) []byte {
	return []byte(prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix)
}

// Values is head, quoted 64-digit values separated by commas up to nearly 1 MiB (the default body limit),
// then tail.
func Values(head, tail string) []byte {
	var sb strings.Builder
	sb.WriteString(head)
	for i := 0; sb.Len() < (1<<20)-200; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"%064d"`, i)
	}
	sb.WriteString(tail)
	return []byte(sb.String())
}

// LoginKinds are the kinds of the login route path: a body of 64 KiB (the unauthenticated limit) with a
// wrong password for login, 64 MiB declared, and 64 MiB chunked to chunkedPath.
func LoginKinds(path, chunkedPath, login string) []LoadKind {
	body := Padded(`{"user":"`+login+`","password":"wrong-password","junk":"`, `"}`, 64<<10)
	return []LoadKind{
		{"login at the limit", path, "application/json", nil, Shared(body), []int{401}, false},
		{"login, 64 MiB declared", path, "application/json", nil, func() (io.Reader, int64) {
			return &Generated{Head: `{"junk":[`, Fill: "0,", N: 64 << 20}, 64 << 20
		}, []int{413}, true},
		{"login, 64 MiB chunked", chunkedPath, "application/json", nil, func() (io.Reader, int64) {
			return &Generated{Head: `{"junk":[`, Fill: "0,", N: 64 << 20}, -1
		}, []int{413}, true},
	}
}

// CostlyKinds are two searches of path as the holder of hdr: a body at the limit shaped to cost the most to
// decode within http.json.max_decoded (objects of one member cost the most per byte; 40k of them stay under
// it), and one over that limit.
func CostlyKinds(path string, hdr http.Header) []LoadKind {
	costly := []byte(`{"query":{},"junk":[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 40000), ",") + `]}`)
	tooCostly := []byte(`{"query":{},"junk":[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 95000), ",") + `]}`)
	return []LoadKind{
		{"costliest JSON within the limits", path, "application/json", hdr, Shared(costly), []int{200}, false},
		{"JSON over the decoded limit", path, "application/json", hdr, Shared(tooCostly), []int{413}, false},
	}
}

// MemoryUnderConcurrency sends benchkit.MemoryEach() requests of each kind at once (64; fewer when make bench
// runs it for a quick check) to the service of process pid at base, and fails unless its peak RSS (the
// kernel's high-water mark, not a sample) stays under 300 MiB, every answer is one the kind wants, and the
// service answers GET after (200) as the holder of readerKey. It writes the figures make bench's memory row
// reads. No timing is asserted.
func MemoryUnderConcurrency(t *testing.T, pid int, base string, kinds []LoadKind, readerKey string, after []string) {
	each := benchkit.MemoryEach()
	resetPeak(t, pid)
	before := peakRSS(t, pid)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]map[string]int{}
	for _, k := range kinds {
		got[k.Name] = map[string]int{}
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, n := k.Body()
				st, _, err := Post(hc, base+k.Path, k.ContentType, body, n, k.Header)
				key := strconv.Itoa(st)
				if err != nil {
					key = "transport error"
				}
				mu.Lock()
				got[k.Name][key]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	p := peakRSS(t, pid)
	unexpected := 0
	for _, k := range kinds {
		for key, n := range got[k.Name] {
			ok := key == "transport error" && k.Refuse
			for _, w := range k.Want {
				ok = ok || key == strconv.Itoa(w)
			}
			if !ok {
				unexpected += n
				t.Errorf("%s: %d answered %s, want %v", k.Name, n, key, k.Want)
			}
		}
	}
	t.Logf("%d concurrent requests of each of %d kinds: the service's peak RSS %d MiB (%d MiB before); answers %v",
		each, len(kinds), p>>20, before>>20, got)
	if p > 300<<20 {
		t.Errorf("peak RSS %d MiB, want under 300 MiB", p>>20)
	}
	// The service still answers.
	answered := true
	for _, path := range after {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+readerKey)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			answered = false
			t.Errorf("GET %s after the load: %d", path, resp.StatusCode)
		}
	}
	// make bench's memory row (pkg/benchkit.RunMemoryLoad) reads these figures.
	if err := benchkit.WriteMemoryResult(benchkit.MemoryLoad{Kinds: len(kinds), Each: each, PeakMiB: float64(p) / (1 << 20),
		BeforeMiB: float64(before) / (1 << 20), Answered: answered, Unexpected: unexpected}); err != nil {
		t.Fatal(err)
	}
}
