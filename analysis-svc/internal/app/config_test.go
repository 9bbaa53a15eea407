package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// job.directory_group and job.directory_mode from YAML (quoted or not) and from the environment.
func TestConfig_DirectoryAccess(t *testing.T) {
	for _, c := range []struct {
		yaml string
		env  map[string]string
		want jobdir.FolderAccess
		err  string
	}{
		{yaml: "job:\n  directory_group: \"61000\"\n  directory_mode: \"0710\"\n",
			want: jobdir.FolderAccess{GID: 61000, SetGroup: true, Mode: 0o710}},
		{yaml: "job:\n  directory_group: 61000\n", want: jobdir.FolderAccess{GID: 61000, SetGroup: true, Mode: 0o750}},
		{yaml: "job:\n  directory_mode: 0750\n", want: jobdir.FolderAccess{Mode: 0o750}}, // YAML 1.1 octal or text
		{yaml: "job:\n  directory_mode: \"0755\"\n", err: "job.directory_mode"},
		{env: map[string]string{"ANALYSIS_JOB_DIRECTORY_GROUP": "root", "ANALYSIS_JOB_DIRECTORY_MODE": "0750"},
			want: jobdir.FolderAccess{GID: 0, SetGroup: true, Mode: 0o750}}, // last: t.Setenv lasts to the end
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
		cfg, err := Load(args, io.Discard)
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
		got, err := jobdir.ParseFolderAccess(cfg.Job.DirectoryGroup, cfg.Job.DirectoryMode)
		if err != nil || got != c.want {
			t.Errorf("%q %v: %+v, %v", c.yaml, c.env, got, err)
		}
	}
}

// job.org_max: 0 by default (no cap), read from YAML and env, negative refused.
func TestConfig_OrgMax(t *testing.T) {
	cfg, err := Load(nil, io.Discard)
	if err != nil || cfg.Job.OrgMax != 0 {
		t.Fatalf("default: %d, %v", cfg.Job.OrgMax, err)
	}
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("job:\n  org_max: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = Load([]string{"--config", f}, io.Discard); err != nil || cfg.Job.OrgMax != 2 {
		t.Fatalf("yaml: %d, %v", cfg.Job.OrgMax, err)
	}
	t.Setenv("ANALYSIS_JOB_ORG_MAX", "-1")
	if _, err := Load(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "job.org_max") {
		t.Fatalf("negative: %v", err)
	}
}
