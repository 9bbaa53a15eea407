package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/openapi"
)

// The callers of the role table, in the order each row runs them: the superadmin comes last because its
// calls (locking an organization, revoking its own key) would change what the others see. The first five never
// authenticate: every route behind authentication answers them 401 AuthenticationError.
const (
	anonymous      = "anonymous"
	lockedUser     = "locked user"
	lockedOrg      = "user of a locked org"
	revokedKey     = "revoked key"     // an orgadmin of org A whose key was revoked (DELETE …/key) after use
	expiredSession = "expired session" // an orgadmin of org A whose session cookie outlived the 1 h TTL
	readA          = "read A"
	analyzeA       = "analyze A"
	orgAdminB      = "orgadmin B" // the user of another organization: org A's objects answer it 404
	orgAdminA      = "orgadmin A"
	superadmin     = "superadmin"
)

var callerOrder = []string{anonymous, lockedUser, lockedOrg, revokedKey, expiredSession, readA, analyzeA,
	orgAdminB, orgAdminA, superadmin}

// unauthenticated are the callers without a valid credential.
var unauthenticated = []string{anonymous, lockedUser, lockedOrg, revokedKey, expiredSession}

// roleFixture is one server holding organizations org-a, org-b, org-t (a target to lock) and the locked
// org-c, and a user per caller, each with an API key (or, for the expired session, a cookie). With objects, org
// A also has an enabled analyzer and responder, a finished job with an artifact and an uploaded file.
type roleFixture struct {
	e       *env
	callers map[string]*client
	objects map[string]string // placeholder ({analyzer}, {responder}, {job}, {hash}) → id of that object of org A
	fresh   atomic.Int64
}

const (
	orgA, orgB, orgC, orgT = "org-a", "org-b", "org-c", "org-t"
	targetLogin            = "target" // a read user of org A, with a key
	selfPassword           = "self-password-0"
	expiredLogin           = "ex"
	expiredPassword        = "expired-password-0"
)

type fixtureOptions struct {
	passwords bool // every authenticated caller gets selfPassword
	objects   bool // org A gets an analyzer, a responder, a finished job and a file
}

// newRoleFixture builds the callers (and objects).
func newRoleFixture(t *testing.T, o fixtureOptions) *roleFixture {
	t.Helper()
	clk := &clock{t: time.Now()}
	opts := []envOption{withClock(clk.now)}
	if o.passwords {
		opts = append(opts, withSuperPassword())
	}
	e := newEnv(t, opts...)
	for _, o := range []string{orgA, orgB, orgC, orgT} {
		e.createOrg(t, o)
	}
	f := &roleFixture{e: e, objects: map[string]string{}, callers: map[string]*client{
		anonymous:  e.anon(),
		superadmin: e.super,
		orgAdminA:  e.user(t, "oa", orgA, roleOrgAdmin),
		analyzeA:   e.user(t, "an", orgA, roleAnalyze),
		readA:      e.user(t, "rd", orgA, roleRead),
		orgAdminB:  e.user(t, "ob", orgB, roleOrgAdmin),
		lockedUser: e.user(t, "lk", orgA, roleRead),
		lockedOrg:  e.user(t, "lc", orgC, roleOrgAdmin),
		revokedKey: e.user(t, "rv", orgA, roleOrgAdmin),
	}}
	e.user(t, targetLogin, orgA, roleRead)
	e.super.Call(t, http.MethodPatch, "/api/user/lk", map[string]string{"status": "Locked"}).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodDelete, "/api/organization/"+orgC, nil).Want(t, http.StatusNoContent)

	// The revoked key worked before its revocation.
	f.callers[revokedKey].Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodDelete, "/api/user/rv/key", nil).Want(t, http.StatusOK)

	// The expired session worked, then the clock moves past the 1 h inactivity timeout. The cookies go in a
	// fixed header (not a jar) so that no response can renew or replace them; the CSRF header is sent too, so
	// the 401 comes from the expiry and not from a missing CSRF token.
	e.createUser(t, e.super, expiredLogin, orgA, roleOrgAdmin)
	e.setPassword(t, expiredLogin, expiredPassword)
	s := e.sessionClient()
	s.loginAs(t, expiredLogin, expiredPassword).Want(t, http.StatusOK)
	s.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	ex := e.newClient(expiredLogin)
	ex.Header.Set("Cookie", auth.SessionCookie+"="+s.Cookie(auth.SessionCookie)+"; "+auth.CSRFCookie+"="+s.Cookie(auth.CSRFCookie))
	ex.Header.Set(auth.CSRFHeader, s.Cookie(auth.CSRFCookie))
	ex.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	clk.advance(61 * time.Minute)
	f.callers[expiredSession] = ex

	if o.passwords {
		f.callers[superadmin].Password = superPassword
		for _, c := range []string{orgAdminA, analyzeA, readA, orgAdminB} {
			e.setPassword(t, f.callers[c].Login, selfPassword)
			f.callers[c].Password = selfPassword
		}
	}
	if o.objects {
		f.makeObjects(t)
	}
	return f
}

// makeObjects gives org A an analyzer, a responder, a finished job with an artifact, and a file.
func (f *roleFixture) makeObjects(t *testing.T) {
	t.Helper()
	oa, an := f.callers[orgAdminA], f.callers[analyzeA]
	f.objects["{analyzer}"] = f.enable(t, "analyzer", "Test_Echo_1_0", "Echo of A")
	f.objects["{responder}"] = f.enable(t, "responder", "Test_Responder_1_0", "Responder of A")
	job := an.Call(t, http.MethodPost, "/api/analyzer/"+f.objects["{analyzer}"]+"/run", map[string]any{"dataType": "ip",
		"data": "192.0.2.1", "parameters": map[string]any{"artifact": "192.0.2.2"}}).Want(t, http.StatusOK).Object(t)["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := oa.Call(t, http.MethodGet, "/api/job/"+job+"/waitreport?atMost=10s", nil).Want(t, http.StatusOK).Object(t)["status"]
		if st == "Success" {
			break
		}
		if st == "Failure" || time.Now().After(deadline) {
			t.Fatalf("fixture job %s: %v", job, st)
		}
	}
	f.objects["{job}"] = job
	fj := multipartRun(t, an, "/api/analyzer/"+f.objects["{analyzer}"]+"/run", "attachment", "sample.txt",
		[]byte("the file of org A"), `{"dataType":"file"}`).Want(t, http.StatusOK).Object(t)
	f.objects["{hash}"] = fj["attachment"].(map[string]any)["id"].(string)
}

// enable enables a definition in org A as orgadmin A and returns the id.
func (f *roleFixture) enable(t *testing.T, kind, def, name string) string {
	t.Helper()
	return f.callers[orgAdminA].Call(t, http.MethodPost, "/api/organization/"+kind+"/"+def, map[string]any{"name": name}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
}

// resolve replaces the placeholders of a row's path: {self} (the caller's login, target for callers without
// one), the fixture's objects, and {newAnalyzer}, {newResponder}, {newJob}: an object of org A made for this
// call only, for rows that change or delete it.
func (f *roleFixture) resolve(t *testing.T, path string, c *client) string {
	t.Helper()
	self := c.Login
	if self == "" {
		self = targetLogin
	}
	path = strings.ReplaceAll(path, "{self}", self)
	for k, v := range f.objects {
		path = strings.ReplaceAll(path, k, v)
	}
	n := f.fresh.Add(1)
	if strings.Contains(path, "{newAnalyzer}") {
		path = strings.ReplaceAll(path, "{newAnalyzer}", f.enable(t, "analyzer", "Test_Echo_1_0", fmt.Sprintf("fresh %d", n)))
	}
	if strings.Contains(path, "{newResponder}") {
		path = strings.ReplaceAll(path, "{newResponder}", f.enable(t, "responder", "Test_Responder_1_0", fmt.Sprintf("fresh %d", n)))
	}
	if strings.Contains(path, "{newJob}") {
		id := f.callers[analyzeA].Call(t, http.MethodPost, "/api/analyzer/"+f.objects["{analyzer}"]+"/run",
			map[string]any{"dataType": "ip", "data": fmt.Sprintf("10.99.%d.%d", n/250, n%250)}).Want(t, http.StatusOK).Object(t)["id"].(string)
		path = strings.ReplaceAll(path, "{newJob}", id)
	}
	if strings.Contains(path, "{") {
		t.Fatalf("unresolved placeholder in %s", path)
	}
	return path
}

// roleRow is one endpoint with the status each caller gets.
type roleRow struct {
	name   string
	method string
	path   string // with placeholders, see roleFixture.resolve
	body   func(caller string, c *client) any
	// want holds the status of the authenticated callers; the unauthenticated ones always get 401 unless the
	// route is public, when want holds every caller.
	want      map[string]int
	public    bool // the route needs no authentication
	passwords bool // the row needs the callers' passwords
	// shared rows read, or change only objects made for the call ({new…}): they run on one fixture, which has
	// org A's objects. The others each get a fixture of their own.
	shared bool
	text   bool // a successful answer is text/plain (API keys)
	raw    bool // a successful answer is not JSON (a download, metrics)
	// shows are placeholders of org A objects that a successful answer lists for org A's users and never for
	// orgadmin B.
	shows []string
}

// all5 gives the same status to the five authenticated callers.
func all5(code int) map[string]int {
	return map[string]int{superadmin: code, orgAdminA: code, analyzeA: code, readA: code, orgAdminB: code}
}

// everyone gives the same status to every caller (public routes).
func everyone(code int) map[string]int {
	m := map[string]int{}
	for _, c := range callerOrder {
		m[c] = code
	}
	return m
}

// superOnly: 2xx for the superadmin, 403 for everyone else.
func superOnly(code int) map[string]int {
	m := all5(http.StatusForbidden)
	m[superadmin] = code
	return m
}

// adminsOfA: the superadmin and orgadmin A succeed, org A's other users get 403, orgadmin B gets 404 (an
// object of another organization is never revealed).
func adminsOfA(code int) map[string]int {
	return map[string]int{superadmin: code, orgAdminA: code, analyzeA: http.StatusForbidden,
		readA: http.StatusForbidden, orgAdminB: http.StatusNotFound}
}

// orgRoles gives code to org A's users holding one of the roles (read, analyze, orgadmin), 403 to the others
// and to the superadmin (not an organization user), and other to orgadmin B: 404 for an object of org A, the
// success code for a list or for an action in its own organization.
func orgRoles(code, other int, roles ...string) map[string]int {
	m := map[string]int{superadmin: http.StatusForbidden, orgAdminB: other}
	for caller, role := range map[string]string{readA: "read", analyzeA: "analyze", orgAdminA: "orgadmin"} {
		m[caller] = http.StatusForbidden
		if slices.Contains(roles, role) {
			m[caller] = code
		}
	}
	return m
}

func emptyQuery(string, *client) any { return map[string]any{"query": map[string]any{}} }

func nameBody(caller string, _ *client) any {
	return map[string]string{"name": "renamed by " + caller}
}

func roleRows() []roleRow {
	seeA := map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 200, readA: 200, orgAdminB: 404}
	rows := []roleRow{
		{name: "list organizations", shared: true, method: "GET", path: "/api/organization", want: superOnly(200)},
		{name: "search organizations", shared: true, method: "POST", path: "/api/organization/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: superOnly(200)},
		{name: "count organizations", shared: true, method: "POST", path: "/api/organization/_stats",
			body: func(string, *client) any {
				return map[string]any{"query": map[string]any{}, "stats": []any{map[string]any{"_agg": "count"}}}
			}, want: superOnly(200)},
		{name: "create organization", method: "POST", path: "/api/organization",
			body: func(caller string, _ *client) any {
				return map[string]string{"name": "new-" + strings.ReplaceAll(caller, " ", "-")}
			}, want: superOnly(201)},
		{name: "get own org A", shared: true, method: "GET", path: "/api/organization/" + orgA, want: seeA},
		{name: "get org B", shared: true, method: "GET", path: "/api/organization/" + orgB,
			want: map[string]int{superadmin: 200, orgAdminA: 404, analyzeA: 404, readA: 404, orgAdminB: 200}},
		{name: "get unknown org", shared: true, method: "GET", path: "/api/organization/nope", want: all5(404)},
		{name: "update org A", method: "PATCH", path: "/api/organization/" + orgA,
			body: func(c string, _ *client) any { return map[string]string{"description": "by " + c} }, want: superOnly(200)},
		{name: "delete org T", method: "DELETE", path: "/api/organization/" + orgT, want: superOnly(204)},
		{name: "delete own org A", method: "DELETE", path: "/api/organization/" + orgA,
			want: map[string]int{orgAdminA: 403, analyzeA: 403, readA: 403, orgAdminB: 403}},
		{name: "list users of org A", shared: true, method: "GET", path: "/api/organization/" + orgA + "/user", want: adminsOfA(200)},
		{name: "search users of org A", shared: true, method: "POST", path: "/api/organization/" + orgA + "/user/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: adminsOfA(200)},
		{name: "list users", shared: true, method: "GET", path: "/api/user", want: superOnly(200)},
		{name: "search users", shared: true, method: "POST", path: "/api/user/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: superOnly(200)},
		{name: "create user in org A", method: "POST", path: "/api/user",
			body: func(caller string, _ *client) any {
				return map[string]any{"login": "new-" + strings.ReplaceAll(caller, " ", "-"), "organization": orgA,
					"roles": roleRead}
			},
			// orgadmin B may create users, but only in its own organization: 403.
			want: map[string]int{superadmin: 201, orgAdminA: 201, analyzeA: 403, readA: 403, orgAdminB: 403}},
		{name: "get user of org A", shared: true, method: "GET", path: "/api/user/" + targetLogin, want: seeA},
		{name: "get self", shared: true, method: "GET", path: "/api/user/{self}", want: all5(200)},
		{name: "get the superadmin", shared: true, method: "GET", path: "/api/user/" + superLogin,
			want: map[string]int{superadmin: 200, orgAdminA: 404, analyzeA: 404, readA: 404, orgAdminB: 404}},
		{name: "get unknown user", shared: true, method: "GET", path: "/api/user/nobody", want: all5(404)},
		{name: "update name of user of org A", method: "PATCH", path: "/api/user/" + targetLogin, body: nameBody,
			want: adminsOfA(200)},
		{name: "update own name", method: "PATCH", path: "/api/user/{self}", body: nameBody, want: all5(200)},
		{name: "set password of user of org A", method: "POST", path: "/api/user/" + targetLogin + "/password/set",
			body: func(string, *client) any { return map[string]string{"password": "new-password-1"} },
			want: adminsOfA(204)},
		{name: "change password of user of org A", method: "POST", path: "/api/user/" + targetLogin + "/password/change",
			body: func(string, *client) any {
				return map[string]string{"currentPassword": "whatever-1", "password": "new-password-1"}
			},
			// only the user itself, whatever the caller's roles.
			want: map[string]int{superadmin: 403, orgAdminA: 403, analyzeA: 403, readA: 403, orgAdminB: 404}},
		{name: "change own password", method: "POST", path: "/api/user/{self}/password/change", passwords: true,
			body: func(_ string, c *client) any {
				return map[string]string{"currentPassword": c.Password, "password": "changed-password-1"}
			}, want: all5(204)},
		{name: "renew key of user of org A", method: "POST", path: "/api/user/" + targetLogin + "/key/renew",
			want: adminsOfA(200), text: true},
		{name: "renew own key", method: "POST", path: "/api/user/{self}/key/renew", want: all5(200), text: true},
		{name: "get key of user of org A", shared: true, method: "GET", path: "/api/user/" + targetLogin + "/key",
			want: adminsOfA(200), text: true},
		{name: "get own key", shared: true, method: "GET", path: "/api/user/{self}/key", want: all5(200), text: true},
		{name: "revoke key of user of org A", method: "DELETE", path: "/api/user/" + targetLogin + "/key",
			want: adminsOfA(200)},
		{name: "revoke own key", method: "DELETE", path: "/api/user/{self}/key",
			want: map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 403, readA: 403, orgAdminB: 200}},
		{name: "current user", shared: true, method: "GET", path: "/api/user/current", want: all5(200)},
	}
	return append(append(append(rows, workerRows()...), jobRows()...), eventRows()...)
}

// workerRows are the analyzer and responder routes (internal/analysis/workers.go and jobs.go: definitions need
// orgadmin or superadmin; enable, update and disable orgadmin; reading and running analyze or orgadmin).
func workerRows() []roleRow {
	var rows []roleRow
	for _, k := range []struct {
		kind, other, def, dataType string
		run                        map[string]any
	}{
		{"analyzer", "responder", "Test_Echo_1_0", "ip", map[string]any{"dataType": "ip", "data": "198.51.100.1"}},
		{"responder", "analyzer", "Test_Responder_1_0", "thehive:case",
			map[string]any{"dataType": "thehive:case", "data": map[string]any{"title": "a case"}}},
	} {
		n, self := k.kind, "{"+k.kind+"}"
		fresh := "{new" + strings.ToUpper(n[:1]) + n[1:] + "}"
		lister := orgRoles(200, 200, "analyze", "orgadmin") // orgadmin B lists its own (empty) organization
		rows = append(rows,
			roleRow{name: n + " definitions", method: "GET", path: "/api/" + n + "definition",
				want: map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 403, readA: 403, orgAdminB: 200}},
			// Re-reading the definition folders (none configured here: the test definitions are fixed ones).
			roleRow{name: "scan " + n + " definitions", method: "POST", path: "/api/" + n + "definition/scan",
				want: map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 403, readA: 403, orgAdminB: 200}},
			roleRow{name: "enable " + n, method: "POST", path: "/api/organization/" + n + "/" + k.def,
				body: func(caller string, _ *client) any { return map[string]any{"name": "enabled by " + caller} },
				// orgadmin B enables the definition in its own organization.
				want: orgRoles(201, 201, "orgadmin")},
			roleRow{name: "enable unknown " + n + " definition", method: "POST", path: "/api/organization/" + n + "/Nope_1_0",
				body: func(string, *client) any { return map[string]any{} }, want: orgRoles(404, 404, "orgadmin")},
			roleRow{name: "list " + n + "s of the organization", method: "GET", path: "/api/organization/" + n + "?range=all",
				want: lister, shows: []string{self}},
			roleRow{name: "list " + n + "s", method: "GET", path: "/api/" + n + "?range=all", want: lister, shows: []string{self}},
			roleRow{name: "search " + n + "s of the organization", method: "GET", path: "/api/organization/" + n + "/_search?range=all",
				want: lister, shows: []string{self}},
			roleRow{name: n + " base configurations", method: "GET", path: "/api/" + n + "config", want: orgRoles(200, 200, "orgadmin")},
			roleRow{name: "get " + n + " global configuration", method: "GET", path: "/api/" + n + "config/global",
				want: orgRoles(200, 200, "orgadmin")},
			roleRow{name: "get unknown " + n + " configuration", method: "GET", path: "/api/" + n + "config/Nope",
				want: orgRoles(404, 404, "orgadmin")},
			roleRow{name: "update " + n + " global configuration", method: "PATCH", path: "/api/" + n + "config/global",
				body: func(string, *client) any { return map[string]any{"config": map[string]any{}} },
				want: orgRoles(200, 200, "orgadmin")},
			roleRow{name: "search " + n + "s", method: "POST", path: "/api/" + n + "/_search?range=all", body: emptyQuery,
				want: lister, shows: []string{self}},
			roleRow{name: n + "s for a data type", method: "GET", path: "/api/" + n + "/type/" + k.dataType,
				want: lister, shows: []string{self}},
			roleRow{name: "get " + n, method: "GET", path: "/api/" + n + "/" + self,
				want: orgRoles(200, 404, "analyze", "orgadmin")},
			roleRow{name: "get unknown " + n, method: "GET", path: "/api/" + n + "/nope",
				want: orgRoles(404, 404, "analyze", "orgadmin")},
			roleRow{name: "get " + n + " through the " + k.other + " path", method: "GET", path: "/api/" + k.other + "/" + self,
				want: orgRoles(404, 404, "analyze", "orgadmin")},
			roleRow{name: "update " + n, method: "PATCH", path: "/api/" + n + "/" + fresh,
				body: func(caller string, _ *client) any { return map[string]any{"rate": 100, "rateUnit": "Day"} },
				want: orgRoles(200, 404, "orgadmin")},
			roleRow{name: "disable " + n, method: "DELETE", path: "/api/" + n + "/" + fresh,
				want: orgRoles(204, 404, "orgadmin")},
			roleRow{name: "run " + n, method: "POST", path: "/api/" + n + "/" + self + "/run",
				body: func(string, *client) any { return k.run }, want: orgRoles(200, 404, "analyze", "orgadmin")},
		)
	}
	for i := range rows {
		rows[i].shared = true
	}
	return rows
}

// jobRows are the job and file routes (read, analyze or orgadmin; delete analyze or orgadmin) and the public
// ones.
func jobRows() []roleRow {
	readers := orgRoles(200, 404, "read", "analyze", "orgadmin")
	lister := orgRoles(200, 200, "read", "analyze", "orgadmin")
	rows := []roleRow{
		{name: "list jobs", method: "GET", path: "/api/job?range=all", want: lister, shows: []string{"{job}"}},
		{name: "search jobs", method: "POST", path: "/api/job/_search?range=all", body: emptyQuery, want: lister,
			shows: []string{"{job}"}},
		{name: "get job", method: "GET", path: "/api/job/{job}", want: readers},
		{name: "job statuses", method: "POST", path: "/api/job/status",
			body: func(string, *client) any { return map[string]any{"jobIds": []string{"nope"}} }, want: lister},
		{name: "get unknown job", method: "GET", path: "/api/job/nope", want: orgRoles(404, 404, "read", "analyze", "orgadmin")},
		{name: "job report", method: "GET", path: "/api/job/{job}/report", want: readers},
		{name: "wait for a job report", method: "GET", path: "/api/job/{job}/waitreport?atMost=1ms", want: readers},
		{name: "wait for the report of a new job", method: "GET", path: "/api/job/{newJob}/waitreport?atMost=1ms", want: readers},
		{name: "job artifacts", method: "GET", path: "/api/job/{job}/artifacts", want: readers},
		{name: "delete job", method: "DELETE", path: "/api/job/{newJob}", want: orgRoles(204, 404, "analyze", "orgadmin")},
		{name: "download a file", method: "GET", path: "/api/datastore/{hash}?name=a.txt", want: readers, raw: true},
		{name: "download a file zipped", method: "GET", path: "/api/datastorezip/{hash}?name=a.txt", want: readers, raw: true},
		{name: "download an unknown file zipped", method: "GET", path: "/api/datastorezip/" + strings.Repeat("0", 64),
			want: orgRoles(404, 404, "read", "analyze", "orgadmin")},
		{name: "download an unknown file", method: "GET", path: "/api/datastore/" + strings.Repeat("0", 64),
			want: orgRoles(404, 404, "read", "analyze", "orgadmin")},
	}
	for i := range rows {
		rows[i].shared = true
	}
	// Public routes: no credential needed, a bad one is ignored.
	rows = append(rows,
		roleRow{name: "status", method: "GET", path: "/api/status", public: true, shared: true, want: everyone(200)},
		roleRow{name: "health", method: "GET", path: "/api/health", public: true, shared: true, want: everyone(200), raw: true},
		roleRow{name: "login", method: "POST", path: "/api/login", public: true, shared: true, want: everyone(200),
			body: func(string, *client) any { return map[string]string{"user": expiredLogin, "password": expiredPassword} }},
		roleRow{name: "logout", method: "POST", path: "/api/logout", public: true, shared: true, want: everyone(204)},
		roleRow{name: "logout by GET", method: "GET", path: "/api/logout", public: true, shared: true, want: everyone(204)},
		// Operations endpoints of pkg/web, for probes and scrapers: public by design (README "Operations").
		roleRow{name: "liveness", method: "GET", path: "/healthz", public: true, shared: true, want: everyone(200)},
		roleRow{name: "readiness", method: "GET", path: "/readyz", public: true, shared: true, want: everyone(200)},
		roleRow{name: "metrics", method: "GET", path: "/metrics", public: true, shared: true, want: everyone(200), raw: true},
		roleRow{name: "OpenAPI document", method: "GET", path: "/api/openapi.json", public: true, shared: true, want: everyone(200)},
	)
	return rows
}

// TestAPI_Roles runs the rows that change users, keys and organizations as every kind of caller, each row on
// its own server.
func TestAPI_Roles(t *testing.T) {
	t.Parallel()
	for _, row := range roleRows() {
		if row.shared {
			continue
		}
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			runRoleRow(t, newRoleFixture(t, fixtureOptions{passwords: row.passwords}), row)
		})
	}
}

// TestAPI_RolesShared runs the other rows (reads, analyzers, responders, jobs, files, public routes) as every
// kind of caller, on one server: the rows that change or delete an object get an object of their own ({new…}).
func TestAPI_RolesShared(t *testing.T) {
	t.Parallel()
	f := newRoleFixture(t, fixtureOptions{objects: true})
	for _, row := range roleRows() {
		if !row.shared {
			continue
		}
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			runRoleRow(t, f, row)
		})
	}
}

func runRoleRow(t *testing.T, f *roleFixture, row roleRow) {
	for _, name := range callerOrder {
		c := f.callers[name]
		want, ok := row.want[name]
		if !row.public && slices.Contains(unauthenticated, name) {
			want, ok = http.StatusUnauthorized, true
		}
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			path := f.resolve(t, row.path, c)
			var body any
			if row.body != nil {
				body = row.body(name, c)
			}
			r := c.Call(t, row.method, path, body)
			switch {
			case want >= 400:
				typ := map[int]string{401: "AuthenticationError", 403: "AuthorizationError", 404: "NotFoundError"}[want]
				msg := r.WantError(t, want, typ)
				// A 403 names the role (or the rule) that is missing.
				if want == http.StatusForbidden && !strings.Contains(msg, "admin") && !strings.Contains(msg, "itself") {
					t.Errorf("403 message %q names neither a role nor the rule", msg)
				}
			case row.text:
				r.Want(t, want)
				if k := r.Text(t); len(k) < 32 {
					t.Errorf("key %q shorter than 32 characters", k)
				}
			case row.raw:
				r.Want(t, want)
			default:
				r.Want(t, want)
				if len(r.Body) > 0 {
					var v any
					r.Decode(t, &v)
				}
			}
			if want >= 300 {
				return
			}
			for _, ph := range row.shows {
				id := f.objects[ph]
				has := strings.Contains(string(r.Body), id)
				switch {
				case name == orgAdminB && has:
					t.Errorf("orgadmin B sees org A's %s %s: %s", ph, id, r.Body)
				case (name == readA || name == analyzeA || name == orgAdminA) && !has:
					t.Errorf("%s does not see its organization's %s %s: %s", name, ph, id, r.Body)
				}
			}
		})
	}
}

// TestAPI_EveryRouteHasARoleRow fails when a route of the real router (method and path, /healthz, /readyz and
// /metrics included) has no row in roleRows, or a row matches no route: a new route must say who may call it.
func TestAPI_EveryRouteHasARoleRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withoutWorkers())
	routes := map[string]bool{}
	for _, r := range e.echo.Routes() {
		if !openapi.WebInterface(r.Path) { // the pages' roles are checked by webui_test.go
			routes[r.Method+" "+r.Path] = true
		}
	}
	if len(routes) < 50 {
		t.Fatalf("the router lists only %d routes: %v", len(routes), routes)
	}
	placeholder := regexp.MustCompile(`\{[^}]*\}`)
	covered := map[string]bool{}
	for _, row := range roleRows() {
		p, _, _ := strings.Cut(placeholder.ReplaceAllString(row.path, "x"), "?")
		c := e.echo.NewContext(httptest.NewRequest(row.method, p, nil), httptest.NewRecorder())
		e.echo.Router().Find(row.method, p, c)
		key := row.method + " " + c.Path()
		if !routes[key] {
			t.Errorf("row %q (%s %s) matches no route", row.name, row.method, row.path)
			continue
		}
		covered[key] = true
	}
	for _, key := range slices.Sorted(maps.Keys(routes)) {
		if !covered[key] {
			t.Errorf("route %s has no row in the role table (roleRows in roles_test.go)", key)
		}
	}
}
