package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashHelper is the service process of TestRun_KillNineFiresRulesOnce (it runs only there).
func TestCrashHelper(t *testing.T) {
	if os.Getenv("CASE_CRASH_HELPER") != "1" {
		t.Skip("the service process of TestRun_KillNineFiresRulesOnce")
	}
	if err := run(context.Background(), nil, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// startChild starts the service as a child process (this test binary running TestCrashHelper) and returns it
// with its base URL.
func startChild(t *testing.T, env []string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.v")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				select {
				case addr <- line.Addr:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, "http://" + a
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the service did not listen within 60 s")
	}
	return nil, ""
}

// Issue 27: a rule fires at most once per (rule, object, event), also across kill -9. The service runs as a
// child process with a rule (run a set, add a tag) on every observable created; 200 observables are added and
// the service is killed with SIGKILL while the rule fires; after a restart on the same database, every
// observable's firing is there once, Fired, with exactly one job (its analysis server is down: the jobs wait,
// made once) and the rule's tag.
func TestRun_KillNineFiresRulesOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the service twice")
	}
	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := append(os.Environ(), "CASE_CRASH_HELPER=1",
		"CASE_HTTP_ADDR=127.0.0.1:0", "CASE_DATABASE_PATH="+t.TempDir(), "CASE_DATABASE_URI=",
		"CASE_BOOTSTRAP_LOGIN=root", "CASE_BOOTSTRAP_KEY="+key, "CASE_HTTP_ALLOW_INSECURE_CREDENTIALS=true",
		`CASE_ANALYSIS_SERVERS=[{"name":"down","url":"http://127.0.0.1:1","key":"k","timeout":"1s"}]`, "CASE_AUTOMATION_POLL=20ms")
	cmd, base := startChild(t, env)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	must := func(method, path, k, body string, want int) string {
		t.Helper()
		code, b := call(t, method, base+path, k, body)
		if code != want {
			t.Fatalf("%s %s: %d %s", method, path, code, b)
		}
		return b
	}
	must("POST", "/api/organisation", key, `{"name":"soc"}`, 201)
	must("POST", "/api/user", key, `{"login":"socadmin","organisation":"soc","profile":"org-admin"}`, 201)
	admin := must("POST", "/api/user/socadmin/key/renew", key, "", 200)
	must("POST", "/api/automation/set", admin, `{"name":"s","analyzers":{"ip":[{"analysisId":"down","name":"Echo"}]}}`, 201)
	var rule struct{ ID string }
	_ = json.Unmarshal([]byte(must("POST", "/api/automation/rule", admin,
		`{"name":"r","event":"observableCreated","actions":[{"type":"runSet","set":"s"},{"type":"addTags","tags":["ruled"]}]}`, 201)), &rule)
	var cs struct{ ID string }
	_ = json.Unmarshal([]byte(must("POST", "/api/case", admin, `{"title":"t","description":"d"}`, 201)), &cs)
	const n = 200
	for b := range n / 20 {
		var data []string
		for i := range 20 {
			data = append(data, fmt.Sprintf(`"10.9.%d.%d"`, b, i+1))
		}
		must("POST", "/api/case/"+cs.ID+"/artifact", admin, `{"dataType":"ip","data":[`+strings.Join(data, ",")+`]}`, 201)
	}
	_, before := call(t, "GET", base+"/api/automation/rule/"+rule.ID+"/history?range=all", admin, "")
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed with %d of %d firings recorded (%d still Pending)", strings.Count(before, `"objectId"`), n, strings.Count(before, `"Pending"`))

	cmd, base = startChild(t, env)
	type firing struct {
		ObjectID, Status string
		Jobs             []string
	}
	var hist []firing
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, b := call(t, "GET", base+"/api/automation/rule/"+rule.ID+"/history?range=all", admin, "")
		if code != 200 {
			t.Fatalf("history: %d %s", code, b)
		}
		hist = nil
		_ = json.Unmarshal([]byte(b), &hist)
		done := len(hist) == n
		for _, f := range hist {
			done = done && f.Status != "Pending"
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d firings, not all done within 60 s", len(hist))
		}
		time.Sleep(50 * time.Millisecond) // polling interval; the deadline bounds the wait
	}
	seen := map[string]bool{}
	for _, f := range hist {
		if f.Status != "Fired" || len(f.Jobs) != 1 || seen[f.ObjectID] {
			t.Fatalf("firing %+v (seen before: %v)", f, seen[f.ObjectID])
		}
		seen[f.ObjectID] = true
	}
	code, b := call(t, "POST", base+"/api/case/artifact/_search?range=all", admin, `{"query":{"_not":{"tags":"ruled"}}}`)
	if code != 200 || strings.TrimSpace(b) != "[]" {
		t.Fatalf("observables without the rule's tag: %d %s", code, b)
	}
	total := jobTotal(t, base, admin, cs.ID)
	if total != n {
		t.Fatalf("%d jobs for %d observables", total, n)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
}

// jobTotal is the X-Total of the case's analyzer jobs.
func jobTotal(t *testing.T, base, key, caseID string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/connector/analysis/job/_search", strings.NewReader(`{"query":{"case":"`+caseID+`"}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	n, _ := strconv.Atoi(resp.Header.Get("X-Total"))
	return n
}
