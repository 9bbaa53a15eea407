package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// job.directory_group and job.directory_mode from YAML (quoted or not) and from the environment.
func TestConfig_DirectoryAccess(t *testing.T) {
	for _, c := range []struct {
		yaml string
		env  map[string]string
		want analysis.FolderAccess
		err  string
	}{
		{yaml: "job:\n  directory_group: \"61000\"\n  directory_mode: \"0710\"\n",
			want: analysis.FolderAccess{GID: 61000, SetGroup: true, Mode: 0o710}},
		{yaml: "job:\n  directory_group: 61000\n", want: analysis.FolderAccess{GID: 61000, SetGroup: true, Mode: 0o750}},
		{yaml: "job:\n  directory_mode: 0750\n", want: analysis.FolderAccess{Mode: 0o750}}, // YAML 1.1 octal or text
		{yaml: "job:\n  directory_mode: \"0755\"\n", err: "job.directory_mode"},
		{env: map[string]string{"ANALYSIS_JOB_DIRECTORY_GROUP": "root", "ANALYSIS_JOB_DIRECTORY_MODE": "0750"},
			want: analysis.FolderAccess{GID: 0, SetGroup: true, Mode: 0o750}}, // last: t.Setenv lasts to the end
	} {
		args := []string{}
		if c.yaml != "" {
			f := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(f, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", f)
		}
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		cfg, err := loadConfig(args, io.Discard)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %s", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %v: %v", c.yaml, c.env, err)
			continue
		}
		got, err := analysis.ParseFolderAccess(cfg.Job.DirectoryGroup, cfg.Job.DirectoryMode)
		if err != nil || got != c.want {
			t.Errorf("%q %v: %+v, %v", c.yaml, c.env, got, err)
		}
	}
}
