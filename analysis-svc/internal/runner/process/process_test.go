package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// analyzers is a temporary analyzers root holding real programs, laid out like the public repository.
type analyzers struct {
	t    *testing.T
	root string
}

func newAnalyzers(t *testing.T) *analyzers {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &analyzers{t: t, root: root}
}

// add writes <root>/<name>/<name>.<ext> (executable) and returns its definition.
func (a *analyzers) add(kind analysis.Kind, name, script string) analysis.Definition {
	a.t.Helper()
	ext := "sh"
	if strings.HasPrefix(script, "#!/usr/bin/env python3") {
		ext = "py"
	}
	path := filepath.Join(a.root, name, name+"."+ext)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		a.t.Fatal(err)
	}
	return analysis.Definition{ID: name + "_1_0", Kind: kind, Name: name, Version: "1.0", Command: path}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, r *Runner, def analysis.Definition, in analysis.RunInput) (analysis.RunOutput, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run") // like the executor: a folder that does not exist yet
	out, err := r.Run(ctx, def, in, dir)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, dir
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether pid no longer runs (absent, or a zombie waiting for its reaper).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func requirePython(t *testing.T) {
	t.Helper()
	cmd := exec.Command("/usr/bin/env", "python3", "-c", "")
	cmd.Env = []string{"PATH=" + DefaultPath}
	if err := cmd.Run(); err != nil {
		t.Skipf("python3 is not on %s: %v", DefaultPath, err)
	}
}

const successAnalyzer = `#!/usr/bin/env python3
import json, os, sys, tempfile
job = sys.argv[1]
with open(os.path.join(job, "input", "input.json"), encoding="utf-8") as f:
    inp = json.load(f)
out = os.path.join(job, "output")
with tempfile.NamedTemporaryFile(dir=out, delete=False) as f:
    f.write(b"artifact content")
    name = os.path.basename(f.name)
os.chmod(os.path.join(out, name), 0o444)
report = {
    "success": True,
    "summary": {"taxonomies": [{"level": "info", "namespace": "Test", "predicate": "Data", "value": inp["data"]}]},
    "full": {"input": inp, "cwd": os.getcwd(), "argv": sys.argv[1:]},
    "artifacts": [
        {"dataType": "ip", "data": "8.8.8.8", "tags": ["dns"], "tlp": 1},
        {"dataType": "file", "file": name, "filename": "report.txt", "message": "the report"},
    ],
    "operations": [{"type": "AddTagToArtifact", "tag": "seen"}],
}
with open(os.path.join(out, "output.json"), "w", encoding="utf-8") as f:
    json.dump(report, f, ensure_ascii=False)
print("done, exiting with 3")
sys.exit(3)
`

func TestRunner_Run(t *testing.T) {
	requirePython(t)
	a := newAnalyzers(t)

	t.Run("analyzer success", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Success", successAnalyzer)
		in := analysis.RunInput{Data: "example.org", DataType: "domain", TLP: 2, PAP: 1, Message: "a<b>&c é",
			Parameters: map[string]any{"p": "v"}, Config: map[string]any{"service": "get", "max_tlp": 2.0}}
		out, dir := run(t, New(Options{}), def, in)
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		jobDir, _ := filepath.Abs(dir)
		if got := out.Full["cwd"]; got != a.root {
			t.Errorf("cwd = %v, want the analyzers root %s", got, a.root)
		}
		if got := out.Full["argv"]; !reflect.DeepEqual(got, []any{jobDir}) {
			t.Errorf("argv = %v, want [%s]", got, jobDir)
		}
		// Numbers come back as the worker wrote them (json.Number).
		wantInput := map[string]any{"data": "example.org", "dataType": "domain", "tlp": json.Number("2"),
			"pap": json.Number("1"), "message": "a<b>&c é", "parameters": map[string]any{"p": "v"},
			"config": map[string]any{"service": "get", "max_tlp": json.Number("2")}}
		if !reflect.DeepEqual(out.Full["input"], wantInput) {
			t.Errorf("input seen by the worker = %v, want %v", out.Full["input"], wantInput)
		}
		wantSummary := map[string]any{"taxonomies": []any{map[string]any{"level": "info", "namespace": "Test",
			"predicate": "Data", "value": "example.org"}}}
		if !reflect.DeepEqual(out.Summary, wantSummary) {
			t.Errorf("summary = %v", out.Summary)
		}
		if want := []map[string]any{{"type": "AddTagToArtifact", "tag": "seen"}}; !reflect.DeepEqual(out.Operations, want) {
			t.Errorf("operations = %v", out.Operations)
		}
		if len(out.Artifacts) != 2 {
			t.Fatalf("artifacts = %+v", out.Artifacts)
		}
		ip := out.Artifacts[0]
		if ip.DataType != "ip" || ip.Data != "8.8.8.8" || !slices.Equal(ip.Tags, []string{"dns"}) || ip.TLP == nil || *ip.TLP != 1 {
			t.Errorf("ip artifact = %+v", ip)
		}
		f := out.Artifacts[1]
		if f.DataType != "file" || f.Filename != "report.txt" || f.ContentType != "application/octet-stream" ||
			f.Message != "the report" || filepath.Dir(f.File) != filepath.Join(jobDir, "output") {
			t.Errorf("file artifact = %+v", f)
		}
		if b, err := os.ReadFile(f.File); err != nil || string(b) != "artifact content" {
			t.Errorf("file artifact content = %q, %v", b, err)
		}

		// input.json: compact, keys in the protocol's order, no HTML escaping
		raw, err := os.ReadFile(filepath.Join(dir, "input", "input.json"))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"data":"example.org","dataType":"domain","tlp":2,"pap":1,"message":"a<b>&c é","parameters":{"p":"v"},"config":{"max_tlp":2,"service":"get"}}`; string(raw) != want {
			t.Errorf("input.json =\n%s\nwant\n%s", raw, want)
		}
		for path, want := range map[string]os.FileMode{"input": 0o700 | os.ModeDir, "output": 0o700 | os.ModeDir,
			"input/input.json": 0o600, ".": 0o700 | os.ModeDir} {
			st, err := os.Stat(filepath.Join(dir, path))
			if err != nil || st.Mode() != want {
				t.Errorf("mode of %s = %v (%v), want %v", path, st.Mode(), err, want)
			}
		}
	})

	t.Run("file observable", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "FileInfo", `#!/usr/bin/env python3
import hashlib, json, os, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json"), encoding="utf-8"))
path = os.path.join(job, "input", inp["file"])
full = {"sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(), "file": inp["file"],
        "filename": inp["filename"], "contentType": inp["contentType"], "keys": list(inp.keys())}
json.dump({"success": True, "full": full}, open(os.path.join(job, "output", "output.json"), "w"))
`)
		content := []byte("hello file\n")
		src := filepath.Join(t.TempDir(), "observable")
		if err := os.WriteFile(src, content, 0o600); err != nil {
			t.Fatal(err)
		}
		out, dir := run(t, New(Options{}), def, analysis.RunInput{DataType: "file", File: src,
			Filename: "sample.txt", ContentType: "text/plain", TLP: 2, PAP: 2})
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		sum := sha256.Sum256(content)
		if out.Full["sha256"] != hex.EncodeToString(sum[:]) || out.Full["filename"] != "sample.txt" ||
			out.Full["contentType"] != "text/plain" {
			t.Errorf("full = %v", out.Full)
		}
		name, _ := out.Full["file"].(string)
		if !strings.HasPrefix(name, "attachment") || strings.Contains(name, "/") {
			t.Errorf("file = %q, want input/attachment<random>", name)
		}
		wantKeys := []any{"file", "filename", "contentType", "dataType", "tlp", "pap", "message", "parameters", "config"}
		if !reflect.DeepEqual(out.Full["keys"], wantKeys) {
			t.Errorf("input.json keys = %v, want %v", out.Full["keys"], wantKeys)
		}
		if st, err := os.Stat(filepath.Join(dir, "input", name)); err != nil || st.Mode() != 0o600 {
			t.Errorf("attachment mode = %v, %v", st.Mode(), err)
		}
		if out.Summary == nil || len(out.Summary) != 0 || out.Operations == nil || len(out.Operations) != 0 {
			t.Errorf("summary %v and operations %v should default to empty", out.Summary, out.Operations)
		}
	})

	t.Run("responder", func(t *testing.T) {
		def := a.add(analysis.KindResponder, "Echo", `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json"), encoding="utf-8"))
ops = [{"type": "AddTagToCase", "tag": "seen:" + inp["data"]["title"]},
       {"type": "CreateTask", "title": "check", "description": "from " + inp["dataType"]}]
json.dump({"success": True, "full": {"data": inp["data"]}, "operations": ops},
          open(os.path.join(job, "output", "output.json"), "w"))
`)
		data := map[string]any{"_id": "~42", "title": "Phishing", "tags": []any{"a"}}
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: data, DataType: "thehive:case", TLP: 2, PAP: 2})
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		if !reflect.DeepEqual(out.Full["data"], data) {
			t.Errorf("data = %v", out.Full["data"])
		}
		want := []map[string]any{{"type": "AddTagToCase", "tag": "seen:Phishing"},
			{"type": "CreateTask", "title": "check", "description": "from thehive:case"}}
		if !reflect.DeepEqual(out.Operations, want) {
			t.Errorf("operations = %v", out.Operations)
		}
		if out.Artifacts != nil {
			t.Errorf("artifacts = %v", out.Artifacts)
		}
	})

	t.Run("no output reports the console", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Crash", "#!/bin/sh\necho 'to stdout'\necho 'Traceback: to stderr' >&2\nexit 1\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || !strings.Contains(out.ErrorMessage, "to stdout") || !strings.Contains(out.ErrorMessage, "Traceback: to stderr") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("no output and silent", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Silent", "#!/bin/sh\nexit 0\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || out.ErrorMessage != "no output" {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("empty output.json", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Empty", "#!/bin/sh\necho 'nothing to say'\n: > \"$1/output/output.json\"\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || out.ErrorMessage != "nothing to say\n" {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("console tail is bounded", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Chatty", `#!/usr/bin/env python3
import sys
print("first-line")
for i in range(5000):
    print("x" * 60, i)
sys.stdout.flush()
print("last-line", file=sys.stderr)
`)
		out, _ := run(t, New(Options{TailSize: 4096}), def, analysis.RunInput{Data: "x", DataType: "other"})
		msg := out.ErrorMessage
		if out.Success || !strings.HasPrefix(msg, "…(truncated)\n") || !strings.HasSuffix(msg, "last-line\n") ||
			strings.Contains(msg, "first-line") || len(msg) > 4096+len("…(truncated)\n") {
			t.Errorf("message (%d bytes) = %.200q…", len(msg), msg)
		}
	})

	t.Run("invalid output.json", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Broken", "#!/bin/sh\nprintf '{\"success\": tru' > \"$1/output/output.json\"\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "invalid output.json: ") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("worker failure report", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Refuse", `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json")))
inp["config"]["api_key"] = "REMOVED"
json.dump({"success": False, "input": inp, "errorMessage": "TLP is higher than allowed."},
          open(os.path.join(job, "output", "output.json"), "w"))
sys.exit(1)
`)
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "1.2.3.4", DataType: "ip", TLP: 3,
			Config: map[string]any{"api_key": "s3cr3t"}})
		if out.Success || out.ErrorMessage != "TLP is higher than allowed." {
			t.Fatalf("out = %+v", out)
		}
		var in map[string]any
		if err := json.Unmarshal([]byte(out.Input), &in); err != nil || in["data"] != "1.2.3.4" ||
			strings.Contains(out.Input, "s3cr3t") {
			t.Errorf("input = %q (%v)", out.Input, err)
		}
	})

	t.Run("full must be an object", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Flat", "#!/bin/sh\necho '{\"success\": true, \"full\": \"text\"}' > \"$1/output/output.json\"\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || out.ErrorMessage != "invalid output.json: full must be an object" {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("python NaN is read as null", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Entropy", `#!/usr/bin/env python3
import json, os, sys
json.dump({"success": True, "full": {"entropy": float("nan"), "max": float("inf"), "text": "NaN Infinity"}},
          open(os.path.join(sys.argv[1], "output", "output.json"), "w"))
`)
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		want := map[string]any{"entropy": nil, "max": nil, "text": "NaN Infinity"}
		if !out.Success || !reflect.DeepEqual(out.Full, want) {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("output too large", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Big", `#!/usr/bin/env python3
import json, os, sys
json.dump({"success": True, "full": {"blob": "x" * 1000}}, open(os.path.join(sys.argv[1], "output", "output.json"), "w"))
`)
		out, _ := run(t, New(Options{MaxOutput: 100}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "output too large") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("output.json may not be a symlink", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "secret.json")
		if err := os.WriteFile(secret, []byte(`{"success": false, "errorMessage": "host secret"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		def := a.add(analysis.KindAnalyzer, "LinkOut", "#!/bin/sh\nln -s '"+secret+"' \"$1/output/output.json\"\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || strings.Contains(out.ErrorMessage, "host secret") || !strings.Contains(out.ErrorMessage, "not a regular file") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("output folder may not be replaced by a symlink", func(t *testing.T) {
		elsewhere := t.TempDir()
		if err := os.WriteFile(filepath.Join(elsewhere, "output.json"), []byte(`{"success": true, "full": {"from": "elsewhere"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		def := a.add(analysis.KindAnalyzer, "LinkDir", "#!/bin/sh\nrmdir \"$1/output\" && ln -s '"+elsewhere+"' \"$1/output\"\n")
		out, _ := run(t, New(Options{}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if out.Success || !strings.Contains(out.ErrorMessage, "output is not a folder") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("file artifacts must be directly in output", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Escape", `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
out = os.path.join(job, "output")
open(os.path.join(job, "x"), "w").write("outside output/")
open(os.path.join(out, "good.txt"), "w").write("good")
os.mkdir(os.path.join(out, "sub"))
open(os.path.join(out, "sub", "x.txt"), "w").write("nested")
os.symlink("/etc/passwd", os.path.join(out, "link"))
arts = [{"dataType": "file", "file": "../x", "filename": "x"},
        {"dataType": "file", "file": "sub/x.txt"},
        {"dataType": "file", "file": "link"},
        {"dataType": "file", "file": "sub"},
        {"dataType": "file", "file": "missing"},
        {"dataType": "file", "file": ".."},
        {"dataType": "file"},
        {"dataType": "file", "file": "good.txt", "contentType": "text/plain", "tags": ["t", 1]},
        {"dataType": "ip"},
        "not an object",
        {"data": "no type"},
        {"dataType": "domain", "data": "ok.example", "tlp": 7},
        {"dataType": "autonomous-system", "data": 15169}]
json.dump({"success": True, "full": {}, "artifacts": arts, "operations": [{"type": "CloseTask"}, "bad"]},
          open(os.path.join(out, "output.json"), "w"))
`)
		var logs syncBuffer
		r := New(Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
		out, dir := run(t, r, def, analysis.RunInput{Data: "x", DataType: "other"})
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		jobDir, _ := filepath.Abs(dir)
		want := []analysis.OutputArtifact{
			{DataType: "file", File: filepath.Join(jobDir, "output", "good.txt"), Filename: "good.txt",
				ContentType: "text/plain", Tags: []string{"t"}},
			{DataType: "domain", Data: "ok.example"},
			{DataType: "autonomous-system", Data: "15169"},
		}
		if !reflect.DeepEqual(out.Artifacts, want) {
			t.Errorf("artifacts =\n%+v\nwant\n%+v", out.Artifacts, want)
		}
		if want := []map[string]any{{"type": "CloseTask"}}; !reflect.DeepEqual(out.Operations, want) {
			t.Errorf("operations = %v", out.Operations)
		}
		if n := strings.Count(logs.String(), "worker artifact dropped"); n != 10 {
			t.Errorf("%d artifact warnings, want 10:\n%s", n, logs.String())
		}
		if !strings.Contains(logs.String(), "definition=Escape_1_0") {
			t.Errorf("warnings do not name the definition:\n%s", logs.String())
		}
	})

	t.Run("clean environment", func(t *testing.T) {
		t.Setenv("SECRET_TOKEN", "do-not-leak")
		t.Setenv("PASSTHRU", "from-service")
		def := a.add(analysis.KindAnalyzer, "Env", `#!/usr/bin/env python3
import json, os, sys
json.dump({"success": True, "full": {"env": dict(os.environ), "cwd": os.getcwd()}},
          open(os.path.join(sys.argv[1], "output", "output.json"), "w"))
`)
		r := New(Options{Env: []string{"EXTRA=1", "PASSTHRU", "UNSET_IN_SERVICE"}})
		conf := map[string]any{"proxy": map[string]any{"http": "http://proxy:3128"}, "proxy_https": "http://sproxy:3129",
			"cacerts": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
		out, dir := run(t, r, def, analysis.RunInput{Data: "x", DataType: "other", Config: conf})
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		jobDir, _ := filepath.Abs(dir)
		ca := filepath.Join(jobDir, "input", "cacerts")
		want := map[string]any{"PATH": DefaultPath, "HOME": jobDir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
			"PYTHONIOENCODING": "utf-8", "EXTRA": "1", "PASSTHRU": "from-service",
			"http_proxy": "http://proxy:3128", "HTTP_PROXY": "http://proxy:3128",
			"https_proxy": "http://sproxy:3129", "HTTPS_PROXY": "http://sproxy:3129", "REQUESTS_CA_BUNDLE": ca}
		if !reflect.DeepEqual(out.Full["env"], want) {
			t.Errorf("environment =\n%v\nwant\n%v", out.Full["env"], want)
		}
		for k := range out.Full["env"].(map[string]any) {
			if strings.HasPrefix(k, "SECRET_") {
				t.Errorf("the service's %s reached the worker", k)
			}
		}
		if out.Full["cwd"] != a.root {
			t.Errorf("cwd = %v, want %s", out.Full["cwd"], a.root)
		}
		if b, err := os.ReadFile(ca); err != nil || string(b) != conf["cacerts"] {
			t.Errorf("cacerts = %q, %v", b, err)
		}
	})

	t.Run("start errors", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "NotExec", "#!/bin/sh\nexit 0\n")
		if err := os.Chmod(def.Command, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if _, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x"}, filepath.Join(t.TempDir(), "run")); err == nil {
			t.Error("a non-executable command ran")
		}
		def.Command = filepath.Join(a.root, "Missing", "missing.py")
		if _, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x"}, filepath.Join(t.TempDir(), "run")); err == nil {
			t.Error("a missing command ran")
		}
		def.Command = "relative/cmd.sh"
		if _, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x"}, filepath.Join(t.TempDir(), "run")); err == nil {
			t.Error("a relative command ran")
		}
		if _, err := New(Options{}).Run(ctx, a.add(analysis.KindAnalyzer, "NoData", "#!/bin/sh\n"),
			analysis.RunInput{Data: map[string]any{}, DataType: "ip"}, filepath.Join(t.TempDir(), "run")); err == nil {
			t.Error("an analyzer ran with object data")
		}
	})
}

// sleeper starts a child, records its pid, says so and waits forever.
const sleeper = "#!/bin/sh\nsleep 300 &\necho $! > \"$1/child.pid\"\necho 'child started'\nwait\n"

func childPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatalf("child pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRunner_Run_kill(t *testing.T) {
	a := newAnalyzers(t)

	t.Run("timeout kills the process group", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Sleep", sleeper)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		dir := filepath.Join(t.TempDir(), "run")
		start := time.Now()
		out, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x", DataType: "other"}, dir)
		if err != nil {
			t.Fatal(err)
		}
		// A hang detector, not a speed check: the child sleeps 300 s, so a Run that waited for it takes minutes.
		if took := time.Since(start); took > 2*time.Minute {
			t.Errorf("Run took %s after a 3 s timeout: it waited for the child", took)
		}
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "The job timed out after 3") ||
			!strings.Contains(out.ErrorMessage, "killed") || !strings.HasSuffix(out.ErrorMessage, "child started\n") {
			t.Errorf("out = %+v", out)
		}
		pid := childPID(t, dir)
		waitFor(t, 5*time.Second, "the child to die", func() bool { return gone(pid) })
	})

	t.Run("cancellation kills the process group", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "SleepToo", sleeper)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		dir := filepath.Join(t.TempDir(), "run")
		go func() {
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				// The shell creates the file before echo writes the pid into it (one write): wait for the pid.
				if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil && strings.HasSuffix(string(b), "\n") {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		out, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x", DataType: "other"}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "The job was cancelled after ") {
			t.Errorf("out = %+v", out)
		}
		pid := childPID(t, dir)
		waitFor(t, 5*time.Second, "the child to die", func() bool { return gone(pid) })
	})

	t.Run("leftovers of a finished worker are killed", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Leaver", "#!/bin/sh\nsleep 300 &\necho $! > \"$1/child.pid\"\n"+
			"echo '{\"success\": true, \"full\": {}}' > \"$1/output/output.json\"\n")
		start := time.Now()
		out, dir := run(t, New(Options{KillWait: 10 * time.Minute}), def, analysis.RunInput{Data: "x", DataType: "other"})
		if !out.Success {
			t.Fatalf("out = %+v", out)
		}
		// A hang detector, not a speed check: waiting for the child (300 s) or for KillWait takes minutes.
		if took := time.Since(start); took > 2*time.Minute {
			t.Errorf("Run waited %s for the leftover child", took)
		}
		pid := childPID(t, dir)
		waitFor(t, 5*time.Second, "the child to die", func() bool { return gone(pid) })
	})

	t.Run("already cancelled", func(t *testing.T) {
		def := a.add(analysis.KindAnalyzer, "Never", "#!/bin/sh\ntouch \"$1/ran\"\n")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		dir := filepath.Join(t.TempDir(), "run")
		out, err := New(Options{}).Run(ctx, def, analysis.RunInput{Data: "x"}, dir)
		if err != nil || out.Success || !strings.Contains(out.ErrorMessage, "cancelled") {
			t.Errorf("out = %+v, %v", out, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the worker ran: %v", err)
		}
	})
}
