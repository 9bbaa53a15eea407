package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/pkg/apitest"
	"github.com/openir/platform/pkg/cli"
)

// asMain: with it set to 1 the test binary is case-svc (TestMain runs main).
const asMain = "CASE_SVC_AS_MAIN"

func TestMain(m *testing.M) { apitest.AsMain(m, asMain, main) }

// The command line of the binary (the same as analysis-svc's, pkg/cli, without jobio): help and version on
// stdout with status 0; an unknown command, argument or flag is an error on stderr with the usage and status
// 2. None of them starts a server or creates anything in the current folder (before the command line,
// `case-svc help` and `case-svc version` served and created data/).
func TestCLI_HelpVersionAndRefusals(t *testing.T) {
	version := cli.VersionLine("case-svc", api.Version)
	for _, c := range []struct {
		args []string
		code int
		out  []string // each must be in stdout (code 0) or stderr (code 2)
	}{
		{[]string{"--help"}, 0, []string{"case-svc [command]", "serve", "backup", "migrate", "version", "--config FILE"}},
		{[]string{"help"}, 0, []string{"Available Commands:", "serve"}},
		{[]string{"help", "backup"}, 0, []string{"case-svc backup --out FILE [flags]"}},
		{[]string{"version"}, 0, []string{version}},
		{[]string{"--version"}, 0, []string{version}},
		{[]string{"jobio"}, 2, []string{`unknown command "jobio" for "case-svc"`, "Usage:"}},
		{[]string{"foo"}, 2, []string{`unknown command "foo" for "case-svc"`, "Usage:"}},
		{[]string{"--nope"}, 2, []string{"unknown flag: --nope"}},
		{[]string{"help", "foo"}, 2, []string{`unknown help topic "foo"`}},
		{[]string{"serve", "x"}, 2, []string{`unexpected argument "x" for "case-svc serve"`}},
		{[]string{"backup"}, 2, []string{"backup: --out FILE is required"}},
	} {
		dir := t.TempDir()
		e := apitest.RunMain(t, asMain, "CASE_", dir, nil, c.args...)
		name := strings.Join(c.args, " ")
		if e.Code != c.code {
			t.Errorf("%q: exit %d, want %d; stdout:\n%s\nstderr:\n%s", name, e.Code, c.code, e.Stdout, e.Stderr)
			continue
		}
		got, other := e.Stdout, e.Stderr
		if c.code != 0 {
			got, other = e.Stderr, e.Stdout
		}
		for _, w := range c.out {
			if !strings.Contains(got, w) {
				t.Errorf("%q: output without %q:\n%s", name, w, got)
			}
		}
		if other != "" {
			t.Errorf("%q: unexpected output on the other stream: %q", name, other)
		}
		if c.args[0] == "version" && e.Stdout != version {
			t.Errorf("%q: %q, want %q", name, e.Stdout, version)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%q created %s in the current folder", name, left[0].Name())
		}
	}
}

// Without a command case-svc serves, as before (the image's entrypoint and make run give no command), and
// /api/status reports the version `version` prints; SIGTERM stops it with status 0.
func TestCLI_ServeIsTheDefault(t *testing.T) {
	dir := t.TempDir()
	s := apitest.StartMain(t, asMain, "CASE_", dir, map[string]string{"CASE_HTTP_ADDR": "127.0.0.1:0"})
	resp, err := http.Get(s.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Versions map[string]string }
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Versions["case-svc"] != api.Version {
		t.Errorf("/api/status versions %v (%v), want case-svc %s", st.Versions, err, api.Version)
	}
	if code := s.Stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, s.Stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, "data")); err != nil || !fi.IsDir() {
		t.Errorf("no database folder data/: %v", err)
	}
}
