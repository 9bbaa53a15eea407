package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configs/case-svc.yaml, which make run's and the images' documentation point to, loads without an unknown
// key, and case-svc has analysis-svc's webhook.backoff_* keys, from the file and from the environment.
func TestLoad_ExampleConfigAndBackoff(t *testing.T) {
	c, err := Load([]string{"--config", "../../../configs/case-svc.yaml"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Webhook.BackoffMin != time.Second || c.Webhook.BackoffMax != 10*time.Minute {
		t.Fatalf("webhook.backoff_min/max = %v/%v, want 1s/10m", c.Webhook.BackoffMin, c.Webhook.BackoffMax)
	}
	if ev := c.Events(c.Audit.Retention, "", nil); ev.Webhooks.BackoffMin != time.Second || ev.Webhooks.BackoffMax != 10*time.Minute {
		t.Fatalf("events config backoff = %v/%v", ev.Webhooks.BackoffMin, ev.Webhooks.BackoffMax)
	}
	t.Setenv("CASE_WEBHOOK_BACKOFF_MIN", "2s")
	t.Setenv("CASE_WEBHOOK_BACKOFF_MAX", "3m")
	if c, err = Load(nil, io.Discard); err != nil || c.Webhook.BackoffMin != 2*time.Second || c.Webhook.BackoffMax != 3*time.Minute {
		t.Fatalf("env backoff = %v/%v, %v", c.Webhook.BackoffMin, c.Webhook.BackoffMax, err)
	}
}

// An unknown key refuses to start, naming the key: in the file (top level, nested, inside an
// analysis.servers entry, a key of analysis-svc only) and in the environment. Variables that only share the
// prefix (a Kubernetes service link, a test's switch) are left alone.
func TestLoad_UnknownKeysRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"webhook:\n  backoff_minn: 1s\n", "webhook.backoff_minn"},
		{"modes: production\n", "modes"},
		{"analysis:\n  servers:\n    - name: a\n      url: http://a\n      kee: x\n", "analysis.servers[0].kee"},
		{"job:\n  workers: 2\n", "job"}, // analysis-svc's
		{"observable:\n  zip:\n    max_entry: 3\n", "observable.zip.max_entry"},
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
	t.Setenv("CASE_SVC_SERVICE_HOST", "10.0.0.1") // a Kubernetes service link: not a key, not refused
	t.Setenv("CASE_CRASH_HELPER_X", "1")
	if _, err := Load(nil, io.Discard); err != nil {
		t.Fatalf("unrelated CASE_ variables refused: %v", err)
	}
	t.Setenv("CASE_WEBHOOK_BACKOF_MIN", "1s")
	_, err := Load(nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "CASE_WEBHOOK_BACKOF_MIN") {
		t.Fatalf("misspelt env key: err = %v", err)
	}
}
