package api_test

// External workers through the whole service (issue 16): numbers kept as the worker and the client wrote
// them, the definition scan routes, and job folders opened to a daemon's group.

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/catalog"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
)

// externalEnv is a server whose catalog also reads analyzer and responder folders (as analyzer.paths and
// responder.paths), with the process runner.
type externalEnv struct {
	*env
	admin, analyst *client
}

func newExternalEnv(t *testing.T, analyzers, responders []string, popts process.Options, ropts runner.Options) *externalEnv {
	t.Helper()
	ropts.Process = process.New(popts)
	e := newEnv(t, withRunners(ropts))
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	e.catalog.SetScanner(catalog.Scanner(analyzers, responders, nil, log), log)
	e.catalog.Rescan(analysis.KindAnalyzer)
	e.catalog.Rescan(analysis.KindResponder)
	e.createOrg(t, "soc")
	return &externalEnv{env: e, admin: e.user(t, "soc-admin", "soc", roleOrgAdmin),
		analyst: e.user(t, "soc-analyst", "soc", roleAnalyze)}
}

// enable enables a definition (analyzer or responder) in the organization and returns the worker's id.
func (x *externalEnv) enable(t *testing.T, kind, definition string, configuration map[string]any) string {
	t.Helper()
	return x.admin.Call(t, http.MethodPost, "/api/organization/"+kind+"/"+definition,
		map[string]any{"name": definition, "configuration": configuration, "jobCache": 0}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
}

// runRaw submits a raw JSON body and returns the job id.
func (x *externalEnv) runRaw(t *testing.T, kind, worker, body string) string {
	t.Helper()
	return x.analyst.Raw(t, http.MethodPost, "/api/"+kind+"/"+worker+"/run", "application/json", body).
		Want(t, http.StatusOK).Object(t)["id"].(string)
}

// waitRaw long-polls a job until it finished and returns the last answer.
func (x *externalEnv) waitRaw(t *testing.T, id string) *resp {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := x.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/waitreport?atMost=10seconds", nil).Want(t, http.StatusOK)
		var j struct{ Status string }
		if err := json.Unmarshal(r.Body, &j); err != nil {
			t.Fatalf("waitreport: %v: %s", err, r.Body)
		}
		if j.Status != "Waiting" && j.Status != "InProgress" {
			return r
		}
	}
	t.Fatalf("job %s did not finish within 60 s", id)
	return nil
}

// writeFile writes a file, creating its folder.
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// flavor is a definition file of the public format.
func flavor(name, command string, dataTypes ...string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "version": "1.0", "author": "test", "url": "https://example.org",
		"license": "AGPL-V3", "description": name + " (test worker)", "dataTypeList": dataTypes, "command": command,
		"baseConfig": name, "configurationItems": []any{}})
	return string(b)
}

func needPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	t.Skip("needs python3 in /usr/bin or /usr/local/bin (the workers' default PATH)")
	return ""
}

// numbersWorker writes its output.json as literal text: the numbers are exactly these characters. It also
// returns the job's parameters as Python read them.
const numbersWorker = `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
with open(os.path.join(job, "input", "input.json")) as f:
    params = json.load(f)["parameters"]
out = ('{"success": true,'
       ' "summary": {"taxonomies": [{"level": "info", "namespace": "Num", "predicate": "one", "value": 1.0}]},'
       ' "full": {"one": 1.0, "max": 9223372036854775807, "min": -9223372036854775808, "big": 123456789012345678901234567890,'
       ' "nested": {"list": [0.1, 2.50, -0.0, 1e-7, 1E+400, {"deep": 3.14159265358979323846}]}, "params": ' + json.dumps(params) + '},'
       ' "operations": [{"type": "AddCustomFields", "name": "score", "tpe": "float", "value": 1.0}],'
       ' "artifacts": [{"dataType": "other", "data": 12345678901234567890, "tlp": 1.0, "message": "n"}]}')
with open(os.path.join(job, "output", "output.json"), "w") as f:
    f.write(out)
`

// TestExternal_NumbersAsWritten: a report and a job's inputs come back with their numbers as written, in
// the raw bytes of the HTTP answers (report, job, artifacts) and after a restart-free re-read from the store.
func TestExternal_NumbersAsWritten(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Numbers", "numbers.py"), numbersWorker, 0o755)
	writeFile(t, filepath.Join(root, "Numbers", "Numbers.json"), flavor("Numbers", "Numbers/numbers.py", "other"), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	w := x.enable(t, "analyzer", "Numbers_1_0", nil)

	id := x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"n","parameters":{"f":1.0,"max":9223372036854775807,"nested":{"l":[0.5,2.50]}}}`)
	r := x.waitRaw(t, id)
	body := string(r.Body) // not decoded: 1E+400 is no float64, and the bytes are what this test checks
	if !strings.Contains(body, `"status":"Success"`) {
		t.Fatalf("job: %s", body)
	}
	for _, want := range []string{
		`"value":1.0`, `"one":1.0`, `"max":9223372036854775807`, `"min":-9223372036854775808`,
		`"big":123456789012345678901234567890`, `[0.1,2.50,-0.0,1e-7,1E+400,{"deep":3.14159265358979323846}]`,
		`{"name":"score","tpe":"float","type":"AddCustomFields","value":1.0}`, // keys sorted; values as written
		`"data":"12345678901234567890"`, `"tlp":1,`,                           // artifact data is a string; tlp a level
		// The parameters as Python read and wrote them back, and as the job stores them (a JSON string).
		`"params":{"f":1.0,"max":9223372036854775807,"nested":{"l":[0.5,2.5]}}`,
		`"parameters":"{\"f\":1.0,\"max\":9223372036854775807,\"nested\":{\"l\":[0.5,2.50]}}"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the waitreport body lacks %s:\n%s", want, body)
		}
	}
	for _, path := range []string{"/api/job/" + id + "/report", "/api/job/" + id} {
		b := string(x.analyst.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK).Body)
		for _, want := range []string{`9223372036854775807`, `1.0`} {
			if !strings.Contains(b, want) {
				t.Errorf("GET %s lacks %s:\n%s", path, want, b)
			}
		}
	}

	// A responder's data object (a case) keeps its numbers too, on the way to the worker and back.
	writeFile(t, filepath.Join(root, "..", "responders", "Echo", "echo.py"), `#!/usr/bin/env python3
import os, sys
job = sys.argv[1]
raw = open(os.path.join(job, "input", "input.json")).read()
open(os.path.join(job, "output", "output.json"), "w").write('{"success": true, "full": {"input": ' + raw + '}, "operations": []}')
`, 0o755)
	respRoot := filepath.Join(root, "..", "responders")
	writeFile(t, filepath.Join(respRoot, "Echo", "Echo.json"), flavor("EchoResp", "Echo/echo.py", "thehive:case"), 0o644)
	x2 := newExternalEnv(t, nil, []string{respRoot}, process.Options{}, runner.Options{})
	rw := x2.enable(t, "responder", "EchoResp_1_0", nil)
	rid := x2.runRaw(t, "responder", rw, `{"dataType":"thehive:case","data":{"caseId":9007199254740993,"score":2.0}}`)
	rb := string(x2.waitRaw(t, rid).Body)
	if !strings.Contains(rb, `"data":{"caseId":9007199254740993,"score":2.0}`) ||
		strings.Count(rb, `9007199254740993`) < 2 { // the job's data and the input the worker saw
		t.Errorf("responder data numbers changed:\n%s", rb)
	}
}

// TestExternal_Scan: POST /api/analyzerdefinition/scan re-reads analyzer.paths and swaps the catalog,
// answering what was added, changed, removed and refused; a path that yields nothing is a warning in the
// answer, the log and (without its path) /api/status.
func TestExternal_Scan(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "analyzers")
	tooHigh := base // one level too high: <base>/analyzers/<Name>/<flavor>.json
	writeFile(t, filepath.Join(root, "Keep", "keep.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "Keep", "Keep.json"), flavor("Keep", "Keep/keep.sh", "ip"), 0o644)
	writeFile(t, filepath.Join(root, "Change", "Change.json"), flavor("Change", "Keep/keep.sh", "ip"), 0o644)
	writeFile(t, filepath.Join(root, "Gone", "Gone.json"), flavor("Gone", "Keep/keep.sh", "ip"), 0o644)
	x := newExternalEnv(t, []string{root, tooHigh}, nil, process.Options{}, runner.Options{})
	super := x.super

	status := x.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK)
	if !strings.Contains(string(status.Body), "analyzer.paths[1] yields no definition") || strings.Contains(string(status.Body), base) {
		t.Errorf("status warnings (without paths): %s", status.Body)
	}

	// New, changed, removed and broken definition files.
	writeFile(t, filepath.Join(root, "New", "New.json"), flavor("New", "Keep/keep.sh", "domain"), 0o644)
	writeFile(t, filepath.Join(root, "Change", "Change.json"), flavor("Change", "Keep/keep.sh", "ip", "domain"), 0o644)
	if err := os.RemoveAll(filepath.Join(root, "Gone")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "Broken", "Broken.json"), `{"name": "Broken",`, 0o644)
	writeFile(t, filepath.Join(root, "Escape", "Escape.json"), flavor("Escape", "../../bin/sh", "ip"), 0o644)

	var rep struct {
		Type                    string
		Added, Changed, Removed []string
		Unchanged               int
		Refused                 []struct{ File, Definition, Reason string }
		Warnings                []string
		Definitions             int
	}
	super.Call(t, http.MethodPost, "/api/analyzerdefinition/scan", nil).Want(t, http.StatusOK).Decode(t, &rep)
	if rep.Type != "analyzer" || !slices.Equal(rep.Added, []string{"New_1_0"}) || !slices.Equal(rep.Changed, []string{"Change_1_0"}) ||
		!slices.Equal(rep.Removed, []string{"Gone_1_0"}) || rep.Unchanged != 1 {
		t.Errorf("scan = %+v", rep)
	}
	refused := map[string]string{}
	for _, r := range rep.Refused {
		refused[r.File] = r.Reason
	}
	// Files are named relative to their configured path (analyzer.paths[0] is root): no server path.
	if !strings.Contains(refused["analyzer.paths[0]/Broken/Broken.json"], "invalid JSON") ||
		!strings.Contains(refused["analyzer.paths[0]/Escape/Escape.json"], "outside the analyzers root") {
		t.Errorf("refused = %+v", rep.Refused)
	}
	// The path is named by its entry, and the hint relative to it.
	if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "analyzer.paths[1]: ") || strings.Contains(rep.Warnings[0], base) ||
		!strings.Contains(rep.Warnings[0], "one level deeper") || !strings.Contains(rep.Warnings[0], "configure analyzer.paths[1]/analyzers") {
		t.Errorf("warnings = %v", rep.Warnings)
	}
	// One warning line per refused file, naming it and the reason; one per path without definitions.
	logs := strings.Split(x.logs.String(), "\n")
	for file, why := range map[string]string{filepath.Join(root, "Broken", "Broken.json"): "invalid JSON",
		filepath.Join(root, "Escape", "Escape.json"): "outside the analyzers root",
		tooHigh: "one level deeper"} {
		if !slices.ContainsFunc(logs, func(l string) bool {
			return strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, `"`+file+`"`) && strings.Contains(l, why)
		}) {
			t.Errorf("no warning in the log names %s and %q:\n%s", file, why, x.logs.String())
		}
	}
	ids := x.admin.Call(t, http.MethodGet, "/api/analyzerdefinition", nil).Want(t, http.StatusOK).IDs(t)
	if !slices.Contains(ids, "New_1_0") || slices.Contains(ids, "Gone_1_0") || !slices.Contains(ids, "Test_Echo_1_0") {
		t.Errorf("definitions after the scan: %v", ids)
	}
	// The orgadmin may scan too (as in the reference); a scan that changes nothing says so.
	x.admin.Call(t, http.MethodPost, "/api/analyzerdefinition/scan", nil).Want(t, http.StatusOK).Decode(t, &rep)
	if len(rep.Added)+len(rep.Changed)+len(rep.Removed) != 0 || rep.Unchanged != 3 {
		t.Errorf("second scan = %+v", rep)
	}
	x.analyst.Call(t, http.MethodPost, "/api/analyzerdefinition/scan", nil).Want(t, http.StatusForbidden)
	// The responder route scans responder.paths (none here): no change, no warning.
	super.Call(t, http.MethodPost, "/api/responderdefinition/scan", nil).Want(t, http.StatusOK).Decode(t, &rep)
	if rep.Type != "responder" || len(rep.Warnings) != 0 {
		t.Errorf("responder scan = %+v", rep)
	}
}

// TestExternal_FolderGroup: with job.directory_group a daemon's user (in that group) reads the observable
// the worker hands it, another user cannot: the worker asks setpriv to read the file as each.
func TestExternal_FolderGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the worker reads the observable as two other uids")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	// The parent of job folders must be traversable, as /tmp is.
	jobs := t.TempDir()
	for p := jobs; p != "/"; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(p, st.Mode().Perm()|0o011)
		}
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Daemon", "daemon.sh"), `#!/bin/sh
# Reads the observable as clamd would: as another user (61001, in group 61000) and as an outsider (61002).
f=$(ls "$1"/input/attachment*)
member=denied; outsider=denied
setpriv --reuid=61001 --regid=61000 --clear-groups cat "$f" >/dev/null 2>&1 && member=read
setpriv --reuid=61002 --regid=61003 --clear-groups cat "$f" >/dev/null 2>&1 && outsider=read
printf '{"success": true, "summary": {}, "full": {"member": "%s", "outsider": "%s"}}' "$member" "$outsider" > "$1/output/output.json"
`, 0o755)
	writeFile(t, filepath.Join(root, "Daemon", "Daemon.json"), flavor("Daemon", "Daemon/daemon.sh", "file"), 0o644)
	access, err := jobdir.ParseFolderAccess("61000", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		access         jobdir.FolderAccess
		member, others string
	}{{"job.directory_group 61000", access, "read", "denied"}, {"default", jobdir.FolderAccess{}, "denied", "denied"}} {
		t.Run(c.name, func(t *testing.T) {
			x := newExternalEnv(t, []string{root}, nil, process.Options{Access: c.access},
				runner.Options{Dir: jobs, Access: c.access})
			w := x.enable(t, "analyzer", "Daemon_1_0", nil)
			id := multipartRun(t, x.analyst, "/api/analyzer/"+w+"/run", "attachment", "sample.bin", []byte("sample"),
				`{"dataType":"file"}`).Want(t, http.StatusOK).Object(t)["id"].(string)
			j := x.waitRaw(t, id).Object(t)
			full, _ := j["report"].(map[string]any)["full"].(map[string]any)
			if full["member"] != c.member || full["outsider"] != c.others {
				t.Errorf("report %v: want member %s, outsider %s", j["report"], c.member, c.others)
			}
		})
	}
}

// TestExternal_ConfigNumbersAsWritten (issue 30): numbers in a definition (defaults 0.0 and 90.0, as
// StopForumSpam ships them, and its fixed config) and in a worker's configuration keep their form: served,
// stored and written to input.json as written.
func TestExternal_ConfigNumbersAsWritten(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "SFS", "sfs.py"), `#!/usr/bin/env python3
import os, sys
job = sys.argv[1]
raw = open(os.path.join(job, "input", "input.json")).read()
open(os.path.join(job, "output", "output.json"), "w").write('{"success": true, "summary": {}, "full": {"input": ' + raw + '}}')
`, 0o755)
	writeFile(t, filepath.Join(root, "SFS", "SFS.json"), `{"name": "SFS", "version": "1.0", "author": "test",
 "url": "https://example.org", "license": "AGPL-V3", "description": "numbers", "dataTypeList": ["ip"],
 "command": "SFS/sfs.py", "baseConfig": "SFS", "config": {"service": "get", "weight": 2.50},
 "configurationItems": [
  {"name": "suspicious_confidence_level", "description": "s", "type": "number", "multi": false, "required": false, "defaultValue": 0.0},
  {"name": "malicious_confidence_level", "description": "m", "type": "number", "multi": false, "required": false, "defaultValue": 90.0},
  {"name": "levels", "description": "l", "type": "number", "multi": true, "required": false}]}`, 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})

	defs := string(x.admin.Call(t, http.MethodGet, "/api/analyzerdefinition", nil).Want(t, http.StatusOK).Body)
	for _, want := range []string{`"defaultValue":0.0`, `"defaultValue":90.0`} {
		if !strings.Contains(defs, want) {
			t.Errorf("definitions lack %s:\n%s", want, defs)
		}
	}
	r := x.admin.Raw(t, http.MethodPost, "/api/organization/analyzer/SFS_1_0", "application/json",
		`{"name":"SFS_1_0","jobCache":0,"configuration":{"malicious_confidence_level":1.0,"levels":[1.0,2.50,3],"max_tlp":3.0}}`).
		Want(t, http.StatusCreated)
	w := r.Object(t)["id"].(string)
	conf := []string{`"malicious_confidence_level":1.0`, `"suspicious_confidence_level":0.0`, `"levels":[1.0,2.50,3]`, `"max_tlp":3.0`}
	for name, b := range map[string]string{"enable": string(r.Body),
		"get": string(x.admin.Call(t, http.MethodGet, "/api/analyzer/"+w, nil).Want(t, http.StatusOK).Body)} {
		for _, want := range conf {
			if !strings.Contains(b, want) {
				t.Errorf("%s: lacks %s:\n%s", name, want, b)
			}
		}
	}
	id := x.runRaw(t, "analyzer", w, `{"dataType":"ip","data":"10.0.0.1"}`)
	body := string(x.waitRaw(t, id).Body)
	for _, want := range append(conf, `"weight":2.50`) { // input.json, as the worker read its bytes
		if !strings.Contains(body, want) {
			t.Errorf("input.json lacks %s:\n%s", want, body)
		}
	}
	b := string(x.admin.Raw(t, http.MethodPatch, "/api/analyzer/"+w, "application/json",
		`{"configuration":{"malicious_confidence_level":75.50}}`).Want(t, http.StatusOK).Body)
	if !strings.Contains(b, `"malicious_confidence_level":75.50`) || !strings.Contains(b, `"suspicious_confidence_level":0.0`) {
		t.Errorf("update: %s", b)
	}
	// Not a number, or one no float64 holds, is refused.
	x.admin.Raw(t, http.MethodPatch, "/api/analyzer/"+w, "application/json", `{"configuration":{"levels":[1e400]}}`).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
}
