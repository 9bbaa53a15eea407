package main

import (
	"context"
	"github.com/openir/platform/pkg/apitest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// start runs the service as main would, on a free port (apitest.StartRun), and returns its base URL and a
// stop function that waits for a clean shutdown and checks that the bootstrap key never reached the logs.
func start(t *testing.T, env map[string]string) (string, func()) {
	t.Helper()
	url, logs, stop := apitest.StartRun(t, run, env)
	return url, func() {
		stop()
		if strings.Contains(logs.String(), env["CASE_BOOTSTRAP_KEY"]) {
			t.Error("the bootstrap key reached the logs")
		}
	}
}

func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The first start creates the platform administrator from bootstrap.* and a secret beside the embedded data;
// a restart keeps users, keys, cases and the case number sequence, and does not bootstrap again.
func TestRun_BootstrapAndRestart(t *testing.T) {
	dir := t.TempDir()
	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := map[string]string{
		"CASE_HTTP_ADDR": "127.0.0.1:0", "CASE_DATABASE_PATH": dir,
		"CASE_BOOTSTRAP_LOGIN": "root", "CASE_BOOTSTRAP_KEY": key, "CASE_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
	}
	base, stop := start(t, env)
	if code, body := call(t, "GET", base+"/api/user/current", key, ""); code != 200 || !strings.Contains(body, `"profile":"admin"`) {
		t.Fatalf("current user: %d %s", code, body)
	}
	if code, _ := call(t, "GET", base+"/readyz", "", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
	if code, body := call(t, "POST", base+"/api/organisation", key, `{"name":"soc"}`); code != 201 {
		t.Fatalf("create organisation: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+"/api/user", key, `{"login":"ana","organisation":"soc","profile":"analyst"}`); code != 201 {
		t.Fatalf("create user: %d %s", code, body)
	}
	code, anaKey := call(t, "POST", base+"/api/user/ana/key/renew", key, "")
	if code != 200 {
		t.Fatalf("renew key: %d %s", code, anaKey)
	}
	if code, body := call(t, "POST", base+"/api/case", anaKey, `{"title":"t","description":"d"}`); code != 201 || !strings.Contains(body, `"caseId":1,`) {
		t.Fatalf("first case: %d %s", code, body)
	}
	stop()
	if fi, err := os.Stat(filepath.Join(dir, "auth.secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated secret: %v %v", fi, err)
	}

	env["CASE_BOOTSTRAP_LOGIN"] = "other" // ignored: a user exists
	base, stop = start(t, env)
	defer stop()
	if code, body := call(t, "GET", base+"/api/user/current", anaKey, ""); code != 200 || !strings.Contains(body, `"login":"ana"`) {
		t.Fatalf("after restart: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+"/api/case", anaKey, `{"title":"t","description":"d"}`); code != 201 || !strings.Contains(body, `"caseId":2,`) {
		t.Fatalf("second case: %d %s", code, body)
	}
	if code, _ := call(t, "GET", base+"/api/user/other", key, ""); code != 404 {
		t.Fatalf("second bootstrap user exists: %d", code)
	}
}

// Production mode refuses to start without a strong configured secret (conf.AuthSecret has the full table).
func TestRun_ProductionNeedsASecret(t *testing.T) {
	t.Setenv("CASE_MODE", "production")
	t.Setenv("CASE_DATABASE_PATH", t.TempDir())
	t.Setenv("CASE_HTTP_ADDR", "127.0.0.1:0")
	err := run(context.Background(), nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "CASE_AUTH_SECRET") {
		t.Fatalf("run = %v, want a refusal naming CASE_AUTH_SECRET", err)
	}
}

// A bootstrap key must be long enough.
func TestRun_BootstrapKeyTooShort(t *testing.T) {
	for k, v := range map[string]string{"CASE_HTTP_ADDR": "127.0.0.1:0", "CASE_DATABASE_PATH": t.TempDir(),
		"CASE_BOOTSTRAP_LOGIN": "root", "CASE_BOOTSTRAP_KEY": "short"} {
		t.Setenv(k, v)
	}
	err := run(context.Background(), nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Fatalf("err = %v", err)
	}
}
