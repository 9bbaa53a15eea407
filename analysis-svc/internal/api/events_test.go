package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/events/eventstest"
)

// withEvents adjusts the tests' settings of the job events.
func withEvents(f func(*events.Config)) envOption { return func(o *envOptions) { o.events = f } }

func noAdjust(*events.Config) {}

// eventFixture is jobFixture with events, and an orgadmin of the other organization with Test_Echo enabled.
type eventFixture struct {
	*jobFixture
	otherAdmin    *client
	otherAnalyzer string
}

func newEventFixture(t *testing.T, adjust func(*events.Config)) *eventFixture {
	t.Helper()
	f := &eventFixture{jobFixture: newJobFixture(t, withEvents(adjust))}
	f.otherAdmin = f.e.user(t, "other-admin", "other", roleOrgAdmin)
	f.otherAnalyzer = f.otherAdmin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	return f
}

// deliveries polls a webhook's deliveries until ok holds for them (10 s).
func deliveries(t *testing.T, as *client, webhook string, ok func([]map[string]any) bool) []map[string]any {
	t.Helper()
	var ds []map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ds = plainMaps(as.Call(t, http.MethodGet, "/api/webhook/"+webhook+"/delivery", nil).Want(t, http.StatusOK).List(t)); ok(ds) {
			return ds
		}
	}
	t.Fatalf("deliveries of %s: %v", webhook, ds)
	return nil
}

func TestWebhook_JobFinished(t *testing.T) {
	f := newEventFixture(t, noAdjust)
	soc, other := eventstest.NewReceiver(t, "s3cret"), eventstest.NewReceiver(t, "")
	wh := f.admin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"name": "jobs", "url": soc.URL(),
		"secret": "s3cret", "auth": "bearer", "token": "tok-123"}).Want(t, http.StatusCreated).Object(t)
	if wh["hasSecret"] != true || strings.Contains(string(f.admin.Call(t, http.MethodGet, "/api/webhook/"+wh["id"].(string), nil).
		Want(t, http.StatusOK).Body), "s3cret") {
		t.Errorf("the webhook shows its secret or hides that it is set: %v", wh)
	}
	otherWh := f.otherAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": other.URL()}).
		Want(t, http.StatusCreated).Object(t)

	t.Run("refusals", func(t *testing.T) {
		f.analyst.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": soc.URL()}).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.reads.Call(t, http.MethodGet, "/api/webhook", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.e.super.Call(t, http.MethodGet, "/api/webhook", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.otherAdmin.Call(t, http.MethodGet, "/api/webhook/"+wh["id"].(string), nil).WantError(t, http.StatusNotFound, "NotFoundError")
		f.otherAdmin.Call(t, http.MethodPatch, "/api/webhook/"+wh["id"].(string), map[string]any{"enabled": false}).
			WantError(t, http.StatusNotFound, "NotFoundError")
		f.otherAdmin.Call(t, http.MethodDelete, "/api/webhook/"+wh["id"].(string), nil).WantError(t, http.StatusNotFound, "NotFoundError")
		f.admin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": "ftp://x"}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		f.admin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": soc.URL(), "filter": map[string]any{"nope": 1}}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		if l := f.otherAdmin.Call(t, http.MethodGet, "/api/webhook", nil).Want(t, http.StatusOK).List(t); len(l) != 1 || l[0]["id"] != otherWh["id"] {
			t.Errorf("the other organization lists %v", l)
		}
	})

	soc.Fail(3) // three 500s, then the delivery goes through
	job := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.1"})
	id := job["id"].(string)
	v := soc.Wait(t, 15*time.Second, eventstest.Object(id))
	if v["operation"] != "Update" || v["objectType"] != "job" || v["organisation"] != "soc" || v["id"] == "" {
		t.Errorf("payload %v", v)
	}
	if d, _ := v["details"].(map[string]any); d["status"] != "Success" {
		t.Errorf("details %v, want status Success", v["details"])
	}
	if o, _ := v["object"].(map[string]any); o["id"] != id || o["status"] != "Success" || o["organization"] != "soc" {
		t.Errorf("object %v", v["object"])
	}
	ds := deliveries(t, f.admin, wh["id"].(string), func(ds []map[string]any) bool {
		return len(ds) == 1 && ds[0]["status"] == "Delivered"
	})
	if ds[0]["attempts"] != float64(4) || soc.Hits() != 4 || soc.BadSignatures() != 0 {
		t.Errorf("deliveries %v after %d requests (%d bad signatures), want one Delivered after 3 failures", ds, soc.Hits(), soc.BadSignatures())
	}

	// Another organization's job reaches its own webhook only.
	otherJob := f.other.Call(t, http.MethodPost, "/api/analyzer/"+f.otherAnalyzer+"/run", map[string]any{"dataType": "ip", "data": "10.0.0.2"}).
		Want(t, http.StatusOK).Object(t)["id"].(string)
	other.Wait(t, 15*time.Second, eventstest.Object(otherJob))
	// A second soc job, delivered after the other organization's: the first soc job's delivery is acknowledged
	// and was not sent again.
	second := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.3"})["id"].(string)
	soc.Wait(t, 15*time.Second, eventstest.Object(second))
	if n := other.Count(eventstest.Object(id)) + other.Count(eventstest.Object(second)); n != 0 {
		t.Errorf("the other organization's webhook got %d of soc's events", n)
	}
	if n := soc.Count(eventstest.Object(otherJob)); n != 0 {
		t.Errorf("soc's webhook got the other organization's job")
	}
	if n := soc.Count(eventstest.Object(id)); n != 1 {
		t.Errorf("the acknowledged JobFinished was delivered %d times", n)
	}
	if n := soc.Count(func(v map[string]any) bool { return v["operation"] != "Update" }); n != 0 {
		t.Errorf("%d deliveries that are not JobFinished", n)
	}

	// Re-send: delivered again, with the same event id.
	f.otherAdmin.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/delivery/"+ds[0]["id"].(string)+"/resend", nil).
		WantError(t, http.StatusNotFound, "NotFoundError")
	f.admin.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/delivery/"+ds[0]["id"].(string)+"/resend", nil).Want(t, http.StatusOK)
	deadline := time.Now().Add(10 * time.Second)
	for soc.Count(eventstest.Object(id)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if soc.Count(eventstest.Object(id)) != 2 {
		t.Error("the re-sent delivery did not arrive")
	}
	// Test: a delivery of operation Test naming the webhook, whatever the filter, signed as the others; refused
	// to another organization and for a disabled webhook.
	f.admin.Call(t, http.MethodPatch, "/api/webhook/"+wh["id"].(string), map[string]any{"filter": map[string]any{"operation": "Delete"}}).
		Want(t, http.StatusOK)
	f.otherAdmin.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/test", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.analyst.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/test", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	td := f.admin.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/test", nil).Want(t, http.StatusOK).Object(t)
	if td["webhook"] != wh["id"] || td["status"] != "Pending" {
		t.Errorf("the test delivery %v", td)
	}
	tv := soc.Wait(t, 15*time.Second, func(v map[string]any) bool { return v["operation"] == "Test" })
	if o, _ := tv["object"].(map[string]any); tv["objectType"] != "webhook" || tv["objectId"] != wh["id"] || o["name"] != "jobs" ||
		tv["organisation"] != "soc" || soc.BadSignatures() != 0 {
		t.Errorf("the test payload %v (%d bad signatures)", tv, soc.BadSignatures())
	}
	deliveries(t, f.admin, wh["id"].(string), func(ds []map[string]any) bool {
		return len(ds) == 3 && ds[0]["id"] == td["id"] && ds[0]["status"] == "Delivered"
	})
	f.admin.Call(t, http.MethodPatch, "/api/webhook/"+wh["id"].(string), map[string]any{"enabled": false}).Want(t, http.StatusOK)
	f.admin.Call(t, http.MethodPost, "/api/webhook/"+wh["id"].(string)+"/test", nil).WantError(t, http.StatusBadRequest, "BadRequest")

	if logs := f.e.logs.String(); strings.Contains(logs, "s3cret") || strings.Contains(logs, "tok-123") {
		t.Error("a webhook secret is in the logs")
	}
}

func TestWebhook_DeadLetterAndSSRF(t *testing.T) {
	f := newEventFixture(t, func(c *events.Config) { c.Webhooks.MaxAttempts = 3 })
	rcv := eventstest.NewReceiver(t, "")
	rcv.Fail(1 << 30)
	wh := f.admin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.URL()}).Want(t, http.StatusCreated).Object(t)
	f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.1"})
	ds := deliveries(t, f.admin, wh["id"].(string), func(ds []map[string]any) bool { return len(ds) == 1 && ds[0]["status"] == "Dead" })
	if ds[0]["attempts"] != float64(3) || rcv.Hits() != 3 || !strings.Contains(ds[0]["lastError"].(string), "500") {
		t.Errorf("deliveries %v after %d requests, want one Dead after 3 attempts", ds, rcv.Hits())
	}

	// Without webhook.allow_private: a loopback or metadata URL is refused.
	s := newEventFixture(t, func(c *events.Config) { c.Webhooks.AllowPrivate = false })
	for _, u := range []string{rcv.URL(), "http://169.254.169.254/latest/meta-data", "http://[::1]:8080/"} {
		s.admin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": u}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	}
}

func TestStream_JobEventsOfTheOrganization(t *testing.T) {
	f := newEventFixture(t, noAdjust)
	st := f.reads.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)
	otherSt := f.other.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)
	f.other.Call(t, http.MethodGet, "/api/stream/"+st, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.e.anon().Call(t, http.MethodGet, "/api/stream/"+st, nil).Want(t, http.StatusUnauthorized)
	if s := f.reads.Call(t, http.MethodGet, "/api/stream/status", nil).Want(t, http.StatusOK).Object(t); s["warning"] != false {
		t.Errorf("status %v", s)
	}

	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.1"})["id"].(string)
	var created, finished bool
	for deadline := time.Now().Add(15 * time.Second); !(created && finished) && time.Now().Before(deadline); {
		for _, m := range f.reads.Call(t, http.MethodGet, "/api/stream/"+st, nil).Want(t, http.StatusOK).List(t) {
			if m["objectId"] != id || m["objectType"] != "job" || m["organisation"] != "soc" || m["base"] == nil {
				t.Errorf("stream message %v", m)
				continue
			}
			created = created || m["operation"] == "Creation"
			if d, _ := m["details"].(map[string]any); m["operation"] == "Update" && d["status"] == "Success" {
				finished = true
			}
		}
	}
	if !created || !finished {
		t.Fatalf("the stream showed creation %v, end %v", created, finished)
	}
	// The other organization's stream waits its refresh interval and answers nothing of soc's.
	for _, m := range f.other.Call(t, http.MethodGet, "/api/stream/"+otherSt, nil).Want(t, http.StatusOK).List(t) {
		t.Errorf("the other organization's stream got %v", m)
	}
}

// eventRows are the stream routes (any user of an organization) and the webhook routes (its orgadmins).
func eventRows() []roleRow {
	admins := map[string]int{superadmin: 403, orgAdminA: 200, analyzeA: 403, readA: 403, orgAdminB: 200}
	unknown := map[string]int{superadmin: 403, orgAdminA: 404, analyzeA: 403, readA: 403, orgAdminB: 404}
	rows := []roleRow{
		{name: "create a stream", method: "POST", path: "/api/stream", want: all5(200), raw: true},
		{name: "stream status", method: "GET", path: "/api/stream/status", want: all5(200)},
		{name: "poll an unknown stream", method: "GET", path: "/api/stream/nope", want: all5(404)},
		{name: "list webhooks", method: "GET", path: "/api/webhook", want: admins},
		{name: "create a webhook", method: "POST", path: "/api/webhook", want: map[string]int{superadmin: 403, orgAdminA: 201,
			analyzeA: 403, readA: 403, orgAdminB: 201},
			body: func(string, *client) any { return map[string]any{"url": "http://127.0.0.1:1/hook", "enabled": false} }},
		{name: "get an unknown webhook", method: "GET", path: "/api/webhook/nope", want: unknown},
		{name: "update an unknown webhook", method: "PATCH", path: "/api/webhook/nope", want: unknown,
			body: func(string, *client) any { return map[string]any{"enabled": false} }},
		{name: "delete an unknown webhook", method: "DELETE", path: "/api/webhook/nope", want: unknown},
		{name: "deliveries of an unknown webhook", method: "GET", path: "/api/webhook/nope/delivery", want: unknown},
		{name: "resend an unknown delivery", method: "POST", path: "/api/webhook/nope/delivery/x:nope/resend", want: unknown},
		{name: "test an unknown webhook", method: "POST", path: "/api/webhook/nope/test", want: unknown},
	}
	for i := range rows {
		rows[i].shared = true
	}
	return rows
}
