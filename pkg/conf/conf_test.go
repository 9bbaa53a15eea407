package conf

import (
	"slices"
	"strings"
	"testing"
)

// UnknownEnv flags a variable under a known section that names no key, and leaves alone known keys and
// variables outside the sections (service links, a test's switches).
func TestUnknownEnv(t *testing.T) {
	d := map[string]any{"mode": "", "webhook.backoff_min": "", "http.tls.cert": ""}
	got := UnknownEnv("CASE", d, []string{"CASE_MODE=x", "CASE_WEBHOOK_BACKOFF_MIN=1s", "CASE_HTTP_TLS_CERT=f",
		"CASE_WEBHOOK_BACKOFF=1s", "CASE_HTTP_TLS_CRT=f", "CASE_SVC_PORT=1", "CASE_CRASH_HELPER=1", "HTTP_PROXY=x",
		"ANALYSIS_WEBHOOK_X=1"})
	if want := []string{"CASE_HTTP_TLS_CRT", "CASE_WEBHOOK_BACKOFF"}; !slices.Equal(got, want) {
		t.Fatalf("UnknownEnv = %v, want %v", got, want)
	}
}

// Every default of the common keys has a field of Common (decoding the defaults alone finds no unknown key),
// and a key Common lacks is refused with its name.
func TestDefaults_CommonKeysAreFields(t *testing.T) {
	var c Common
	if err := Defaults(CommonDefaults(":1", "n", "p"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Webhook.BackoffMin <= 0 || c.Webhook.BackoffMax < c.Webhook.BackoffMin || c.Datastore.Password == "" {
		t.Fatalf("webhook/datastore defaults not decoded: %+v %+v", c.Webhook, c.Datastore)
	}
	d := CommonDefaults(":1", "n", "p")
	d["webhook.retries"] = 3
	if err := Defaults(d, &c); err == nil || !strings.Contains(err.Error(), "webhook.retries") {
		t.Fatalf("a default without a field: err = %v", err)
	}
}
