package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configs/analysis-svc.yaml loads without an unknown key.
func TestLoad_ExampleConfig(t *testing.T) {
	if _, err := Load([]string{"--config", "../../../configs/analysis-svc.yaml"}, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// An unknown key refuses to start, naming the key: in the file (nested, inside a kubernetes profile, a key
// of case-svc only) and in the environment.
func TestLoad_UnknownKeysRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"job:\n  worker: 2\n", "job.worker"},
		{"job:\n  kubernetes:\n    profiles:\n      - definitions: [a]\n        namespce: x\n", "job.kubernetes.profiles[0].namespce"},
		{"audit:\n  retention: 1h\n", "audit"}, // case-svc's
	} {
		f := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load([]string{"--config", f}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "unknown key") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want an unknown key naming %s", c.yaml, err, c.want)
		}
	}
	t.Setenv("ANALYSIS_SVC_B_PORT", "tcp://10.0.0.1:9001") // a Kubernetes service link
	if _, err := Load(nil, io.Discard); err != nil {
		t.Fatalf("a service link refused: %v", err)
	}
	t.Setenv("ANALYSIS_JOB_WORKER", "2")
	_, err := Load(nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ANALYSIS_JOB_WORKER") {
		t.Fatalf("misspelt env key: err = %v", err)
	}
}
