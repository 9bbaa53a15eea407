package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/openir/platform/pkg/apitest"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// start runs the service as main would, on a free port (apitest.StartRun), and returns its base URL and a
// stop function that waits for a clean shutdown.
func start(t *testing.T, env map[string]string) (string, func()) {
	t.Helper()
	url, _, stop := apitest.StartRun(t, run, env)
	return url, stop
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The first start creates the superadmin from bootstrap.*; a restart keeps users, keys and the generated
// auth secret, and does not bootstrap again.
func TestRun_BootstrapAndRestart(t *testing.T) {
	dir := t.TempDir()
	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := map[string]string{
		"ANALYSIS_HTTP_ADDR": "127.0.0.1:0", "ANALYSIS_DATABASE_PATH": dir,
		"ANALYSIS_BOOTSTRAP_LOGIN": "root", "ANALYSIS_BOOTSTRAP_KEY": key,
	}
	base, stop := start(t, env)
	if code, body := get(t, base+"/api/user/current", key); code != 200 {
		t.Fatalf("current user: %d %s", code, body)
	}
	if code, _ := get(t, base+"/readyz", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
	stop()

	env["ANALYSIS_BOOTSTRAP_LOGIN"] = "other" // ignored: a user exists
	base, stop = start(t, env)
	defer stop()
	code, body := get(t, base+"/api/user/current", key)
	if code != 200 {
		t.Fatalf("after restart: %d %s", code, body)
	}
	var u struct{ ID string }
	_ = json.Unmarshal([]byte(body), &u)
	if u.ID != "root" {
		t.Fatalf("current user = %q, want root", u.ID)
	}
	if code, _ := get(t, base+"/api/user/other", key); code != 404 {
		t.Fatalf("second bootstrap user exists: %d", code)
	}
}

// Production mode refuses to start without a strong configured secret (conf.AuthSecret has the full table).
func TestRun_ProductionNeedsASecret(t *testing.T) {
	t.Setenv("ANALYSIS_MODE", "production")
	t.Setenv("ANALYSIS_DATABASE_PATH", t.TempDir())
	t.Setenv("ANALYSIS_HTTP_ADDR", "127.0.0.1:0")
	err := run(context.Background(), nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ANALYSIS_AUTH_SECRET") {
		t.Fatalf("run = %v, want a refusal naming ANALYSIS_AUTH_SECRET", err)
	}
}

func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{"_raw": string(b)}
	}
	return resp.StatusCode, m
}

// An analyzer folder in the public format (a definition file and a Python program) runs end to end through
// the service: enable, run, report with summary, artifacts and a file artifact; one without output fails
// with its console output.
func TestRun_ExternalAnalyzer(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "Hello"), 0o755))
	must(os.WriteFile(filepath.Join(root, "Hello", "Hello.json"), []byte(`[
 {"name":"Hello","version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"says hello",
  "dataTypeList":["domain"],"command":"Hello/hello.py","baseConfig":"Hello",
  "configurationItems":[{"name":"greeting","description":"g","type":"string","required":false,"multi":false,"defaultValue":"hi"}]},
 {"name":"Broken","version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"no output",
  "dataTypeList":["domain"],"command":"Hello/broken.sh"}]`), 0o644))
	must(os.WriteFile(filepath.Join(root, "Hello", "hello.py"), []byte(`#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json")))
open(os.path.join(job, "output", "note.txt"), "w").write("note about " + inp["data"])
out = {"success": True, "full": {"greeting": inp["config"]["greeting"], "data": inp["data"], "cwd": os.getcwd()},
       "summary": {"taxonomies": [{"level": "safe", "namespace": "Hello", "predicate": "Said", "value": "hi"}]},
       "artifacts": [{"dataType": "ip", "data": "192.0.2.1"},
                     {"dataType": "file", "file": "note.txt", "filename": "note.txt", "contentType": "text/plain"}]}
json.dump(out, open(os.path.join(job, "output", "output.json"), "w"))
`), 0o755))
	must(os.WriteFile(filepath.Join(root, "Hello", "broken.sh"), []byte("#!/bin/sh\necho something went wrong >&2\nexit 3\n"), 0o755))

	const key = "bootstrap-key-0123456789abcdefghijkl"
	base, stop := start(t, map[string]string{
		"ANALYSIS_HTTP_ADDR": "127.0.0.1:0", "ANALYSIS_DATABASE_PATH": t.TempDir(),
		"ANALYSIS_BOOTSTRAP_LOGIN": "root", "ANALYSIS_BOOTSTRAP_KEY": key, "ANALYSIS_ANALYZER_PATHS": root,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
	})
	defer stop()
	code, _ := call(t, "POST", base+"/api/organization", key, `{"name":"soc"}`)
	if code != 201 {
		t.Fatalf("create org: %d", code)
	}
	if code, _ := call(t, "POST", base+"/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`); code != 201 {
		t.Fatalf("create user: %d", code)
	}
	code, raw := call(t, "POST", base+"/api/user/adm/key/renew", key, "")
	if code != 200 {
		t.Fatalf("renew key: %d", code)
	}
	adm := raw["_raw"].(string)

	runJob := func(def string) map[string]any {
		t.Helper()
		code, w := call(t, "POST", base+"/api/organization/analyzer/"+def, adm, `{}`)
		if code != 201 {
			t.Fatalf("enable %s: %d %v", def, code, w)
		}
		code, j := call(t, "POST", base+"/api/analyzer/"+w["id"].(string)+"/run", adm, `{"dataType":"domain","data":"example.org"}`)
		if code != 200 {
			t.Fatalf("run: %d %v", code, j)
		}
		code, r := call(t, "GET", base+"/api/job/"+j["id"].(string)+"/waitreport?atMost=30second", adm, "")
		if code != 200 {
			t.Fatalf("waitreport: %d %v", code, r)
		}
		return r
	}
	r := runJob("Hello_1_0")
	rep, _ := r["report"].(map[string]any)
	if r["status"] != "Success" || rep == nil {
		t.Fatalf("job %v", r)
	}
	full := rep["full"].(map[string]any)
	if full["greeting"] != "hi" || full["data"] != "example.org" || full["cwd"] != root {
		t.Fatalf("full %v", full)
	}
	arts := rep["artifacts"].([]any)
	if len(arts) != 2 {
		t.Fatalf("artifacts %v", arts)
	}
	file := arts[1].(map[string]any)["attachment"].(map[string]any)
	code, body := get(t, base+"/api/datastore/"+file["id"].(string), adm)
	if code != 200 || body != "note about example.org" || file["name"] != "note.txt" {
		t.Fatalf("file artifact %d %q %v", code, body, file)
	}

	r = runJob("Broken_1_0")
	rep, _ = r["report"].(map[string]any)
	if r["status"] != "Failure" || rep == nil || !strings.Contains(rep["errorMessage"].(string), "something went wrong") {
		t.Fatalf("broken job %v", r)
	}
}

// The built-in analyzers run in the shipped binary: the validator on a value, File_Info on an uploaded file
// (with artifacts extracted from its report).
func TestRun_BuiltinAnalyzers(t *testing.T) {
	const key = "bootstrap-key-0123456789abcdefghijkl"
	base, stop := start(t, map[string]string{
		"ANALYSIS_HTTP_ADDR": "127.0.0.1:0", "ANALYSIS_DATABASE_PATH": t.TempDir(),
		"ANALYSIS_BOOTSTRAP_LOGIN": "root", "ANALYSIS_BOOTSTRAP_KEY": key, "ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
	})
	defer stop()
	call(t, "POST", base+"/api/organization", key, `{"name":"soc"}`)
	call(t, "POST", base+"/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`)
	_, raw := call(t, "POST", base+"/api/user/adm/key/renew", key, "")
	adm := raw["_raw"].(string)
	enable := func(def, body string) string {
		code, w := call(t, "POST", base+"/api/organization/analyzer/"+def, adm, body)
		if code != 201 {
			t.Fatalf("enable %s: %d %v", def, code, w)
		}
		return w["id"].(string)
	}
	wait := func(id string) map[string]any {
		code, r := call(t, "GET", base+"/api/job/"+id+"/waitreport?atMost=30s", adm, "")
		if code != 200 || r["status"] != "Success" {
			t.Fatalf("job %s: %d %v", id, code, r)
		}
		return r["report"].(map[string]any)
	}

	validator := enable("Observable_Validator_1_0", `{}`)
	_, j := call(t, "POST", base+"/api/analyzer/"+validator+"/run", adm, `{"dataType":"ip","data":"10.0.0.1"}`)
	rep := wait(j["id"].(string))
	if b, _ := json.Marshal(rep["summary"]); !strings.Contains(strings.ToLower(string(b)), "private") {
		t.Fatalf("validator summary %s", b)
	}

	fileInfo := enable("File_Info_1_0", `{"configuration":{"auto_extract_artifacts":true}}`)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("_json", `{"dataType":"file"}`)
	fw, _ := mw.CreateFormFile("attachment", "notes.txt")
	_, _ = fw.Write([]byte("beacon to 198.51.100.23 and http://malware.example.net/payload\n"))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", base+"/api/analyzer/"+fileInfo+"/run", &buf)
	req.Header.Set("Authorization", "Bearer "+adm)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var fj map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&fj)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("file run: %d %v", resp.StatusCode, fj)
	}
	rep = wait(fj["id"].(string))
	found := map[string]bool{}
	for _, a := range rep["artifacts"].([]any) {
		found[a.(map[string]any)["data"].(string)] = true
	}
	if !found["198.51.100.23"] || !found["http://malware.example.net/payload"] {
		t.Fatalf("artifacts %v", rep["artifacts"])
	}
}

// Password guessing gets 429 after auth.throttle.user failures, for the right password too.
func TestRun_LoginThrottling(t *testing.T) {
	base, stop := start(t, map[string]string{
		"ANALYSIS_HTTP_ADDR": "127.0.0.1:0", "ANALYSIS_DATABASE_PATH": t.TempDir(),
		"ANALYSIS_BOOTSTRAP_LOGIN": "root", "ANALYSIS_BOOTSTRAP_PASSWORD": "the-right-password",
		"ANALYSIS_AUTH_THROTTLE_USER": "3", "ANALYSIS_AUTH_METHOD_BASIC": "true",
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true", // passwords over plain HTTP (the test's loopback)
	})
	defer stop()
	login := func(pw string) int {
		resp, err := http.Post(base+"/api/login", "application/json", strings.NewReader(`{"user":"root","password":"`+pw+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := login("the-right-password"); code != 200 {
		t.Fatalf("good login: %d", code)
	}
	for i := range 3 {
		if code := login("wrong"); code != 401 {
			t.Fatalf("bad login %d: %d", i, code)
		}
	}
	if code := login("the-right-password"); code != 429 {
		t.Fatalf("login after 3 failures: %d, want 429", code)
	}
	req, _ := http.NewRequest("GET", base+"/api/user/current", nil)
	req.SetBasicAuth("root", "the-right-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("basic auth after 3 failures: %d, want 429", resp.StatusCode)
	}
}
