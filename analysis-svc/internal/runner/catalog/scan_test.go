package catalog

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func TestScan(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo", "analyzers") // the analyzers root
	write(t, filepath.Join(root, "Good", "good.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "Good", "Good.json"), def("Good", `, "command": "Good/good.sh"`), 0o644)
	write(t, filepath.Join(root, "Good", "Docker.json"), def("Docker", `, "dockerImage": "img:1"`), 0o644)
	write(t, filepath.Join(root, "Bad", "bad.json"), `{"name": `, 0o644)
	write(t, filepath.Join(root, "Bad", "noauthor.json"), `{"name": "NoAuthor", "version": "1", "url": "u", "license": "l", "description": "d", "command": "Good/good.sh"}`, 0o644)
	write(t, filepath.Join(root, "Bad", "escape.json"), def("Escape", `, "command": "../../x.sh"`), 0o644)
	write(t, filepath.Join(root, "Zdup", "good.json"), def("Good", `, "command": "Good/good.sh"`), 0o644)
	onlyBad := filepath.Join(base, "onlybad")
	write(t, filepath.Join(onlyBad, "B", "b.json"), `[]x`, 0o644)

	noDocker := func(d analysis.Definition) string {
		if d.Command == "" {
			return "docker definitions need the docker runner (job.runner)"
		}
		return ""
	}
	var logs bytes.Buffer
	paths := []string{
		root,                                 // fine
		filepath.Join(base, "repo"),          // one level too high
		filepath.Join(root, "Good"),          // a worker folder, one level too low
		filepath.Join(base, "nope"),          // missing
		onlyBad,                              // everything refused
		"https://catalogs.example/a.json",    // not fetched
		filepath.Join(root, "Good", "x.txt"), // missing file
	}
	res := Scan("analyzer.paths", paths, analysis.KindAnalyzer, noDocker, slog.New(slog.NewTextHandler(&logs, nil)))

	if got := ids(res.Definitions); strings.Join(got, ",") != "Good_1_0" {
		t.Errorf("definitions = %v", got)
	}
	if d := res.Definitions[0]; d.Source != filepath.Join(root, "Good", "Good.json") {
		t.Errorf("source = %q", d.Source)
	}
	wantRefused := map[string]string{ // file → a piece of the reason
		filepath.Join(root, "Bad", "bad.json"):      "invalid JSON",
		filepath.Join(root, "Bad", "noauthor.json"): "missing author",
		filepath.Join(root, "Bad", "escape.json"):   "outside the analyzers root",
		filepath.Join(root, "Zdup", "good.json"):    "duplicate id",
		filepath.Join(root, "Good", "Docker.json"):  "docker runner",
		filepath.Join(onlyBad, "B", "b.json"):       "invalid JSON",
	}
	for file, why := range wantRefused {
		// The answer names files relative to their configured path (issue 28: no server paths for org-admins).
		answered := strings.Replace(strings.Replace(file, root, "analyzer.paths[0]", 1), onlyBad, "analyzer.paths[4]", 1)
		found := false
		for _, r := range res.Refused {
			if r.File == answered && strings.Contains(r.Reason, why) {
				found = true
			}
			if strings.Contains(r.File, base) || strings.Contains(r.Reason, base) {
				t.Errorf("a refusal names a server path: %+v", r)
			}
		}
		if !found {
			t.Errorf("no refusal of %s (%s) in %+v", file, why, res.Refused)
		}
		if !strings.Contains(logs.String(), file) {
			t.Errorf("no log line names %s", file)
		}
	}
	wantWarn := map[int]string{
		1: "one level deeper (analyzers/Bad/bad.json): configure analyzer.paths[1]/analyzers",
		2: "it is a worker folder; configure the analyzers root above it, analyzer.paths[2]/..",
		3: "does not exist",
		4: "every definition under it was refused",
		5: "not fetched",
		6: "does not exist",
	}
	if len(res.Warnings) != len(wantWarn) {
		t.Errorf("warnings = %+v", res.Warnings)
	}
	for _, w := range res.Warnings {
		if want, ok := wantWarn[w.Index]; !ok || !strings.Contains(w.Message, want) || w.Path != paths[w.Index] ||
			w.Setting != "analyzer.paths" {
			t.Errorf("warning %+v, want %q", w, want)
		}
		if strings.Contains(w.Public(), w.Path) {
			t.Errorf("the public warning shows the path: %s", w.Public())
		}
		if strings.Contains(w.Message, base) || strings.Contains(w.String(), base) {
			t.Errorf("the warning names a server path: %s", w.String())
		}
	}
}

// A responders path gets the hints of responders: the responders root, not the analyzers one.
func TestScan_responderHints(t *testing.T) {
	root := filepath.Join(t.TempDir(), "responders")
	write(t, filepath.Join(root, "Mailer", "mailer.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "Mailer", "Mailer.json"), def("Mailer", `, "command": "Mailer/mailer.sh"`), 0o644)
	write(t, filepath.Join(root, "Bad", "escape.json"), def("Escape", `, "command": "../../x.sh"`), 0o644)
	res := Scan("responder.paths", []string{filepath.Join(root, "Mailer"), root}, analysis.KindResponder, nil,
		slog.New(slog.DiscardHandler))
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Message, "configure the responders root above it, responder.paths[0]/..") {
		t.Errorf("warnings %+v", res.Warnings)
	}
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Reason, "outside the responders root") {
		t.Errorf("refused %+v", res.Refused)
	}
}

// Issue 28: the scan followed symlinks out of the definitions root, so code outside the configured folders
// ran. A worker folder, a definition file or a command that is a link out of the root is refused; links
// inside the root still work.
func TestScan_LinksOutOfTheRootRefused(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "analyzers")
	outside := filepath.Join(base, "elsewhere")
	def := func(name, extra string) string {
		return `{"name": "` + name + `", "version": "1", "author": "a", "url": "u", "license": "l", "description": "d"` + extra + `}`
	}
	write(t, filepath.Join(outside, "Evil", "evil.json"), def("Evil", `, "command": "Evil/run.sh"`), 0o644)
	write(t, filepath.Join(outside, "Evil", "run.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(outside, "lone.json"), def("Lone", `, "command": "Good/good.sh"`), 0o644)
	write(t, filepath.Join(root, "Good", "good.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "Good", "Good.json"), def("Good", `, "command": "Good/good.sh"`), 0o644)
	write(t, filepath.Join(root, "Sneaky", "Sneaky.json"), def("Sneaky", `, "command": "Sneaky/run.sh"`), 0o644)
	for _, l := range []struct{ target, link string }{
		{filepath.Join(outside, "Evil"), filepath.Join(root, "Evil")},                       // a worker folder out
		{filepath.Join(outside, "lone.json"), filepath.Join(root, "Good", "Lone.json")},     // a file out
		{filepath.Join(outside, "Evil", "run.sh"), filepath.Join(root, "Sneaky", "run.sh")}, // a command out
		{filepath.Join(root, "Good"), filepath.Join(root, "Alias")},                         // a folder inside: fine
	} {
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Fatal(err)
		}
	}
	res := Scan("analyzer.paths", []string{root}, analysis.KindAnalyzer, nil, nil)
	for _, d := range res.Definitions {
		if d.ID == "Evil_1" || d.ID == "Lone_1" || d.ID == "Sneaky_1" {
			t.Errorf("%s loaded from %s (command %s)", d.ID, d.Source, d.Command)
		}
		if strings.HasPrefix(d.Command, outside) {
			t.Errorf("%s runs %s, outside the root", d.ID, d.Command)
		}
	}
	if got := ids(res.Definitions); strings.Join(got, ",") != "Good_1" {
		t.Errorf("definitions = %v, want Good_1 (the Alias link inside the root reads it again: a duplicate)", got)
	}
	want := map[string]string{"analyzer.paths[0]/Evil": "link out of", "analyzer.paths[0]/Good/Lone.json": "link out of",
		"analyzer.paths[0]/Sneaky/Sneaky.json": "link out of"}
	for file, why := range want {
		found := false
		for _, r := range res.Refused {
			if r.File == file && strings.Contains(r.Reason, why) {
				found = true
			}
		}
		if !found {
			t.Errorf("no refusal of %s (%s) in %+v", file, why, res.Refused)
		}
	}
}
