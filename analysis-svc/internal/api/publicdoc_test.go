package api_test

// TestPublicAnalyzersDoc follows docs/analyzers.md ("Running the public analyzers") as written: it runs the
// page's setup block with sh and reads its configuration block, with /opt/openir replaced by a temporary
// folder, writes a few offline workers of its own in the public format (a stand-in for cortexutils on
// PYTHONPATH, an analyzer with the `#!/usr/bin/env python` line, a responder) and runs them through the
// service. No public code is copied.

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
)

const docPrefix = "/opt/openir"

// docBlock returns the fenced block that follows the marker `<!-- tested: name -->` in the page.
func docBlock(t *testing.T, page, name string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, "<!-- tested: "+name+" -->")
	if !ok {
		t.Fatalf("docs/analyzers.md has no block marked %q", name)
	}
	_, after, _ = strings.Cut(after, "```")
	_, body, _ := strings.Cut(after, "\n") // past the info string
	body, _, ok = strings.Cut(body, "```")
	if !ok {
		t.Fatalf("block %q is not closed", name)
	}
	return body
}

// docConfig reads the page's YAML block: nested keys by indentation, scalars and [a, b] lists (all it uses).
func docConfig(t *testing.T, block string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var stack []string // keys of the enclosing levels, two spaces each
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || depth > len(stack) {
			t.Fatalf("config line %q", line)
		}
		stack = append(stack[:depth], key)
		val = strings.TrimSpace(val)
		if val == "" {
			continue
		}
		full := strings.Join(stack, ".")
		if strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
			for _, v := range strings.Split(strings.Trim(val, "[]"), ",") {
				out[full] = append(out[full], strings.TrimSpace(v))
			}
		} else {
			out[full] = []string{val}
		}
	}
	return out
}

// The workers. cortexutils stand-in: the same module layout and protocol as the real library, a fraction of
// its API, written for this test.
var docWorkers = map[string]string{
	"pylib/cortexutils/__init__.py": "",
	"pylib/cortexutils/worker.py": `import json, os, sys

class Worker:
    def __init__(self, job_directory=None):
        self.job_directory = job_directory or (sys.argv[1] if len(sys.argv) > 1 else "/job")
        with open(os.path.join(self.job_directory, "input", "input.json"), encoding="utf-8") as f:
            self._input = json.load(f)
        self.data_type = self.get_param("dataType", None, "Missing dataType field")

    def get_param(self, name, default=None, message=None):
        value = self._input
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            if message:
                self.error(message)
            return default
        return value

    def get_data(self):
        return self.get_param("data", None, "Missing data field")

    def _write(self, doc):
        out = os.path.join(self.job_directory, "output")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "output.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)

    def error(self, message):
        self._write({"success": False, "errorMessage": message, "input": self._input})
        sys.exit(1)
`,
	"pylib/cortexutils/analyzer.py": `import os
from cortexutils.worker import Worker

class Analyzer(Worker):
    def get_param(self, name, default=None, message=None):
        value = Worker.get_param(self, name, default, message)
        if name == "file" and value:
            return os.path.join(self.job_directory, "input", value)
        return value

    def build_taxonomy(self, level, namespace, predicate, value):
        return {"level": level, "namespace": namespace, "predicate": predicate, "value": value}

    def summary(self, raw):
        return {}

    def artifacts(self, raw):
        return []

    def operations(self, raw):
        return []

    def report(self, full):
        self._write({"success": True, "summary": self.summary(full), "artifacts": self.artifacts(full),
                     "operations": self.operations(full), "full": full})
`,
	"pylib/cortexutils/responder.py": `from cortexutils.worker import Worker

class Responder(Worker):
    def operations(self, raw):
        return []

    def build_operation(self, op_type, **parameters):
        return dict(parameters, type=op_type)

    def report(self, full):
        self._write({"success": True, "full": full, "operations": self.operations(full)})
`,
	// An analyzer using the library: counts letters of a value, or bytes of a file.
	"analyzers/Letters/letters.py": `#!/usr/bin/env python3
from cortexutils.analyzer import Analyzer

class Letters(Analyzer):
    def run(self):
        if self.data_type == "file":
            with open(self.get_param("file", None, "Missing file"), "rb") as f:
                self.report({"bytes": len(f.read()), "name": self.get_param("filename")})
        else:
            data = self.get_data()
            self.report({"letters": sum(c.isalpha() for c in data), "value": data})

    def summary(self, raw):
        n = raw.get("letters", raw.get("bytes"))
        return {"taxonomies": [self.build_taxonomy("info", "Letters", "count", n)]}

    def artifacts(self, raw):
        return [{"dataType": "domain", "data": "example.org", "tags": ["letters"]}]

if __name__ == "__main__":
    Letters().run()
`,
	"analyzers/Letters/Letters.json": `{"name": "Letters", "version": "1.0", "author": "test", "url": "https://example.org",
  "license": "AGPL-V3", "description": "Counts letters (test worker)", "dataTypeList": ["other", "file"],
  "command": "Letters/letters.py", "baseConfig": "Letters", "config": {"service": "count"},
  "configurationItems": []}`,
	// The shebang problem: "env python", resolved by the python link of job.process.path.
	"analyzers/OldStyle/old.py": `#!/usr/bin/env python
import sys
from cortexutils.analyzer import Analyzer

class Old(Analyzer):
    def run(self):
        self.report({"python": sys.version_info[0], "value": self.get_data()})

if __name__ == "__main__":
    Old().run()
`,
	"analyzers/OldStyle/OldStyle.json": `{"name": "OldStyle", "version": "2.0", "author": "test", "url": "https://example.org",
  "license": "AGPL-V3", "description": "A worker with an env python line (test worker)", "dataTypeList": ["other"],
  "command": "OldStyle/old.py", "baseConfig": "OldStyle"}`,
	// A responder: its side effect would be here; it returns an operation for the case service.
	"responders/Note/note.py": `#!/usr/bin/env python3
from cortexutils.responder import Responder

class Note(Responder):
    def run(self):
        case = self.get_data()
        self.report({"message": "noted " + case.get("title", "")})

    def operations(self, raw):
        return [self.build_operation("AddTagToCase", tag="noted")]

if __name__ == "__main__":
    Note().run()
`,
	"responders/Note/Note.json": `{"name": "Note", "version": "1.0", "author": "test", "url": "https://example.org",
  "license": "AGPL-V3", "description": "Notes a case (test worker)", "dataTypeList": ["thehive:case"],
  "command": "Note/note.py", "baseConfig": "Note"}`,
}

func TestPublicAnalyzersDoc(t *testing.T) {
	needPython(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the page links /usr/bin/python3")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "analyzers.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	base := t.TempDir()
	local := func(s string) string { return strings.ReplaceAll(s, docPrefix, base) }

	// Step 3: the page's shell block, then our workers where the page copies the public ones.
	setup := local(docBlock(t, page, "setup"))
	if out, err := exec.Command("sh", "-e", "-c", setup).CombinedOutput(); err != nil {
		t.Fatalf("setup block:\n%s\n%v: %s", setup, err, out)
	}
	for name, content := range docWorkers {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".py") && strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		writeFile(t, filepath.Join(base, name), content, mode)
	}

	// Step 4: the page's configuration.
	conf := docConfig(t, local(docBlock(t, page, "config")))
	for _, k := range []string{"analyzer.paths", "responder.paths", "job.process.path", "job.process.env"} {
		if len(conf[k]) == 0 {
			t.Fatalf("the configuration block has no %s: %v", k, conf)
		}
	}
	if strings.Join(conf["job.runner"], ",") != "process" {
		t.Fatalf("job.runner = %v", conf["job.runner"])
	}
	start := func(t *testing.T, path string) *externalEnv {
		return newExternalEnv(t, conf["analyzer.paths"], conf["responder.paths"],
			process.Options{Path: path, Env: conf["job.process.env"]}, runner.Options{})
	}
	x := start(t, conf["job.process.path"][0])

	// Step 5: the scan finds the three workers, refuses nothing and warns of nothing.
	for kind, want := range map[string]int{"analyzer": 2, "responder": 1} {
		var rep struct {
			Unchanged int
			Refused   []any
			Warnings  []string
		}
		x.admin.Call(t, http.MethodPost, "/api/"+kind+"definition/scan", nil).Want(t, http.StatusOK).Decode(t, &rep)
		if rep.Unchanged != want || len(rep.Refused) != 0 || len(rep.Warnings) != 0 {
			t.Errorf("%s scan: %+v", kind, rep)
		}
	}

	report := func(t *testing.T, x *externalEnv, id string) map[string]any {
		t.Helper()
		var j struct {
			Status string
			Report map[string]any
		}
		if err := json.Unmarshal(x.waitRaw(t, id).Body, &j); err != nil {
			t.Fatal(err)
		}
		return j.Report
	}
	letters := x.enable(t, "analyzer", "Letters_1_0", nil)
	t.Run("analyzer with the cortexutils stand-in on PYTHONPATH", func(t *testing.T) {
		r := report(t, x, x.runRaw(t, "analyzer", letters, `{"dataType":"other","data":"a1b2c"}`))
		full, _ := r["full"].(map[string]any)
		tax := r["summary"].(map[string]any)["taxonomies"].([]any)[0].(map[string]any)
		arts, _ := r["artifacts"].([]any)
		if r["success"] != true || full["letters"] != 3.0 || tax["value"] != 3.0 || len(arts) != 1 {
			t.Errorf("report %v", r)
		}
	})
	t.Run("file observable", func(t *testing.T) {
		id := multipartRun(t, x.analyst, "/api/analyzer/"+letters+"/run", "attachment", "sample.txt", []byte("0123456789"),
			`{"dataType":"file"}`).Want(t, http.StatusOK).Object(t)["id"].(string)
		r := report(t, x, id)
		if full, _ := r["full"].(map[string]any); r["success"] != true || full["bytes"] != 10.0 || full["name"] != "sample.txt" {
			t.Errorf("report %v", r)
		}
	})
	t.Run("env python shebang through the python link", func(t *testing.T) {
		w := x.enable(t, "analyzer", "OldStyle_2_0", nil)
		r := report(t, x, x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"x"}`))
		if full, _ := r["full"].(map[string]any); r["success"] != true || full["python"] != 3.0 {
			t.Errorf("report %v", r)
		}
	})
	t.Run("responder operations", func(t *testing.T) {
		w := x.enable(t, "responder", "Note_1_0", nil)
		r := report(t, x, x.runRaw(t, "responder", w, `{"dataType":"thehive:case","data":{"title":"Phish"}}`))
		ops, _ := r["operations"].([]any)
		if r["success"] != true || len(ops) != 1 || ops[0].(map[string]any)["type"] != "AddTagToCase" ||
			r["full"].(map[string]any)["message"] != "noted Phish" {
			t.Errorf("report %v", r)
		}
	})
	t.Run("without the python link the env python worker fails as the page says", func(t *testing.T) {
		y := start(t, process.DefaultPath) // job.process.path left at its default
		w := y.enable(t, "analyzer", "OldStyle_2_0", nil)
		r := report(t, y, y.runRaw(t, "analyzer", w, `{"dataType":"other","data":"x"}`))
		const quoted = "/usr/bin/env: ‘python’: No such file or directory" // coreutils' quotes in a UTF-8 locale
		if msg, _ := r["errorMessage"].(string); r["success"] != false || !strings.Contains(msg, quoted) {
			t.Errorf("report %v", r)
		}
		if !strings.Contains(page, quoted) {
			t.Error("the page does not quote the error as workers see it")
		}
	})
}
