package catalog

import (
	"bytes"
	"log/slog"
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
		found := false
		for _, r := range res.Refused {
			if r.File == file && strings.Contains(r.Reason, why) {
				found = true
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
		1: "one level deeper (analyzers/Bad/bad.json): configure " + root,
		2: "it is a worker folder; configure the analyzers root above it, " + root,
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
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Message, "configure the responders root above it, "+root) {
		t.Errorf("warnings %+v", res.Warnings)
	}
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Reason, "outside the responders root") {
		t.Errorf("refused %+v", res.Refused)
	}
}
