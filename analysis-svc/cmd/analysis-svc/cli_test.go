package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/jobio"
	"github.com/openir/platform/pkg/apitest"
	"github.com/openir/platform/pkg/cli"
)

// asMain: with it set to 1 the test binary is analysis-svc (TestMain runs main).
const asMain = "ANALYSIS_SVC_AS_MAIN"

func TestMain(m *testing.M) { apitest.AsMain(m, asMain, main) }

// runMain runs analysis-svc with args in dir, without the ANALYSIS_* variables of the tests' environment.
func runMain(t *testing.T, dir string, vars map[string]string, args ...string) apitest.Exit {
	t.Helper()
	return apitest.RunMain(t, asMain, "ANALYSIS_", dir, vars, args...)
}

// The command line of the binary: help and version answer on stdout with status 0; an unknown command,
// argument or flag, or a missing required flag, is an error on stderr with the usage and status 2. None of
// them starts a server or creates anything in the current folder (before the command line, `analysis-svc
// help` served and created data/).
func TestCLI_HelpVersionAndRefusals(t *testing.T) {
	version := cli.VersionLine("analysis-svc", api.Version)
	for _, c := range []struct {
		args   []string
		code   int
		stdout []string // each must be in stdout; for code 0 stderr must be empty
		stderr []string // each must be in stderr; for code 2 stdout must be empty
		exact  string   // the whole stdout, when set
	}{
		{args: []string{"--help"}, stdout: []string{"Usage:", "analysis-svc [command]", "serve", "backup", "migrate", "jobio", "version", "--config FILE", "Without a command, analysis-svc serves"}},
		{args: []string{"-h"}, stdout: []string{"Available Commands:", "jobio"}},
		{args: []string{"help"}, stdout: []string{"Available Commands:", "jobio"}},
		{args: []string{"help", "serve"}, stdout: []string{"analysis-svc serve [flags]", "--config FILE"}},
		{args: []string{"serve", "--help"}, stdout: []string{"analysis-svc serve [flags]", "--config FILE"}},
		{args: []string{"help", "jobio", "fetch"}, stdout: []string{"analysis-svc jobio fetch [flags]", "--dir DIR", "JOBIO_URL"}},
		{args: []string{"jobio", "upload", "--help"}, stdout: []string{"analysis-svc jobio upload [flags]", "--dir DIR"}},
		{args: []string{"backup", "--help"}, stdout: []string{"--out FILE", "--config FILE"}},
		{args: []string{"migrate", "--help"}, stdout: []string{"--to URI", "--name NAME"}},
		{args: []string{"version"}, exact: version},
		{args: []string{"--version"}, exact: version},
		{args: []string{"foo"}, code: 2, stderr: []string{`analysis-svc: unknown command "foo" for "analysis-svc"`, "Usage:", "Available Commands:"}},
		{args: []string{"--nope"}, code: 2, stderr: []string{"analysis-svc: unknown flag: --nope", "Usage:"}},
		{args: []string{"-config", "x.yaml"}, code: 2, stderr: []string{"unknown shorthand flag: 'c' in -config", "--config FILE"}},
		{args: []string{"--config"}, code: 2, stderr: []string{"flag needs an argument: --config"}},
		{args: []string{"help", "foo"}, code: 2, stderr: []string{`unknown help topic "foo"`, "analysis-svc help [command]"}},
		{args: []string{"help", "serve", "x"}, code: 2, stderr: []string{`unknown help topic "serve x"`}},
		{args: []string{"serve", "extra"}, code: 2, stderr: []string{`unexpected argument "extra" for "analysis-svc serve"`, "analysis-svc serve [flags]"}},
		{args: []string{"version", "extra"}, code: 2, stderr: []string{`unexpected argument "extra" for "analysis-svc version"`}},
		{args: []string{"jobio"}, code: 2, stderr: []string{`"analysis-svc jobio" needs a command (fetch, upload)`, "analysis-svc jobio [command]"}},
		{args: []string{"jobio", "nope"}, code: 2, stderr: []string{`unknown command "nope" for "analysis-svc jobio"`}},
		{args: []string{"jobio", "fetch", "extra"}, code: 2, stderr: []string{`unexpected argument "extra" for "analysis-svc jobio fetch"`, "--dir DIR"}},
		{args: []string{"jobio", "fetch", "--dir"}, code: 2, stderr: []string{"flag needs an argument: --dir"}},
		{args: []string{"jobio", "fetch", "--config", "x"}, code: 2, stderr: []string{"unknown flag: --config"}},
		{args: []string{"backup"}, code: 2, stderr: []string{"backup: --out FILE is required", "analysis-svc backup --out FILE [flags]"}},
		{args: []string{"migrate"}, code: 2, stderr: []string{"migrate: --to URI is required"}},
		{args: []string{"migrate", "--to", "postgres://x"}, code: 2, stderr: []string{`migrate: --to "postgres://x": want a mongodb:// URI`}},
		// A failed command (not a wrong command line): status 1, no usage.
		{args: []string{"jobio", "fetch"}, code: 1, stderr: []string{"analysis-svc: jobio: JOBIO_URL is not set"}},
		{args: []string{"backup", "--out", "b.db", "--config", "missing.yaml"}, code: 1, stderr: []string{"read config missing.yaml"}},
	} {
		dir := t.TempDir()
		e := runMain(t, dir, nil, c.args...)
		name := strings.Join(c.args, " ")
		if e.Code != c.code {
			t.Errorf("%q: exit %d, want %d; stdout:\n%s\nstderr:\n%s", name, e.Code, c.code, e.Stdout, e.Stderr)
			continue
		}
		for _, w := range c.stdout {
			if !strings.Contains(e.Stdout, w) {
				t.Errorf("%q: stdout without %q:\n%s", name, w, e.Stdout)
			}
		}
		for _, w := range c.stderr {
			if !strings.Contains(e.Stderr, w) {
				t.Errorf("%q: stderr without %q:\n%s", name, w, e.Stderr)
			}
		}
		if c.exact != "" && e.Stdout != c.exact {
			t.Errorf("%q: stdout %q, want %q", name, e.Stdout, c.exact)
		}
		switch c.code {
		case 0:
			if e.Stderr != "" {
				t.Errorf("%q: stderr %q", name, e.Stderr)
			}
		case 1:
			if strings.Contains(e.Stderr, "Usage:") || e.Stdout != "" {
				t.Errorf("%q: a failure printed the usage or on stdout:\n%s\n%s", name, e.Stdout, e.Stderr)
			}
		case 2:
			if e.Stdout != "" {
				t.Errorf("%q: stdout %q", name, e.Stdout)
			}
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%q created %s in the current folder", name, left[0].Name())
		}
	}
}

// Without a command analysis-svc serves, as before the command line (the images' entrypoint and make run
// give no command), with the default database folder data/ in the current folder; `serve --config FILE` and
// `--config FILE` read the file. /api/status reports the version `version` prints. SIGTERM stops it with
// status 0.
func TestCLI_ServeIsTheDefault(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "analysis.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  addr: 127.0.0.1:0\ndatabase:\n  path: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		vars   map[string]string
		folder string // the database folder it must create in dir
	}{
		{nil, map[string]string{"ANALYSIS_HTTP_ADDR": "127.0.0.1:0"}, "data"},
		{[]string{"serve", "--config", cfg}, nil, "from-file"},
		{[]string{"--config=" + cfg}, nil, "from-file"},
	} {
		s := apitest.StartMain(t, asMain, "ANALYSIS_", dir, c.vars, c.args...)
		resp, err := http.Get(s.URL + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Versions map[string]string }
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.Versions["analysis-svc"] != api.Version {
			t.Errorf("%q: /api/status versions %v (%v), want analysis-svc %s", c.args, st.Versions, err, api.Version)
		}
		if code := s.Stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("%q: exit %d after SIGTERM; stderr:\n%s", c.args, code, s.Stderr.String())
		}
		if fi, err := os.Stat(filepath.Join(dir, c.folder)); err != nil || !fi.IsDir() {
			t.Errorf("%q: no database folder %s: %v", c.args, c.folder, err)
		}
	}
}

// `jobio fetch --dir DIR` and `jobio upload --dir DIR` as the pods run them: the input lands in DIR; upload
// waits for SIGTERM (the kubelet's stop of the sidecar), then posts DIR/output and exits 0.
func TestCLI_Jobio(t *testing.T) {
	src := filepath.Join(t.TempDir(), "job")
	if _, err := jobdir.Prepare(src, analysis.KindAnalyzer, analysis.RunInput{Data: "8.8.8.8", DataType: "ip"}, jobdir.Options{}); err != nil {
		t.Fatal(err)
	}
	received := filepath.Join(t.TempDir(), "back")
	if err := os.MkdirAll(filepath.Join(received, jobdir.OutputDir), 0o700); err != nil {
		t.Fatal(err)
	}
	uploaded := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/run/input" && r.Header.Get("Authorization") == "Bearer in-token":
			_ = jobdir.PackInput(w, src)
		case r.Method == http.MethodPost && r.URL.Path == "/run/output" && r.Header.Get("Authorization") == "Bearer out-token":
			if err := jobdir.UnpackOutput(r.Body, received, jobdir.OutputLimits{}, jobdir.FolderAccess{}); err != nil {
				http.Error(w, err.Error(), http.StatusUnprocessableEntity)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			uploaded <- struct{}{}
		default:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	vars := map[string]string{jobio.EnvURL: srv.URL + "/run", jobio.EnvInputToken: "in-token", jobio.EnvOutputToken: "out-token"}
	pod := filepath.Join(t.TempDir(), "pod")
	if e := runMain(t, t.TempDir(), vars, "jobio", "fetch", "--dir", pod); e.Code != 0 {
		t.Fatalf("fetch: exit %d: %s", e.Code, e.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(pod, "input", "input.json")); err != nil || !strings.Contains(string(b), `"8.8.8.8"`) {
		t.Fatalf("fetched input: %s, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(pod, "output", "output.json"), []byte(`{"success":true,"full":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// upload: once it says it waits (its signal handler is set), nothing was posted; SIGTERM makes it post.
	e := apitest.StartProcess(t, asMain, "ANALYSIS_", t.TempDir(), vars, jobio.UploadWaiting, "jobio", "upload", "--dir="+pod)
	select {
	case <-uploaded:
		t.Fatal("upload posted before SIGTERM")
	default:
	}
	if code := e.Stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("upload: exit %d: %s", code, e.Stderr.String())
	}
	select {
	case <-uploaded:
	default:
		t.Fatal("upload exited 0 without posting")
	}
	if out, err := jobdir.ReadOutput(received, jobdir.ReadOptions{}); err != nil || !out.Success {
		t.Fatalf("uploaded output: %+v, %v", out, err)
	}
}
