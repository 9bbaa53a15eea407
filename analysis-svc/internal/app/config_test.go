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

// job.kubernetes.*: settings and profiles from YAML, lists from the environment, and refusals naming the key.
func TestConfig_Kubernetes(t *testing.T) {
	yaml := `job:
  runner: [kubernetes, process]
  kubernetes:
    jobio_image: openir/analysis-svc:1.0
    callback_url: http://10.0.0.5:9002
    namespace: analysis-jobs
    pull_policy: Always
    requests: {cpu: 100m, memory: 256Mi}
    limits: {memory: 1Gi, ephemeral-storage: 2Gi}
    node_selector: ["kubernetes.io/arch=amd64"]
    labels: ["team=soc"]
    tolerations:
      - {key: dedicated, operator: Equal, value: analyzers, effect: NoSchedule}
    run_as_user: "1000"
    profiles:
      - definitions: ["File_Info_*"]
        runtime_class: gvisor
        limits: {memory: 4Gi}
      - organizations: [Acme]
        namespace: acme-jobs
`
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load([]string{"--config", f}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Job.Kubernetes
	s, err := k.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if s.Namespace != "analysis-jobs" || s.PullPolicy != "Always" || s.Requests["cpu"] != "100m" || s.Limits["ephemeral-storage"] != "2Gi" ||
		s.NodeSelector["kubernetes.io/arch"] != "amd64" || s.Labels["team"] != "soc" || len(s.Tolerations) != 1 ||
		s.Tolerations[0].Value != "analyzers" || s.RunAsUser == nil || *s.RunAsUser != 1000 || s.RunAsGroup != nil ||
		s.PendingTimeout.String() != "5m0s" || k.CallbackListen != ":9002" {
		t.Fatalf("settings: %+v", s)
	}
	if len(k.Profiles) != 2 || k.Profiles[0].RuntimeClass != "gvisor" || k.Profiles[0].Limits["memory"] != "4Gi" ||
		k.Profiles[1].Organizations[0] != "Acme" || k.Profiles[1].Namespace != "acme-jobs" || k.Profiles[1].RunAsUser != "" {
		t.Fatalf("profiles: %+v", k.Profiles)
	}

	for _, c := range []struct{ yaml, err string }{
		{"job:\n  runner: [kubernetes]\n", "job.kubernetes.jobio_image"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i}\n", "job.kubernetes.callback_url"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, pod_ip: 10.1.2.3, callback_listen: nope}\n", "job.kubernetes.callback_listen"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, callback_url: u, pull_policy: Sometimes}\n", "job.kubernetes.pull_policy"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, callback_url: u, node_selector: [pool]}\n", "job.kubernetes.node_selector"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, callback_url: u, run_as_user: root}\n", "job.kubernetes.run_as_user"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, callback_url: u, profiles: [{labels: [x]}]}\n", "job.kubernetes.profiles[0].labels"},
		{"job:\n  runner: [kubernetes]\n  kubernetes: {jobio_image: i, callback_url: u, tolerations: [{operator: Maybe}]}\n", "job.kubernetes.tolerations[0].operator"},
		{"job:\n  runner: [k8s]\n", "unknown runner"},
	} {
		if err := os.WriteFile(f, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load([]string{"--config", f}, io.Discard); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err = %v, want %s", c.yaml, err, c.err)
		}
	}

	t.Setenv("ANALYSIS_JOB_RUNNER", "kubernetes")
	t.Setenv("ANALYSIS_JOB_KUBERNETES_JOBIO_IMAGE", "img")
	t.Setenv("ANALYSIS_JOB_KUBERNETES_POD_IP", "10.1.2.3")
	t.Setenv("ANALYSIS_JOB_KUBERNETES_NODE_SELECTOR", "pool=analyzers,disk=ssd")
	t.Setenv("ANALYSIS_JOB_KUBERNETES_TOLERATIONS", `[{"key":"dedicated","operator":"Exists"}]`)
	cfg, err = Load(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err = cfg.Job.Kubernetes.Settings()
	if err != nil || s.NodeSelector["disk"] != "ssd" || len(s.Tolerations) != 1 || s.Tolerations[0].Operator != "Exists" {
		t.Fatalf("env: %+v, %v", s, err)
	}
	if u, err := cfg.Job.Kubernetes.Callback(); err != nil || u != "http://10.1.2.3:9002" {
		t.Fatalf("callback from the pod IP: %q, %v", u, err)
	}
}
