package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/openir/platform/case-svc/internal/app"
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

// stack is case-svc running in this process, built by internal/app as cmd/case-svc builds it, with the
// defaults of the configuration, on an embedded database of its own, served over HTTP on 127.0.0.1.
type stack struct {
	app     *app.App
	db      *docstore.DB
	url     string
	server  *benchkit.Server
	super   *benchkit.Client // the bootstrapped platform administrator
	analyst *benchkit.Client // analyst of benchOrg (manageCase, manageObservable, manageAlert, manageAnalyse…)
}

// stackOptions change what startStack builds.
type stackOptions struct {
	servers []app.Server // the connector's analysis servers (none: the connector has nothing to drive)
	noAudit bool         // without the audit trail's decorators (the audit overhead row's floor)
}

// startStack builds and starts case-svc on the database db (benchkit.Run.DB: the embedded SQLite file internal/app
// opens with an empty database.uri, or a fresh database on the MongoDB pass).
func startStack(ctx context.Context, db docstore.Config, logs *benchkit.LogSink, o stackOptions) (*stack, error) {
	cfg, err := app.Default()
	if err != nil {
		return nil, err
	}
	cfg.Database.URI, cfg.Database.Path, cfg.Database.Name = db.URI, db.Path, db.Name
	cfg.Auth.Secret = benchSecret
	cfg.Bootstrap.Login, cfg.Bootstrap.Key = superLogin, superKey
	// plain HTTP on 127.0.0.1: the key renewals of the setup
	cfg.HTTP.AllowInsecureCredentials = true
	cfg.Analysis.Servers = o.servers
	a, err := app.New(ctx, cfg, conf.Logger(logs, "info", "case-svc"), app.Options{NoAudit: o.noAudit})
	if err != nil {
		return nil, err
	}
	s := &stack{app: a, db: a.DB}
	if !a.Bootstrapped {
		s.close()
		return nil, fmt.Errorf("bootstrap: the database %s already had its administrator", db.Name)
	}
	a.Start()
	if s.server, err = benchkit.Serve(web.NewServer(a.Log, a.Handler, a.ServeConfig())); err != nil {
		s.close()
		return nil, err
	}
	s.url = s.server.URL
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

// close stops the HTTP server, then the service's background work, and closes the database.
func (s *stack) close() {
	if s.server != nil {
		s.server.Close()
	}
	s.app.Close(context.Background())
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

const (
	analysisSuperKey = "analysis-bench-root-key-0123456789abcdef"
	analysisSecret   = "case-bench-analysis-secret-0123456789abcdef" // on the MongoDB pass
)

// buildAnalysis builds cmd/analysis-svc into dir with `go build` (the workspace's module, the build cache).
func buildAnalysis(ctx context.Context, dir string) (string, error) {
	return buildCommand(ctx, dir, "analysis-svc", "github.com/openir/platform/analysis-svc/cmd/analysis-svc")
}

// buildCommand builds the command pkg into dir/name with `go build`.
func buildCommand(ctx context.Context, dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	gobin := "go"
	if g := os.Getenv("GO"); g != "" {
		gobin = g
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, pkg)
	// Inside the workspace this source comes from (when it is still there), so a binary run from anywhere
	// builds the analysis-svc of its own checkout; else from the working directory.
	if _, file, _, ok := runtime.Caller(0); ok {
		if st, err := os.Stat(filepath.Dir(file)); err == nil && st.IsDir() {
			cmd.Dir = filepath.Dir(file)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// startAnalysis starts the binary on 127.0.0.1:0 with its database db (benchkit.Run.DB), reads the "listening"
// log line, and sets up the organization, its orgadmin key and Echo over the API.
func startAnalysis(ctx context.Context, bin string, db docstore.Config, stderr io.Writer) (*analysisProc, error) {
	env := []string{"ANALYSIS_HTTP_ADDR=127.0.0.1:0", "ANALYSIS_DATABASE_PATH=" + db.Path,
		"ANALYSIS_DATABASE_NAME=" + db.Name, "ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY=" + analysisSuperKey,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true"}
	if db.URI != "" { // an external database needs auth.secret
		env = append(env, "ANALYSIS_DATABASE_URI="+db.URI, "ANALYSIS_AUTH_SECRET="+analysisSecret)
	}
	url, pid, stop, err := startChild(ctx, bin, "analysis-svc", env, stderr)
	if err != nil {
		return nil, err
	}
	p := &analysisProc{url: url, pid: pid, stop: stop}
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

// startChild starts a service's binary with env added to this process's, reads its "listening" log line
// (its other warnings and errors, up to 20, go to stderr) and returns its URL, pid and a stop function.
func startChild(ctx context.Context, bin, name string, env []string, stderr io.Writer) (string, int, func(), error) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(pctx, bin)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", 0, nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		return "", 0, nil, err
	}
	stop := func() { cancel(); _ = cmd.Wait() }
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
				fmt.Fprintf(stderr, "%s: %s\n", name, sc.Bytes())
			}
		}
	}()
	select {
	case a := <-listening:
		return "http://" + a, cmd.Process.Pid, stop, nil
	case <-time.After(60 * time.Second):
		stop()
		return "", 0, nil, fmt.Errorf("%s did not start within 60 s", name)
	}
}

// rss is the process's resident set, in MiB.
func (p *analysisProc) rss() (float64, error) {
	kb, err := benchkit.ProcField(fmt.Sprintf("/proc/%d/status", p.pid), "VmRSS:")
	return kb / 1024, err
}
