package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/auditbus"
	"github.com/openir/platform/pkg/docstore"
)

func withEvents(f func(*auditbus.Config)) envOption { return func(o *envOptions) { o.events = f } }

func withDB(db *docstore.DB) envOption { return func(o *envOptions) { o.db = db } }

// audits returns the events of an object the client's organisation sees.
func (c *client) audits(t testing.TB, objectID string) []obj {
	t.Helper()
	return c.Call(t, http.MethodPost, "/api/audit/_search", map[string]any{"query": map[string]any{"objectId": objectID},
		"range": "all"}).Want(t, http.StatusOK).List(t)
}

// wantOne checks that the object has exactly one event of the operation, changing the named attributes.
func wantOne(t *testing.T, c *client, objectID, objectType, op string, details ...string) obj {
	t.Helper()
	var found []obj
	for _, a := range c.audits(t, objectID) {
		if a["operation"] != op {
			continue
		}
		if d, _ := a["details"].(map[string]any); op == "Update" && len(details) > 0 && d[details[0]] == nil {
			if _, ok := d[details[0]]; !ok {
				continue // another update of the object (a user's key renewed when the harness made it)
			}
		}
		found = append(found, a)
	}
	if len(found) != 1 {
		t.Fatalf("%s %s: %d %s events, want 1", objectType, objectID, len(found), op)
	}
	a := found[0]
	if a["objectType"] != objectType {
		t.Errorf("%s: objectType %v, want %s", objectID, a["objectType"], objectType)
	}
	d := a.Obj(t, "details")
	for _, k := range details {
		if _, ok := d[k]; !ok {
			t.Errorf("%s %s %s: details %v lack %s", objectType, objectID, op, d, k)
		}
	}
	if a.Str(t, "requestId") == "" || a.Str(t, "createdBy") == "" {
		t.Errorf("%s %s: no request id or user: %v", objectType, op, a)
	}
	return a
}

func TestAudit_EveryChange(t *testing.T) {
	tm := newTeam(t)
	ana, oa := tm.analyst, tm.orgAdmin

	cs := ana.newCase(t, map[string]any{"title": "audited"})
	caseID := cs.Str(t, "id")
	a := wantOne(t, ana, caseID, "case", "Creation", "title")
	if a.Str(t, "rootId") != caseID || a.Str(t, "organisation") != "soc" || a.Str(t, "createdBy") != "ana" {
		t.Errorf("case creation event %v", a)
	}
	ana.Call(t, http.MethodPatch, "/api/case/"+caseID, map[string]any{"severity": 3}).Want(t, http.StatusOK)
	if d := wantOne(t, ana, caseID, "case", "Update", "severity").Obj(t, "details"); len(d) != 1 {
		t.Errorf("case update details %v, want only severity", d)
	}

	task := ana.Call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "t1"}).Want(t, 201).Object(t)
	taskID := task.Str(t, "id")
	if wantOne(t, ana, taskID, "case_task", "Creation", "title").Str(t, "rootId") != caseID {
		t.Error("task event's rootId is not its case")
	}
	ana.Call(t, http.MethodPatch, "/api/case/task/"+taskID, map[string]any{"status": "InProgress"}).Want(t, 200)
	wantOne(t, ana, taskID, "case_task", "Update", "status")

	lg := ana.Call(t, http.MethodPost, "/api/case/task/"+taskID+"/log", map[string]any{"message": "m"}).Want(t, 201).Object(t)
	wantOne(t, ana, lg.Str(t, "id"), "case_task_log", "Creation", "message")

	obs := ana.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.7"})
	obsID := obs[0].Str(t, "id")
	wantOne(t, ana, obsID, "case_artifact", "Creation", "data")
	ana.Call(t, http.MethodPatch, "/api/case/artifact/"+obsID, map[string]any{"ioc": true}).Want(t, 200)
	wantOne(t, ana, obsID, "case_artifact", "Update", "ioc")
	ana.Call(t, http.MethodDelete, "/api/case/artifact/"+obsID, nil).Want(t, http.StatusNoContent)
	wantOne(t, ana, obsID, "case_artifact", "Delete")

	al := ana.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "audit-1",
		"title": "alert", "description": "d"}).Want(t, 201).Object(t)
	alertID := al.Str(t, "id")
	wantOne(t, ana, alertID, "alert", "Creation", "title")
	ana.Call(t, http.MethodPatch, "/api/alert/"+alertID, map[string]any{"title": "renamed"}).Want(t, 200)
	wantOne(t, ana, alertID, "alert", "Update", "title")
	ana.Call(t, http.MethodDelete, "/api/alert/"+alertID, nil).Want(t, http.StatusNoContent)
	wantOne(t, ana, alertID, "alert", "Delete")

	tpl := oa.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "audited-template"}).Want(t, 201).Object(t)
	tplID := tpl.Str(t, "id")
	wantOne(t, oa, tplID, "caseTemplate", "Creation", "name")
	oa.Call(t, http.MethodPatch, "/api/case/template/"+tplID, map[string]any{"description": "changed"}).Want(t, 200)
	wantOne(t, oa, tplID, "caseTemplate", "Update", "description")
	oa.Call(t, http.MethodDelete, "/api/case/template/"+tplID, nil).Want(t, http.StatusNoContent)
	wantOne(t, oa, tplID, "caseTemplate", "Delete")

	ana.Call(t, http.MethodDelete, "/api/case/"+caseID, nil).Want(t, http.StatusNoContent)
	wantOne(t, ana, caseID, "case", "Delete")

	// Platform records, changed by the administrator, are in the admin organisation's trail.
	fld := tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "auditedField", "type": "string"}).
		Want(t, 201).Object(t)
	wantOne(t, tm.admin, fld.Str(t, "id"), "customField", "Creation", "name")
	tm.admin.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"name": "Reader"}).Want(t, 200)
	u := wantOne(t, tm.admin, "reader", "user", "Update", "name")
	if strings.Contains(fmt.Sprint(u), "$argon") || strings.Contains(fmt.Sprint(u), "keySealed") {
		t.Errorf("a user event holds a secret: %v", u)
	}
	tm.admin.Call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "SOC"}).Want(t, 200)
	wantOne(t, tm.admin, "soc", "organisation", "Update", "description")

	// Another organisation sees none of it, whatever it asks.
	for _, id := range []string{caseID, taskID, obsID, alertID, tplID} {
		if l := tm.other.audits(t, id); len(l) != 0 {
			t.Errorf("cert sees %d events of soc's %s", len(l), id)
		}
	}
	for _, a := range tm.other.Call(t, http.MethodGet, "/api/audit?range=all", nil).Want(t, 200).List(t) {
		if a["organisation"] != "cert" {
			t.Errorf("cert sees an event of %v", a["organisation"])
		}
	}
	if l := tm.other.Call(t, http.MethodGet, "/api/flow?rootId="+caseID, nil).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("cert sees soc's flow: %v", l)
	}
	// The flow of the case, the v1 list and the query steps.
	flow := ana.Call(t, http.MethodGet, "/api/flow?rootId="+caseID+"&count=50", nil).Want(t, 200).List(t)
	if len(flow) < 6 {
		t.Errorf("flow of the case has %d events", len(flow))
	}
	ana.Call(t, http.MethodGet, "/api/v1/audit", nil).Want(t, 200)
	n := ana.Call(t, http.MethodPost, "/api/v0/query", map[string]any{"query": []any{
		map[string]any{"_name": "listAuditFromObject", "objectId": caseID}, map[string]any{"_name": "count"}}}).Want(t, 200)
	if strings.TrimSpace(string(n.Body)) != "3" {
		t.Errorf("listAuditFromObject count = %s, want 3 (creation, update, deletion)", n.Body)
	}
	l := ana.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
		map[string]any{"_name": "listAudit"}, map[string]any{"_name": "filter", "_field": "objectType", "_value": "case_task"},
		map[string]any{"_name": "page", "from": 0, "to": 10}}}).Want(t, 200).List(t)
	if len(l) != 2 {
		t.Errorf("listAudit of tasks: %d events, want 2", len(l))
	}
	tm.other.Call(t, http.MethodPost, "/api/v0/query", map[string]any{"query": []any{
		map[string]any{"_name": "getCase", "idOrName": caseID}, map[string]any{"_name": "audits"}}}).Want(t, 404)
}

func TestStream_OwnOrganisationOnly(t *testing.T) {
	tm := newTeam(t)
	id := tm.analyst.Call(t, http.MethodPost, "/api/stream", nil).Want(t, 200).Text(t)
	tm.other.Call(t, http.MethodGet, "/api/stream/"+id, nil).Want(t, 404) // another user's stream
	tm.analyst.Call(t, http.MethodGet, "/api/stream/status", nil).Want(t, 200)

	theirs := tm.other.newCase(t, map[string]any{"title": "cert case"}).Str(t, "id")
	ours := tm.analyst.newCase(t, map[string]any{"title": "soc case"}).Str(t, "id")
	deadline := time.Now().Add(15 * time.Second)
	seen := false
	for !seen && time.Now().Before(deadline) {
		for _, ev := range tm.analyst.Call(t, http.MethodGet, "/api/stream/"+id, nil).Want(t, 200).List(t) {
			if ev["organisation"] != "soc" || ev["objectId"] == theirs {
				t.Fatalf("the stream of soc got %v", ev)
			}
			if _, ok := ev["summary"]; !ok {
				t.Errorf("event without summary: %v", ev)
			}
			seen = seen || ev["objectId"] == ours
		}
	}
	if !seen {
		t.Fatal("the stream never delivered the case creation")
	}
}

// receiver is a webhook receiver: it fails the first fail requests with 500, then acknowledges.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []map[string]any
	sigs []string
	fail atomic.Int64
	hits atomic.Int64
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		b, _ := io.ReadAll(req.Body)
		if r.fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(b)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		r.mu.Lock()
		r.got = append(r.got, v)
		r.sigs = append(r.sigs, fmt.Sprint(secret == "" || req.Header.Get("X-Webhook-Signature") == "sha256="+hex.EncodeToString(m.Sum(nil))))
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// wait waits until the receiver acknowledged an event for which ok holds, and returns it.
func (r *receiver) wait(t *testing.T, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for i, v := range r.got {
			if ok(v) {
				r.mu.Unlock()
				if r.sigs[i] != "true" {
					t.Errorf("bad signature on %v", v)
				}
				return v
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the receiver got no such event")
	return nil
}

func (r *receiver) count(ok func(map[string]any) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.got {
		if ok(v) {
			n++
		}
	}
	return n
}

func object(id string) func(map[string]any) bool {
	return func(v map[string]any) bool { return v["objectId"] == id }
}

func TestWebhook_FilterSignatureRetries(t *testing.T) {
	tm := newTeam(t)
	rcv := newReceiver(t, "s3cret")
	wh := tm.orgAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"name": "cases", "url": rcv.srv.URL,
		"auth": "bearer", "token": "tok-123", "secret": "s3cret",
		"filter": map[string]any{"_and": []any{map[string]any{"objectType": "case"}, map[string]any{"operation": "Creation"}}}}).
		Want(t, 201).Object(t)
	if strings.Contains(fmt.Sprint(wh), "s3cret") || strings.Contains(fmt.Sprint(wh), "tok-123") || wh["hasSecret"] != true {
		t.Errorf("the webhook answer shows a secret or hides that it is set: %v", wh)
	}
	tm.analyst.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.srv.URL}).Want(t, 403)

	rcv.fail.Store(3) // three 500s, then the delivery goes through
	id := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.Call(t, http.MethodPatch, "/api/case/"+id, map[string]any{"title": "filtered out"}).Want(t, 200)
	v := rcv.wait(t, object(id))
	for _, k := range []string{"id", "operation", "details", "objectType", "objectId", "base", "startDate", "rootId", "requestId", "object", "organisation"} {
		if _, ok := v[k]; !ok {
			t.Errorf("payload lacks %s: %v", k, v)
		}
	}
	if rcv.hits.Load() < 4 {
		t.Errorf("%d requests, want 3 failures then a delivery", rcv.hits.Load())
	}
	var ds []obj
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// the receiver has the body before the sender writes the outcome
		if ds = tm.orgAdmin.Call(t, http.MethodGet, "/api/webhook/"+wh.Str(t, "id")+"/delivery", nil).Want(t, 200).List(t); len(ds) == 1 && ds[0]["status"] == "Delivered" {
			break
		}
	}
	if len(ds) != 1 || ds[0]["status"] != "Delivered" || ds[0].Num(t, "attempts") != 4 {
		t.Errorf("deliveries %v, want one Delivered after 4 attempts", ds)
	}
	// The update did not pass the filter; another organisation's case never reaches soc's webhook.
	other := tm.other.newCase(t, nil).Str(t, "id")
	id2 := tm.analyst.newCase(t, nil).Str(t, "id")
	rcv.wait(t, object(id2))
	if n := rcv.count(func(v map[string]any) bool { return v["operation"] == "Update" || v["objectId"] == other }); n != 0 {
		t.Errorf("%d deliveries outside the filter or the organisation", n)
	}
	if n := rcv.count(object(id)); n != 1 {
		t.Errorf("the acknowledged event was delivered %d times", n)
	}
	// Re-send: delivered again, with the same id.
	tm.orgAdmin.Call(t, http.MethodPost, "/api/webhook/"+wh.Str(t, "id")+"/delivery/"+ds[0].Str(t, "id")+"/resend", nil).Want(t, 200)
	deadline := time.Now().Add(10 * time.Second)
	for rcv.count(object(id)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if rcv.count(object(id)) != 2 {
		t.Error("the re-sent delivery did not arrive")
	}
	// Test: a delivery of operation Test naming the webhook, outside its filter, signed as the others and listed
	// first; refused to a user without manageConfig and for a disabled webhook.
	hook := "/api/webhook/" + wh.Str(t, "id")
	tm.analyst.Call(t, http.MethodPost, hook+"/test", nil).Want(t, 403)
	td := tm.orgAdmin.Call(t, http.MethodPost, hook+"/test", nil).Want(t, 200).Object(t)
	if td["webhook"] != wh["id"] || td["status"] != "Pending" {
		t.Errorf("the test delivery %v", td)
	}
	tv := rcv.wait(t, func(v map[string]any) bool { return v["operation"] == "Test" })
	if o, _ := tv["object"].(map[string]any); tv["objectType"] != "webhook" || tv["objectId"] != wh["id"] || o["name"] != "cases" ||
		tv["organisation"] != "soc" {
		t.Errorf("the test payload %v", tv)
	}
	deadline = time.Now().Add(10 * time.Second)
	for ds = nil; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ds = tm.orgAdmin.Call(t, http.MethodGet, hook+"/delivery", nil).Want(t, 200).List(t); len(ds) == 3 && ds[0]["status"] == "Delivered" {
			break
		}
	}
	if len(ds) != 3 || ds[0]["id"] != td["id"] || ds[0]["status"] != "Delivered" {
		t.Errorf("deliveries %v, want the test delivery first and Delivered", ds)
	}
	tm.orgAdmin.Call(t, http.MethodPatch, hook, map[string]any{"enabled": false}).Want(t, 200)
	tm.orgAdmin.Call(t, http.MethodPost, hook+"/test", nil).Want(t, 400)
	if strings.Contains(tm.logs.String(), "s3cret") || strings.Contains(tm.logs.String(), "tok-123") {
		t.Error("a webhook secret is in the logs")
	}
}

func TestWebhook_DeadLetterAndSSRF(t *testing.T) {
	tm := newTeam(t, withEvents(func(c *auditbus.Config) { c.Webhooks.MaxAttempts = 3 }))
	rcv := newReceiver(t, "")
	rcv.fail.Store(1000)
	wh := tm.orgAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.srv.URL}).Want(t, 201).Object(t)
	tm.analyst.newCase(t, nil)
	deadline := time.Now().Add(15 * time.Second)
	var ds []obj
	for time.Now().Before(deadline) {
		ds = tm.orgAdmin.Call(t, http.MethodGet, "/api/webhook/"+wh.Str(t, "id")+"/delivery", nil).Want(t, 200).List(t)
		if len(ds) == 1 && ds[0]["status"] == "Dead" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ds) != 1 || ds[0]["status"] != "Dead" || ds[0].Num(t, "attempts") != 3 {
		t.Fatalf("deliveries %v, want one Dead after 3 attempts", ds)
	}
	if rcv.hits.Load() != 3 {
		t.Errorf("%d attempts, want 3", rcv.hits.Load())
	}

	// Without webhook.allow_private: a loopback URL is refused at creation, and a name resolving to one at
	// delivery.
	st := newTeam(t, withEvents(func(c *auditbus.Config) { c.Webhooks.AllowPrivate = false; c.Webhooks.MaxAttempts = 1 }))
	st.orgAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.srv.URL}).Want(t, 400)
	st.orgAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": "http://169.254.169.254/latest"}).Want(t, 400)
	port := rcv.srv.URL[strings.LastIndex(rcv.srv.URL, ":"):]
	named := st.orgAdmin.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": "http://localhost" + port}).
		Want(t, 201).Object(t)
	before := rcv.hits.Load()
	st.analyst.newCase(t, nil)
	deadline = time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ds = st.orgAdmin.Call(t, http.MethodGet, "/api/webhook/"+named.Str(t, "id")+"/delivery", nil).Want(t, 200).List(t)
		if len(ds) == 1 && ds[0]["status"] == "Dead" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ds) != 1 || ds[0]["status"] != "Dead" || !strings.Contains(ds[0].Str(t, "lastError"), "refused") {
		t.Errorf("delivery to a loopback name: %v", ds)
	}
	if rcv.hits.Load() != before {
		t.Error("the receiver on loopback was reached")
	}
}

func TestWebhook_DeliveryAfterRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *docstore.DB {
		db, err := docstore.Open(ctx, docstore.Config{Name: "cases", Path: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	rcv := newReceiver(t, "")
	rcv.fail.Store(1 << 30) // down until the restart
	db1 := open()
	// A long backoff: after the first failure, the delivery waits in the outbox.
	e1 := newEnv(t, withDB(db1), withEvents(func(c *auditbus.Config) { c.Webhooks.BackoffMin, c.Webhooks.BackoffMax = time.Second, time.Second }))
	e1.createOrg(t, "soc")
	ana := e1.user(t, "ana", "soc", "org-admin")
	ana.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.srv.URL}).Want(t, 201)
	id := ana.newCase(t, nil).Str(t, "id")
	deadline := time.Now().Add(10 * time.Second)
	for rcv.hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Stop everything and close the database, as a killed process would leave it.
	e1.srv.Close()
	e1.stopEvents()
	if err := db1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.fail.Store(0)
	e2 := newEnv(t, withDB(open()))
	rcv.wait(t, object(id))
	if n := rcv.count(object(id)); n != 1 {
		t.Errorf("delivered %d times after the restart", n)
	}
	_ = e2
}

// eventObjects makes soc's webhook (before the fixture's records) and, after them, names one of its deliveries
// and a stream of soc's org-admin.
func (f *azFixture) eventObjects(t *testing.T, before bool) {
	t.Helper()
	oa := f.callers[azOrgAdmin]
	if before {
		// A closed port: every delivery fails at once, then is retried and dead.
		f.objects["{webhook}"] = oa.Call(t, http.MethodPost, "/api/webhook", map[string]any{"name": "fixture",
			"url": "http://127.0.0.1:1/hook", "secret": "fixture-secret"}).Want(t, 201).Object(t).Str(t, "id")
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.objects["{delivery}"] == "" && time.Now().Before(deadline) {
		if l := oa.Call(t, http.MethodGet, "/api/webhook/"+f.objects["{webhook}"]+"/delivery", nil).Want(t, 200).List(t); len(l) > 0 {
			f.objects["{delivery}"] = l[0].Str(t, "id")
		}
	}
	if f.objects["{delivery}"] == "" {
		t.Fatal("the fixture's webhook has no delivery")
	}
	f.objects["{stream}"] = oa.Call(t, http.MethodPost, "/api/stream", nil).Want(t, 200).Text(t)
}

func (f *azFixture) freshWebhook(t *testing.T) string {
	return f.callers[azOrgAdmin].Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": "http://127.0.0.1:1/fresh",
		"enabled": false}).Want(t, 201).Object(t).Str(t, "id")
}

// azEventRows are the rows of the audit, stream and webhook routes. The trail shows soc's records to soc only
// (the platform administrator works in the admin organisation); a stream is its creator's alone; webhooks need
// manageConfig (the administrator holds it for the admin organisation, which does not hold soc's).
func azEventRows() []azRow {
	soc := map[string]int{azAdmin: 404, azOrgAdmin: 200, azAnalyst: 403, azReadOnly: 403, azOther: 404}
	return []azRow{
		{name: "list audit", method: "GET", path: "/audit?range=all", want: azAll(200), shows: []string{"{case}", "{task}"}, hiddenFromAdmin: true},
		{name: "search audit", method: "POST", path: "/audit/_search?range=all", body: `{"query": {"objectType": "case"}}`,
			want: azAll(200), shows: []string{"{case}"}, hiddenFromAdmin: true},
		{name: "flow", method: "GET", path: "/flow?rootId={case}&count=100", want: azAll(200), shows: []string{"{task}"}, hiddenFromAdmin: true},
		{name: "query audits", method: "POST", path: "/query", body: `{"query": [{"_name": "listAuditFromObject", "objectId": "{case}"}]}`,
			want: azAll(200), shows: []string{"{case}"}, hiddenFromAdmin: true},
		{name: "create stream", method: "POST", path: "/stream", want: azAll(200), raw: true},
		{name: "stream status", method: "GET", path: "/stream/status", want: azAll(200)},
		{name: "poll stream", method: "GET", path: "/stream/{stream}",
			want: map[string]int{azAdmin: 404, azOrgAdmin: 200, azAnalyst: 404, azReadOnly: 404, azOther: 404}},
		{name: "list webhooks", method: "GET", path: "/webhook", want: azNeed(200, 200, azAdmin, azOrgAdmin),
			shows: []string{"{webhook}"}, hiddenFromAdmin: true},
		{name: "create webhook", method: "POST", path: "/webhook", body: `{"url": "http://127.0.0.1:1/x", "enabled": false}`,
			want: azNeed(201, 201, azAdmin, azOrgAdmin)},
		{name: "get webhook", method: "GET", path: "/webhook/{webhook}", want: soc},
		{name: "update webhook", method: "PATCH", path: "/webhook/{webhook}", body: `{"name": "renamed {n}"}`, want: soc},
		{name: "delete webhook", method: "DELETE", path: "/webhook/{newWebhook}",
			want: map[string]int{azAdmin: 404, azOrgAdmin: 204, azAnalyst: 403, azReadOnly: 403, azOther: 404}},
		{name: "webhook deliveries", method: "GET", path: "/webhook/{webhook}/delivery?range=all", want: soc, shows: []string{"{delivery}"}},
		{name: "resend delivery", method: "POST", path: "/webhook/{webhook}/delivery/{delivery}/resend", want: soc},
		{name: "test webhook", method: "POST", path: "/webhook/{webhook}/test", want: soc},
	}
}
