package api_test

// The authorization matrix: every route of case-svc, with the status each kind of caller gets. A route of the
// router without a row fails TestAuthz_EveryRouteHasARow, so a new route must say who may call it.
//
// Rows are written without the path prefix. The same route shape is registered under /api, /api/v0 and (for
// identity) /api/v1 with the same handler (TestAuthz_EveryRouteHasARow checks that the handler names agree),
// and TestAuthz_Matrix runs every row under every prefix where its route exists, so each registered route is
// called by every caller.

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/webui"
)

// The callers. The first four never authenticate: every route behind authentication answers them 401.
const (
	azAnonymous = "anonymous"
	azLocked    = "locked user"     // an analyst of soc, locked after its key was issued
	azRevoked   = "revoked key"     // an analyst of soc whose key was revoked after use
	azExpired   = "expired session" // an org-admin of soc whose session cookie outlived the 1 h inactivity timeout
	azAdmin     = "admin"           // the platform administrator (profile admin in the organisation admin)
	azOrgAdmin  = "org-admin"       // of soc, the organisation owning the fixture's records
	azAnalyst   = "analyst"         // of soc
	azReadOnly  = "read-only"       // of soc
	azOther     = "other org"       // org-admin of cert: every permission, in another organisation
)

var azCallers = []string{azAnonymous, azLocked, azRevoked, azExpired, azAdmin, azReadOnly, azAnalyst, azOrgAdmin, azOther}

var azUnauthenticated = []string{azAnonymous, azLocked, azRevoked, azExpired}

// azProfiles is the organisation and profile of each authenticated caller (fresh users copy them).
var azProfiles = map[string][2]string{
	azAdmin: {"admin", "admin"}, azOrgAdmin: {"soc", "org-admin"}, azAnalyst: {"soc", "analyst"},
	azReadOnly: {"soc", "read-only"}, azOther: {"cert", "org-admin"},
}

const (
	azTarget       = "target" // a read-only user of soc with a key: the user the user rows act on
	azPassword     = "fixture-password-0"
	azDownKey      = "connector-key-of-the-down-server-0123456789" // must never leave case-svc
	azSelfPassword = "self-password-0123"
)

// azClock is the sessions' clock; the test moves it past the session timeout.
type azClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *azClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *azClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// azFixture is one server with the organisations soc and cert, a client per caller, and records of soc
// (made by soc's org-admin) that the rows address through placeholders.
type azFixture struct {
	e       *env
	callers map[string]*client
	objects map[string]string // {case}, {task}, … → id of that record of soc
	n       atomic.Int64
}

// azDown is an analysis server on a closed port: permission checks of the connector routes run without a
// server, and a permitted call gets the connector's answer for a server that cannot be reached.
func azDown(logs *syncBuffer) connector.AnalysisServer {
	var log *slog.Logger
	if logs != nil {
		log = slog.New(slog.NewJSONHandler(logs, nil))
	}
	return analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "down", URL: "http://127.0.0.1:1", Key: azDownKey,
		Timeout: 2 * time.Second}, analysissvc.Options{RetryMax: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}, log)}
}

func newAzFixture(t *testing.T) *azFixture {
	t.Helper()
	clk := &azClock{t: time.Now()}
	logs := &syncBuffer{}
	e := newEnv(t, withClock(clk.now), withLogs(logs),
		withServers(connector.AnalysisConfig{Scan: 200 * time.Millisecond, BackoffLo: 50 * time.Millisecond, BackoffHi: 200 * time.Millisecond}, azDown(logs)))
	e.createOrg(t, "soc")
	e.createOrg(t, "cert")
	f := &azFixture{e: e, objects: map[string]string{}, callers: map[string]*client{
		azAnonymous: e.anon(),
		azAdmin:     e.admin,
		azOrgAdmin:  e.user(t, "socadmin", "soc", "org-admin"),
		azAnalyst:   e.user(t, "ana", "soc", "analyst"),
		azReadOnly:  e.user(t, "reader", "soc", "read-only"),
		azOther:     e.user(t, "certadmin", "cert", "org-admin"),
		azLocked:    e.user(t, "locked", "soc", "analyst"),
		azRevoked:   e.user(t, "revoked", "soc", "analyst"),
	}}
	e.user(t, azTarget, "soc", "read-only")

	// The locked user and the revoked key worked before.
	for _, c := range []string{azLocked, azRevoked} {
		f.callers[c].Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	}
	e.admin.Call(t, http.MethodDelete, "/api/user/locked", nil).Want(t, http.StatusNoContent)
	e.admin.Call(t, http.MethodDelete, "/api/user/revoked/key", nil).Want(t, http.StatusNoContent)

	// The expired session worked, then the clock moves past the 1 h inactivity timeout. The cookies go in a
	// fixed header (not a jar), so no answer renews or replaces them; the CSRF header is sent too, so the 401
	// comes from the expiry and not from a missing CSRF token.
	e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "sess", "organisation": "soc",
		"profile": "org-admin", "password": azPassword}).Want(t, http.StatusCreated)
	s := e.sessionClient()
	s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "sess", "password": azPassword}).Want(t, http.StatusOK)
	ex := e.newClient("sess")
	ex.Header.Set("Cookie", auth.SessionCookie+"="+s.Cookie(auth.SessionCookie)+"; "+auth.CSRFCookie+"="+s.Cookie(auth.CSRFCookie))
	ex.Header.Set(auth.CSRFHeader, s.Cookie(auth.CSRFCookie))
	ex.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	ex.Call(t, http.MethodPatch, "/api/user/sess", map[string]any{"name": "session user"}).Want(t, http.StatusOK)
	clk.advance(61 * time.Minute)
	f.callers[azExpired] = ex

	f.makeObjects(t)
	return f
}

// makeObjects gives soc a case with a task and a log, observables (a value and a file), a template, an alert
// with an observable, an analyzer job and a responder action; and the platform a custom field.
func (f *azFixture) makeObjects(t *testing.T) {
	t.Helper()
	oa := f.callers[azOrgAdmin]
	f.eventObjects(t, true) // events_test.go: a webhook first, so that the records below have deliveries
	cs := oa.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "fixture task"}}})
	f.objects["{case}"] = cs.Str(t, "id")
	f.objects["{task}"] = oa.Call(t, http.MethodGet, "/api/case/"+cs.Str(t, "id")+"/task", nil).Want(t, 200).List(t)[0].Str(t, "id")
	f.objects["{log}"] = oa.Call(t, http.MethodPost, "/api/case/task/"+f.objects["{task}"]+"/log", map[string]any{"message": "fixture log"}).
		Want(t, 201).Object(t).Str(t, "id")
	obs := oa.observables(t, "/api/case/"+f.objects["{case}"]+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.1"})
	f.objects["{observable}"] = obs[0].Str(t, "id")
	file := oa.multipart(t, http.MethodPost, "/api/case/"+f.objects["{case}"]+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "soc.txt", "text/plain", []byte("a file of soc")}).Want(t, 201).List(t)[0]
	f.objects["{hash}"] = file.Obj(t, "attachment").Str(t, "id")
	f.objects["{template}"] = oa.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "fixture-template"}).
		Want(t, 201).Object(t).Str(t, "id")
	f.objects["{field}"] = f.callers[azAdmin].Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "fixtureField", "type": "string"}).
		Want(t, 201).Object(t).Str(t, "id")
	al := oa.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "fixture",
		"title": "fixture alert", "description": "d", "artifacts": []any{map[string]any{"dataType": "domain", "data": "soc.example"}}}).
		Want(t, 201).Object(t)
	f.objects["{alert}"] = al.Str(t, "id")
	f.objects["{alertObservable}"] = oa.Call(t, http.MethodGet, "/api/alert/"+al.Str(t, "id")+"/artifact", nil).Want(t, 200).List(t)[0].Str(t, "id")

	// The connector's records cannot be made through the API without a server that answers: write them as the
	// connector would.
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	job := connector.Job{ID: record.NewID(now), Org: "soc", ObservableID: f.objects["{observable}"], CaseID: f.objects["{case}"],
		AnalyzerID: "Echo_1_0", Status: connector.JobSuccess, StartDate: now, EndDate: now, AnalysisID: "down", AnalysisJobID: "remote-1",
		Report: map[string]any{"success": true}, Meta: record.Meta{CreatedBy: "ana", CreatedAt: now}}
	if err := f.e.jobs.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	f.objects["{job}"] = job.ID
	act := connector.Action{ID: record.NewID(now), Org: "soc", ResponderID: "Tagger_1_0", AnalysisID: "down", AnalysisJobID: "remote-2",
		ObjectType: "case_task", ObjectID: f.objects["{task}"], CaseID: f.objects["{case}"], TaskID: f.objects["{task}"],
		Status: connector.JobSuccess, StartDate: now, EndDate: now, Operations: "[]", Report: "{}", Meta: record.Meta{CreatedBy: "ana", CreatedAt: now}}
	if err := f.e.analyses.CreateAction(ctx, act); err != nil {
		t.Fatal(err)
	}
	f.objects["{action}"] = act.ID
	f.objects["{set}"] = oa.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "fixture-set"}).
		Want(t, 201).Object(t).Str(t, "id")
	f.objects["{rule}"] = oa.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "fixture-rule", "event": "caseCreated",
		"actions": []any{map[string]any{"type": "addTags", "tags": []string{"x"}}}}).Want(t, 201).Object(t).Str(t, "id")
	f.eventObjects(t, false)
}

// fresh makes a record of soc for one call, as soc's org-admin (users: as the platform administrator).
func (f *azFixture) fresh(t *testing.T, kind string) string {
	t.Helper()
	oa := f.callers[azOrgAdmin]
	n := f.n.Add(1)
	switch kind {
	case "{newCase}", "{newOtherCase}":
		return oa.newCase(t, nil).Str(t, "id")
	case "{newTask}":
		return oa.Call(t, http.MethodPost, "/api/case/"+f.objects["{case}"]+"/task", map[string]any{"title": fmt.Sprint("fresh ", n)}).
			Want(t, 201).Object(t).Str(t, "id")
	case "{newLog}":
		return oa.Call(t, http.MethodPost, "/api/case/task/"+f.objects["{task}"]+"/log", map[string]any{"message": fmt.Sprint("fresh ", n)}).
			Want(t, 201).Object(t).Str(t, "id")
	case "{newTemplate}":
		return oa.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": fmt.Sprint("fresh-", n)}).
			Want(t, 201).Object(t).Str(t, "id")
	case "{newField}":
		return f.callers[azAdmin].Call(t, http.MethodPost, "/api/customField", map[string]any{"name": fmt.Sprint("fresh", n), "type": "string"}).
			Want(t, 201).Object(t).Str(t, "id")
	case "{newObservable}":
		return oa.observables(t, "/api/case/"+f.objects["{case}"]+"/artifact", map[string]any{"dataType": "ip",
			"data": fmt.Sprintf("10.1.%d.%d", n/250, n%250)})[0].Str(t, "id")
	case "{newAlert}":
		return oa.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": fmt.Sprint("fresh-", n),
			"title": "fresh", "description": "d"}).Want(t, 201).Object(t).Str(t, "id")
	case "{newAlertObservable}":
		return oa.observables(t, "/api/alert/"+f.objects["{alert}"]+"/artifact", map[string]any{"dataType": "domain",
			"data": fmt.Sprintf("fresh%d.example", n)})[0].Str(t, "id")
	case "{newWebhook}":
		return f.freshWebhook(t)
	case "{newSet}":
		return oa.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": fmt.Sprint("fresh-set-", n)}).
			Want(t, 201).Object(t).Str(t, "id")
	case "{newRule}":
		return oa.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": fmt.Sprint("fresh-rule-", n), "event": "caseCreated",
			"actions": []any{map[string]any{"type": "addTags", "tags": []string{"x"}}}}).Want(t, 201).Object(t).Str(t, "id")
	case "{newUser}":
		login := fmt.Sprint("fresh", n)
		f.e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "organisation": "soc", "profile": "read-only"}).
			Want(t, 201)
		return login
	}
	t.Fatalf("unknown placeholder %s", kind)
	return ""
}

// shared are the records a {new…} placeholder stands for when the call is refused: nothing changes then, so the
// fixture's own record shows that a refusal does not depend on the record.
var azShared = map[string]string{"{newCase}": "{case}", "{newOtherCase}": "{case}", "{newTask}": "{task}", "{newLog}": "{log}", "{newTemplate}": "{template}",
	"{newField}": "{field}", "{newObservable}": "{observable}", "{newAlert}": "{alert}",
	"{newAlertObservable}": "{alertObservable}", "{newUser}": azTarget, "{newWebhook}": "{webhook}",
	"{newSet}": "{set}", "{newRule}": "{rule}"}

var azPlaceholder = regexp.MustCompile(`\{[A-Za-z]+\}`)

// resolve replaces the placeholders of a row's path and body for one call: the fixture's records, {self} (the
// caller's login; the target user for callers without one), {n} (a number unique to the call), and {new…}: a
// record made for this call when it is expected to succeed, else the fixture's.
func (f *azFixture) resolve(t *testing.T, self string, succeed bool, texts ...string) []string {
	t.Helper()
	if self == "" {
		self = azTarget
	}
	n := fmt.Sprint(f.n.Add(1))
	made := map[string]string{}
	out := make([]string, len(texts))
	for i, s := range texts {
		out[i] = azPlaceholder.ReplaceAllStringFunc(s, func(ph string) string {
			switch {
			case ph == "{self}":
				return self
			case ph == "{n}":
				return n
			case f.objects[ph] != "":
				return f.objects[ph]
			case azShared[ph] != "":
				if !succeed {
					if v, ok := f.objects[azShared[ph]]; ok {
						return v
					}
					return azShared[ph]
				}
				if made[ph] == "" {
					made[ph] = f.fresh(t, ph)
				}
				return made[ph]
			}
			t.Fatalf("unresolved placeholder %s in %s", ph, s)
			return ""
		})
	}
	return out
}

// freshCaller returns a new user with the caller's organisation and profile (with a key, and a password when
// asked), for rows that change the caller's own credentials.
func (f *azFixture) freshCaller(t *testing.T, caller string, password bool) *client {
	t.Helper()
	op := azProfiles[caller]
	login := fmt.Sprintf("self%d", f.n.Add(1))
	body := map[string]any{"login": login, "organisation": op[0], "profile": op[1]}
	if password {
		body["password"] = azSelfPassword
	}
	f.e.admin.Call(t, http.MethodPost, "/api/user", body).Want(t, http.StatusCreated)
	return f.e.keyClient(login, f.e.renewKey(t, f.e.admin, login))
}

// azRow is one route with the status each caller gets.
type azRow struct {
	name   string
	method string
	path   string // without the prefix (abs: the whole path), with placeholders (see resolve)
	abs    bool
	body   string // JSON with placeholders; "" = no body
	// want holds the status of the five authenticated callers; the unauthenticated ones get 401 unless the
	// route is public, when want holds every caller.
	want   map[string]int
	public bool
	// self: the call is made by a new user with the caller's organisation and profile ({self} is its login),
	// for rows that change the caller's own credentials; password gives that user a password.
	self, password bool
	text, raw      bool // a successful answer is text/plain (an API key) or not JSON (a file, metrics)
	// page: a page of the web interface (internal/webui): answers in HTML, and sends a caller without a valid
	// credential to the login page (303) rather than answering 401; redirects are not followed.
	page bool
	// shows are placeholders of soc's records that a successful answer lists to soc's users and never to the
	// other organisation's; hiddenFromAdmin adds the platform administrator (who never sees cases).
	shows           []string
	hiddenFromAdmin bool
}

// azAll gives the same status to the five authenticated callers.
func azAll(code int) map[string]int {
	return map[string]int{azAdmin: code, azOrgAdmin: code, azAnalyst: code, azReadOnly: code, azOther: code}
}

// azEveryone gives the same status to every caller (public routes).
func azEveryone(code int) map[string]int {
	m := map[string]int{}
	for _, c := range azCallers {
		m[c] = code
	}
	return m
}

// azMembers: soc's users get code; the platform administrator and the other organisation do not find soc's
// record (404).
func azMembers(code int) map[string]int {
	return map[string]int{azAdmin: 404, azOrgAdmin: code, azAnalyst: code, azReadOnly: code, azOther: 404}
}

// azNeed: the callers named get code, the others of soc and the platform administrator 403 (a missing
// permission), and the other organisation's org-admin, who holds every organisation permission, other: 404
// for a record of soc, or the success code when it acts in its own organisation.
func azNeed(code, other int, holders ...string) map[string]int {
	m := map[string]int{azOther: other}
	for _, c := range []string{azAdmin, azOrgAdmin, azAnalyst, azReadOnly} {
		m[c] = http.StatusForbidden
		if slices.Contains(holders, c) {
			m[c] = code
		}
	}
	return m
}

// The profiles holding the permissions (README "Profiles and permissions").
var (
	azWorkers    = []string{azOrgAdmin, azAnalyst} // manageCase, manageTask, manageObservable, manageAlert, manageAnalyse, manageAction
	azManagers   = []string{azAdmin, azOrgAdmin}   // manageUser
	azPlatform   = []string{azAdmin}               // shared definitions (custom fields)
	azOrgAdmOnly = []string{azOrgAdmin}            // manageCaseTemplate
)

// azDownStatus is what a permitted connector call that reaches the analysis server gets when the server
// cannot be reached: 201, the record accepted Waiting for the tracker to submit (internal/cases/analysis.go
// RunAnalyzer, action.go RunResponder).
const azDownStatus = http.StatusCreated

func azRows() []azRow {
	rows := []azRow{
		// --- public ---
		{name: "status", method: "GET", path: "/status", public: true, want: azEveryone(200)},
		{name: "health", method: "GET", path: "/health", public: true, want: azEveryone(200), raw: true},
		{name: "login", method: "POST", path: "/login", public: true, want: azEveryone(200),
			body: `{"user": "sess", "password": "` + azPassword + `"}`},
		{name: "logout", method: "POST", path: "/logout", public: true, want: azEveryone(204)},
		{name: "logout by GET", method: "GET", path: "/logout", public: true, want: azEveryone(204)},
		{name: "liveness", method: "GET", path: "/healthz", abs: true, public: true, want: azEveryone(200)},
		{name: "readiness", method: "GET", path: "/readyz", abs: true, public: true, want: azEveryone(200)},
		{name: "metrics", method: "GET", path: "/metrics", abs: true, public: true, want: azEveryone(200), raw: true},
		{name: "OpenAPI document", method: "GET", path: "/api/openapi.json", abs: true, public: true, want: azEveryone(200)},

		// --- users: see README "Identity" (who manages whom) ---
		{name: "current user", method: "GET", path: "/user/current", want: azAll(200)},
		{name: "list users", method: "GET", path: "/user?range=all", want: azAll(200), shows: []string{azTarget}},
		{name: "search users", method: "POST", path: "/user/_search?range=all", body: `{"query": {}}`, want: azAll(200),
			shows: []string{azTarget}},
		// the other organisation's org-admin creates users only in its own organisation: 403 in soc
		{name: "create user in soc", method: "POST", path: "/user", want: azNeed(201, 403, azManagers...),
			body: `{"login": "created{n}", "organisation": "soc", "profile": "read-only"}`},
		{name: "get user of soc", method: "GET", path: "/user/" + azTarget,
			want: map[string]int{azAdmin: 200, azOrgAdmin: 200, azAnalyst: 200, azReadOnly: 200, azOther: 404}},
		{name: "get self", method: "GET", path: "/user/{self}", want: azAll(200)},
		{name: "get unknown user", method: "GET", path: "/user/nobody", want: azAll(404)},
		{name: "rename user of soc", method: "PATCH", path: "/user/{newUser}", body: `{"name": "renamed"}`,
			want: azNeed(200, 404, azManagers...)},
		{name: "rename self", method: "PATCH", path: "/user/{self}", body: `{"name": "renamed self"}`, want: azAll(200)},
		{name: "lock user of soc", method: "DELETE", path: "/user/{newUser}", want: azNeed(204, 404, azManagers...)},
		{name: "force delete user of soc", method: "DELETE", path: "/user/{newUser}/force?organisation=soc", want: azNeed(204, 404, azManagers...)},
		{name: "set password of user of soc", method: "POST", path: "/user/{newUser}/password/set",
			body: `{"password": "new-password-1"}`, want: azNeed(204, 404, azManagers...)},
		// only the user itself, whatever the caller's permissions
		{name: "change password of user of soc", method: "POST", path: "/user/{newUser}/password/change",
			body: `{"currentPassword": "whatever-1", "password": "new-password-1"}`,
			want: map[string]int{azAdmin: 403, azOrgAdmin: 403, azAnalyst: 403, azReadOnly: 403, azOther: 404}},
		{name: "change own password", method: "POST", path: "/user/{self}/password/change", self: true, password: true,
			body: `{"currentPassword": "` + azSelfPassword + `", "password": "changed-password-1"}`, want: azAll(204)},
		{name: "get key of user of soc", method: "GET", path: "/user/" + azTarget + "/key", text: true,
			want: azNeed(200, 404, azManagers...)},
		{name: "get own key", method: "GET", path: "/user/{self}/key", self: true, text: true, want: azAll(200)},
		{name: "renew key of user of soc", method: "POST", path: "/user/{newUser}/key/renew", text: true,
			want: azNeed(200, 404, azManagers...)},
		{name: "renew own key", method: "POST", path: "/user/{self}/key/renew", self: true, text: true, want: azAll(200)},
		{name: "revoke key of user of soc", method: "DELETE", path: "/user/{newUser}/key", want: azNeed(204, 404, azManagers...)},
		{name: "revoke own key", method: "DELETE", path: "/user/{self}/key", self: true, want: azAll(204)},

		// --- organisations and profiles ---
		{name: "list organisations", method: "GET", path: "/organisation", want: azAll(200), shows: []string{`"soc"`}},
		{name: "search organisations", method: "POST", path: "/organisation/_search", body: `{"query": {}}`, want: azAll(200),
			shows: []string{`"soc"`}},
		{name: "create organisation", method: "POST", path: "/organisation", body: `{"name": "org{n}"}`,
			want: azNeed(201, 403, azAdmin)},
		// the platform administrator reads every organisation
		{name: "get organisation soc", method: "GET", path: "/organisation/soc",
			want: map[string]int{azAdmin: 200, azOrgAdmin: 200, azAnalyst: 200, azReadOnly: 200, azOther: 404}},
		{name: "get unknown organisation", method: "GET", path: "/organisation/nope", want: azAll(404)},
		{name: "update organisation soc", method: "PATCH", path: "/organisation/soc", body: `{"description": "changed"}`,
			want: azNeed(200, 403, azAdmin)},
		{name: "list profiles", method: "GET", path: "/profile", want: azAll(200)},
		{name: "search profiles", method: "POST", path: "/profile/_search", body: `{"query": {}}`, want: azAll(200)},
		{name: "get profile", method: "GET", path: "/profile/analyst", want: azAll(200)},

		// --- statistics (stats.go) and what a UI reads first (ui.go) ---
		{name: "alert stats", method: "POST", path: "/alert/_stats", body: `{"query": {}, "stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "task stats", method: "POST", path: "/case/task/_stats", body: `{"stats": [{"_agg": "field", "_field": "status"}]}`, want: azAll(200)},
		{name: "log stats", method: "POST", path: "/case/task/log/_stats", body: `{"stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "observable stats", method: "POST", path: "/case/artifact/_stats", body: `{"stats": [{"_agg": "field", "_field": "dataType"}]}`, want: azAll(200)},
		{name: "template stats", method: "POST", path: "/case/template/_stats", body: `{"stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "custom field stats", method: "POST", path: "/customField/_stats", body: `{"stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "user stats", method: "POST", path: "/user/_stats", body: `{"stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "organisation stats", method: "POST", path: "/organisation/_stats", body: `{"stats": [{"_agg": "count"}]}`, want: azAll(200)},
		{name: "stats of several models", method: "POST", path: "/_stats",
			body: `{"stats": [{"model": "case", "stats": [{"_agg": "count"}]}, {"model": "alert", "stats": [{"_agg": "count"}]}]}`, want: azAll(200)},
		{name: "describe all", method: "GET", path: "/describe/_all", want: azAll(200)},
		{name: "describe a model", method: "GET", path: "/describe/case", want: azAll(200)},
		{name: "list config", method: "GET", path: "/config", want: azNeed(200, 200, azAdmin, azOrgAdmin)},
		{name: "user config item", method: "GET", path: "/config/user/ui.theme", want: azAll(200)},
		{name: "organisation config item", method: "GET", path: "/config/organisation/ui.hideEmptyCaseButton", want: azAll(200)},
		{name: "query count step", method: "POST", path: "/query", body: `{"query": [{"_name": "countCase"}]}`, want: azAll(200)},
		{name: "query limited count", method: "POST", path: "/query",
			body: `{"query": [{"_name": "listAlert"}, {"_name": "limitedCount", "threshold": 10}]}`, want: azAll(200)},
		{name: "query aggregation", method: "POST", path: "/query",
			body: `{"query": [{"_name": "listCase"}, {"_name": "aggregation", "_agg": "field", "_field": "status"}]}`, want: azAll(200)},
		{name: "query my tasks", method: "POST", path: "/query", body: `{"query": [{"_name": "myTasks"}, {"_name": "count"}]}`, want: azAll(200)},
		{name: "query current user", method: "POST", path: "/query", body: `{"query": [{"_name": "currentUser"}]}`, want: azAll(200)},
		{name: "query users", method: "POST", path: "/query", body: `{"query": [{"_name": "listUser"}, {"_name": "page", "from": 0, "to": 5}]}`,
			want: azAll(200)},
		{name: "query organisations", method: "POST", path: "/query", body: `{"query": [{"_name": "listOrganisation"}]}`, want: azAll(200)},
		{name: "query users of an organisation", method: "POST", path: "/query",
			body: `{"query": [{"_name": "getOrganisation", "idOrName": "soc"}, {"_name": "users"}]}`,
			want: map[string]int{azAdmin: 200, azOrgAdmin: 200, azAnalyst: 200, azReadOnly: 200, azOther: 404}},
		{name: "query assignable users", method: "POST", path: "/query",
			body: `{"query": [{"_name": "getCase", "idOrName": "{case}"}, {"_name": "assignableUsers"}]}`, want: azMembers(200)},
		{name: "query custom fields", method: "POST", path: "/query", body: `{"query": [{"_name": "listCustomField"}]}`, want: azAll(200)},
		{name: "query case templates", method: "POST", path: "/query", body: `{"query": [{"_name": "listCaseTemplate"}]}`, want: azAll(200)},
		{name: "query profiles", method: "POST", path: "/query", body: `{"query": [{"_name": "listProfile"}]}`, want: azAll(200)},
		{name: "query observable types", method: "POST", path: "/query", body: `{"query": [{"_name": "listObservableType"}]}`, want: azAll(200)},

		// --- cases ---
		{name: "create case", method: "POST", path: "/case", body: `{"title": "t", "description": "d"}`,
			want: azNeed(201, 201, azWorkers...)},
		{name: "list cases", method: "GET", path: "/case?range=all", want: azAll(200), shows: []string{"{case}"}, hiddenFromAdmin: true},
		{name: "search cases", method: "POST", path: "/case/_search?range=all", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{case}"}, hiddenFromAdmin: true},
		{name: "get case", method: "GET", path: "/case/{case}", want: azMembers(200)},
		{name: "update case", method: "PATCH", path: "/case/{newCase}", body: `{"title": "changed"}`, want: azNeed(200, 404, azWorkers...)},
		{name: "delete case", method: "DELETE", path: "/case/{newCase}", want: azNeed(204, 404, azWorkers...)},
		{name: "force delete case", method: "DELETE", path: "/case/{newCase}/force", want: azNeed(204, 404, azWorkers...)},
		{name: "case links", method: "GET", path: "/case/{case}/links", want: azMembers(200)},
		{name: "bulk update cases", method: "PATCH", path: "/case/_bulk", body: `{"ids": ["{newCase}"], "title": "changed"}`,
			want: azNeed(200, 404, azWorkers...)},
		// refused calls name the fixture's case twice: the permission and the organisation are checked first
		{name: "merge cases", method: "POST", path: "/case/{newCase}/_merge/{newOtherCase}", want: azNeed(201, 404, azWorkers...)},
		{name: "merge cases (v1)", method: "POST", path: "/case/_merge/{newCase},{newOtherCase}", want: azNeed(201, 404, azWorkers...)},
		{name: "case stats", method: "POST", path: "/case/_stats", body: `{"query": {}, "stats": [{"_agg": "count"}]}`, want: azAll(200)},

		// --- case templates ---
		{name: "list templates", method: "GET", path: "/case/template", want: azAll(200), shows: []string{"{template}"}, hiddenFromAdmin: true},
		{name: "search templates", method: "POST", path: "/case/template/_search", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{template}"}, hiddenFromAdmin: true},
		{name: "create template", method: "POST", path: "/case/template", body: `{"name": "tpl{n}"}`,
			want: azNeed(201, 201, azOrgAdmOnly...)},
		{name: "get template", method: "GET", path: "/case/template/{template}", want: azMembers(200)},
		{name: "update template", method: "PATCH", path: "/case/template/{newTemplate}", body: `{"titlePrefix": "x"}`,
			want: azNeed(200, 404, azOrgAdmOnly...)},
		{name: "delete template", method: "DELETE", path: "/case/template/{newTemplate}", want: azNeed(204, 404, azOrgAdmOnly...)},

		// --- tasks and logs ---
		{name: "create task (contract spelling)", method: "POST", path: "/case/{case}task", body: `{"title": "t"}`,
			want: azNeed(201, 404, azWorkers...)},
		{name: "create task", method: "POST", path: "/case/{case}/task", body: `{"title": "t"}`, want: azNeed(201, 404, azWorkers...)},
		{name: "list tasks of a case", method: "GET", path: "/case/{case}/task", want: azMembers(200), shows: []string{"{task}"}},
		{name: "search tasks of a case", method: "POST", path: "/case/{case}/task/_search", body: `{"query": {}}`, want: azMembers(200),
			shows: []string{"{task}"}},
		{name: "list tasks", method: "GET", path: "/case/task?range=all", want: azAll(200), shows: []string{"{task}"}, hiddenFromAdmin: true},
		{name: "search tasks", method: "POST", path: "/case/task/_search?range=all", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{task}"}, hiddenFromAdmin: true},
		{name: "get task", method: "GET", path: "/case/task/{task}", want: azMembers(200)},
		{name: "update task", method: "PATCH", path: "/case/task/{newTask}", body: `{"title": "changed"}`, want: azNeed(200, 404, azWorkers...)},
		{name: "create log", method: "POST", path: "/case/task/{task}/log", body: `{"message": "m"}`, want: azNeed(201, 404, azWorkers...)},
		{name: "list logs of a task", method: "GET", path: "/case/task/{task}/log", want: azMembers(200), shows: []string{"{log}"}},
		{name: "search logs of a task", method: "POST", path: "/case/task/{task}/log/_search", body: `{"query": {}}`, want: azMembers(200),
			shows: []string{"{log}"}},
		{name: "search logs", method: "POST", path: "/case/task/log/_search?range=all", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{log}"}, hiddenFromAdmin: true},
		{name: "get log", method: "GET", path: "/case/task/log/{log}", want: azMembers(200)},
		{name: "update log", method: "PATCH", path: "/case/task/log/{log}", body: `{"message": "fixture log"}`, want: azNeed(200, 404, azWorkers...)},
		{name: "delete log", method: "DELETE", path: "/case/task/log/{newLog}", want: azNeed(204, 404, azWorkers...)},
		{name: "download a file", method: "GET", path: "/datastore/{hash}?name=x.txt", want: azMembers(200), raw: true},
		{name: "download a file zipped", method: "GET", path: "/datastorezip/{hash}?name=x.txt", want: azMembers(200), raw: true},
		{name: "download an unknown file", method: "GET", path: "/datastore/" + strings.Repeat("0", 64), want: azAll(404)},

		// --- custom fields: global to every organisation, readable by everyone, changed by the platform
		// administrator only (issue 15: an org-admin made one mandatory and broke every organisation) ---
		{name: "list custom fields", method: "GET", path: "/customField", want: azAll(200)},
		{name: "search custom fields", method: "POST", path: "/customField/_search", body: `{"query": {}}`, want: azAll(200)},
		{name: "search custom fields (plural)", method: "POST", path: "/customFields/_search", body: `{"query": {}}`, want: azAll(200)},
		{name: "create custom field", method: "POST", path: "/customField", body: `{"name": "cf{n}", "type": "string"}`,
			want: azNeed(201, 403, azPlatform...)},
		{name: "get custom field", method: "GET", path: "/customField/{field}", want: azAll(200)},
		{name: "update custom field", method: "PATCH", path: "/customField/{newField}", body: `{"description": "x"}`,
			want: azNeed(200, 403, azPlatform...)},
		{name: "delete custom field", method: "DELETE", path: "/customField/{newField}", want: azNeed(204, 403, azPlatform...)},

		// --- observables of cases and alerts ---
		{name: "create case observable", method: "POST", path: "/case/{case}/artifact",
			body: `{"dataType": "domain", "data": "c{n}.example"}`, want: azNeed(201, 404, azWorkers...)},
		{name: "list case observables", method: "GET", path: "/case/{case}/artifact?range=all", want: azMembers(200),
			shows: []string{"{observable}"}},
		{name: "search case observables", method: "POST", path: "/case/{case}/artifact/_search?range=all", body: `{"query": {}}`,
			want: azMembers(200), shows: []string{"{observable}"}},
		{name: "search observables of cases", method: "POST", path: "/case/artifact/_search?range=all", body: `{"query": {}}`,
			want: azAll(200), shows: []string{"{observable}"}, hiddenFromAdmin: true},
		{name: "get case observable", method: "GET", path: "/case/artifact/{observable}", want: azMembers(200)},
		{name: "similar observables", method: "GET", path: "/case/artifact/{observable}/similar", want: azMembers(200)},
		{name: "update case observable", method: "PATCH", path: "/case/artifact/{newObservable}", body: `{"ioc": true}`,
			want: azNeed(200, 404, azWorkers...)},
		{name: "delete case observable", method: "DELETE", path: "/case/artifact/{newObservable}", want: azNeed(204, 404, azWorkers...)},
		{name: "bulk update case observables", method: "PATCH", path: "/case/artifact/_bulk", body: `{"ids": ["{newObservable}"], "ioc": true}`,
			want: azNeed(204, 404, azWorkers...)},
		{name: "create alert observable", method: "POST", path: "/alert/{alert}/artifact",
			body: `{"dataType": "domain", "data": "a{n}.example"}`, want: azNeed(201, 404, azWorkers...)},
		{name: "list alert observables", method: "GET", path: "/alert/{alert}/artifact?range=all", want: azMembers(200),
			shows: []string{"{alertObservable}"}},
		{name: "search alert observables", method: "POST", path: "/alert/{alert}/artifact/_search?range=all", body: `{"query": {}}`,
			want: azMembers(200), shows: []string{"{alertObservable}"}},
		{name: "search observables of alerts", method: "POST", path: "/alert/artifact/_search?range=all", body: `{"query": {}}`,
			want: azAll(200), shows: []string{"{alertObservable}"}, hiddenFromAdmin: true},
		{name: "get alert observable", method: "GET", path: "/alert/artifact/{alertObservable}", want: azMembers(200)},
		{name: "update alert observable", method: "PATCH", path: "/alert/artifact/{newAlertObservable}", body: `{"sighted": true}`,
			want: azNeed(200, 404, azWorkers...)},
		{name: "delete alert observable", method: "DELETE", path: "/alert/artifact/{newAlertObservable}",
			want: azNeed(204, 404, azWorkers...)},

		// --- alerts ---
		{name: "create alert", method: "POST", path: "/alert",
			body: `{"type": "t", "source": "s", "sourceRef": "r{n}", "title": "t", "description": "d"}`, want: azNeed(201, 201, azWorkers...)},
		{name: "list alerts", method: "GET", path: "/alert?range=all", want: azAll(200), shows: []string{"{alert}"}, hiddenFromAdmin: true},
		{name: "search alerts", method: "POST", path: "/alert/_search?range=all", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{alert}"}, hiddenFromAdmin: true},
		{name: "get alert", method: "GET", path: "/alert/{alert}", want: azMembers(200)},
		{name: "get alert by name", method: "GET", path: "/alert/t;s;fixture", want: azMembers(200)},
		{name: "update alert", method: "PATCH", path: "/alert/{alert}", body: `{"description": "changed"}`, want: azNeed(200, 404, azWorkers...)},
		{name: "delete alert", method: "DELETE", path: "/alert/{newAlert}", want: azNeed(204, 404, azWorkers...)},
		{name: "mark alert as read", method: "POST", path: "/alert/{alert}/markAsRead", want: azNeed(200, 404, azWorkers...)},
		{name: "mark alert as unread", method: "POST", path: "/alert/{alert}/markAsUnread", want: azNeed(200, 404, azWorkers...)},
		{name: "mark alert as unread (contract spelling)", method: "POST", path: "/alert/{alert}/markAsUnead", want: azNeed(200, 404, azWorkers...)},
		{name: "follow alert", method: "POST", path: "/alert/{alert}/follow", want: azNeed(200, 404, azWorkers...)},
		{name: "unfollow alert", method: "POST", path: "/alert/{alert}/unfollow", want: azNeed(200, 404, azWorkers...)},
		{name: "case from alert", method: "POST", path: "/alert/{newAlert}/createCase", want: azNeed(201, 404, azWorkers...)},
		{name: "merge alert", method: "POST", path: "/alert/{newAlert}/merge/{case}", want: azNeed(200, 404, azWorkers...)},
		{name: "merge alerts", method: "POST", path: "/alert/merge/_bulk", body: `{"caseId": "{case}", "alertIds": ["{newAlert}"]}`,
			want: azNeed(200, 404, azWorkers...)},
		{name: "bulk delete alerts", method: "POST", path: "/alert/delete/_bulk", body: `{"ids": ["{newAlert}"]}`,
			want: azNeed(204, 404, azWorkers...)},

		// --- the query API (/api/v0 and /api/v1 only) ---
		{name: "query list", method: "POST", path: "/query",
			body: `{"query": [{"_name": "listCase"}, {"_name": "page", "from": 0, "to": 1000}]}`, want: azAll(200),
			shows: []string{"{case}"}, hiddenFromAdmin: true},
		{name: "query get", method: "POST", path: "/query", body: `{"query": [{"_name": "getCase", "idOrName": "{case}"}]}`,
			want: azMembers(200)},
		{name: "query linked cases", method: "POST", path: "/query",
			body: `{"query": [{"_name": "getCase", "idOrName": "{case}"}, {"_name": "linkedCases"}]}`, want: azMembers(200)},
	}

	// --- automation (/api only): sets and rules need manageAutomation to change, membership to read; a run
	// needs manageAnalyse (the down server's jobs are made by name, Waiting) ---
	rows = append(rows,
		azRow{name: "list analyzer sets", method: "GET", path: "/automation/set", want: azAll(200), shows: []string{"{set}"}, hiddenFromAdmin: true},
		azRow{name: "search analyzer sets", method: "POST", path: "/automation/set/_search", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{set}"}, hiddenFromAdmin: true},
		azRow{name: "create analyzer set", method: "POST", path: "/automation/set", body: `{"name": "set{n}"}`, want: azNeed(201, 201, azOrgAdmOnly...)},
		azRow{name: "get analyzer set", method: "GET", path: "/automation/set/{set}", want: azMembers(200)},
		azRow{name: "update analyzer set", method: "PATCH", path: "/automation/set/{newSet}", body: `{"description": "x"}`,
			want: azNeed(200, 404, azOrgAdmOnly...)},
		azRow{name: "delete analyzer set", method: "DELETE", path: "/automation/set/{newSet}", want: azNeed(204, 404, azOrgAdmOnly...)},
		azRow{name: "bulk run", method: "POST", path: "/automation/run",
			body: `{"caseId": "{case}", "analyzers": [{"analysisId": "down", "name": "Echo"}], "force": true}`, want: azNeed(200, 404, azWorkers...)},
		azRow{name: "list rules", method: "GET", path: "/automation/rule", want: azAll(200), shows: []string{"{rule}"}, hiddenFromAdmin: true},
		azRow{name: "search rules", method: "POST", path: "/automation/rule/_search", body: `{"query": {}}`, want: azAll(200),
			shows: []string{"{rule}"}, hiddenFromAdmin: true},
		azRow{name: "create rule", method: "POST", path: "/automation/rule",
			body: `{"name": "rule{n}", "event": "caseCreated", "actions": [{"type": "addTags", "tags": ["x"]}]}`, want: azNeed(201, 201, azOrgAdmOnly...)},
		azRow{name: "get rule", method: "GET", path: "/automation/rule/{rule}", want: azMembers(200)},
		azRow{name: "update rule", method: "PATCH", path: "/automation/rule/{newRule}", body: `{"dryRun": true}`, want: azNeed(200, 404, azOrgAdmOnly...)},
		azRow{name: "delete rule", method: "DELETE", path: "/automation/rule/{newRule}", want: azNeed(204, 404, azOrgAdmOnly...)},
		azRow{name: "rule history", method: "GET", path: "/automation/rule/{rule}/history", want: azMembers(200)},
		azRow{name: "search rule history", method: "POST", path: "/automation/rule/{rule}/history/_search", body: `{"query": {}}`, want: azMembers(200)},
	)

	// --- the connector (/api only), at both spellings ---
	rows = append(rows,
		azRow{name: "analyzer job", method: "GET", path: "/connector/job/{job}", want: azMembers(200)})
	for _, n := range []string{"analysis", "cortex"} {
		p := "/connector/" + n
		rows = append(rows,
			azRow{name: n + " run analyzer", method: "POST", path: p + "/job",
				body: `{"analysisId": "down", "artifactId": "{observable}", "analyzerId": "Echo_1_0"}`,
				want: azNeed(azDownStatus, 404, azWorkers...)},
			azRow{name: n + " analyzer job", method: "GET", path: p + "/job/{job}", want: azMembers(200)},
			// analyzers need manageAnalyse; the down server is left out of a successful list
			azRow{name: n + " analyzers", method: "GET", path: p + "/analyzer", want: azNeed(200, 200, azWorkers...)},
			azRow{name: n + " analyzers of a type", method: "GET", path: p + "/analyzer/type/ip", want: azNeed(200, 200, azWorkers...)},
			// responders are listed to every member
			azRow{name: n + " responders", method: "GET", path: p + "/responder", want: azAll(200)},
			azRow{name: n + " responders of an object", method: "GET", path: p + "/responder/case_task/{task}", want: azMembers(200)},
			azRow{name: n + " run responder", method: "POST", path: p + "/action",
				body: `{"analysisId": "down", "responderId": "Tagger_1_0", "objectType": "case_task", "objectId": "{task}"}`,
				want: azNeed(azDownStatus, 404, azWorkers...)},
			azRow{name: n + " get action", method: "GET", path: p + "/action/{action}", want: azMembers(200)},
			azRow{name: n + " search jobs", method: "POST", path: p + "/job/_search?range=all", body: `{"query": {}}`, want: azAll(200),
				shows: []string{"{job}"}, hiddenFromAdmin: true},
			// the only server is down: a permitted caller finds no analyzer
			azRow{name: n + " one analyzer", method: "GET", path: p + "/analyzer/Echo_1_0", want: azNeed(404, 404, azWorkers...)},
			azRow{name: n + " search responders", method: "POST", path: p + "/responder/_search", body: `{"query": {}}`, want: azAll(200)},
			azRow{name: n + " actions of an object", method: "GET", path: p + "/action/case_task/{task}", want: azMembers(200), shows: []string{"{action}"}},
		)
	}
	rows = append(rows, azEventRows()...) // events_test.go
	rows = append(rows, azPageRows()...)
	return rows
}

var azPrefixes = []string{"/api", "/api/v0", "/api/v1"}

// azRoutes maps the router's routes (method and path) to their handler names.
func azRoutes(e *env) map[string]string {
	routes := map[string]string{}
	for _, r := range e.echo.Routes() {
		if r.Method == "echo_route_not_found" {
			continue
		}
		routes[r.Method+" "+r.Path] = r.Name
	}
	return routes
}

// azFind returns the registered route ("METHOD /path/:param") a request path reaches, "" when none.
func azFind(e *env, routes map[string]string, method, path string) string {
	path, _, _ = strings.Cut(azPlaceholder.ReplaceAllString(path, "x"), "?")
	c := e.echo.NewContext(httptest.NewRequest(method, path, nil), httptest.NewRecorder())
	e.echo.Router().Find(method, path, c)
	key := method + " " + c.Path()
	if _, ok := routes[key]; !ok {
		return ""
	}
	return key
}

// azTargets are the full paths (with placeholders) a row runs at: its absolute path, or every prefix where the
// route exists.
func azTargets(e *env, routes map[string]string, row azRow) []string {
	if row.abs {
		return []string{row.path}
	}
	var out []string
	for _, p := range azPrefixes {
		key := azFind(e, routes, row.method, p+row.path)
		if key != "" && strings.HasPrefix(strings.TrimPrefix(key, row.method+" "), p+"/") {
			out = append(out, p+row.path)
		}
	}
	return out
}

// TestAuthz_EveryRouteHasARow fails when a route of the router has no row in azRows (after removing its
// /api, /api/v0 or /api/v1 prefix), when a row reaches no route, or when one route shape has different handlers
// under different prefixes (the rows rely on the prefixes sharing handlers).
func TestAuthz_EveryRouteHasARow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withServers(connector.AnalysisConfig{}, azDown(nil)), withoutTracker())
	routes := azRoutes(e)
	if len(routes) < 200 {
		t.Fatalf("the router lists only %d routes", len(routes))
	}
	covered := map[string]bool{}
	for _, row := range azRows() {
		targets := azTargets(e, routes, row)
		if len(targets) == 0 {
			t.Errorf("row %q (%s %s) reaches no route", row.name, row.method, row.path)
		}
		for _, p := range targets {
			covered[azFind(e, routes, row.method, p)] = true
		}
	}
	shapes := map[string]string{} // method + path without prefix → handler name
	for _, key := range slices.Sorted(maps.Keys(routes)) {
		if !covered[key] {
			t.Errorf("route %s has no row in the authorization matrix (azRows in authz_test.go)", key)
		}
		method, path, _ := strings.Cut(key, " ")
		for _, p := range []string{"/api/v0", "/api/v1", "/api"} {
			if rest, ok := strings.CutPrefix(path, p+"/"); ok {
				path = "/" + rest
				break
			}
		}
		shape := method + " " + path
		if h, ok := shapes[shape]; ok && h != routes[key] {
			t.Errorf("%s: handler %s, but %s under another prefix", key, routes[key], h)
		}
		shapes[shape] = routes[key]
	}
	t.Logf("%d routes, %d shapes", len(routes), len(shapes))
}

// TestAuthz_Matrix calls every route, under every prefix where it exists, as every caller, and checks the
// status (and, for refusals, the error type; for lists, that soc's records show to soc only).
func TestAuthz_Matrix(t *testing.T) {
	t.Parallel()
	f := newAzFixture(t)
	routes := azRoutes(f.e)
	calls := atomic.Int64{}
	t.Cleanup(func() { t.Logf("%d calls", calls.Load()) })
	for _, row := range azRows() {
		for _, target := range azTargets(f.e, routes, row) {
			t.Run(row.name+" "+target, func(t *testing.T) {
				t.Parallel()
				for _, name := range azCallers {
					want, ok := row.want[name]
					if !row.public && slices.Contains(azUnauthenticated, name) {
						want, ok = http.StatusUnauthorized, true
						if row.page && row.method == http.MethodGet {
							want = http.StatusSeeOther
						}
					}
					if !ok {
						t.Fatalf("row %q has no status for %s", row.name, name)
					}
					t.Run(name, func(t *testing.T) {
						calls.Add(1)
						f.call(t, row, target, name, want)
					})
				}
			})
		}
	}
	t.Cleanup(func() {
		if strings.Contains(f.e.logs.String(), azDownKey) {
			t.Errorf("the analysis server's key is in the logs")
		}
	})
}

// call runs one row as one caller and checks the answer.
func (f *azFixture) call(t *testing.T, row azRow, target, name string, want int) {
	c := f.callers[name]
	if row.self && !slices.Contains(azUnauthenticated, name) {
		c = f.freshCaller(t, name, row.password)
	}
	r := f.resolve(t, c.Login, want < 300, target, row.body)
	path, body := r[0], r[1]
	if row.page {
		f.callPage(t, c, row, path, body, want)
		return
	}
	var res *resp
	if body == "" {
		res = c.Send(t, row.method, path, "", nil, nil)
	} else {
		res = c.Raw(t, row.method, path, "application/json", body)
	}
	switch {
	case want >= 400:
		typ := map[int]string{401: "AuthenticationError", 403: "AuthorizationError", 404: "NotFoundError",
			503: "ServiceUnavailable"}[want]
		msg := res.WantError(t, want, typ)
		if want == http.StatusForbidden && !strings.Contains(msg, "permission") && !strings.Contains(msg, "itself") {
			t.Errorf("403 message %q names neither a permission nor the rule", msg)
		}
		if strings.Contains(string(res.Body), azDownKey) {
			t.Errorf("the answer holds the analysis server's key: %s", res.Body)
		}
		return
	case row.text:
		res.Want(t, want)
		if k := res.Text(t); len(k) < 32 {
			t.Errorf("key %q shorter than 32 characters", k)
		}
		return
	case row.raw:
		res.Want(t, want)
		return
	}
	res.Want(t, want)
	if len(res.Body) > 0 {
		var v any
		res.Decode(t, &v)
	}
	if strings.Contains(string(res.Body), azDownKey) {
		t.Errorf("the answer holds the analysis server's key: %s", res.Body)
	}
	for _, ph := range row.shows {
		id := ph
		if v, ok := f.objects[ph]; ok {
			id = v
		}
		if !strings.HasPrefix(id, `"`) {
			id = `"` + id + `"` // a whole JSON string: "~1" is not "~18"
		}
		has := strings.Contains(string(res.Body), id)
		switch {
		case (name == azOther || (name == azAdmin && row.hiddenFromAdmin)) && has:
			t.Errorf("%s sees soc's %s %s: %s", name, ph, id, res.Body)
		case (name == azOrgAdmin || name == azAnalyst || name == azReadOnly) && !has:
			t.Errorf("%s does not see its organisation's %s %s: %.2000s", name, ph, id, res.Body)
		}
	}
}

// azPageRows are the web interface's routes (internal/webui): its pages answer what the API would to the same
// caller (a record of another organisation is not found, a missing permission is refused), in HTML.
func azPageRows() []azRow {
	cases := azAll(200) // as the API's lists: the platform administrator's are empty
	return []azRow{
		{name: "page root", method: "GET", path: "/", abs: true, public: true, page: true, want: azEveryone(302)},
		{name: "page /ui", method: "GET", path: "/ui", abs: true, public: true, page: true, want: azEveryone(302)},
		{name: "page /ui/", method: "GET", path: "/ui/", abs: true, public: true, page: true, want: azEveryone(302)},
		{name: "page icon", method: "GET", path: "/favicon.ico", abs: true, public: true, page: true, want: azEveryone(301)},
		{name: "page asset", method: "GET", path: webui.Asset("ui.css"), abs: true, public: true, page: true, want: azEveryone(200)},
		{name: "page login", method: "GET", path: "/ui/login", abs: true, public: true, page: true, want: azEveryone(200)},
		{name: "page counters", method: "GET", path: "/ui/counters", abs: true, page: true, want: azAll(200)},
		{name: "page cases", method: "GET", path: "/ui/cases", abs: true, page: true, want: cases},
		{name: "page case", method: "GET", path: "/ui/cases/{case}", abs: true, page: true, want: azMembers(200)},
		{name: "page case tasks", method: "GET", path: "/ui/cases/{case}?tab=tasks", abs: true, page: true, want: azMembers(200)},
		{name: "page case observables", method: "GET", path: "/ui/cases/{case}/observables", abs: true, page: true, want: azMembers(200)},
		{name: "page observable", method: "GET", path: "/ui/observables/{observable}", abs: true, page: true, want: azMembers(200)},
		{name: "page case actions", method: "GET", path: "/ui/actions/case/{case}", abs: true, page: true, want: azMembers(200)},
		{name: "page alerts", method: "GET", path: "/ui/alerts", abs: true, page: true, want: cases},
		{name: "page alert", method: "GET", path: "/ui/alerts/{alert}", abs: true, page: true, want: azMembers(200)},
		{name: "page my tasks", method: "GET", path: "/ui/tasks/mine", abs: true, page: true, want: cases},
		{name: "page waiting tasks", method: "GET", path: "/ui/tasks/waiting", abs: true, page: true, want: cases},
		{name: "page users", method: "GET", path: "/ui/admin/users", abs: true, page: true,
			want: map[string]int{azAdmin: 200, azOrgAdmin: 200, azAnalyst: 403, azReadOnly: 403, azOther: 200}},
		{name: "page templates", method: "GET", path: "/ui/admin/templates", abs: true, page: true,
			want: map[string]int{azAdmin: 404, azOrgAdmin: 200, azAnalyst: 403, azReadOnly: 403, azOther: 200}},
		{name: "page organisations", method: "GET", path: "/ui/admin/organisations", abs: true, page: true, want: azNeed(200, 403, azAdmin)},
		{name: "page profiles", method: "GET", path: "/ui/admin/profiles", abs: true, page: true, want: azNeed(200, 403, azAdmin)},
		{name: "page custom fields", method: "GET", path: "/ui/admin/customfields", abs: true, page: true, want: azNeed(200, 403, azAdmin)},
		{name: "page organisation switch", method: "POST", path: "/ui/organisation", abs: true, page: true,
			body: `{"organisation": "soc"}`, want: map[string]int{azAdmin: 404, azOrgAdmin: 204, azAnalyst: 204, azReadOnly: 204, azOther: 404}},
	}
}

// callPage runs a page row as one caller, without following redirects: a redirect of a caller without a
// valid credential goes to the login page with the page to come back to; a page or an error page is HTML.
func (f *azFixture) callPage(t *testing.T, c *client, row azRow, path, body string, want int) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(row.method, f.e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.Jar != nil && row.method != http.MethodGet {
		req.Header.Set("X-XSRF-TOKEN", c.Cookie("XSRF-TOKEN"))
	}
	res, err := (&http.Client{Jar: c.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %.300s", row.method, path, res.StatusCode, want, b)
	}
	ct := res.Header.Get("Content-Type")
	switch {
	case want == http.StatusSeeOther && !row.public:
		if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/ui/login?next=") {
			t.Errorf("redirected to %q, not the login page", loc)
		}
	case want >= 300 && want < 400, want == http.StatusNoContent:
	case row.method == http.MethodGet && path != "/ui/counters" && !strings.HasPrefix(path, "/ui/static/") && !strings.HasPrefix(ct, "text/html"):
		t.Errorf("a page answered %s", ct)
	}
	if strings.Contains(string(b), azDownKey) {
		t.Errorf("the page holds the analysis server's key")
	}
}
