package api_test

// Issue 15 (unauthenticated remote crash), kept as regressions: every route accepted 100 MB bodies and decoded
// JSON fully in memory (~40x the body); 4 concurrent 64 MiB bodies to POST /api/login without credentials
// killed case-svc (fatal error: out of memory). Also: 40 parallel wrong passwords had 36 to 40 of them checked
// (limit 5), and /api/login accepted a password over plain HTTP.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/web"
)

// countingServer serves h and counts the body bytes the service reads.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{r.Body, &n}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// generated is a body of n bytes made on the fly (nothing held in the test's memory): head, then fill
// repeated. With declared, the request says its length; otherwise it is sent chunked.
type generated struct {
	head, fill string
	n, off     int64
}

func (g *generated) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && g.off < g.n {
		var c byte
		if g.off < int64(len(g.head)) {
			c = g.head[g.off]
		} else {
			c = g.fill[(g.off-int64(len(g.head)))%int64(len(g.fill))]
		}
		p[k] = c
		k++
		g.off++
	}
	return k, nil
}

// post sends a request and returns its status (0 with the error when the transport failed: the server may
// close the connection while an over-limit body is still being sent) and its body.
func post(hc *http.Client, url, ctype string, body io.Reader, length int64, hdr http.Header) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = length // -1: chunked
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// expectContinue sends bodies only once the server asks for them (Expect: 100-continue, as curl does for
// large bodies): a refusal before reading then reaches the client whatever the load, since nothing is left
// unsent when the server closes the connection.
var expectContinue = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}

// multipartFile is a multipart body with a `_json` part and a file of size bytes, generated while it is sent.
func multipartFile(js string, size int64) (string, func() (io.Reader, int64)) {
	var head, tail bytes.Buffer
	mw := multipart.NewWriter(&head)
	_ = mw.WriteField("_json", js)
	_, _ = mw.CreateFormFile("attachment", "max.bin")
	at := head.Len()
	_ = mw.Close()
	tail.Write(head.Bytes()[at:])
	head.Truncate(at)
	return mw.FormDataContentType(), func() (io.Reader, int64) {
		return io.MultiReader(bytes.NewReader(head.Bytes()), &generated{fill: "m", n: size}, bytes.NewReader(tail.Bytes())),
			int64(head.Len()) + size + int64(tail.Len())
	}
}

// The reproduction of the issue: 64 MiB JSON bodies to /api/login without credentials, 4 at once, declared
// (with Expect: 100-continue) and chunked, under the three prefixes. A declared one is a 413 in the error
// shape without a byte read; a chunked one is read no further than the unauthenticated limit (64 KiB) and
// answered 413, unless the client was still sending when the server closed the connection.
func TestLimits_OversizeLoginIsNotRead(t *testing.T) {
	e := newEnv(t)
	srv, read := countingServer(t, e.echo)
	var wg sync.WaitGroup
	for i, path := range []string{"/api/login", "/api/v0/login", "/api/v1/login", "/api/login"} {
		for _, chunked := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				length := int64(64 << 20)
				hdr := http.Header{"Expect": {"100-continue"}}
				if chunked {
					length, hdr = -1, nil
				}
				st, body, err := post(expectContinue, srv.URL+path, "application/json",
					&generated{head: `{"junk":[`, fill: "0,", n: 64 << 20}, length, hdr)
				if chunked && err != nil {
					return // the connection was closed under a body still being sent
				}
				if err != nil || st != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"type":"BadRequest"`) {
					t.Errorf("%d: 64 MiB to %s (length %d): %d %s %v", i, path, length, st, body, err)
				}
			}()
		}
	}
	wg.Wait()
	if n := read.Load(); n > 4*(64<<10+1) {
		t.Errorf("the service read %d bytes of 8 refused bodies, want at most 4 × 64 KiB", n)
	}
	e.anon().call(t, http.MethodGet, "/api/status", nil).want(t, http.StatusOK)
}

// A search with 16M _in values: under the default limits a 413 before reading it; with http.body_limit
// raised so that it is read, a 400 from the JSON scan (array length), not gigabytes. The query API too.
func TestLimits_SearchWith16MValues(t *testing.T) {
	const values = 16 << 20
	bodies := map[string]string{
		"/api/case/_search": `{"query":{"_in":{"_field":"title","_values":[`,
		"/api/v1/query":     `{"query":[{"_name":"listCase"},{"_name":"filter","_in":{"_field":"title","_values":[`,
	}
	t.Run("default limits", func(t *testing.T) {
		tm := newTeam(t, withLimits(web.Limits{}, 0))
		srv, read := countingServer(t, tm.echo)
		for path, head := range bodies {
			b := &generated{head: head, fill: "0,", n: int64(len(head)) + 2*values}
			hdr := bearer(tm.readOnly.key)
			hdr.Set("Expect", "100-continue")
			st, msg, err := post(expectContinue, srv.URL+path, "application/json", b, b.n, hdr)
			if err != nil || st != http.StatusRequestEntityTooLarge {
				t.Errorf("%s: %d %s %v, want 413", path, st, msg, err)
			}
		}
		if n := read.Load(); n != 0 {
			t.Errorf("read %d bytes of bodies declared over the limit", n)
		}
	})
	t.Run("body limit raised", func(t *testing.T) {
		tm := newTeam(t, withLimits(web.Limits{Body: 64 << 20}, 0))
		for path, head := range bodies {
			b := &generated{head: head, fill: "0,", n: int64(len(head)) + 2*values}
			st, msg, err := post(tm.srv.Client(), tm.srv.URL+path, "application/json", b, b.n, bearer(tm.readOnly.key))
			if err != nil || st != http.StatusBadRequest || !strings.Contains(msg, "more than 100000 elements") {
				t.Errorf("%s: %d %s %v, want 400 naming the array limit", path, st, msg, err)
			}
		}
	})
}

// Deep nesting and long arrays are 400s naming the limit; uploads over observable.max_file are 413s, on
// observables of cases and alerts and on task log attachments.
func TestLimits_JSONAndUploads(t *testing.T) {
	tm := newTeam(t, withLimits(web.Limits{}, 64<<10))
	caseID := tm.analyst.newCase(t, nil).str(t, "id")
	taskID := tm.analyst.call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "t"}).want(t, 201).object(t).str(t, "id")
	alertID := tm.analyst.call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r",
		"title": "t", "description": "d"}).want(t, 201).object(t).str(t, "id")
	deep := `{"query":` + strings.Repeat(`{"_not":`, 65) + `{}` + strings.Repeat(`}`, 65) + `}`
	tm.readOnly.raw(t, http.MethodPost, "/api/case/_search", "application/json", deep).wantError(t, 400, "BadRequest")
	wide := `{"query":{"_in":{"_field":"title","_values":[` + strings.Repeat(`0,`, 100000) + `0]}}}`
	if msg := tm.readOnly.raw(t, http.MethodPost, "/api/case/_search", "application/json", wide).wantError(t, 400, "BadRequest"); !strings.Contains(msg, "more than 100000 elements") {
		t.Errorf("100001 values: %q", msg)
	}
	upload := func(path, js string, size int) *resp {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_json", js)
		w, _ := mw.CreateFormFile("attachment", "f.bin")
		_, _ = w.Write(bytes.Repeat([]byte{byte('a' + size%20)}, size))
		_ = mw.Close()
		return tm.analyst.send(t, http.MethodPost, path, mw.FormDataContentType(), &buf)
	}
	for _, u := range []struct{ path, js string }{
		{"/api/case/" + caseID + "/artifact", `{"dataType":"file"}`},
		{"/api/alert/" + alertID + "/artifact", `{"dataType":"file"}`},
		{"/api/case/task/" + taskID + "/log", `{"message":"m"}`},
	} {
		upload(u.path, u.js, 64<<10).want(t, http.StatusCreated)
		if msg := upload(u.path, u.js, 64<<10+1).wantError(t, http.StatusRequestEntityTooLarge, "BadRequest"); !strings.Contains(msg, "uploaded file too large") {
			t.Errorf("%s over observable.max_file: %q", u.path, msg)
		}
	}
	// Other routes keep the JSON limit for a multipart body.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("_json", `{"title":"t","description":"d"}`)
	w, _ := mw.CreateFormFile("attachment", "f.bin")
	_, _ = w.Write(bytes.Repeat([]byte{'a'}, 2<<20))
	_ = mw.Close()
	tm.analyst.send(t, http.MethodPost, "/api/case", mw.FormDataContentType(), &buf).wantError(t, http.StatusRequestEntityTooLarge, "BadRequest")
}

// Regression: 40 parallel wrong passwords for one login had 36 to 40 of them checked (limit 5). The attempt is
// now reserved before the check; the count is per login and address, so the owner elsewhere still logs in.
func TestLogin_ParallelWrongPasswordsCheckAtMostTheLimit(t *testing.T) {
	tm := newTeam(t, withThrottle(auth.NewThrottle(5, 100, time.Minute, nil)),
		withSecure(web.SecureConfig{AllowInsecure: true, TrustedProxies: localhostOnly(t)}))
	tm.orgAdmin.call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "the-right-password"}).
		want(t, http.StatusNoContent)
	login := func(from, pw string) int {
		st, _, err := post(http.DefaultClient, tm.srv.URL+"/api/login", "application/json",
			strings.NewReader(`{"user":"ana","password":"`+pw+`"}`), -1, http.Header{"X-Forwarded-For": {from}})
		if err != nil {
			t.Error(err)
		}
		return st
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := login("203.0.113.9", "wrong-password")
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 35 {
		t.Fatalf("40 parallel wrong passwords: %v, want 5×401 (checked) and 35×429", statuses)
	}
	if st := login("198.51.100.7", "the-right-password"); st != http.StatusOK {
		t.Errorf("the owner from another address: %d, want 200", st)
	}
	if st := login("203.0.113.9", "the-right-password"); st != http.StatusTooManyRequests {
		t.Errorf("the guessing address, right password: %d, want 429", st)
	}
}

// Password login (every prefix) and basic credentials follow the HTTPS rule of the password endpoints.
func TestLogin_PasswordsOverPlainHTTPAreRefused(t *testing.T) {
	e := newEnv(t, withBasic(), withSecure(web.SecureConfig{}), withAdminPassword())
	for _, p := range []string{"/api/login", "/api/v0/login", "/api/v1/login"} {
		e.anon().call(t, http.MethodPost, p, map[string]string{"user": adminLogin, "password": adminPassword}).
			wantError(t, http.StatusForbidden, "AuthorizationError")
	}
	e.basicClient(adminLogin, adminPassword).call(t, http.MethodGet, "/api/user/current", nil).
		wantError(t, http.StatusForbidden, "AuthorizationError")
	e.admin.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK) // keys are not passwords
}

// serveChild runs the test serveTest of this test binary in a child process (LIMITS_SERVE=1): it builds the
// service, prints "LIMITS-READY {json}" and serves until its stdin closes, when the test ends. It returns what
// the child printed and the child's pid. The memory test measures the service alone, without its client.
func serveChild(t *testing.T, serveTest string) (map[string]string, int) {
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

// serveUntilStdinCloses is the child's half of serveChild.
func serveUntilStdinCloses(info map[string]string) {
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

const memMaxFile = 8 << 20 // observable.max_file of the memory test

// TestLimits_MemoryServer is the service of TestLimits_MemoryUnderConcurrency, in a process of its own.
func TestLimits_MemoryServer(t *testing.T) {
	if os.Getenv("LIMITS_SERVE") == "" {
		t.Skip("the service half of TestLimits_MemoryUnderConcurrency, run in a child process")
	}
	tm := newTeam(t, withLimits(web.Limits{}, memMaxFile))
	tm.orgAdmin.call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "the-right-password"}).
		want(t, http.StatusNoContent)
	caseID := tm.analyst.newCase(t, nil).str(t, "id")
	taskID := tm.analyst.call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "t"}).want(t, 201).object(t).str(t, "id")
	serveUntilStdinCloses(map[string]string{"url": tm.srv.URL, "case": caseID, "task": taskID,
		"analyst": tm.analyst.key, "reader": tm.readOnly.key})
}

// Issue 15's target: 64 concurrent maximum-size requests of every kind (64 of each kind at once, 640
// requests) keep the service under 300 MiB of RSS, and it answers after. The kinds: logins at the
// unauthenticated limit and 64 MiB over it (declared and chunked), case searches and query API calls at the
// body limit, a body at the limit shaped to cost the most to decode within the decoded-memory limit and one
// over it, observable files and task log attachments of observable.max_file (8 MiB: 512 MiB each in all) and
// an observable file over it. The service runs in a child process with the default limits
// (TestLimits_MemoryServer); the peak is the kernel's high-water mark of that process (VmHWM), not a sample.
// No timing is asserted.
func TestLimits_MemoryUnderConcurrency(t *testing.T) {
	const maxFile = memMaxFile
	info, pid := serveChild(t, "TestLimits_MemoryServer")
	base, caseID, taskID := info["url"], info["case"], info["task"]

	pad := func(prefix, suffix string, size int) []byte {
		return []byte(prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix)
	}
	loginBody := pad(`{"user":"ana","password":"wrong-password","junk":"`, `"}`, 64<<10)
	values := func(head, tail string) []byte {
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
	searchBody := values(`{"query":{"_in":{"_field":"title","_values":[`, `]}},"range":"0-10"}`)
	queryBody := values(`{"query":[{"_name":"listCase"},{"_name":"filter","_in":{"_field":"title","_values":[`, `]}},{"_name":"page","from":0,"to":10}]}`)
	costly := []byte(`{"query":{},"junk":[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 40000), ",") + `]}`)
	tooCostly := []byte(`{"query":{},"junk":[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 95000), ",") + `]}`)
	obsType, obs := multipartFile(`{"dataType":"file"}`, maxFile)
	logType, log := multipartFile(`{"message":"max"}`, maxFile)
	overType, over := multipartFile(`{"dataType":"file"}`, maxFile+1)

	shared := func(b []byte) func() (io.Reader, int64) {
		return func() (io.Reader, int64) { return bytes.NewReader(b), int64(len(b)) }
	}
	reader, analyst := bearer(info["reader"]), bearer(info["analyst"])
	kinds := []struct {
		name   string
		path   string
		ctype  string
		hdr    http.Header
		body   func() (io.Reader, int64)
		want   []int
		refuse bool // an over-limit body: the server may close the connection while it is still being sent
	}{
		{"login at the limit", "/api/login", "application/json", nil, shared(loginBody), []int{401}, false},
		{"login, 64 MiB declared", "/api/login", "application/json", nil, func() (io.Reader, int64) {
			return &generated{head: `{"junk":[`, fill: "0,", n: 64 << 20}, 64 << 20
		}, []int{413}, true},
		{"login, 64 MiB chunked", "/api/v1/login", "application/json", nil, func() (io.Reader, int64) {
			return &generated{head: `{"junk":[`, fill: "0,", n: 64 << 20}, -1
		}, []int{413}, true},
		{"case search at the limit", "/api/case/_search", "application/json", reader, shared(searchBody), []int{200}, false},
		{"query at the limit", "/api/v1/query", "application/json", reader, shared(queryBody), []int{200}, false},
		{"costliest JSON within the limits", "/api/case/_search", "application/json", reader, shared(costly), []int{200}, false},
		{"JSON over the decoded limit", "/api/case/_search", "application/json", reader, shared(tooCostly), []int{413}, false},
		{"observable file of observable.max_file", "/api/case/" + caseID + "/artifact", obsType, analyst, obs, []int{201, 207}, false},
		{"log attachment of observable.max_file", "/api/case/task/" + taskID + "/log", logType, analyst, log, []int{201}, false},
		{"observable file over observable.max_file", "/api/case/" + caseID + "/artifact", overType, analyst, over, []int{413}, true},
	}

	each := benchkit.MemoryEach() // 64; fewer when make bench runs it for a quick check
	resetPeak(t, pid)
	before := peakRSS(t, pid)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]map[string]int{}
	for _, k := range kinds {
		got[k.name] = map[string]int{}
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, n := k.body()
				st, _, err := post(hc, base+k.path, k.ctype, body, n, k.hdr)
				key := strconv.Itoa(st)
				if err != nil {
					key = "transport error"
				}
				mu.Lock()
				got[k.name][key]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	p := peakRSS(t, pid)
	unexpected := 0
	for _, k := range kinds {
		for key, n := range got[k.name] {
			ok := key == "transport error" && k.refuse
			for _, w := range k.want {
				ok = ok || key == strconv.Itoa(w)
			}
			if !ok {
				unexpected += n
				t.Errorf("%s: %d answered %s, want %v", k.name, n, key, k.want)
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
	for _, path := range []string{"/api/case?range=0-1", "/api/status"} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+info["reader"])
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

// localhostOnly trusts the test's own address as a proxy.
func localhostOnly(t testing.TB) []*net.IPNet {
	t.Helper()
	n, err := web.ParseCIDRs([]string{"127.0.0.1/32", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
