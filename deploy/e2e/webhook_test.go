//go:build e2e

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/testcontainers/testcontainers-go"
)

// receiverAlias is the webhook receiver's host name on the test network.
const receiverAlias = "webhook-receiver"

// newReceiver describes the webhook receiver container: testdata/receiver built static and put into a
// FROM scratch image (testdata/receiver/Dockerfile, nothing is pulled) that testcontainers builds when the
// container is made, so alongside the other containers' start (startNodes). The image is kept under a fixed
// tag, like the service images: the next run's build of the same binary is a cache hit.
func (s *stack) newReceiver(t *testing.T) *node {
	t.Helper()
	dir := t.TempDir()
	prepare := func() error {
		gobin := os.Getenv("GO")
		if gobin == "" {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "receiver"), "./testdata/receiver")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build the webhook receiver: %w\n%s", err, out)
		}
		df, err := os.ReadFile("testdata/receiver/Dockerfile")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "Dockerfile"), df, 0o644)
	}
	return &node{s: s, name: "receiver", alias: receiverAlias, port: "8080/tcp", prepare: prepare,
		build: &testcontainers.FromDockerfile{Context: dir, Repo: "openir/e2e-webhook-receiver", Tag: "dev", KeepImage: true}}
}

// hook is one request the receiver recorded.
type hook struct {
	Seq    int         `json:"seq"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
	event  obj         // Body decoded
}

// received reads what the receiver recorded: the requests by path in arrival order, and the most requests it
// handled at once per path.
func received(t testing.TB, r *node) (map[string][]hook, map[string]int) {
	t.Helper()
	var rec struct {
		Deliveries  []hook         `json:"deliveries"`
		MaxInFlight map[string]int `json:"maxInFlight"`
	}
	rep := r.as("").call(t, http.MethodGet, "/deliveries", nil).want(t, http.StatusOK)
	if err := json.Unmarshal(rep.body, &rec); err != nil {
		t.Fatalf("receiver: %v; body %.300s", err, rep.body)
	}
	out := map[string][]hook{}
	for _, h := range rec.Deliveries {
		if err := json.Unmarshal([]byte(h.Body), &h.event); err != nil {
			t.Fatalf("delivery %d to %s is not a JSON object: %v; body %.300s", h.Seq, h.Path, err, h.Body)
		}
		out[h.Path] = append(out[h.Path], h)
	}
	return out, rec.MaxInFlight
}

// webhookEndpoint is an endpoint the flow configures in case-svc, and what its deliveries must carry.
type webhookEndpoint struct {
	id     string
	path   string // on the receiver
	secret string
	token  string         // bearer token ("" = auth none)
	want   func(obj) bool // which of the organisation's events it gets (its filter)
}

// configureWebhooks creates, as the organisation's administrator, an endpoint for every event of the
// organisation (signed) and one for job and action events only (signed, bearer token), both at the receiver by
// its network alias: a private address, which case-svc reaches because the flow sets
// CASE_WEBHOOK_ALLOW_PRIVATE (the SSRF guard refuses private addresses by default).
func configureWebhooks(t testing.TB, admin apiClient) []*webhookEndpoint {
	t.Helper()
	all := &webhookEndpoint{path: "/hooks/all", secret: randomHex(16), want: func(obj) bool { return true }}
	jobs := &webhookEndpoint{path: "/hooks/jobs", secret: randomHex(16), token: randomHex(16), want: func(e obj) bool {
		return e["objectType"] == "case_artifact_job" || e["objectType"] == "action"
	}}
	for _, ep := range []*webhookEndpoint{all, jobs} {
		body := map[string]any{"name": "receiver " + ep.path, "url": "http://" + receiverAlias + ":8080" + ep.path,
			"auth": "none", "secret": ep.secret, "enabled": true}
		if ep.token != "" {
			body["auth"], body["token"] = "bearer", ep.token
			body["filter"] = map[string]any{"_in": map[string]any{"_field": "objectType", "_values": []any{"case_artifact_job", "action"}}}
		}
		r := admin.call(t, http.MethodPost, "/api/webhook", body).want(t, http.StatusCreated)
		w := r.object(t)
		if w["hasSecret"] != true || w["enabled"] != true || w["hasToken"] != (ep.token != "") {
			t.Fatalf("webhook %v", w)
		}
		for _, v := range []string{ep.secret, ep.token} {
			if v != "" && strings.Contains(string(r.body), v) {
				t.Fatalf("webhook answer shows a credential: %s", r.body)
			}
		}
		ep.id = w.str(t, "id")
	}
	return []*webhookEndpoint{all, jobs}
}

// auditEvents reads the organisation's audit trail by event id.
func auditEvents(t testing.TB, c apiClient) map[string]obj {
	t.Helper()
	out := map[string]obj{}
	for _, e := range c.call(t, http.MethodGet, "/api/audit?range=all", nil).want(t, http.StatusOK).list(t) {
		out[e.str(t, "id")] = e
	}
	return out
}

// checkDeliveries waits until every endpoint has received exactly the events of the audit trail that are
// not in before and that its filter selects, then checks each delivery: signature, auth, ids, no duplicate,
// fields equal to the audit record, one request at a time per endpoint. It returns the events each endpoint
// received, in arrival order.
func checkDeliveries(t *testing.T, recv *node, admin apiClient, eps []*webhookEndpoint, before map[string]obj) map[string][]hook {
	t.Helper()
	var got map[string][]hook
	var maxInFlight map[string]int
	var trail map[string]obj
	eventually(t, "webhook deliveries equal to the audit trail", jobWait, func() (bool, string) {
		trail = auditEvents(t, admin)
		got, maxInFlight = received(t, recv)
		for _, ep := range eps {
			want := map[string]bool{}
			for id, e := range trail {
				if before[id] == nil && ep.want(e) {
					want[id] = true
				}
			}
			have := map[string]bool{}
			for _, h := range got[ep.path] {
				have[fmt.Sprint(h.event["id"])] = true
			}
			if !reflect.DeepEqual(want, have) {
				return false, fmt.Sprintf("%s: %d events in the audit trail, %d received", ep.path, len(want), len(have))
			}
		}
		return true, ""
	})
	for _, ep := range eps {
		hooks := got[ep.path]
		if len(hooks) == 0 {
			t.Fatalf("%s received nothing", ep.path)
		}
		if maxInFlight[ep.path] != 1 {
			t.Errorf("%s: %d deliveries at once, want one at a time", ep.path, maxInFlight[ep.path])
		}
		seen := map[string]int{}
		for _, h := range hooks {
			e := h.event
			id := e.str(t, "id")
			what := fmt.Sprintf("%s delivery %d (event %s %s %s)", ep.path, h.Seq, id, e["operation"], e["objectType"])
			if seen[id]++; seen[id] > 1 {
				t.Errorf("%s: duplicate", what)
			}
			if sig := h.Header.Get("X-Webhook-Signature"); !validSignature(ep.secret, []byte(h.Body), sig) {
				t.Errorf("%s: signature %q does not verify with the endpoint's secret", what, sig)
			}
			auth, wantAuth := h.Header.Get("Authorization"), ""
			if ep.token != "" {
				wantAuth = "Bearer " + ep.token
			}
			if auth != wantAuth {
				t.Errorf("%s: Authorization %q, want %q", what, auth, wantAuth)
			}
			if h.Header.Get("X-Webhook-Id") != id || h.Header.Get("X-Webhook-Delivery") != id+":"+ep.id ||
				h.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: headers %v", what, h.Header)
			}
			a := trail[id]
			for _, k := range []string{"operation", "objectType", "objectId", "rootId", "requestId", "organisation", "startDate", "details", "object"} {
				if !reflect.DeepEqual(e[k], a[k]) {
					t.Errorf("%s: %s is %v, the audit record has %v", what, k, e[k], a[k])
				}
			}
			if e["organisation"] != "soc" || e["base"] != true {
				t.Errorf("%s: organisation %v, base %v", what, e["organisation"], e["base"])
			}
		}
	}
	return got
}

// validSignature checks an X-Webhook-Signature value: sha256= and the hex HMAC-SHA-256 of body.
func validSignature(secret string, body []byte, header string) bool {
	const prefix = "sha256="
	if len(header) <= len(prefix) || header[:len(prefix)] != prefix {
		return false
	}
	got, err := hex.DecodeString(header[len(prefix):])
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(m, string(body))
	return hmac.Equal(got, m.Sum(nil))
}

// eventLog is the events one endpoint received, in arrival order, with lookups for the flow's checks.
type eventLog []hook

// find returns the position and event of the first event of an object with that operation whose object
// satisfies match (nil: any), or -1.
func (l eventLog) find(objectType, objectID, operation string, match func(obj) bool) (int, obj) {
	for i, h := range l {
		e := h.event
		if e["objectType"] == objectType && e["objectId"] == objectID && e["operation"] == operation {
			if o, _ := e["object"].(map[string]any); match == nil || match(o) {
				return i, e
			}
		}
	}
	return -1, nil
}

// want fails unless the event is there, and returns its position.
func (l eventLog) want(t testing.TB, path, objectType, objectID, operation string, match func(obj) bool) int {
	t.Helper()
	i, _ := l.find(objectType, objectID, operation, match)
	if i < 0 {
		var have []string
		for _, h := range l {
			have = append(have, fmt.Sprintf("%v %v %v", h.event["operation"], h.event["objectType"], h.event["objectId"]))
		}
		t.Fatalf("%s: no %s event of %s %s (or not as expected); received %v", path, operation, objectType, objectID, have)
	}
	return i
}

// status matches an object whose status is s.
func status(s string) func(obj) bool { return func(o obj) bool { return o["status"] == s } }

// hasTag matches an object whose tags hold tag.
func hasTag(tag string) func(obj) bool {
	return func(o obj) bool {
		tags, _ := o["tags"].([]any)
		return slices.Contains(tags, any(tag))
	}
}

// jobFinishedWebhook creates, as the analysis server's orgadmin, an endpoint at the receiver (path
// /hooks/<server>) for the JobFinished events of its organisation, signed with its own secret.
func jobFinishedWebhook(t testing.TB, a *analysisServer) *webhookEndpoint {
	t.Helper()
	ep := &webhookEndpoint{path: "/hooks/" + a.name, secret: randomHex(16)}
	r := a.as(a.orgKey).call(t, http.MethodPost, "/api/webhook", map[string]any{"name": "receiver", "auth": "none",
		"url": "http://" + receiverAlias + ":8080" + ep.path, "secret": ep.secret, "enabled": true}).want(t, http.StatusCreated)
	if strings.Contains(string(r.body), ep.secret) {
		t.Fatalf("%s: webhook answer shows the secret: %s", a.name, r.body)
	}
	ep.id = r.object(t).str(t, "id")
	return ep
}

// checkJobFinished waits until the receiver has the JobFinished event of every job in jobIDs from the analysis
// server, then checks every delivery to that endpoint: a signed JobFinished (objectType job, operation Update)
// of organisation soc, ids in the headers, none twice; each of jobIDs ended Success.
// It returns how many deliveries the endpoint received.
func checkJobFinished(t *testing.T, recv *node, a *analysisServer, ep *webhookEndpoint, jobIDs []string) int {
	t.Helper()
	var hooks []hook
	eventually(t, "JobFinished of "+a.name+"'s jobs at the receiver", jobWait, func() (bool, string) {
		got, _ := received(t, recv)
		hooks = got[ep.path]
		have := map[string]bool{}
		for _, h := range hooks {
			have[fmt.Sprint(h.event["objectId"])] = true
		}
		for _, id := range jobIDs {
			if !have[id] {
				return false, fmt.Sprintf("%d deliveries, none for job %s", len(hooks), id)
			}
		}
		return true, ""
	})
	seen := map[string]int{}
	finished := map[string]obj{}
	for _, h := range hooks {
		e := h.event
		id := e.str(t, "id")
		what := fmt.Sprintf("%s delivery %d (event %s)", ep.path, h.Seq, id)
		if seen[id]++; seen[id] > 1 {
			t.Errorf("%s: duplicate", what)
		}
		if sig := h.Header.Get("X-Webhook-Signature"); !validSignature(ep.secret, []byte(h.Body), sig) {
			t.Errorf("%s: signature %q does not verify with the endpoint's secret", what, sig)
		}
		if h.Header.Get("X-Webhook-Id") != id || h.Header.Get("X-Webhook-Delivery") != id+":"+ep.id || h.Header.Get("Authorization") != "" {
			t.Errorf("%s: headers %v", what, h.Header)
		}
		if e["objectType"] != "job" || e["operation"] != "Update" || e["organisation"] != "soc" || e["rootId"] != e["objectId"] {
			t.Errorf("%s: %v", what, e)
		}
		finished[e.str(t, "objectId")] = e
	}
	for _, id := range jobIDs {
		e := finished[id]
		if st := e.obj(t, "details")["status"]; st != "Success" || e.obj(t, "object")["status"] != "Success" {
			t.Errorf("%s: JobFinished of job %s: status %v, object %v", ep.path, id, st, e["object"])
		}
	}
	return len(hooks)
}
