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
			c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
			c.Call(t, http.MethodGet, "/api/case", nil).WantError(t, 401, "AuthenticationError")
			c.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
				WantError(t, 401, "AuthenticationError")
		}
		e.basicClient(adminLogin, "wrong password").Call(t, http.MethodGet, "/api/user/current", nil).
			WantError(t, 401, "AuthenticationError")
	})

	t.Run("key", func(t *testing.T) {
		u := ana.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t)
		if u.Str(t, "login") != "ana" || u.Str(t, "_id") != "~ana" || u.Str(t, "id") != "~ana" ||
			u.Str(t, "organisation") != "soc" || u.Str(t, "profile") != "analyst" || u.Str(t, "_type") != "user" {
			t.Fatalf("current user %v", u)
		}
		if !u["hasKey"].(bool) || u["hasPassword"].(bool) || u.Str(t, "status") != "Ok" {
			t.Fatalf("current user flags %v", u)
		}
		if !slices.Contains(u.Strs(t, "permissions"), "manageCase") {
			t.Fatalf("analyst permissions %v", u["permissions"])
		}
		if u.Str(t, "updatedBy") != adminLogin { // the key renewal changed the user
			t.Fatalf("updatedBy %v", u["updatedBy"])
		}
	})

	t.Run("session with CSRF", func(t *testing.T) {
		s := e.sessionClient()
		s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": adminLogin, "password": "nope-nope"}).
			WantError(t, 401, "AuthenticationError")
		u := s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": adminLogin, "password": adminPassword}).
			Want(t, 200).Object(t)
		if u.Str(t, "login") != adminLogin || u.Str(t, "organisation") != "admin" || u.Str(t, "profile") != "admin" {
			t.Fatalf("login answer %v", u)
		}
		if s.Cookie(auth.SessionCookie) == "" || s.Cookie(auth.CSRFCookie) == "" {
			t.Fatal("no session cookies")
		}
		s.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
		// A state-changing request without the CSRF header is refused.
		s.Call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).
			WantError(t, 403, "AuthorizationError")
		s.CSRF = true
		s.Call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).Want(t, 200)
		s.Call(t, http.MethodPost, "/api/logout", nil).Want(t, 204)
		s.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
		// The v1 paths work the same.
		s.Call(t, http.MethodPost, "/api/v1/login", map[string]string{"user": adminLogin, "password": adminPassword}).Want(t, 200)
		s.Call(t, http.MethodGet, "/api/v1/user/current", nil).Want(t, 200)
	})

	t.Run("basic", func(t *testing.T) {
		e.basicClient(adminLogin, adminPassword).Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
	})

	t.Run("locked user", func(t *testing.T) {
		e.admin.Call(t, http.MethodDelete, "/api/user/ana", nil).Want(t, 204)
		ana.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
		u := e.admin.Call(t, http.MethodGet, "/api/user/ana", nil).Want(t, 200).Object(t)
		if u.Str(t, "status") != "Locked" || u["locked"] != true {
			t.Fatalf("locked user %v", u)
		}
		e.admin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"status": "Ok"}).Want(t, 200)
		ana.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
	})
}

func TestBasicIsOffByDefault(t *testing.T) {
	e := newEnv(t, withAdminPassword())
	e.basicClient(adminLogin, adminPassword).Call(t, http.MethodGet, "/api/user/current", nil).
		WantError(t, 401, "AuthenticationError")
}

func TestUsers(t *testing.T) {
	tm := newTeam(t)

	t.Run("create", func(t *testing.T) {
		u := tm.orgAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "carl", "name": "Carl", "profile": "analyst"}).
			Want(t, 201).Object(t)
		if u.Str(t, "login") != "carl" || u.Str(t, "name") != "Carl" || u.Str(t, "organisation") != "soc" ||
			u.Str(t, "profile") != "analyst" || u.Str(t, "createdBy") != "socadmin" || u.Num(t, "createdAt") <= 0 {
			t.Fatalf("created user %v", u)
		}
		got := tm.orgAdmin.Call(t, http.MethodGet, "/api/user/carl", nil).Want(t, 200).Object(t)
		if got.Str(t, "name") != "Carl" || got.Str(t, "id") != "~carl" {
			t.Fatalf("read back %v", got)
		}
		tm.orgAdmin.Call(t, http.MethodGet, "/api/user/~carl", nil).Want(t, 200)
		// Same login again: 400 CreateError.
		tm.orgAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "carl", "profile": "analyst"}).
			WantError(t, 400, "CreateError")
		// An org-admin works in its own organisation only.
		msg := tm.orgAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "x", "profile": "analyst", "organisation": "cert"}).
			WantError(t, 403, "AuthorizationError")
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
			tm.orgAdmin.Call(t, http.MethodPost, "/api/user", body).WantError(t, 400, "AttributeCheckingError")
		}
		tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "ok", "profile": "analyst", "organisation": "nowhere"}).
			WantError(t, 400, "AttributeCheckingError")
		tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "ok", "profile": "analyst", "organisation": "admin"}).
			WantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.Raw(t, http.MethodPost, "/api/user", "application/json", `{"login":`).WantError(t, 400, "BadRequest")
		tm.orgAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": 5}).WantError(t, 400, "AttributeCheckingError")
	})

	t.Run("list is scoped to the organisation", func(t *testing.T) {
		r := tm.analyst.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, 200)
		var logins []string
		for _, u := range r.List(t) {
			logins = append(logins, u.Str(t, "login"))
		}
		slices.Sort(logins)
		if !slices.Equal(logins, []string{"ana", "carl", "reader", "socadmin"}) || r.Total(t) != "4" {
			t.Fatalf("soc users %v total %s", logins, r.Total(t))
		}
		r = tm.admin.Call(t, http.MethodPost, "/api/user/_search", map[string]any{
			"query": map[string]any{"organisation": "cert"}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Str(t, "login") != "bob" {
			t.Fatalf("admin search of cert users %s", r.Body)
		}
		tm.admin.Call(t, http.MethodPost, "/api/user/_search", map[string]any{"query": map[string]any{"nope": 1}}).
			WantError(t, 400, "BadRequest")
	})

	t.Run("other organisation is 404", func(t *testing.T) {
		tm.other.Call(t, http.MethodGet, "/api/user/ana", nil).WantError(t, 404, "NotFoundError")
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/bob", map[string]any{"name": "x"}).WantError(t, 404, "NotFoundError")
		tm.orgAdmin.Call(t, http.MethodPost, "/api/user/bob/key/renew", nil).WantError(t, 404, "NotFoundError")
	})

	t.Run("update", func(t *testing.T) {
		u := tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/carl", map[string]any{"name": "Carl Jr", "profile": "read-only"}).
			Want(t, 200).Object(t)
		if u.Str(t, "name") != "Carl Jr" || u.Str(t, "profile") != "read-only" || u.Str(t, "updatedBy") != "socadmin" {
			t.Fatalf("updated %v", u)
		}
		// A user renames itself, but never changes its own profile or lock.
		tm.analyst.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"name": "Ana B"}).Want(t, 200)
		tm.analyst.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"profile": "org-admin"}).
			WantError(t, 403, "AuthorizationError")
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/socadmin", map[string]any{"locked": true}).
			WantError(t, 403, "AuthorizationError")
		// Others need manageUser.
		msg := tm.analyst.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"name": "x"}).
			WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageUser") {
			t.Errorf("message %q", msg)
		}
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/carl", map[string]any{"password": "whatever-123"}).
			WantError(t, 403, "AuthorizationError")
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/carl", map[string]any{"profile": "boss"}).
			WantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/carl", map[string]any{"status": "Sleeping"}).
			WantError(t, 400, "AttributeCheckingError")
	})

	t.Run("keys", func(t *testing.T) {
		key := tm.renewKey(t, tm.orgAdmin, "carl")
		carl := tm.keyClient("carl", key)
		carl.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
		if got := tm.orgAdmin.Call(t, http.MethodGet, "/api/user/carl/key", nil).Want(t, 200).Text(t); got != key {
			t.Fatalf("revealed key differs")
		}
		if got := carl.Call(t, http.MethodGet, "/api/user/carl/key", nil).Want(t, 200).Text(t); got != key {
			t.Fatalf("own key differs")
		}
		tm.analyst.Call(t, http.MethodGet, "/api/user/carl/key", nil).WantError(t, 403, "AuthorizationError")
		// A renewed key replaces the old one.
		newKey := tm.renewKey(t, carl, "carl")
		carl.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
		tm.keyClient("carl", newKey).Call(t, http.MethodDelete, "/api/user/carl/key", nil).Want(t, 204)
		tm.keyClient("carl", newKey).Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
		tm.orgAdmin.Call(t, http.MethodGet, "/api/user/carl/key", nil).WantError(t, 404, "NotFoundError")
		if strings.Contains(tm.logs.String(), newKey) || strings.Contains(tm.logs.String(), key) {
			t.Fatal("a key reached the logs")
		}
		tm.keyClient("carl", tm.renewKey(t, tm.orgAdmin, "carl")) // a live key to look for
		live := tm.orgAdmin.Call(t, http.MethodGet, "/api/user/carl/key", nil).Want(t, 200).Text(t)
		for _, k := range []string{key, newKey, live} {
			tm.notStored(t, k)
		}
		for _, r := range []*resp{tm.orgAdmin.Call(t, http.MethodGet, "/api/user/carl", nil),
			tm.orgAdmin.Call(t, http.MethodGet, "/api/user", nil)} {
			if strings.Contains(string(r.Body), live) || strings.Contains(string(r.Body), "keyHash") {
				t.Fatalf("%s exposes key material: %s", r.Path, r.Body)
			}
		}
	})

	t.Run("passwords", func(t *testing.T) {
		tm.orgAdmin.Call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "first-password"}).
			Want(t, 204)
		s := tm.sessionClient()
		s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "carl", "password": "first-password"}).Want(t, 200)
		s.CSRF = true
		s.Call(t, http.MethodPost, "/api/user/carl/password/change",
			map[string]string{"currentPassword": "wrong-password", "password": "second-password"}).WantError(t, 403, "AuthorizationError")
		s.Call(t, http.MethodPost, "/api/user/carl/password/change",
			map[string]string{"currentPassword": "first-password", "password": "second-password"}).Want(t, 204)
		tm.sessionClient().Call(t, http.MethodPost, "/api/login", map[string]string{"user": "carl", "password": "second-password"}).Want(t, 200)
		tm.analyst.Call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "third-password"}).
			WantError(t, 403, "AuthorizationError")
		tm.orgAdmin.Call(t, http.MethodPost, "/api/user/carl/password/set", map[string]string{"password": "x"}).
			WantError(t, 400, "AttributeCheckingError")
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
	e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "ana", "profile": "analyst", "organisation": "soc"}).Want(t, 201)
	for _, r := range []*resp{
		e.admin.Call(t, http.MethodPost, "/api/user/ana/key/renew", nil),
		e.admin.Call(t, http.MethodGet, "/api/user/ana/key", nil),
		e.admin.Call(t, http.MethodDelete, "/api/user/ana/key", nil),
		e.admin.Call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "a-good-password"}),
		e.admin.Call(t, http.MethodPost, "/api/user/ana/password/change", map[string]string{"password": "a-good-password"}),
		e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "x", "profile": "analyst", "organisation": "soc", "password": "a-good-password"}),
	} {
		if msg := r.WantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "HTTPS") {
			t.Errorf("%s %s: message %q", r.Method, r.Path, msg)
		}
	}
	// Without a password the creation is fine over plain HTTP.
	e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "y", "profile": "analyst", "organisation": "soc"}).Want(t, 201)
}

func TestOrganisations(t *testing.T) {
	tm := newTeam(t)
	o := tm.admin.Call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "dfir", "description": "DFIR"}).
		Want(t, 201).Object(t)
	if o.Str(t, "name") != "dfir" || o.Str(t, "_id") != "~dfir" || o.Str(t, "_type") != "organisation" ||
		o.Str(t, "description") != "DFIR" || o.Str(t, "createdBy") != adminLogin {
		t.Fatalf("created %v", o)
	}
	o.Null(t, "updatedAt")
	o.Null(t, "updatedBy")
	tm.admin.Call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "dfir"}).WantError(t, 400, "CreateError")
	tm.admin.Call(t, http.MethodPost, "/api/v1/organisation", map[string]any{"name": "bad name"}).
		WantError(t, 400, "AttributeCheckingError")
	msg := tm.orgAdmin.Call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "mine"}).
		WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageOrganisation") {
		t.Errorf("message %q", msg)
	}

	// Get: own organisation yes, another no.
	tm.analyst.Call(t, http.MethodGet, "/api/organisation/soc", nil).Want(t, 200)
	tm.analyst.Call(t, http.MethodGet, "/api/v1/organisation/~soc", nil).Want(t, 200)
	tm.analyst.Call(t, http.MethodGet, "/api/organisation/cert", nil).WantError(t, 404, "NotFoundError")
	tm.admin.Call(t, http.MethodGet, "/api/organisation/cert", nil).Want(t, 200)
	tm.admin.Call(t, http.MethodGet, "/api/organisation/nowhere", nil).WantError(t, 404, "NotFoundError")

	// List: everything for the administrator, one's own for others.
	r := tm.admin.Call(t, http.MethodGet, "/api/organisation?range=all&sort=+name", nil).Want(t, 200)
	var names []string
	for _, x := range r.List(t) {
		names = append(names, x.Str(t, "name"))
	}
	if !slices.Equal(names, []string{"admin", "cert", "dfir", "soc"}) || r.Total(t) != "4" {
		t.Fatalf("organisations %v", names)
	}
	r = tm.analyst.Call(t, http.MethodPost, "/api/organisation/_search", map[string]any{"query": map[string]any{}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "name") != "soc" {
		t.Fatalf("analyst sees %s", r.Body)
	}

	// Update: description only, by the administrator.
	u := tm.admin.Call(t, http.MethodPatch, "/api/organisation/dfir", map[string]any{"description": "Forensics"}).Want(t, 200).Object(t)
	if u.Str(t, "description") != "Forensics" || u.Str(t, "updatedBy") != adminLogin || u.Num(t, "updatedAt") <= 0 {
		t.Fatalf("updated %v", u)
	}
	tm.admin.Call(t, http.MethodPatch, "/api/organisation/dfir", map[string]any{"name": "other"}).
		WantError(t, 400, "AttributeCheckingError")
	tm.orgAdmin.Call(t, http.MethodPatch, "/api/organisation/soc", map[string]any{"description": "x"}).
		WantError(t, 403, "AuthorizationError")
	tm.admin.Call(t, http.MethodPatch, "/api/organisation/nowhere", map[string]any{"description": "x"}).
		WantError(t, 404, "NotFoundError")
}

// A user in two organisations works in the one X-Organisation names, by default the first.
func TestMultipleOrganisations(t *testing.T) {
	tm := newTeam(t)
	// Creating an existing login never adds an organisation, not even for the platform administrator.
	tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "ana", "organisation": "cert", "profile": "read-only"}).
		WantError(t, 400, "CreateError")
	// The platform administrator adds ana (analyst of soc) to cert as read-only through her memberships; her
	// key is revoked by that, so she gets a new one.
	u := tm.admin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "analyst"}, {"organisation": "cert", "profile": "read-only"}}}).
		Want(t, 200).Object(t)
	if ms := u["organisations"].([]any); len(ms) != 2 {
		t.Fatalf("memberships %v", u["organisations"])
	}
	tm.analyst.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
	tm.analyst = tm.keyClient("ana", tm.renewKey(t, tm.admin, "ana"))
	// An org-admin cannot capture an existing login.
	tm.orgAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "bob", "profile": "analyst"}).
		WantError(t, 400, "CreateError")

	cur := tm.analyst.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t)
	if cur.Str(t, "organisation") != "soc" || cur.Str(t, "profile") != "analyst" {
		t.Fatalf("default organisation %v", cur)
	}
	inCert := tm.analyst.in("cert")
	cur = inCert.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t)
	if cur.Str(t, "organisation") != "cert" || cur.Str(t, "profile") != "read-only" || len(cur.Strs(t, "permissions")) != 0 {
		t.Fatalf("in cert %v", cur)
	}
	tm.analyst.in("~cert").Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)

	// Cases live in the organisation of the request.
	c := tm.analyst.newCase(t, map[string]any{"title": "soc case"})
	inCert.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	msg := inCert.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
		WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageCase") {
		t.Errorf("message %q", msg)
	}
	other := tm.other.newCase(t, nil)
	inCert.Call(t, http.MethodGet, "/api/case/"+other.Str(t, "id"), nil).Want(t, 200)

	// A session may pin an organisation at login; X-Organisation still wins per request.
	tm.admin.Call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "ana-password"}).Want(t, 204)
	s := tm.sessionClient()
	s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password", "organisation": "nowhere"}).
		WantError(t, 403, "AuthorizationError")
	u = s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password", "organisation": "cert"}).
		Want(t, 200).Object(t)
	if u.Str(t, "organisation") != "cert" {
		t.Fatalf("login in cert %v", u)
	}
	if got := s.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t); got.Str(t, "organisation") != "cert" {
		t.Fatalf("session in cert %v", got)
	}
	if got := s.in("soc").Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t); got.Str(t, "organisation") != "soc" {
		t.Fatalf("header over the session %v", got)
	}
	s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "ana", "password": "ana-password"}).Want(t, 200)
	if got := s.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t); got.Str(t, "organisation") != "soc" {
		t.Fatalf("a plain login keeps the pinned organisation: %v", got)
	}

	// An organisation the user is not in is refused.
	tm.analyst.in("admin").Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 403, "AuthorizationError")
	tm.analyst.in("nowhere").Call(t, http.MethodGet, "/api/case", nil).WantError(t, 403, "AuthorizationError")

	// An org-admin of soc may no longer manage ana's account (she also works in cert) but may change her
	// profile in soc.
	tm.orgAdmin.Call(t, http.MethodPost, "/api/user/ana/password/set", map[string]string{"password": "some-password"}).
		WantError(t, 403, "AuthorizationError")
	tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"profile": "org-admin"}).Want(t, 200)

	// The platform administrator replaces memberships.
	u = tm.admin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"organisations": []map[string]string{
		{"organisation": "cert", "profile": "analyst"}}}).Want(t, 200).Object(t)
	if u.Str(t, "organisation") != "cert" || u.Str(t, "profile") != "analyst" {
		t.Fatalf("after replace %v", u)
	}
	tm.analyst.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "analyst"}}}).WantError(t, 403, "AuthorizationError")
	tm.admin.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{}}).
		WantError(t, 400, "AttributeCheckingError")
	tm.admin.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "admin"}}}).WantError(t, 400, "AttributeCheckingError")
}

func TestProfiles(t *testing.T) {
	tm := newTeam(t)
	r := tm.readOnly.Call(t, http.MethodGet, "/api/profile", nil).Want(t, 200)
	perms := map[string][]string{}
	for _, p := range r.List(t) {
		perms[p.Str(t, "name")] = p.Strs(t, "permissions")
	}
	if len(perms) != 4 || r.Total(t) != "4" {
		t.Fatalf("profiles %s", r.Body)
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
	p := tm.readOnly.Call(t, http.MethodGet, "/api/v1/profile/analyst", nil).Want(t, 200).Object(t)
	if p.Str(t, "_id") != "~analyst" {
		t.Fatalf("profile %v", p)
	}
	tm.readOnly.Call(t, http.MethodGet, "/api/profile/boss", nil).WantError(t, 404, "NotFoundError")
	r = tm.readOnly.Call(t, http.MethodPost, "/api/profile/_search?sort=-name", map[string]any{
		"query": map[string]any{"_in": map[string]any{"_field": "name", "_values": []string{"analyst", "admin"}}}}).Want(t, 200)
	if l := r.List(t); len(l) != 2 || l[0].Str(t, "name") != "analyst" || r.Total(t) != "2" {
		t.Fatalf("profile search %s", r.Body)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/profile/_search", map[string]any{"query": map[string]any{"name": "org-admin"}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "name") != "org-admin" {
		t.Fatalf("profile search %s", r.Body)
	}
	tm.readOnly.Call(t, http.MethodPost, "/api/profile/_search", map[string]any{
		"query": map[string]any{"_like": map[string]any{"_field": "name", "_value": "a"}}}).WantError(t, 400, "BadRequest")
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
