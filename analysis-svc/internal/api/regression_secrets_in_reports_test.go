package api_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
)

// Issue 15 (5b): the built-in Echo analyzer reported its configuration, proxy credentials included, to
// read-only users. Neither the proxies' credentials nor an item a definition marks secret appear in a job's
// report, input or errorMessage, for any reader: not when the worker reports its input, not when it fails
// with them in its message.
func TestRegressionSecretsNotInReports(t *testing.T) {
	const proxyPass = "Pr0xyPa55w0rd"
	f := newJobFixture(t)
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"configuration": map[string]any{
		"proxy_http":  "http://squid:" + proxyPass + "@proxy.example:3128",
		"proxy_https": "http://squid:" + proxyPass + "@proxy.example:3129",
	}}).Want(t, http.StatusOK)
	ok := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.9.0.1"})
	failed := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.9.0.2",
		"parameters": map[string]any{"fail": "cannot reach the proxy"}}) // its input (config) is in the report
	for _, id := range []string{ok["id"].(string), failed["id"].(string)} {
		f.wait(t, f.analyst, id)
		for _, as := range []*client{f.reads, f.analyst, f.admin} {
			for _, path := range []string{"/api/job/" + id, "/api/job/" + id + "/report", "/api/job/" + id + "/artifacts"} {
				b := string(as.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK).Body)
				if strings.Contains(b, proxyPass) || strings.Contains(b, "squid:") {
					t.Errorf("GET %s shows the proxy's credentials:\n%s", path, b)
				}
			}
		}
	}
	// The reports are still there, with the secrets replaced.
	rep := f.reads.Call(t, http.MethodGet, "/api/job/"+ok["id"].(string)+"/report", nil).Want(t, http.StatusOK).Body
	if !strings.Contains(string(rep), `"Success"`) || !strings.Contains(string(rep), "REMOVED") {
		t.Errorf("the Echo report lost more than its secrets:\n%s", rep)
	}
	fb := f.reads.Call(t, http.MethodGet, "/api/job/"+failed["id"].(string), nil).Want(t, http.StatusOK).Object(t)
	if fb["status"] != "Failure" || fb["errorMessage"] != "cannot reach the proxy" {
		t.Errorf("failed job %v", fb)
	}
}

// An external worker's item marked secret (a name no keyword rule catches) is removed from what the worker
// reports, whether it echoes its input on success or prints the value in its error and input on failure.
// (Issue 30: only there; what a worker reports as data, a taxonomy or an artifact, is stored as written.)
func TestRegressionSecretItemNotInReports(t *testing.T) {
	needPython(t)
	const token = "tok-7f3e9c1d2b"
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Leaky", "leaky.py"), `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
raw = open(os.path.join(job, "input", "input.json")).read()
inp = json.loads(raw)
if inp["data"] == "fail":
    out = {"success": False, "errorMessage": "login with " + inp["config"]["token"] + " refused", "input": inp}
else:
    out = {"success": True, "summary": {"taxonomies": [{"level": "info", "namespace": "L", "predicate": "t", "value": "ok"}]},
           "full": {"input": inp}, "artifacts": [{"dataType": "other", "data": "ok"}], "operations": []}
open(os.path.join(job, "output", "output.json"), "w").write(json.dumps(out))
`, 0o755)
	def, _ := json.Marshal(map[string]any{"name": "Leaky", "version": "1.0", "author": "test", "url": "https://example.org",
		"license": "AGPL-V3", "description": "reports its input", "dataTypeList": []string{"other"}, "command": "Leaky/leaky.py",
		"baseConfig": "Leaky", "configurationItems": []any{map[string]any{"name": "token", "description": "API token",
			"type": "string", "multi": false, "required": true, "secret": true}}})
	writeFile(t, filepath.Join(root, "Leaky", "Leaky.json"), string(def), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	reader := x.user(t, "soc-reader", "soc", roleRead)
	w := x.enable(t, "analyzer", "Leaky_1_0", map[string]any{"token": token})
	for _, data := range []string{"ok", "fail"} {
		id := x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"`+data+`"}`)
		x.waitRaw(t, id)
		for _, as := range []*client{reader, x.analyst, x.admin} {
			for _, path := range []string{"/api/job/" + id, "/api/job/" + id + "/report", "/api/job/" + id + "/artifacts"} {
				b := string(as.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK).Body)
				if strings.Contains(b, token) {
					t.Errorf("%s: GET %s shows the secret item:\n%s", data, path, b)
				}
				if path == "/api/job/"+id && data == "fail" && !strings.Contains(b, "login with REMOVED refused") {
					t.Errorf("failed job's message: %s", b)
				}
			}
		}
	}
}
