package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
)

// Issue 28: the definition scan's answer gave any orgadmin absolute server paths: a refusal naming a file of
// another configured path (a duplicate id), a definition refused because a built-in has its id, the
// configured path in each warning and the folder its hint told to configure. Every path in the answer is now
// relative to a configured path (analyzer.paths[i]/...), for the superadmin and an orgadmin alike.
func TestRegressionScanAnswersNoServerPath(t *testing.T) {
	base := t.TempDir()
	first, second, outside := filepath.Join(base, "analyzers"), filepath.Join(base, "more"), filepath.Join(base, "outside")
	writeFile(t, filepath.Join(first, "Good", "good.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(first, "Good", "Good.json"), flavor("Good", "Good/good.sh", "ip"), 0o644)
	writeFile(t, filepath.Join(first, "Broken", "Broken.json"), `{"name": `, 0o644)
	writeFile(t, filepath.Join(outside, "Evil", "Evil.json"), flavor("Evil", "Evil/run.sh", "ip"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "Evil"), filepath.Join(first, "Evil")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(second, "Good", "good.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(second, "Good", "Good.json"), flavor("Good", "Good/good.sh", "ip"), 0o644)                // a duplicate of first's
	writeFile(t, filepath.Join(second, "Test_Echo", "Test_Echo.json"), flavor("Test_Echo", "Good/good.sh", "ip"), 0o644) // a built-in's id
	paths := []string{first, second, filepath.Join(first, "Good") /* a worker folder */, base /* too high */, filepath.Join(base, "nope")}
	x := newExternalEnv(t, paths, nil, process.Options{}, runner.Options{})

	for _, as := range []*client{x.super, x.admin} {
		r := as.Call(t, http.MethodPost, "/api/analyzerdefinition/scan", nil).Want(t, http.StatusOK)
		if strings.Contains(string(r.Body), base) {
			t.Errorf("the scan answer names a server path (%s): %s", base, r.Body)
		}
		var rep struct {
			Refused  []struct{ File, Definition, Reason string }
			Warnings []string
		}
		r.Decode(t, &rep)
		refused := map[string]string{}
		for _, f := range rep.Refused {
			refused[f.File] = f.Reason
		}
		for file, why := range map[string]string{
			"analyzer.paths[0]/Broken/Broken.json":       "invalid JSON",
			"analyzer.paths[0]/Evil":                     "link out of the definitions root",
			"analyzer.paths[1]/Good/Good.json":           "duplicate id: the definition of analyzer.paths[0]/Good/Good.json is kept",
			"analyzer.paths[1]/Test_Echo/Test_Echo.json": "taken by a built-in",
		} {
			if !strings.Contains(refused[file], why) {
				t.Errorf("refusal of %s: %q, want %q; all: %+v", file, refused[file], why, rep.Refused)
			}
		}
		warnings := strings.Join(rep.Warnings, "\n")
		for _, want := range []string{
			"analyzer.paths[2]: it holds flavor files itself (Good.json): it is a worker folder; configure the analyzers root above it, analyzer.paths[2]/..",
			"analyzer.paths[3]: its definitions are one level deeper",
			"analyzer.paths[4]: does not exist",
		} {
			if !strings.Contains(warnings, want) {
				t.Errorf("no warning %q in %v", want, rep.Warnings)
			}
		}
	}
	// The log, which only the operator reads, keeps the whole paths.
	for _, p := range []string{filepath.Join(second, "Test_Echo", "Test_Echo.json"), filepath.Join(first, "Good")} {
		if !strings.Contains(x.logs.String(), p) {
			t.Errorf("the log does not name %s", p)
		}
	}
}
