package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrashHelper is the service process of TestRun_KillNineRunsEachJobOnce (it runs only there).
func TestCrashHelper(t *testing.T) {
	if os.Getenv("ANALYSIS_CRASH_HELPER") != "1" {
		t.Skip("the service process of TestRun_KillNineRunsEachJobOnce")
	}
	if err := run(context.Background(), nil, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// Issue 15: after kill -9 the workers were orphaned and ran to completion, the same jobs ran again after the
// restart (a responder twice) and job folders stayed. 50 jobs of a slow external analyzer and responder,
// kill -9 of the service while they run, restart on the same database and job folder: the workers died with
// the service, every job ends once, no responder ran twice (the interrupted ones failed with "interrupted;
// not retried"), no job folder is left.
func TestRun_KillNineRunsEachJobOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the service twice")
	}
	root, jobDir, dbDir := t.TempDir(), t.TempDir(), t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs.log")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/usr/bin/env python3
import json, os, sys, time
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json")))
d = inp["data"]
mark = d["title"] if isinstance(d, dict) else d
def log(what):
    with open(%q, "a") as f:
        f.write(what + " " + mark + "\n")
log("start")
time.sleep(1.5)
log("end")
json.dump({"success": True, "full": {"mark": mark}, "summary": {"taxonomies": []}},
          open(os.path.join(job, "output", "output.json"), "w"))
`, runs)
	for _, w := range []struct{ dir, def string }{
		{"Slow", `{"name":"Slow","version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"slow",
  "dataTypeList":["domain"],"command":"Slow/slow.py","baseConfig":"Slow"}`},
		{"SlowResponder", `{"name":"SlowResponder","version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"slow",
  "dataTypeList":["thehive:case"],"command":"SlowResponder/slow.py","baseConfig":"SlowResponder"}`},
	} {
		must(os.MkdirAll(filepath.Join(root, w.dir), 0o755))
		must(os.WriteFile(filepath.Join(root, w.dir, w.dir+".json"), []byte(w.def), 0o644))
		must(os.WriteFile(filepath.Join(root, w.dir, "slow.py"), []byte(script), 0o755))
	}

	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := append(os.Environ(), "ANALYSIS_CRASH_HELPER=1",
		"ANALYSIS_HTTP_ADDR=127.0.0.1:0", "ANALYSIS_DATABASE_PATH="+dbDir, "ANALYSIS_DATABASE_URI=",
		"ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY="+key,
		"ANALYSIS_ANALYZER_PATHS="+root, "ANALYSIS_RESPONDER_PATHS="+root,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true", "ANALYSIS_JOB_WORKERS=8", "ANALYSIS_JOB_LEASE=2s",
		"ANALYSIS_JOB_DIRECTORY="+jobDir, "ANALYSIS_JOB_CACHE=0")
	startProc := func() (*exec.Cmd, string) {
		t.Helper()
		return startChild(t, env)
	}
	cmd, base := startProc()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	if code, _ := call(t, "POST", base+"/api/organization", key, `{"name":"soc"}`); code != 201 {
		t.Fatalf("create org: %d", code)
	}
	if code, _ := call(t, "POST", base+"/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`); code != 201 {
		t.Fatalf("create user: %d", code)
	}
	_, raw := call(t, "POST", base+"/api/user/adm/key/renew", key, "")
	adm := raw["_raw"].(string)
	enable := func(kind, def string) string {
		code, w := call(t, "POST", base+"/api/organization/"+kind+"/"+def, adm, `{}`)
		if code != 201 {
			t.Fatalf("enable %s: %d %v", def, code, w)
		}
		return w["id"].(string)
	}
	analyzer, responder := enable("analyzer", "Slow_1_0"), enable("responder", "SlowResponder_1_0")

	kinds := map[string]string{} // job id → "a" or "r" + mark
	marks := map[string]string{}
	responderMarks := map[string]bool{}
	for i := range 50 {
		var code int
		var j map[string]any
		mark := fmt.Sprintf("m%02d.example", i)
		if i%8 == 3 { // 6 responders among 50
			code, j = call(t, "POST", base+"/api/responder/"+responder+"/run", adm,
				fmt.Sprintf(`{"dataType":"thehive:case","data":{"title":%q}}`, mark))
			kinds[j["id"].(string)] = "responder"
		} else {
			code, j = call(t, "POST", base+"/api/analyzer/"+analyzer+"/run", adm, fmt.Sprintf(`{"dataType":"domain","data":%q}`, mark))
			kinds[j["id"].(string)] = "analyzer"
		}
		if code != 200 {
			t.Fatalf("run %d: %d %v", i, code, j)
		}
		marks[j["id"].(string)] = mark
		if kinds[j["id"].(string)] == "responder" {
			responderMarks[mark] = true
		}
	}
	lines := func() []string {
		b, _ := os.ReadFile(runs)
		return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
	}
	count := func(what string) map[string]int {
		n := map[string]int{}
		ls := lines()
		for i := 0; i+1 < len(ls); i += 2 {
			if ls[i] == what {
				n[ls[i+1]]++
			}
		}
		return n
	}
	// Kill -9 while jobs are in flight (some started, not all ended), responders among them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, en := count("start"), count("end")
		inFlight, responders := 0, 0
		for m := range st {
			if en[m] == 0 {
				inFlight++
				if responderMarks[m] {
					responders++
				}
			}
		}
		if inFlight >= 4 && responders > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no jobs in flight: %v", lines())
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(cmd.Process.Signal(os.Kill))
	_ = cmd.Wait()
	startedAtKill := count("start")
	endedAtKill := count("end")
	// The workers died with the service: none of the runs in flight ends afterwards.
	time.Sleep(2500 * time.Millisecond)
	if after := count("end"); fmt.Sprint(after) != fmt.Sprint(endedAtKill) {
		t.Errorf("runs ended after the kill (orphaned workers): before %v, after %v", endedAtKill, after)
	}
	stale, _ := os.ReadDir(jobDir)
	if len(stale) == 0 {
		t.Fatal("the kill left no job folder: nothing tests their removal")
	}

	cmd, base = startProc()
	final := map[string]map[string]any{}
	deadline = time.Now().Add(120 * time.Second)
	for len(final) < len(kinds) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs finished before the deadline", len(final), len(kinds))
		}
		for id := range kinds {
			if final[id] != nil {
				continue
			}
			code, j := call(t, "GET", base+"/api/job/"+id+"/report", adm, "")
			if code != 200 {
				t.Fatalf("job %s: %d %v", id, code, j)
			}
			if s := j["status"]; s == "Success" || s == "Failure" {
				final[id] = j
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, e := range stale {
		if _, err := os.Stat(filepath.Join(jobDir, e.Name())); err == nil {
			t.Errorf("the stale job folder %s is still there after the restart", e.Name())
		}
	}
	starts := count("start")
	for id, kind := range kinds {
		j, m := final[id], marks[id]
		rep, _ := j["report"].(map[string]any)
		switch kind {
		case "responder":
			if starts[m] > 1 {
				t.Errorf("responder %s ran %d times", m, starts[m])
			}
			interrupted := startedAtKill[m] > 0 && endedAtKill[m] == 0
			if interrupted && (j["status"] != "Failure" || rep == nil || rep["errorMessage"] != "interrupted; not retried") {
				t.Errorf("interrupted responder %s: %v", m, j)
			}
			if !interrupted && j["status"] != "Success" && !(endedAtKill[m] > 0 && j["status"] == "Failure") {
				t.Errorf("responder %s: %v", m, j)
			}
		default:
			if j["status"] != "Success" {
				t.Errorf("analyzer %s: %v", m, j)
			}
		}
	}
	// Stop the service cleanly (SIGTERM) and check that no job folder is left.
	must(cmd.Process.Signal(os.Interrupt))
	_ = cmd.Wait()
	if left, _ := os.ReadDir(jobDir); len(left) != 0 {
		names := []string{}
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("job folders left: %v", names)
	}
}

// startChild starts the service as a child process (TestCrashHelper with env) and returns it with its base
// URL once it listens (60 s at most).
func startChild(t *testing.T, env []string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.v")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var logFile *os.File
		if p := os.Getenv("ANALYSIS_CHILD_LOG"); p != "" { // a debugging aid: the child's log lines
			logFile, _ = os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			defer logFile.Close()
		}
		for sc.Scan() {
			if logFile != nil {
				logFile.Write(append(sc.Bytes(), '\n'))
			}
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
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
