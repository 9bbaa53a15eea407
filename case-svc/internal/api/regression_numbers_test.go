package api_test

// Issue 16 (2): a report's numbers reach case-svc's job, observable and action records as the worker wrote
// them (1.0 stays 1.0, 2^63-1 is not rounded, nested floats keep their digits), through a real analysis-svc
// running external workers in the public format.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// numbersAnalyzer writes its output.json as literal text: the numbers are exactly these characters.
const numbersAnalyzer = `#!/usr/bin/env python3
import os, sys
job = sys.argv[1]
out = ('{"success": true,'
       ' "summary": {"taxonomies": [{"level": "info", "namespace": "Num", "predicate": "one", "value": 1.0}],'
       ' "max": 9223372036854775807, "nested": {"l": [0.1, 2.50, {"deep": 3.14159265358979323846}]}},'
       ' "full": {"one": 1.0, "max": 9223372036854775807, "nested": {"list": [0.1, 2.50, {"deep": 3.14159265358979323846}]}},'
       ' "artifacts": []}')
open(os.path.join(job, "output", "output.json"), "w").write(out)
`

// numbersResponder answers with numbers in its full report and operations (one with a tlp of 2.0).
const numbersResponder = `#!/usr/bin/env python3
import os, sys
job = sys.argv[1]
out = ('{"success": true, "full": {"one": 1.0, "max": 9223372036854775807, "nested": {"f": [2.50, 0.1]}},'
       ' "operations": [{"type": "AddArtifactToCase", "dataType": "other", "data": "from-responder", "tlp": 2.0,'
       ' "message": "n"}, {"type": "AddCustomFields", "name": "score", "tpe": "float", "value": 1.0}]}')
open(os.path.join(job, "output", "output.json"), "w").write(out)
`

func numbersFlavor(name, command string, dataTypes ...string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "version": "1.0", "author": "test", "url": "https://example.org",
		"license": "AGPL-V3", "description": name + " (test worker)", "dataTypeList": dataTypes, "command": command,
		"baseConfig": name, "configurationItems": []any{}})
	return string(b)
}

func writeWorker(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestRegressionReportNumbersAsWritten(t *testing.T) {
	python := false
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			python = true
		}
	}
	if !python {
		t.Skip("needs python3 in /usr/bin or /usr/local/bin (the workers' default PATH)")
	}
	root := t.TempDir()
	analyzers, responders := filepath.Join(root, "analyzers"), filepath.Join(root, "responders")
	writeWorker(t, filepath.Join(analyzers, "Numbers", "numbers.py"), numbersAnalyzer, 0o755)
	writeWorker(t, filepath.Join(analyzers, "Numbers", "Numbers.json"), numbersFlavor("Numbers", "Numbers/numbers.py", "ip"), 0o644)
	writeWorker(t, filepath.Join(responders, "NumResp", "numresp.py"), numbersResponder, 0o755)
	writeWorker(t, filepath.Join(responders, "NumResp", "NumResp.json"), numbersFlavor("NumResp", "NumResp/numresp.py", "thehive:case"), 0o644)
	as := startAnalysis(t, "127.0.0.1:0", "ANALYSIS_ANALYZER_PATHS="+analyzers, "ANALYSIS_RESPONDER_PATHS="+responders)
	analyzer := as.Enable("analyzer", "Numbers_1_0", map[string]any{})
	responder := as.Enable("responder", "NumResp_1_0", map[string]any{})

	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	caseID := tm.analyst.newCase(t, map[string]any{"tlp": 1, "pap": 2}).Str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"203.0.113.5"}})[0]

	j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
		map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": analyzer}).
		Want(t, http.StatusCreated).Object(t)
	eventually(t, "numbers job", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" || o["status"] == "Failure" })
	// The raw bytes, not a decoded value: a float64 would already have lost what this test checks.
	body := string(tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Body)
	for _, want := range []string{`"status":"Success"`, `"one":1.0`, `"max":9223372036854775807`,
		`"list":[0.1,2.50,{"deep":3.14159265358979323846}]`, `"value":1.0`,
		`"l":[0.1,2.50,{"deep":3.14159265358979323846}]`} {
		if !strings.Contains(body, want) {
			t.Errorf("the case-svc job lacks %s:\n%s", want, body)
		}
	}
	obs := string(tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+ip.Str(t, "id"), nil).Want(t, http.StatusOK).Body)
	for _, want := range []string{`"value":1.0`, `"max":9223372036854775807`, `"l":[0.1,2.50,{"deep":3.14159265358979323846}]`} {
		if !strings.Contains(obs, want) {
			t.Errorf("the observable's reports lack %s:\n%s", want, obs)
		}
	}

	act := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{
		"responderId": responder, "objectType": "case", "objectId": caseID, "analysisId": "local"}).
		Want(t, http.StatusCreated).Object(t)
	done := eventually(t, "numbers responder", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+act.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" || o["status"] == "Failure" })
	if done["status"] != "Success" {
		t.Fatalf("action %v", done)
	}
	// operations and report are JSON text in the action: their numbers are the responder's characters.
	ops, rep := done.Str(t, "operations"), done.Str(t, "report")
	for _, want := range []string{`"tlp":2.0`, `"value":1.0`} {
		if !strings.Contains(ops, want) {
			t.Errorf("the action's operations lack %s: %s", want, ops)
		}
	}
	for _, want := range []string{`"one":1.0`, `"max":9223372036854775807`, `"f":[2.50,0.1]`} {
		if !strings.Contains(rep, want) {
			t.Errorf("the action's report lacks %s: %s", want, rep)
		}
	}
	var opList []map[string]any
	if err := json.Unmarshal([]byte(ops), &opList); err != nil || len(opList) != 2 || opList[0]["status"] != "Success" {
		t.Fatalf("operations %s", ops)
	}
	// The artifact the responder added got its tlp from the json.Number 2.0.
	var found bool
	for _, o := range tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?range=all", nil).Want(t, http.StatusOK).List(t) {
		if o["data"] == "from-responder" {
			found = true
			if o["tlp"] != float64(2) {
				t.Errorf("responder's artifact tlp %v, want 2", o["tlp"])
			}
		}
	}
	if !found {
		t.Error("the responder's AddArtifactToCase added no observable")
	}
}
