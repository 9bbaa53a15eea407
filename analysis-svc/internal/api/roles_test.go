package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// The callers of the role table, in the order each row runs them: the superadmin comes last because its
// calls (locking an organization, revoking its own key) would change what the others see.
const (
	anonymous  = "anonymous"
	lockedUser = "locked user"
	lockedOrg  = "user of a locked org"
	readA      = "read A"
	analyzeA   = "analyze A"
	orgAdminB  = "orgadmin B"
	orgAdminA  = "orgadmin A"
	superadmin = "superadmin"
)

var callerOrder = []string{anonymous, lockedUser, lockedOrg, readA, analyzeA, orgAdminB, orgAdminA, superadmin}

// roleFixture is one server holding organizations org-a, org-b, org-t (a target to lock) and the locked
// org-c, and a user per caller, each with an API key.
type roleFixture struct {
	e       *env
	callers map[string]*client
}

const (
	orgA, orgB, orgC, orgT = "org-a", "org-b", "org-c", "org-t"
	targetLogin            = "target" // a read user of org A, with a key
	selfPassword           = "self-password-0"
)

// newRoleFixture builds the callers. With passwords, every authenticated caller gets selfPassword.
func newRoleFixture(t *testing.T, passwords bool) *roleFixture {
	t.Helper()
	var opts []envOption
	if passwords {
		opts = append(opts, withSuperPassword())
	}
	e := newEnv(t, opts...)
	for _, o := range []string{orgA, orgB, orgC, orgT} {
		e.createOrg(t, o)
	}
	f := &roleFixture{e: e, callers: map[string]*client{
		anonymous:  e.anon(),
		superadmin: e.super,
		orgAdminA:  e.user(t, "oa", orgA, roleOrgAdmin),
		analyzeA:   e.user(t, "an", orgA, roleAnalyze),
		readA:      e.user(t, "rd", orgA, roleRead),
		orgAdminB:  e.user(t, "ob", orgB, roleOrgAdmin),
		lockedUser: e.user(t, "lk", orgA, roleRead),
		lockedOrg:  e.user(t, "lc", orgC, roleOrgAdmin),
	}}
	e.user(t, targetLogin, orgA, roleRead)
	e.super.call(t, http.MethodPatch, "/api/user/lk", map[string]string{"status": "Locked"}).want(t, http.StatusOK)
	e.super.call(t, http.MethodDelete, "/api/organization/"+orgC, nil).want(t, http.StatusNoContent)
	if passwords {
		f.callers[superadmin].password = superPassword
		for _, c := range []string{orgAdminA, analyzeA, readA, orgAdminB} {
			e.setPassword(t, f.callers[c].login, selfPassword)
			f.callers[c].password = selfPassword
		}
	}
	return f
}

// roleRow is one endpoint with the status each caller gets. Path placeholders: {self} is the caller's own
// login (target for callers without one).
type roleRow struct {
	name   string
	method string
	path   string
	body   func(caller string, c *client) any
	// want holds the status of the authenticated callers; anonymous, locked user and user of a locked org
	// always get 401.
	want      map[string]int
	passwords bool // the row needs the callers' passwords
	text      bool // a successful answer is text/plain (API keys)
}

// all5 gives the same status to the five authenticated callers.
func all5(code int) map[string]int {
	return map[string]int{superadmin: code, orgAdminA: code, analyzeA: code, readA: code, orgAdminB: code}
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

func nameBody(caller string, _ *client) any {
	return map[string]string{"name": "renamed by " + caller}
}

func roleRows() []roleRow {
	seeA := map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 200, readA: 200, orgAdminB: 404}
	return []roleRow{
		{name: "list organizations", method: "GET", path: "/api/organization", want: superOnly(200)},
		{name: "search organizations", method: "POST", path: "/api/organization/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: superOnly(200)},
		{name: "create organization", method: "POST", path: "/api/organization",
			body: func(caller string, _ *client) any {
				return map[string]string{"name": "new-" + strings.ReplaceAll(caller, " ", "-")}
			}, want: superOnly(201)},
		{name: "get own org A", method: "GET", path: "/api/organization/" + orgA, want: seeA},
		{name: "get org B", method: "GET", path: "/api/organization/" + orgB,
			want: map[string]int{superadmin: 200, orgAdminA: 404, analyzeA: 404, readA: 404, orgAdminB: 200}},
		{name: "get unknown org", method: "GET", path: "/api/organization/nope", want: all5(404)},
		{name: "update org A", method: "PATCH", path: "/api/organization/" + orgA,
			body: func(c string, _ *client) any { return map[string]string{"description": "by " + c} }, want: superOnly(200)},
		{name: "delete org T", method: "DELETE", path: "/api/organization/" + orgT, want: superOnly(204)},
		{name: "delete own org A", method: "DELETE", path: "/api/organization/" + orgA,
			want: map[string]int{orgAdminA: 403, analyzeA: 403, readA: 403, orgAdminB: 403}},
		{name: "list users of org A", method: "GET", path: "/api/organization/" + orgA + "/user", want: adminsOfA(200)},
		{name: "search users of org A", method: "POST", path: "/api/organization/" + orgA + "/user/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: adminsOfA(200)},
		{name: "list users", method: "GET", path: "/api/user", want: superOnly(200)},
		{name: "search users", method: "POST", path: "/api/user/_search",
			body: func(string, *client) any { return map[string]any{"query": map[string]any{}} }, want: superOnly(200)},
		{name: "create user in org A", method: "POST", path: "/api/user",
			body: func(caller string, _ *client) any {
				return map[string]any{"login": "new-" + strings.ReplaceAll(caller, " ", "-"), "organization": orgA,
					"roles": roleRead}
			},
			// orgadmin B may create users, but only in its own organization: 403.
			want: map[string]int{superadmin: 201, orgAdminA: 201, analyzeA: 403, readA: 403, orgAdminB: 403}},
		{name: "get user of org A", method: "GET", path: "/api/user/" + targetLogin, want: seeA},
		{name: "get self", method: "GET", path: "/api/user/{self}", want: all5(200)},
		{name: "get the superadmin", method: "GET", path: "/api/user/" + superLogin,
			want: map[string]int{superadmin: 200, orgAdminA: 404, analyzeA: 404, readA: 404, orgAdminB: 404}},
		{name: "get unknown user", method: "GET", path: "/api/user/nobody", want: all5(404)},
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
				return map[string]string{"currentPassword": c.password, "password": "changed-password-1"}
			}, want: all5(204)},
		{name: "renew key of user of org A", method: "POST", path: "/api/user/" + targetLogin + "/key/renew",
			want: adminsOfA(200), text: true},
		{name: "renew own key", method: "POST", path: "/api/user/{self}/key/renew", want: all5(200), text: true},
		{name: "get key of user of org A", method: "GET", path: "/api/user/" + targetLogin + "/key",
			want: adminsOfA(200), text: true},
		{name: "get own key", method: "GET", path: "/api/user/{self}/key", want: all5(200), text: true},
		{name: "revoke key of user of org A", method: "DELETE", path: "/api/user/" + targetLogin + "/key",
			want: adminsOfA(200)},
		{name: "revoke own key", method: "DELETE", path: "/api/user/{self}/key",
			want: map[string]int{superadmin: 200, orgAdminA: 200, analyzeA: 403, readA: 403, orgAdminB: 200}},
		{name: "current user", method: "GET", path: "/api/user/current", want: all5(200)},
	}
}

// TestAPI_Roles runs every endpoint of the identity API as every kind of caller.
func TestAPI_Roles(t *testing.T) {
	t.Parallel()
	for _, row := range roleRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			f := newRoleFixture(t, row.passwords)
			for _, name := range callerOrder {
				c := f.callers[name]
				want, ok := row.want[name]
				switch name {
				case anonymous, lockedUser, lockedOrg:
					want, ok = http.StatusUnauthorized, true
				}
				if !ok {
					continue
				}
				t.Run(name, func(t *testing.T) {
					self := c.login
					if self == "" {
						self = targetLogin
					}
					path := strings.ReplaceAll(row.path, "{self}", self)
					var body any
					if row.body != nil {
						body = row.body(name, c)
					}
					r := c.call(t, row.method, path, body)
					switch {
					case want >= 400:
						typ := map[int]string{401: "AuthenticationError", 403: "AuthorizationError", 404: "NotFoundError"}[want]
						msg := r.wantError(t, want, typ)
						// A 403 names the role (or the rule) that is missing.
						if want == http.StatusForbidden && !strings.Contains(msg, "admin") && !strings.Contains(msg, "itself") {
							t.Errorf("403 message %q names neither a role nor the rule", msg)
						}
					case row.text:
						r.want(t, want)
						if k := r.text(t); len(k) < 32 {
							t.Errorf("key %q shorter than 32 characters", k)
						}
					default:
						r.want(t, want)
						if len(r.body) > 0 {
							var v any
							r.decode(t, &v)
						}
					}
				})
			}
		})
	}
}
