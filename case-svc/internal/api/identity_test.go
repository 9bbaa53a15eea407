package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/web"
)

// Every credential path: none, bad key, key, session (with CSRF on writes), basic when enabled, locked users.
func TestAuthentication(t *testing.T) {
	e := newEnv(t, withAdminPassword(), withBasic())
	e.createOrg(t, "soc")
	ana := e.user(t, "ana", "soc", "analyst")

	t.Run("no or bad credentials are 401", func(t *testing.T) {
		for _, c := range []*client{e.anon(), e.keyClient("x", "not-a-key-0123456789-0123456789-xx"), e.keyClient("x", " ")} {
			c.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
			c.call(t, http.MethodGet, "/api/case", nil).wantError(t, 401, "AuthenticationError")
			c.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
				wantError(t, 401, "AuthenticationError")
		}
		e.basicClient(adminLogin, "wrong password").call(t, http.MethodGet, "/api/user/current", nil).
			wantError(t, 401, "AuthenticationError")
	})

	t.Run("key", func(t *testing.T) {
		u := ana.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t)
		if u.str(t, "login") != "ana" || u.str(t, "_id") != "~ana" || u.str(t, "id") != "~ana" ||
			u.str(t, "organisation") != "soc" || u.str(t, "profile") != "analyst" || u.str(t, "_type") != "user" {
			t.Fatalf("current user %v", u)
		}
		if !u["hasKey"].(bool) || u["hasPassword"].(bool) || u.str(t, "status") != "Ok" {
			t.Fatalf("current user flags %v", u)
		}
		if !slices.Contains(u.strs(t, "permissions"), "manageCase") {
			t.Fatalf("analyst permissions %v", u["permissions"])
		}
		if u.str(t, "updatedBy") != adminLogin { // the key renewal changed the user
			t.Fatalf("updatedBy %v", u["updatedBy"])
		}
	})

	t.Run("session with CSRF", func(t *testing.T) {
		s := e.sessionClient()
		s.call(t, http.MethodPost, "/api/login", map[string]string{"user": adminLogin, "password": "nope-nope"}).
			wantError(t, 401, "AuthenticationError")
		u := s.call(t, http.MethodPost, "/api/login", map[string]string{"user": adminLogin, "password": adminPassword}).
			want(t, 200).object(t)
		if u.str(t, "login") != adminLogin || u.str(t, "organisation") != "admin" || u.str(t, "profile") != "admin" {
			t.Fatalf("login answer %v", u)
		}
		if s.cookie(auth.SessionCookie) == "" || s.cookie(auth.CSRFCookie) == "" {
			t.Fatal("no session cookies")
		}
		s.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)
		// A state-changing request without the CSRF header is refused.
		s.call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).
			wantError(t, 403, "AuthorizationError")
		s.csrf = true
		s.call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).want(t, 200)
		s.call(t, http.MethodPost, "/api/logout", nil).want(t, 204)
		s.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
		// The v1 paths work the same.
		s.call(t, http.MethodPost, "/api/v1/login", map[string]string{"user": adminLogin, "password": adminPassword}).want(t, 200)
		s.call(t, http.MethodGet, "/api/v1/user/current", nil).want(t, 200)
	})

	t.Run("basic", func(t *testing.T) {
		e.basicClient(adminLogin, adminPassword).call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)
	})

	t.Run("locked user", func(t *testing.T) {
		e.admin.call(t, http.MethodDelete, "/api/user/ana", nil).want(t, 204)
		ana.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
		u := e.admin.call(t, http.MethodGet, "/api/user/ana", nil).want(t, 200).object(t)
		if u.str(t, "status") != "Locked" || u["locked"] != true {
			t.Fatalf("locked user %v", u)
		}
		e.admin.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"status": "Ok"}).want(t, 200)
		ana.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)
	})
}

func TestBasicIsOffByDefault(t *testing.T) {
	e := newEnv(t, withAdminPassword())
	e.basicClient(adminLogin, adminPassword).call(t, http.MethodGet, "/api/user/current", nil).
		wantError(t, 401, "AuthenticationError")
}

func TestUsers(t *testing.T) {
	tm := newTeam(t)

	t.Run("create", func(t *testing.T) {
		u := tm.orgAdmin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "carl", "name": "Carl", "profile": "analyst"}).
			want(t, 201).object(t)
		if u.str(t, "login") != "carl" || u.str(t, "name") != "Carl" || u.str(t, "organisation") != "soc" ||
			u.str(t, "profile") != "analyst" || u.str(t, "createdBy") != "socadmin" || u.num(t, "createdAt") <= 0 {
			t.Fatalf("created user %v", u)
		}
		got := tm.orgAdmin.call(t, http.MethodGet, "/api/user/carl", nil).want(t, 200).object(t)
		if got.str(t, "name") != "Carl" || got.str(t, "id") != "~carl" {
			t.Fatalf("read back %v", got)
		}
		tm.orgAdmin.call(t, http.MethodGet, "/api/user/~carl", nil).want(t, 200)
		// Same login again: 400 CreateError.
		tm.orgAdmin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "carl", "profile": "analyst"}).
			wantError(t, 400, "CreateError")
		// An org-admin works in its own organisation only.
		msg := tm.orgAdmin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "x", "profile": "analyst", "organisation": "cert"}).
			wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageUser") {
			t.Errorf("message %q does not name manageUser", msg)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"login": "", "profile": "analyst"},
			{"login": "bad login", "profile": "analyst"},
			{"login": "ok", "profile": "superuser"},
			{"login": "ok", "profile": "admin"}, // the admin profile lives in the admin organisation only
			{"login": "ok", "profile": "analyst", "password": "short"},
		} {
			tm.orgAdmin.call(t, http.MethodPost, "/api/user", body).wantError(t, 400, "AttributeCheckingError")
		}
		tm.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "ok", "profile": "analyst", "organisation": "nowhere"}).
			wantError(t, 400, "AttributeCheckingError")
		tm.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "ok", "profile": "analyst", "organisation": "admin"}).
			wantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.raw(t, http.MethodPost, "/api/user", "application/json", `{"login":`).wantError(t, 400, "BadRequest")
		tm.orgAdmin.call(t, http.MethodPost, "/api/user", map[string]any{"login": 5}).wantError(t, 400, "AttributeCheckingError")
	})

	t.Run("list is scoped to the organisation", func(t *testing.T) {
		r := tm.analyst.call(t, http.MethodGet, "/api/user?range=all", nil).want(t, 200)
		var logins []string
		for _, u := range r.list(t) {
			logins = append(logins, u.str(t, "login"))
		}
		slices.Sort(logins)
		if !slices.Equal(logins, []string{"ana", "carl", "reader", "socadmin"}) || r.total(t) != "4" {
			t.Fatalf("soc users %v total %s", logins, r.total(t))
		}
		r = tm.admin.call(t, http.MethodPost, "/api/user/_search", map[string]any{
			"query": map[string]any{"organisation": "cert"}}).want(t, 200)
		if l := r.list(t); len(l) != 1 || l[0].str(t, "login") != "bob" {
			t.Fatalf("admin search of cert users %s", r.body)
		}
		tm.admin.call(t, http.MethodPost, "/api/user/_search", map[string]any{"query": map[string]any{"nope": 1}}).
			wantError(t, 400, "BadRequest")
	})

	t.Run("other organisation is 404", func(t *testing.T) {
		tm.other.call(t, http.MethodGet, "/api/user/ana", nil).wantError(t, 404, "NotFoundError")
		tm.orgAdmin.call(t, http.MethodPatch, "/api/user/bob", map[string]any{"name": "x"}).wantError(t, 404, "NotFoundError")
		tm.orgAdmin.call(t, http.MethodPost, "/api/user/bob/key/renew", nil).wantError(t, 404, "NotFoundError")
	})

	t.Run("update", func(t *testing.T) {
		u := tm.orgAdmin.call(t, http.MethodPatch, "/api/user/carl", map[string]any{"name": "Carl Jr", "profile": "read-only"}).
			want(t, 200).object(t)
		if u.str(t, "name") != "Carl Jr" || u.str(t, "profile") != "read-only" || u.str(t, "updatedBy") != "socadmin" {
			t.Fatalf("updated %v", u)
		}
		// A user renames itself, but never changes its own profile or lock.
		tm.analyst.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"name": "Ana B"}).want(t, 200)
		tm.analyst.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"profile": "org-admin"}).
			wantError(t, 403, "AuthorizationError")
		tm.orgAdmin.call(t, http.MethodPatch, "/api/user/socadmin", map[string]any{"locked": true}).
			wantError(t, 403, "AuthorizationError")
		// Others need manageUser.
		msg := tm.analyst.call(t, http.MethodPatch, "/api/user/reader", map[string]any{"name": "x"}).
			wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageUser") {
			t.Errorf("message %q", msg)
		}
		tm.orgAdmin.call(t, http.MethodPatch, "/api/user/carl", map[string]any{"password": "whatever-123"}).
			wantError(t, 403, "AuthorizationError")
		tm.orgAdmin.call(t, http.MethodPatch, "/api/user/carl", map[string]any{"profile": "boss"}).
			wantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.call(t, http.MethodPatch, "/api/user/carl", map[string]any{"status": "Sleeping"}).
			wantError(t, 400, "AttributeCheckingError")
	})

	t.Run("keys", func(t *testing.T) {
		key := tm.renewKey(t, tm.orgAdmin, "carl")
		carl := tm.keyClient("carl", key)
		carl.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)
		if got := tm.orgAdmin.call(t, http.MethodGet, "/api/user/carl/key", nil).want(t, 200).text(t); got != key {
			t.Fatalf("revealed key differs")
		}
		if got := carl.call(t, http.MethodGet, "/api/user/carl/key", nil).want(t, 200).text(t); got != key {
			t.Fatalf("own key differs")
		}
		tm.analyst.call(t, http.MethodGet, "/api/user/carl/key", nil).wantError(t, 403, "AuthorizationError")
		// A renewed key replaces the old one.
		newKey := tm.renewKey(t, carl, "carl")
		carl.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
		tm.keyClient("carl", newKey).call(t, http.MethodDelete, "/api/user/carl/key", nil).want(t, 204)
		tm.keyClient("carl", newKey).call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
		tm.orgAdmin.call(t, http.MethodGet, "/api/user/carl/key", nil).wantError(t, 404, "NotFoundError")
		if strings.Contains(tm.logs.String(), newKey) || strings.Contains(tm.logs.String(), key) {
			t.Fatal("a key reached the logs")
		}
		tm.keyClient("carl", tm.renewKey(t, tm.orgAdmin, "carl")) // a live key to look for
		live := tm.orgAdmin.call(t, http.MethodGet, "/api/user/carl/key", nil).want(t, 200).text(t)
		for _, k := range []string{key, newKey, live} {
			tm.notStored(t, k)
		}
		for _, r := range []*resp{tm.orgAdmin.call(t, http.MethodGet, "/api/user/carl", nil),
			tm.orgAdmin.call(t, http.MethodGet, "/api/user", nil)} {
			if strings.Contains(string(r.body), live) || strings.Contains(string(r.body), "keyHash") {
				t.Fatalf("%s exposes key material: %s", r.path, r.body)
			}
		}
	})

	t.Run("passwords", func(t *testing.T) {
		tm.orgAdmin.call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "first-password"}).
			want(t, 204)
		s := tm.sessionClient()
		s.call(t, http.MethodPost, "/api/login", map[string]string{"user": "carl", "password": "first-password"}).want(t, 200)
		s.csrf = true
		s.call(t, http.MethodPost, "/api/user/carl/password/change",
			map[string]string{"currentPassword": "wrong-password", "password": "second-password"}).wantError(t, 403, "AuthorizationError")
		s.call(t, http.MethodPost, "/api/user/carl/password/change",
			map[string]string{"currentPassword": "first-password", "password": "second-password"}).want(t, 204)
		tm.sessionClient().call(t, http.MethodPost, "/api/login", map[string]string{"user": "carl", "password": "second-password"}).want(t, 200)
		tm.analyst.call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "third-password"}).
			wantError(t, 403, "AuthorizationError")
		tm.orgAdmin.call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "x"}).
			wantError(t, 400, "AttributeCheckingError")
		if strings.Contains(tm.logs.String(), "second-password") {
			t.Fatal("a password reached the logs")
		}
		tm.notStored(t, "second-password")
	})
}

// Password and key routes need HTTPS unless the dev flag allows plain HTTP.
func TestRequireSecure(t *testing.T) {
	e := newEnv(t, withSecure(web.SecureConfig{}))
	e.createOrg(t, "soc")
	e.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "ana", "profile": "analyst", "organisation": "soc"}).want(t, 201)
	for _, r := range []*resp{
		e.admin.call(t, http.MethodPost, "/api/user/ana/key/renew", nil),
		e.admin.call(t, http.MethodGet, "/api/user/ana/key", nil),
		e.admin.call(t, http.MethodDelete, "/api/user/ana/key", nil),
		e.admin.call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "a-good-password"}),
		e.admin.call(t, http.MethodPost, "/api/user/ana/password/change", map[string]string{"password": "a-good-password"}),
		e.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "x", "profile": "analyst", "organisation": "soc", "password": "a-good-password"}),
	} {
		if msg := r.wantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "HTTPS") {
			t.Errorf("%s %s: message %q", r.method, r.path, msg)
		}
	}
	// Without a password the creation is fine over plain HTTP.
	e.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "y", "profile": "analyst", "organisation": "soc"}).want(t, 201)
}

func TestOrganisations(t *testing.T) {
	tm := newTeam(t)
	o := tm.admin.call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "dfir", "description": "DFIR"}).
		want(t, 201).object(t)
	if o.str(t, "name") != "dfir" || o.str(t, "_id") != "~dfir" || o.str(t, "_type") != "organisation" ||
		o.str(t, "description") != "DFIR" || o.str(t, "createdBy") != adminLogin {
		t.Fatalf("created %v", o)
	}
	o.null(t, "updatedAt")
	o.null(t, "updatedBy")
	tm.admin.call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "dfir"}).wantError(t, 400, "CreateError")
	tm.admin.call(t, http.MethodPost, "/api/v1/organisation", map[string]any{"name": "bad name"}).
		wantError(t, 400, "AttributeCheckingError")
	msg := tm.orgAdmin.call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "mine"}).
		wantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageOrganisation") {
		t.Errorf("message %q", msg)
	}

	// Get: own organisation yes, another no.
	tm.analyst.call(t, http.MethodGet, "/api/organisation/soc", nil).want(t, 200)
	tm.analyst.call(t, http.MethodGet, "/api/v1/organisation/~soc", nil).want(t, 200)
	tm.analyst.call(t, http.MethodGet, "/api/organisation/cert", nil).wantError(t, 404, "NotFoundError")
	tm.admin.call(t, http.MethodGet, "/api/organisation/cert", nil).want(t, 200)
	tm.admin.call(t, http.MethodGet, "/api/organisation/nowhere", nil).wantError(t, 404, "NotFoundError")

	// List: everything for the administrator, one's own for others.
	r := tm.admin.call(t, http.MethodGet, "/api/organisation?range=all&sort=+name", nil).want(t, 200)
	var names []string
	for _, x := range r.list(t) {
		names = append(names, x.str(t, "name"))
	}
	if !slices.Equal(names, []string{"admin", "cert", "dfir", "soc"}) || r.total(t) != "4" {
		t.Fatalf("organisations %v", names)
	}
	r = tm.analyst.call(t, http.MethodPost, "/api/organisation/_search", map[string]any{"query": map[string]any{}}).want(t, 200)
	if l := r.list(t); len(l) != 1 || l[0].str(t, "name") != "soc" {
		t.Fatalf("analyst sees %s", r.body)
	}

	// Update: description only, by the administrator.
	u := tm.admin.call(t, http.MethodPatch, "/api/organisation/dfir", map[string]any{"description": "Forensics"}).want(t, 200).object(t)
	if u.str(t, "description") != "Forensics" || u.str(t, "updatedBy") != adminLogin || u.num(t, "updatedAt") <= 0 {
		t.Fatalf("updated %v", u)
	}
	tm.admin.call(t, http.MethodPatch, "/api/organisation/dfir", map[string]any{"name": "other"}).
		wantError(t, 400, "AttributeCheckingError")
	tm.orgAdmin.call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).
		wantError(t, 403, "AuthorizationError")
	tm.admin.call(t, http.MethodPatch, "/api/organisation/nowhere", map[string]any{"description": "x"}).
		wantError(t, 404, "NotFoundError")
}

// A user in two organisations works in the one X-Organisation names, by default the first.
func TestMultipleOrganisations(t *testing.T) {
	tm := newTeam(t)
	// Creating an existing login never adds an organisation, not even for the platform administrator.
	tm.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "ana", "organisation": "cert", "profile": "read-only"}).
		wantError(t, 400, "CreateError")
	// The platform administrator adds ana (analyst of soc) to cert as read-only through her memberships; her
	// key is revoked by that, so she gets a new one.
	u := tm.admin.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "analyst"}, {"organisation": "cert", "profile": "read-only"}}}).
		want(t, 200).object(t)
	if ms := u["organisations"].([]any); len(ms) != 2 {
		t.Fatalf("memberships %v", u["organisations"])
	}
	tm.analyst.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
	tm.analyst = tm.keyClient("ana", tm.renewKey(t, tm.admin, "ana"))
	// An org-admin cannot capture an existing login.
	tm.orgAdmin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "bob", "profile": "analyst"}).
		wantError(t, 400, "CreateError")

	cur := tm.analyst.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t)
	if cur.str(t, "organisation") != "soc" || cur.str(t, "profile") != "analyst" {
		t.Fatalf("default organisation %v", cur)
	}
	inCert := tm.analyst.in("cert")
	cur = inCert.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t)
	if cur.str(t, "organisation") != "cert" || cur.str(t, "profile") != "read-only" || len(cur.strs(t, "permissions")) != 0 {
		t.Fatalf("in cert %v", cur)
	}
	tm.analyst.in("~cert").call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)

	// Cases live in the organisation of the request.
	c := tm.analyst.newCase(t, map[string]any{"title": "soc case"})
	inCert.call(t, http.MethodGet, "/api/case/"+c.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	msg := inCert.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
		wantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageCase") {
		t.Errorf("message %q", msg)
	}
	other := tm.other.newCase(t, nil)
	inCert.call(t, http.MethodGet, "/api/case/"+other.str(t, "id"), nil).want(t, 200)

	// A session may pin an organisation at login; X-Organisation still wins per request.
	tm.admin.call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "ana-password"}).want(t, 204)
	s := tm.sessionClient()
	s.call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password", "organisation": "nowhere"}).
		wantError(t, 403, "AuthorizationError")
	u = s.call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password", "organisation": "cert"}).
		want(t, 200).object(t)
	if u.str(t, "organisation") != "cert" {
		t.Fatalf("login in cert %v", u)
	}
	if got := s.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t); got.str(t, "organisation") != "cert" {
		t.Fatalf("session in cert %v", got)
	}
	if got := s.in("soc").call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t); got.str(t, "organisation") != "soc" {
		t.Fatalf("header over the session %v", got)
	}
	s.call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password"}).want(t, 200)
	if got := s.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200).object(t); got.str(t, "organisation") != "soc" {
		t.Fatalf("a plain login keeps the pinned organisation: %v", got)
	}

	// An organisation the user is not in is refused.
	tm.analyst.in("admin").call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 403, "AuthorizationError")
	tm.analyst.in("nowhere").call(t, http.MethodGet, "/api/case", nil).wantError(t, 403, "AuthorizationError")

	// An org-admin of soc may no longer manage ana's account (she also works in cert) but may change her
	// profile in soc.
	tm.orgAdmin.call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "some-password"}).
		wantError(t, 403, "AuthorizationError")
	tm.orgAdmin.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"profile": "org-admin"}).want(t, 200)

	// The platform administrator replaces memberships.
	u = tm.admin.call(t, http.MethodPatch, "/api/user/ana", map[string]any{"organisations": []map[string]string{
		{"organisation": "cert", "profile": "analyst"}}}).want(t, 200).object(t)
	if u.str(t, "organisation") != "cert" || u.str(t, "profile") != "analyst" {
		t.Fatalf("after replace %v", u)
	}
	tm.analyst.call(t, http.MethodGet, "/api/case/"+c.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	tm.orgAdmin.call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "analyst"}}}).wantError(t, 403, "AuthorizationError")
	tm.admin.call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{}}).
		wantError(t, 400, "AttributeCheckingError")
	tm.admin.call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "admin"}}}).wantError(t, 400, "AttributeCheckingError")
}

func TestProfiles(t *testing.T) {
	tm := newTeam(t)
	r := tm.readOnly.call(t, http.MethodGet, "/api/profile", nil).want(t, 200)
	perms := map[string][]string{}
	for _, p := range r.list(t) {
		perms[p.str(t, "name")] = p.strs(t, "permissions")
	}
	if len(perms) != 4 || r.total(t) != "4" {
		t.Fatalf("profiles %s", r.body)
	}
	for _, p := range []string{"manageCase", "manageTask", "manageObservable", "manageAlert", "manageAction",
		"manageAnalyse", "manageShare", "managePage", "manageProcedure", "accessServiceFS"} {
		if !slices.Contains(perms["analyst"], p) || !slices.Contains(perms["org-admin"], p) {
			t.Errorf("%s missing from analyst or org-admin", p)
		}
	}
	for _, p := range []string{"manageUser", "manageCaseTemplate", "manageCustomField", "manageConfig", "manageTag"} {
		if slices.Contains(perms["analyst"], p) || !slices.Contains(perms["org-admin"], p) {
			t.Errorf("%s: analyst %v org-admin %v", p, perms["analyst"], perms["org-admin"])
		}
	}
	if !slices.Contains(perms["admin"], "manageOrganisation") || slices.Contains(perms["admin"], "manageCase") ||
		len(perms["read-only"]) != 0 {
		t.Errorf("admin %v read-only %v", perms["admin"], perms["read-only"])
	}
	p := tm.readOnly.call(t, http.MethodGet, "/api/v1/profile/analyst", nil).want(t, 200).object(t)
	if p.str(t, "_id") != "~analyst" {
		t.Fatalf("profile %v", p)
	}
	tm.readOnly.call(t, http.MethodGet, "/api/profile/boss", nil).wantError(t, 404, "NotFoundError")
	r = tm.readOnly.call(t, http.MethodPost, "/api/profile/_search?sort=-name", map[string]any{
		"query": map[string]any{"_in": map[string]any{"_field": "name", "_values": []string{"analyst", "admin"}}}}).want(t, 200)
	if l := r.list(t); len(l) != 2 || l[0].str(t, "name") != "analyst" || r.total(t) != "2" {
		t.Fatalf("profile search %s", r.body)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/profile/_search", map[string]any{"query": map[string]any{"name": "org-admin"}}).want(t, 200)
	if l := r.list(t); len(l) != 1 || l[0].str(t, "name") != "org-admin" {
		t.Fatalf("profile search %s", r.body)
	}
	tm.readOnly.call(t, http.MethodPost, "/api/profile/_search", map[string]any{
		"query": map[string]any{"_like": map[string]any{"_field": "name", "_value": "a"}}}).wantError(t, 400, "BadRequest")
}

// notStored fails if a secret appears in clear in the identity collections.
func (e *env) notStored(t *testing.T, secret string) {
	t.Helper()
	ctx := context.Background()
	for _, coll := range []string{"users", "apikeys"} {
		c, err := store.Collection(ctx, e.db, coll)
		if err != nil {
			t.Fatalf("open %s: %v", coll, err)
		}
		docs, err := c.FindRaw(ctx, docstore.Query{Filter: docstore.All()})
		if err != nil || len(docs) == 0 {
			t.Fatalf("read %s: %d documents, %v", coll, len(docs), err)
		}
		for _, d := range docs {
			if strings.Contains(string(d), secret) {
				var head struct {
					ID string `json:"_id"`
				}
				_ = json.Unmarshal(d, &head)
				t.Errorf("%s document %v holds a secret in clear", coll, head.ID)
			}
		}
	}
}
