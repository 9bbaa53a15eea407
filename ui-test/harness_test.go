package uitest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// env is the services and the browser the tests share (one of each per test binary); nil when the tests skip.
var env *harness

// skipReason says why the tests skip (no chromium, -short).
var skipReason string

// Deadlines. The machine is a loaded 2-core box: generous, but every wait has one.
const (
	buildDeadline = 10 * time.Minute // go build of both services (cold cache)
	startDeadline = 3 * time.Minute  // run.py: both services ready and set up
	stopDeadline  = 60 * time.Second // run.py stops both services on SIGTERM
	apiDeadline   = 30 * time.Second // one API call
	waitDeadline  = 30 * time.Second // one DOM condition in the browser
	testDeadline  = 4 * time.Minute  // one test's whole browser session
)

type harness struct {
	root         string // the repository
	runDir       string // run.py's RUN_DIR
	base         string // case-svc's URL
	analysisBase string // analysis-svc's URL
	chrome       string // the browser binary
	shots        string // where screenshots go
	browser      context.Context
	closeBrowser context.CancelFunc
	creds        map[string]credential
	run          *exec.Cmd
	runOut       *lineWatcher
	runDone      chan error
	stopOnce     sync.Once
	// Accounts made by the harness through the API.
	superKey    string
	analyst     credential // analyst@demo (run.py's)
	orgAdminKey string     // orgadmin@demo: makes case templates
	rival       credential // eve@rival, an analyst of another organisation
}

type credential struct {
	Login        string `json:"login"`
	Password     string `json:"password"`
	Key          string `json:"key"`
	Organisation string `json:"organisation"`
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(mainCode(m))
}

func mainCode(m *testing.M) int {
	if testing.Short() {
		skipReason = "browser tests skipped with -short"
		return m.Run()
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		skipReason = "chromium is not installed: the browser tests need Debian's chromium " +
			"(apt-get install chromium; .ci/run installs it)"
		fmt.Println(skipReason)
		return m.Run()
	}
	h, err := startHarness(chrome)
	if h != nil {
		defer h.stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ui-test harness:", err)
		if h != nil && h.runOut != nil {
			fmt.Fprintf(os.Stderr, "run.py output:\n%s\n", h.runOut.String())
		}
		return 1
	}
	env = h
	code := m.Run()
	if code != 0 {
		fmt.Printf("services' data and logs kept in %s\n", h.runDir)
	} else {
		h.stop()
		os.RemoveAll(h.runDir)
	}
	return code
}

// need returns the harness, or skips the test saying why there is none.
func need(t *testing.T) *harness {
	t.Helper()
	if env == nil {
		t.Skip(skipReason)
	}
	return env
}

func startHarness(chrome string) (*harness, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "dev", "run.py")); err != nil {
		return nil, fmt.Errorf("ui-test must run from the repository's ui-test folder: %w", err)
	}
	dir, err := os.MkdirTemp("", "ui-test-")
	if err != nil {
		return nil, err
	}
	h := &harness{root: root, runDir: filepath.Join(dir, "run"), chrome: chrome}
	if h.shots = os.Getenv("UI_SCREENSHOTS_OUT"); h.shots == "" {
		h.shots = filepath.Join(dir, "screenshots")
	}
	if err := os.MkdirAll(h.shots, 0o755); err != nil {
		return h, err
	}
	bin := filepath.Join(dir, "bin")
	t0 := time.Now()
	if err := buildServices(root, bin); err != nil {
		return h, err
	}
	fmt.Printf("built both services in %s\n", time.Since(t0).Round(time.Second))
	t0 = time.Now()
	if err := h.startServices(bin); err != nil {
		return h, err
	}
	fmt.Printf("services ready at %s in %s (run.py, RUN_DIR %s)\n", h.base, time.Since(t0).Round(100*time.Millisecond), h.runDir)
	if err := h.setupAccounts(); err != nil {
		return h, err
	}
	if err := h.startBrowser(); err != nil {
		return h, err
	}
	fmt.Printf("screenshots in %s\n", h.shots)
	return h, nil
}

// buildServices builds both binaries as `make build` does, into dir. The services build in the workspace
// (go.work), which this module's own GOWORK=off must not reach.
func buildServices(root, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dir+string(os.PathSeparator),
		"./analysis-svc/cmd/analysis-svc", "./case-svc/cmd/case-svc")
	cmd.Dir = root
	cmd.Env = append(withoutEnv(os.Environ(), "GOWORK"), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build of the services: %w\n%s", err, out)
	}
	return nil
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServices runs deploy/dev/run.py (what `make run` runs) on free ports with a folder of its own, and
// waits for its banner, printed once both services are ready and set up.
func (h *harness) startServices(bin string) error {
	casePort, err := freePort()
	if err != nil {
		return err
	}
	analysisPort, err := freePort()
	if err != nil {
		return err
	}
	h.base = fmt.Sprintf("http://127.0.0.1:%d", casePort)
	h.analysisBase = fmt.Sprintf("http://127.0.0.1:%d", analysisPort)
	h.runOut = newLineWatcher("make run stays in the foreground")
	cmd := exec.Command("python3", filepath.Join(h.root, "deploy", "dev", "run.py"))
	cmd.Dir = h.root
	cmd.Env = append(os.Environ(), "RUN_DIR="+h.runDir, "RUN_BIN="+bin,
		fmt.Sprintf("RUN_CASE_PORT=%d", casePort), fmt.Sprintf("RUN_ANALYSIS_PORT=%d", analysisPort),
		fmt.Sprintf("RUN_READY_TIMEOUT=%d", int(startDeadline.Seconds())))
	cmd.Stdout, cmd.Stderr = h.runOut, h.runOut
	// run.py stops its services when it ends; it ends when this test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return err
	}
	h.run = cmd
	h.runDone = make(chan error, 1)
	go func() { h.runDone <- cmd.Wait() }()
	select {
	case <-h.runOut.seen:
	case err := <-h.runDone:
		h.runDone <- err
		return fmt.Errorf("run.py exited before the services were ready: %v", err)
	case <-time.After(startDeadline):
		return fmt.Errorf("run.py: services not ready after %s", startDeadline)
	}
	raw, err := os.ReadFile(filepath.Join(h.runDir, "credentials.json"))
	if err != nil {
		return err
	}
	// credentials.json also holds case-connector, whose fields differ: read each role on its own.
	var roles map[string]json.RawMessage
	if err := json.Unmarshal(raw, &roles); err != nil {
		return fmt.Errorf("credentials.json: %w", err)
	}
	h.creds = map[string]credential{}
	for name, v := range roles {
		var c credential
		if json.Unmarshal(v, &c) == nil {
			h.creds[name] = c
		}
	}
	h.superKey = h.creds["case-superadmin"].Key
	h.analyst = h.creds["case-demo-analyst"]
	if h.superKey == "" || h.analyst.Password == "" || h.analyst.Key == "" {
		return fmt.Errorf("credentials.json lacks the case superadmin's key or the analyst's password and key")
	}
	return nil
}

// stop ends run.py, which stops both services; then the browser.
func (h *harness) stop() {
	h.stopOnce.Do(func() {
		if h.browser != nil {
			chromedp.Cancel(h.browser)
			h.closeBrowser()
		}
		if h.run == nil || h.run.Process == nil {
			return
		}
		h.run.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.runDone:
		case <-time.After(stopDeadline):
			fmt.Fprintf(os.Stderr, "run.py did not stop within %s of SIGTERM: killed\n", stopDeadline)
			h.run.Process.Kill()
			<-h.runDone
		}
	})
}

// setupAccounts makes, through the API, an org-admin of demo (case templates need manageCaseTemplate, which
// the analyst lacks) and an analyst with a password in another organisation.
func (h *harness) setupAccounts() error {
	if _, err := h.api(h.superKey, "POST", "/api/user", map[string]any{"login": "orgadmin@demo",
		"name": "Demo org-admin", "organisation": "demo", "profile": "org-admin"}, http.StatusCreated); err != nil {
		return err
	}
	key, err := h.api(h.superKey, "POST", "/api/user/orgadmin@demo/key/renew", nil, http.StatusOK)
	if err != nil {
		return err
	}
	h.orgAdminKey = strings.TrimSpace(string(key))
	if _, err := h.api(h.superKey, "POST", "/api/organisation", map[string]any{"name": "rival",
		"description": "Another organisation"}, http.StatusCreated); err != nil {
		return err
	}
	h.rival = credential{Login: "eve@rival", Password: "rival-password-1234", Organisation: "rival"}
	if _, err := h.api(h.superKey, "POST", "/api/user", map[string]any{"login": h.rival.Login,
		"name": "Eve Rival", "organisation": "rival", "profile": "analyst"}, http.StatusCreated); err != nil {
		return err
	}
	if _, err := h.api(h.superKey, "POST", "/api/user/"+h.rival.Login+"/password/set",
		map[string]any{"password": h.rival.Password}, 0); err != nil {
		return err
	}
	return nil
}

// api calls case-svc's REST API with a key; want is the expected status (0: any 2xx).
func (h *harness) api(key, method, path string, body any, want int) ([]byte, error) {
	return h.call(h.base, key, method, path, body, want)
}

// analysisAPI calls analysis-svc's REST API with a key, as api does case-svc's.
func (h *harness) analysisAPI(key, method, path string, body any, want int) ([]byte, error) {
	return h.call(h.analysisBase, key, method, path, body, want)
}

// call calls the REST API at base with a key; want is the expected status (0: any 2xx).
func (h *harness) call(base, key, method, path string, body any, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if (want == 0 && resp.StatusCode/100 != 2) || (want != 0 && resp.StatusCode != want) {
		return out, fmt.Errorf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, out)
	}
	return out, nil
}

// apiObject calls the API and decodes a JSON object, failing the test on any error.
func apiObject(t *testing.T, key, method, path string, body any, want int) map[string]any {
	t.Helper()
	raw, err := env.api(key, method, path, body, want)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return obj
}

// startBrowser starts the one headless Chromium of this test binary; each test opens its own browser context.
func (h *harness) startBrowser() error {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(h.chrome),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, _ := chromedp.NewContext(alloc)
	t0 := time.Now()
	// The first Do starts the browser, which lives as long as the context it is given: that context has no
	// deadline, so the start is bounded here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browser) }()
	select {
	case err := <-started:
		if err != nil {
			cancelAlloc()
			return fmt.Errorf("start %s: %w", h.chrome, err)
		}
	case <-time.After(startDeadline):
		cancelAlloc()
		return fmt.Errorf("start %s: not started after %s", h.chrome, startDeadline)
	}
	h.browser, h.closeBrowser = browser, cancelAlloc
	fmt.Printf("chromium started in %s\n", time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// lineWatcher keeps a process's output and closes seen when a line holds the marker.
type lineWatcher struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	seen   chan struct{}
	closed bool
}

func newLineWatcher(marker string) *lineWatcher {
	return &lineWatcher{marker: marker, seen: make(chan struct{})}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.closed && strings.Contains(w.buf.String(), w.marker) {
		w.closed = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// analyzerID is the connector's id of an analyzer of analysis-svc's, by name.
func (h *harness) analyzerID(t *testing.T, name string) string {
	t.Helper()
	raw, err := h.api(h.analyst.Key, "GET", "/api/connector/analysis/analyzer", nil, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("analyzers: %v: %s", err, raw)
	}
	for _, a := range list {
		if a.Name == name {
			return a.ID
		}
	}
	t.Fatalf("no analyzer %s on the connector: %s", name, raw)
	return ""
}

// waitJob polls an analyzer job through the API until it ends (Success or Failure), within the wait deadline.
func (h *harness) waitJob(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		job := apiObject(t, h.analyst.Key, "GET", "/api/connector/job/"+id, nil, http.StatusOK)
		if job["status"] == "Success" || job["status"] == "Failure" {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %v after %s", id, job["status"], waitDeadline)
		}
		<-tick.C
	}
}
