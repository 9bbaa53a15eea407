package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/web"
)

const (
	benchSecret = "case-bench-secret-0123456789abcdef"
	superLogin  = "bench-root"
	superKey    = "bench-root-key-0123456789-abcdefghijkl" // bootstrap keys need 32+ characters
	benchOrg    = "soc"
	analystUser = "bench-analyst"
	serverName  = "local" // the connector's analysis server (analysisId)
)

// logSink is the service's log output: info lines (one per request) are formatted as in production and
// dropped; warnings and errors go to stderr so a failing run says why.
type logSink struct {
	mu  sync.Mutex
	out io.Writer
	n   int
}

func (l *logSink) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"ERROR"`)) || bytes.Contains(p, []byte(`"level":"WARN"`)) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n++
		if l.n <= 20 {
			_, _ = l.out.Write(p)
		}
	}
	return len(p), nil
}

// stack is case-svc running in this process as cmd/case-svc wires it (run.go) with the defaults of
// config.go, on an embedded database of its own, served over HTTP on 127.0.0.1.
type stack struct {
	db          *docstore.DB
	url         string
	server      *http.Server
	stopTracker func()
	super       *benchkit.Client // the bootstrapped platform administrator
	analyst     *benchkit.Client // analyst of benchOrg (manageCase, manageObservable, manageAlert, manageAnalyse…)
}

// startStack wires and starts case-svc on the embedded database `name` under dir (what run.go opens with an
// empty database.uri). servers are the connector's analysis servers (none: the connector has nothing to
// drive).
func startStack(ctx context.Context, dir string, logs *logSink, name string, servers []serverConfig) (*stack, error) {
	log := conf.Logger(logs, "info", "case-svc")
	db, err := openDB(ctx, dir, name, log)
	if err != nil {
		return nil, err
	}
	s := &stack{db: db}
	keys, err := auth.NewKeyring(benchSecret)
	if err != nil {
		s.close()
		return nil, err
	}
	ids, svc, err := wire(ctx, db, keys)
	if err != nil {
		s.close()
		return nil, err
	}
	if created, err := ids.Bootstrap(ctx, superLogin, "", superKey); err != nil || !created {
		s.close()
		return nil, fmt.Errorf("bootstrap: created=%v err=%v", created, err)
	}
	analyses, err := connectorService(ctx, servers, db, svc, log)
	if err != nil {
		s.close()
		return nil, err
	}
	// run.go with config.go's defaults (auth.session_ttl 1h, auth.throttle 5/30/5m, search.max 10000,
	// http.* limits, observable.max_file 100M); plain HTTP on 127.0.0.1 needs allow_insecure_credentials for the key renewals
	// of the setup.
	h := api.New(api.Config{
		Log: log,
		Auth: web.AuthConfig{Keyring: keys, SessionTTL: time.Hour,
			Throttle: auth.NewThrottle(5, 30, 5*time.Minute, time.Now)},
		Secure:    web.SecureConfig{AllowInsecure: true},
		SearchMax: 10000,
		MaxFile:   100 << 20,
		Ready:     db.Ping,
	}, ids, svc, analyses)
	actx, stop := context.WithCancel(context.WithoutCancel(ctx))
	tracked := make(chan struct{})
	go func() {
		defer close(tracked)
		analyses.Run(actx)
	}()
	s.stopTracker = func() { stop(); <-tracked }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.close()
		return nil, err
	}
	// web.Serve's server settings.
	s.server = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 5 * time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	go func() { _ = s.server.Serve(ln) }()
	s.url = "http://" + ln.Addr().String()
	if err := s.setup(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// setup makes, over the API, the organisation and its analyst with a key.
func (s *stack) setup(ctx context.Context) error {
	s.super = benchkit.NewClient(s.url, superKey)
	if _, err := s.super.Call(ctx, http.MethodPost, "/api/organisation",
		map[string]any{"name": benchOrg, "description": "benchmark"}, http.StatusCreated, nil); err != nil {
		return err
	}
	if _, err := s.super.Call(ctx, http.MethodPost, "/api/user", map[string]any{"login": analystUser, "name": "Bench analyst",
		"organisation": benchOrg, "profile": "analyst"}, http.StatusCreated, nil); err != nil {
		return err
	}
	r, err := s.super.Call(ctx, http.MethodPost, "/api/user/"+analystUser+"/key/renew", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	s.analyst = benchkit.NewClient(s.url, string(r.Body))
	return nil
}

// close stops the HTTP server and the connector's tracker, then closes the database.
func (s *stack) close() {
	if s.server != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.server.Shutdown(sctx)
		cancel()
	}
	if s.stopTracker != nil {
		s.stopTracker()
	}
	if s.db != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.db.Close(cctx)
		cancel()
	}
}

// serverConfig is one entry of analysis.servers.
type serverConfig struct {
	Name, URL, Key string
}

// connectorService is run.go's connectorService with config.go's defaults (analysis.give_up 24h,
// analysis.long_poll 1m, no server timeout).
func connectorService(ctx context.Context, servers []serverConfig, db *docstore.DB, svc *cases.Service, log *slog.Logger) (*cases.Analyses, error) {
	var as []cases.AnalysisServer
	for _, s := range servers {
		as = append(as, connector.Adapter{Client: connector.New(connector.Server{Name: s.Name, URL: s.URL, Key: s.Key},
			connector.Options{}, log)})
	}
	st, err := store.NewAnalysisStore(ctx, db)
	if err != nil {
		return nil, err
	}
	return cases.NewAnalyses(svc, as, st, st, cases.AnalysisConfig{Log: log, GiveUp: 24 * time.Hour, LongPoll: time.Minute}, time.Now), nil
}

// wire is run.go's wire: the stores and the domain services on the database.
func wire(ctx context.Context, db *docstore.DB, keys *auth.Keyring) (*cases.Identity, *cases.Service, error) {
	idStore, err := store.NewIdentityStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	ids, err := cases.NewIdentity(idStore, keys, time.Now)
	if err != nil {
		return nil, nil, err
	}
	caseStore, err := store.NewCaseStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	taskStore, err := store.NewTaskStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	templates, err := store.NewTemplateStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	fields, err := store.NewCustomFieldStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	observables, err := store.NewObservableStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	alerts, err := store.NewAlertStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := store.NewJobStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	files, err := store.NewFiles(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	svc := cases.NewService(cases.Stores{Cases: caseStore, Tasks: taskStore, Templates: templates, Fields: fields,
		Files: files, Members: ids, Observables: observables, Alerts: alerts, Jobs: jobs}, time.Now)
	return ids, svc, nil
}

// --- the analysis-svc child process ---

// analysisProc is a real analysis-svc process built from this workspace and started on 127.0.0.1 with its
// own embedded database, an organization whose orgadmin key the connector uses, and Echo enabled.
type analysisProc struct {
	url    string
	key    string // the orgadmin's key
	echoID string // the enabled built-in Echo analyzer
	pid    int
	stop   func()
}

const analysisSuperKey = "analysis-bench-root-key-0123456789abcdef"

// buildAnalysis builds cmd/analysis-svc into dir with `go build` (the workspace's module, the build cache).
func buildAnalysis(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "analysis-svc")
	gobin := "go"
	if g := os.Getenv("GO"); g != "" {
		gobin = g
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, "github.com/openir/platform/analysis-svc/cmd/analysis-svc")
	// Inside the workspace this source comes from (when it is still there), so a binary run from anywhere
	// builds the analysis-svc of its own checkout; else from the working directory.
	if _, file, _, ok := runtime.Caller(0); ok {
		if st, err := os.Stat(filepath.Dir(file)); err == nil && st.IsDir() {
			cmd.Dir = filepath.Dir(file)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build analysis-svc: %v\n%s", err, out)
	}
	return bin, nil
}

// startAnalysis starts the binary on 127.0.0.1:0 with its database under dir, reads the "listening" log line,
// and sets up the organization, its orgadmin key and Echo over the API.
func startAnalysis(ctx context.Context, bin, dir string, stderr io.Writer) (*analysisProc, error) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(pctx, bin)
	cmd.Env = append(os.Environ(), "ANALYSIS_HTTP_ADDR=127.0.0.1:0", "ANALYSIS_DATABASE_PATH="+dir,
		"ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY="+analysisSuperKey,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true")
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	p := &analysisProc{pid: cmd.Process.Pid, stop: func() { cancel(); _ = cmd.Wait() }}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		shown := 0
		for sc.Scan() {
			var line struct{ Msg, Addr, Level string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				select {
				case listening <- line.Addr:
				default:
				}
				continue
			}
			expected := bytes.Contains(sc.Bytes(), []byte("auth.secret is not set")) ||
				bytes.Contains(sc.Bytes(), []byte("allow_insecure_credentials is on"))
			if (line.Level == "WARN" || line.Level == "ERROR") && !expected && shown < 20 {
				shown++
				fmt.Fprintf(stderr, "analysis-svc: %s\n", sc.Bytes())
			}
		}
	}()
	select {
	case a := <-listening:
		p.url = "http://" + a
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, errors.New("analysis-svc did not start within 60 s")
	}
	super := benchkit.NewClient(p.url, analysisSuperKey)
	for _, step := range []struct {
		path string
		body any
	}{{"/api/organization", map[string]any{"name": benchOrg, "description": "benchmark"}},
		{"/api/user", map[string]any{"login": "connector", "name": "Connector", "organization": benchOrg,
			"roles": []string{"read", "analyze", "orgadmin"}}}} {
		if _, err := super.Call(ctx, http.MethodPost, step.path, step.body, http.StatusCreated, nil); err != nil {
			p.stop()
			return nil, err
		}
	}
	r, err := super.Call(ctx, http.MethodPost, "/api/user/connector/key/renew", nil, http.StatusOK, nil)
	if err != nil {
		p.stop()
		return nil, err
	}
	p.key = string(r.Body)
	var w struct {
		ID string `json:"id"`
	}
	if _, err := benchkit.NewClient(p.url, p.key).Call(ctx, http.MethodPost, "/api/organization/analyzer/Echo_1_0",
		map[string]any{"configuration": map[string]any{}}, http.StatusCreated, &w); err != nil {
		p.stop()
		return nil, err
	}
	p.echoID = w.ID
	return p, nil
}

// rss is the process's resident set, in MiB.
func (p *analysisProc) rss() (float64, error) {
	kb, err := benchkit.ProcField(fmt.Sprintf("/proc/%d/status", p.pid), "VmRSS:")
	return kb / 1024, err
}
