package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 15 (5b): an Idempotency-Key reused with a different body is a 422 in the contract's error shape, not
// the earlier job; the same body still returns the earlier job, and the refused request creates nothing.
func TestRegressionIdempotencyKeyReusedWithAnotherBody(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	path := "/api/analyzer/" + f.analyzer + "/run?force=1"
	hdr := http.Header{"Idempotency-Key": {"order-1"}}
	first := f.analyst.Send(t, http.MethodPost, path, "application/json",
		strings.NewReader(`{"dataType":"ip","data":"10.8.0.1","tlp":2}`), hdr).Want(t, http.StatusOK).Object(t)
	for _, body := range []string{
		`{"dataType":"ip","data":"10.8.0.2","tlp":2}`,                      // another observable
		`{"dataType":"ip","data":"10.8.0.1","tlp":1}`,                      // another TLP
		`{"dataType":"ip","data":"10.8.0.1","tlp":2,"message":"other"}`,    // another message
		`{"dataType":"ip","data":"10.8.0.1","tlp":2,"parameters":{"a":1}}`, // other parameters
	} {
		msg := f.analyst.Send(t, http.MethodPost, path, "application/json", strings.NewReader(body), hdr).
			WantError(t, http.StatusUnprocessableEntity, "BadRequest")
		if !strings.Contains(msg, "Idempotency-Key") {
			t.Errorf("%s: message %q does not name the Idempotency-Key", body, msg)
		}
	}
	// The same body, even with its fields in another order, is a retry: the first job.
	again := f.analyst.Send(t, http.MethodPost, path, "application/json",
		strings.NewReader(`{"tlp":2,"data":"10.8.0.1","dataType":"ip"}`), hdr).Want(t, http.StatusOK).Object(t)
	if again["id"] != first["id"] {
		t.Fatalf("a retry got job %v, want the first job %v", again["id"], first["id"])
	}
	if n := f.analyst.Call(t, http.MethodGet, "/api/job", nil).Want(t, http.StatusOK).Header.Get("X-Total"); n != "1" {
		t.Fatalf("jobs: %s, want 1 (the refused requests created none)", n)
	}
}
