package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/web"
)

// --- session, basic, keys ---

func TestAPI_Login(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "alice", orgA, roleAnalyze)
	e.setPassword(t, "alice", "alice-password")
	e.createUser(t, e.super, "nopass", orgA, roleRead)

	t.Run("success sets the session and CSRF cookies", func(t *testing.T) {
		c := e.sessionClient()
		r := c.loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
		u := r.Object(t)
		if u["id"] != "alice" || u["name"] != "User alice" {
			t.Errorf("login body %s: want id alice, name User alice", r.Body)
		}
		if got := stringsOf(u["roles"]); !slices.Equal(got, roleAnalyze) {
			t.Errorf("login roles %v, want %v", got, roleAnalyze)
		}
		session, csrf := findCookie(r.Cookies, "SESSION"), findCookie(r.Cookies, "XSRF-TOKEN")
		if session == nil || session.Value == "" {
			t.Fatalf("no SESSION cookie in %v", r.Header["Set-Cookie"])
		}
		if !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
			t.Errorf("SESSION cookie HttpOnly=%v SameSite=%v, want HttpOnly and Lax", session.HttpOnly, session.SameSite)
		}
		if csrf == nil || csrf.Value == "" {
			t.Fatalf("no XSRF-TOKEN cookie in %v", r.Header["Set-Cookie"])
		}
		if csrf.HttpOnly {
			t.Errorf("XSRF-TOKEN is HttpOnly: a browser client could not echo it")
		}
		if strings.Contains(session.Value, "alice-password") {
			t.Errorf("session token carries the password")
		}
	})

	t.Run("the cookie authenticates", func(t *testing.T) {
		c := e.sessionClient()
		c.loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
		u := c.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK).Object(t)
		if u["id"] != "alice" || u["hasPassword"] != true || u["hasKey"] != false {
			t.Errorf("current user %v: want alice with hasPassword true, hasKey false", u)
		}
	})

	t.Run("state-changing cookie requests need the CSRF header", func(t *testing.T) {
		c := e.sessionClient()
		c.loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
		c.Call(t, http.MethodPatch, "/api/user/alice", map[string]string{"name": "No CSRF"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		c.Send(t, http.MethodPatch, "/api/user/alice", "application/json", strings.NewReader(`{"name":"Wrong CSRF"}`),
			http.Header{"X-Xsrf-Token": {"not-the-token"}}).WantError(t, http.StatusForbidden, "AuthorizationError")
		if n := e.getUser(t, "alice")["name"]; n != "User alice" {
			t.Fatalf("name changed to %v by a request without a valid CSRF header", n)
		}
		c.CSRF = true
		c.Call(t, http.MethodPatch, "/api/user/alice", map[string]string{"name": "Alice"}).Want(t, http.StatusOK)
		if n := e.getUser(t, "alice")["name"]; n != "Alice" {
			t.Fatalf("name %v after PATCH with the CSRF header, want Alice", n)
		}
	})

	t.Run("failures all look the same", func(t *testing.T) {
		c := e.sessionClient()
		cases := []struct{ name, user, password string }{
			{"bad password", "alice", "wrong-password"},
			{"unknown user", "nobody", "alice-password"},
			{"user without password", "nopass", "alice-password"},
			{"empty password", "alice", ""},
			{"superadmin without password", superLogin, superKey},
			{"nothing", "", ""},
		}
		for _, tc := range cases {
			r := c.loginAs(t, tc.user, tc.password)
			if msg := r.WantError(t, http.StatusUnauthorized, "AuthenticationError"); msg != authFailure {
				t.Errorf("%s: message %q", tc.name, msg)
			}
			if findCookie(r.Cookies, "SESSION") != nil {
				t.Errorf("%s: a failed login set a SESSION cookie", tc.name)
			}
		}
	})

	t.Run("as a form", func(t *testing.T) {
		c := e.sessionClient()
		c.Form(t, http.MethodPost, "/api/login", url.Values{"user": {"alice"}, "password": {"alice-password"}}).
			Want(t, http.StatusOK)
		c.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	})

	t.Run("logout clears the cookie", func(t *testing.T) {
		c := e.sessionClient()
		c.loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
		r := c.Call(t, http.MethodPost, "/api/logout", nil)
		if r.Status != http.StatusOK && r.Status != http.StatusNoContent {
			t.Fatalf("logout: status %d %s", r.Status, r.Body)
		}
		ck := findCookie(r.Cookies, "SESSION")
		if ck == nil || ck.Value != "" || ck.MaxAge >= 0 {
			t.Errorf("logout Set-Cookie %v: want SESSION cleared (empty, Max-Age<=0)", r.Header["Set-Cookie"])
		}
		if c.Cookie("SESSION") != "" {
			t.Errorf("the jar still holds a SESSION cookie after logout")
		}
		c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	})

	t.Run("a locked user's session stops working", func(t *testing.T) {
		c := e.sessionClient()
		c.loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
		e.super.Call(t, http.MethodPatch, "/api/user/alice", map[string]string{"status": "Locked"}).Want(t, http.StatusOK)
		c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.sessionClient().loginAs(t, "alice", "alice-password").WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.super.Call(t, http.MethodPatch, "/api/user/alice", map[string]string{"status": "Active"}).Want(t, http.StatusOK)
		// The lock ended the session: unlocking does not bring it back (issue 15).
		c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.sessionClient().loginAs(t, "alice", "alice-password").Want(t, http.StatusOK)
	})
}

func TestAPI_LockedOrgLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, "org-z")
	e.createUser(t, e.super, "zed", "org-z", roleRead)
	e.setPassword(t, "zed", "zed-password")
	c := e.sessionClient()
	c.loginAs(t, "zed", "zed-password").Want(t, http.StatusOK)
	e.super.Call(t, http.MethodDelete, "/api/organization/org-z", nil).Want(t, http.StatusNoContent)
	c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	e.sessionClient().loginAs(t, "zed", "zed-password").WantError(t, http.StatusUnauthorized, "AuthenticationError")
	e.super.Call(t, http.MethodPatch, "/api/organization/org-z", map[string]string{"status": "Active"}).Want(t, http.StatusOK)
	// The lock ended the session: unlocking does not bring it back (issue 15).
	c.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	e.sessionClient().loginAs(t, "zed", "zed-password").Want(t, http.StatusOK)
}

// clock is a settable clock for sessions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAPI_SessionSliding checks the session lifetime of DECISIONS.md: 1 h, sliding.
func TestAPI_SessionSliding(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	e := newEnv(t, withClock(clk.now))
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "sid", orgA, roleRead)
	e.setPassword(t, "sid", "sid-password")
	c := e.sessionClient()
	c.loginAs(t, "sid", "sid-password").Want(t, http.StatusOK)
	first := c.Cookie("SESSION")
	current := func() *resp { return c.Call(t, http.MethodGet, "/api/user/current", nil) }

	clk.advance(40 * time.Minute)
	r := current().Want(t, http.StatusOK)
	if ck := findCookie(r.Cookies, "SESSION"); ck == nil || ck.Value == first || !ck.HttpOnly {
		t.Fatalf("no renewed HttpOnly SESSION cookie 40 min into a 1 h session: %v", r.Header["Set-Cookie"])
	}
	clk.advance(50 * time.Minute) // 90 min after login, 50 after the renewal
	current().Want(t, http.StatusOK)
	old := e.anon().Send(t, http.MethodGet, "/api/user/current", "", nil, http.Header{"Cookie": {"SESSION=" + first}})
	old.WantError(t, http.StatusUnauthorized, "AuthenticationError")
	clk.advance(61 * time.Minute) // idle for more than the lifetime
	current().WantError(t, http.StatusUnauthorized, "AuthenticationError")
}

func TestAPI_BasicAuth(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		t.Run("basic="+strconv.FormatBool(on), func(t *testing.T) {
			t.Parallel()
			var opts []envOption
			if on {
				opts = append(opts, withBasic())
			}
			e := newEnv(t, opts...)
			e.createOrg(t, orgA)
			e.createUser(t, e.super, "bob", orgA, roleRead)
			e.setPassword(t, "bob", "bob-password")
			r := e.basicClient("bob", "bob-password").Call(t, http.MethodGet, "/api/user/current", nil)
			if !on {
				r.WantError(t, http.StatusUnauthorized, "AuthenticationError")
				return
			}
			if id := r.Want(t, http.StatusOK).Object(t)["id"]; id != "bob" {
				t.Errorf("basic auth as bob: current user %v", id)
			}
			var st struct {
				Config struct {
					AuthType []string `json:"authType"`
				} `json:"config"`
			}
			e.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK).Decode(t, &st)
			if !slices.Contains(st.Config.AuthType, "basic") {
				t.Errorf("/api/status authType %v lacks basic", st.Config.AuthType)
			}
			e.basicClient("bob", "wrong-password").Call(t, http.MethodGet, "/api/user/current", nil).
				WantError(t, http.StatusUnauthorized, "AuthenticationError")
			e.super.Call(t, http.MethodPatch, "/api/user/bob", map[string]string{"status": "Locked"}).Want(t, http.StatusOK)
			e.basicClient("bob", "bob-password").Call(t, http.MethodGet, "/api/user/current", nil).
				WantError(t, http.StatusUnauthorized, "AuthenticationError")
		})
	}
}

func TestAPI_Keys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	admin := e.user(t, "oa", orgA, roleOrgAdmin)

	t.Run("get returns the key as text", func(t *testing.T) {
		carl := e.user(t, "carl", orgA, roleRead)
		for _, c := range []*client{carl, admin, e.super} {
			r := c.Call(t, http.MethodGet, "/api/user/carl/key", nil).Want(t, http.StatusOK)
			if k := r.Text(t); k != carl.Key {
				t.Errorf("GET key as %s: %q, want %q", c.Login, k, carl.Key)
			}
			if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				t.Errorf("key response Cache-Control %q, want no-store", cc)
			}
		}
		if u := e.getUser(t, "carl"); u["hasKey"] != true {
			t.Errorf("hasKey %v, want true", u["hasKey"])
		}
	})

	t.Run("revoked key stops working", func(t *testing.T) {
		dora := e.user(t, "dora", orgA, roleRead)
		dora.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
		r := admin.Call(t, http.MethodDelete, "/api/user/dora/key", nil).Want(t, http.StatusOK)
		if len(r.Body) != 0 {
			t.Errorf("revoke body %q, want empty", r.Body)
		}
		dora.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.super.Call(t, http.MethodGet, "/api/user/dora/key", nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if u := e.getUser(t, "dora"); u["hasKey"] != false {
			t.Errorf("hasKey %v after revoke, want false", u["hasKey"])
		}
	})

	t.Run("renewed key replaces the old one", func(t *testing.T) {
		old := e.user(t, "ed", orgA, roleRead)
		newKey := e.renewKey(t, old, "ed") // a user may renew its own key
		if newKey == old.Key {
			t.Fatalf("renew returned the same key")
		}
		old.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		fresh := e.keyClient("ed", newKey)
		fresh.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
		if k := fresh.Call(t, http.MethodGet, "/api/user/ed/key", nil).Want(t, http.StatusOK).Text(t); k != newKey {
			t.Errorf("GET key after renew: %q, want %q", k, newKey)
		}
		// Renewed by an admin: the user's key changes again.
		third := e.renewKey(t, admin, "ed")
		fresh.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.keyClient("ed", third).Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	})

	t.Run("user without key", func(t *testing.T) {
		e.createUser(t, e.super, "fay", orgA, roleRead)
		e.super.Call(t, http.MethodGet, "/api/user/fay/key", nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if u := e.getUser(t, "fay"); u["hasKey"] != false {
			t.Errorf("hasKey %v, want false", u["hasKey"])
		}
	})

	t.Run("bad bearer credentials", func(t *testing.T) {
		for _, h := range []string{"Bearer ", "Bearer nope", "Bearer " + strings.Repeat("x", 32), "Bearer " + superKey + "x"} {
			e.anon().Send(t, http.MethodGet, "/api/user/current", "", nil, http.Header{"Authorization": {h}}).
				WantError(t, http.StatusUnauthorized, "AuthenticationError")
		}
	})
}

// --- users ---

func TestAPI_CreateUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createOrg(t, orgB)
	admin := e.user(t, "oa", orgA, roleOrgAdmin)
	reader := e.user(t, "rd", orgA, roleRead)

	create := func(t *testing.T, as *client, body map[string]any) *resp {
		t.Helper()
		return as.Call(t, http.MethodPost, "/api/user", body)
	}

	t.Run("created", func(t *testing.T) {
		r := create(t, admin, map[string]any{"login": "gus", "name": "Gus", "roles": roleAnalyze, "organization": orgA})
		u := r.Want(t, http.StatusCreated).Object(t)
		want := map[string]any{"id": "gus", "name": "Gus", "status": "Ok", "organization": orgA,
			"hasKey": false, "hasPassword": false, "createdBy": "oa"}
		for k, v := range want {
			if u[k] != v {
				t.Errorf("created user %s = %v, want %v (body %s)", k, u[k], v, r.Body)
			}
		}
		if got := stringsOf(u["roles"]); !slices.Equal(got, roleAnalyze) {
			t.Errorf("roles %v, want %v", got, roleAnalyze)
		}
		if n, _ := u["createdAt"].(float64); n < 1e12 {
			t.Errorf("createdAt %v is not epoch milliseconds", u["createdAt"])
		}
		back := e.getUser(t, "gus")
		if back["status"] != "Active" || back["organization"] != orgA || back["name"] != "Gus" {
			t.Errorf("read back %v: want status Active in %s", back, orgA)
		}
	})

	t.Run("orgadmin without organization creates in its own", func(t *testing.T) {
		u := create(t, admin, map[string]any{"login": "hal", "roles": roleRead}).Want(t, http.StatusCreated).Object(t)
		if u["organization"] != orgA {
			t.Errorf("organization %v, want %s", u["organization"], orgA)
		}
	})

	t.Run("as a form", func(t *testing.T) {
		admin.Form(t, http.MethodPost, "/api/user", url.Values{"login": {"ida"}, "roles": {"read", "analyze"}}).
			Want(t, http.StatusCreated)
		if got := stringsOf(e.getUser(t, "ida")["roles"]); !slices.Equal(got, roleAnalyze) {
			t.Errorf("roles %v, want %v", got, roleAnalyze)
		}
	})

	t.Run("as multipart", func(t *testing.T) {
		admin.MultipartJSON(t, http.MethodPost, "/api/user", map[string]any{"login": "ivy", "roles": roleRead}).
			Want(t, http.StatusCreated)
		if u := e.getUser(t, "ivy"); u["organization"] != orgA {
			t.Errorf("created by multipart: %v", u)
		}
	})

	t.Run("invalid role sets", func(t *testing.T) {
		for i, roles := range [][]string{{"analyze"}, {"read", "superadmin"}, {"orgadmin"}, {"read", "orgadmin"},
			{"admin"}, {}, {"read", "analyze", "orgadmin", "superadmin"}} {
			login := "bad-roles-" + strconv.Itoa(i)
			r := create(t, e.super, map[string]any{"login": login, "roles": roles, "organization": orgA})
			r.WantError(t, http.StatusBadRequest, "AttributeCheckingError")
			if names := r.FieldErrors(t); !slices.Contains(names, "roles") {
				t.Errorf("roles %v: errors %v do not name roles", roles, names)
			}
			e.super.Call(t, http.MethodGet, "/api/user/"+login, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		}
		create(t, e.super, map[string]any{"login": "no-roles", "organization": orgA}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	})

	t.Run("invalid login", func(t *testing.T) {
		for _, login := range []string{"", "has space", "-dash", "a/b", strings.Repeat("x", 129)} {
			r := create(t, e.super, map[string]any{"login": login, "roles": roleRead, "organization": orgA})
			r.WantError(t, http.StatusBadRequest, "AttributeCheckingError")
			if names := r.FieldErrors(t); !slices.Contains(names, "login") {
				t.Errorf("login %q: errors %v do not name login", login, names)
			}
		}
	})

	t.Run("duplicate login", func(t *testing.T) {
		create(t, e.super, map[string]any{"login": "jo", "roles": roleRead, "organization": orgA}).Want(t, http.StatusCreated)
		create(t, e.super, map[string]any{"login": "jo", "roles": roleAnalyze, "organization": orgB}).
			WantError(t, http.StatusBadRequest, "CreateError")
		if u := e.getUser(t, "jo"); u["organization"] != orgA {
			t.Errorf("duplicate create changed the user: %v", u)
		}
	})

	t.Run("orgadmin in another organization", func(t *testing.T) {
		create(t, admin, map[string]any{"login": "kim", "roles": roleRead, "organization": orgB}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		e.super.Call(t, http.MethodGet, "/api/user/kim", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("orgadmin creating a superadmin", func(t *testing.T) {
		create(t, admin, map[string]any{"login": "lex", "roles": roleSuper}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		create(t, admin, map[string]any{"login": "lex", "roles": roleSuper, "organization": "admin"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		e.super.Call(t, http.MethodGet, "/api/user/lex", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("non-orgadmin", func(t *testing.T) {
		create(t, reader, map[string]any{"login": "max", "roles": roleRead}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
	})

	t.Run("unknown organization", func(t *testing.T) {
		create(t, e.super, map[string]any{"login": "ned", "roles": roleRead, "organization": "no-such-org"}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		e.super.Call(t, http.MethodGet, "/api/user/ned", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("superadmins only in admin", func(t *testing.T) {
		create(t, e.super, map[string]any{"login": "ola", "roles": roleSuper, "organization": orgA}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		create(t, e.super, map[string]any{"login": "ola", "roles": roleRead, "organization": "admin"}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		u := create(t, e.super, map[string]any{"login": "ola", "roles": roleSuper, "organization": "admin"}).
			Want(t, http.StatusCreated).Object(t)
		if got := stringsOf(u["roles"]); !slices.Equal(got, roleSuper) || u["organization"] != "admin" {
			t.Errorf("superadmin created as %v", u)
		}
	})

	t.Run("short password", func(t *testing.T) {
		r := create(t, e.super, map[string]any{"login": "pam", "roles": roleRead, "organization": orgA, "password": "short"})
		r.WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		if names := r.FieldErrors(t); !slices.Contains(names, "password") {
			t.Errorf("errors %v do not name password", names)
		}
	})
}

func TestAPI_UpdateUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	admin := e.user(t, "oa", orgA, roleOrgAdmin)
	quinn := e.user(t, "quinn", orgA, roleRead)

	t.Run("own name", func(t *testing.T) {
		u := quinn.Call(t, http.MethodPatch, "/api/user/quinn", map[string]string{"name": "Quinn"}).
			Want(t, http.StatusOK).Object(t)
		if u["name"] != "Quinn" || u["updatedBy"] != "quinn" {
			t.Errorf("PATCH own name: %v", u)
		}
		if n := e.getUser(t, "quinn")["name"]; n != "Quinn" {
			t.Errorf("read back name %v", n)
		}
	})

	t.Run("own roles and status are refused", func(t *testing.T) {
		quinn.Call(t, http.MethodPatch, "/api/user/quinn", map[string]any{"roles": roleAnalyze}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		quinn.Call(t, http.MethodPatch, "/api/user/quinn", map[string]any{"status": "Locked"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		admin.Call(t, http.MethodPatch, "/api/user/oa", map[string]any{"roles": roleRead}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		u := e.getUser(t, "quinn")
		if got := stringsOf(u["roles"]); !slices.Equal(got, roleRead) || u["status"] != "Active" {
			t.Errorf("after refused self-PATCH: %v", u)
		}
	})

	t.Run("orgadmin changes roles", func(t *testing.T) {
		u := admin.Call(t, http.MethodPatch, "/api/user/quinn", map[string]any{"roles": roleAnalyze}).
			Want(t, http.StatusOK).Object(t)
		if got := stringsOf(u["roles"]); !slices.Equal(got, roleAnalyze) {
			t.Errorf("roles %v, want %v", got, roleAnalyze)
		}
		admin.Call(t, http.MethodPatch, "/api/user/quinn", map[string]any{"roles": []string{"analyze"}}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		r := admin.Call(t, http.MethodPatch, "/api/user/quinn", map[string]any{"roles": roleSuper})
		if r.Status != http.StatusBadRequest && r.Status != http.StatusForbidden {
			t.Errorf("orgadmin granting superadmin: status %d, want 400 or 403", r.Status)
		}
		r.CheckErrorShape(t)
		if got := stringsOf(e.getUser(t, "quinn")["roles"]); !slices.Equal(got, roleAnalyze) {
			t.Errorf("roles %v after refused PATCHes, want %v", got, roleAnalyze)
		}
	})

	t.Run("lock and unlock", func(t *testing.T) {
		u := admin.Call(t, http.MethodPatch, "/api/user/quinn", map[string]string{"status": "Locked"}).
			Want(t, http.StatusOK).Object(t)
		if u["status"] != "Locked" {
			t.Errorf("status %v, want Locked", u["status"])
		}
		quinn.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		if s := e.getUser(t, "quinn")["status"]; s != "Locked" {
			t.Errorf("read back status %v", s)
		}
		admin.Call(t, http.MethodPatch, "/api/user/quinn", map[string]string{"status": "Active"}).Want(t, http.StatusOK)
		quinn.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	})

	t.Run("invalid values", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"status": "Sleeping"}, {"status": ""}, {"name": ""}, {"name": strings.Repeat("n", 257)},
			{"name": 12}, {"roles": 7}, {"organization": "other"},
		} {
			admin.Call(t, http.MethodPatch, "/api/user/quinn", body).
				WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		}
		for _, body := range []map[string]any{{"password": "new-password-1"}, {"key": "0123456789abcdef0123456789abcdef"}} {
			r := admin.Call(t, http.MethodPatch, "/api/user/quinn", body)
			if r.Status < 400 {
				t.Errorf("PATCH %v: status %d, want an error", body, r.Status)
			}
			r.CheckErrorShape(t)
		}
		u := e.getUser(t, "quinn")
		if u["name"] != "Quinn" || u["status"] != "Active" || u["organization"] != orgA || u["hasPassword"] != false {
			t.Errorf("after refused PATCHes: %v", u)
		}
	})

	t.Run("unknown user", func(t *testing.T) {
		e.super.Call(t, http.MethodPatch, "/api/user/nobody", map[string]string{"name": "x"}).
			WantError(t, http.StatusNotFound, "NotFoundError")
	})
}

func TestAPI_Passwords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	admin := e.user(t, "oa", orgA, roleOrgAdmin)
	rita := e.user(t, "rita", orgA, roleRead)

	t.Run("set then login", func(t *testing.T) {
		admin.Call(t, http.MethodPost, "/api/user/rita/password/set", map[string]string{"password": "rita-password-1"}).
			Want(t, http.StatusNoContent)
		if u := e.getUser(t, "rita"); u["hasPassword"] != true {
			t.Errorf("hasPassword %v after set", u["hasPassword"])
		}
		e.sessionClient().loginAs(t, "rita", "rita-password-1").Want(t, http.StatusOK)
	})

	t.Run("change needs the current password", func(t *testing.T) {
		rita.Call(t, http.MethodPost, "/api/user/rita/password/change",
			map[string]string{"currentPassword": "wrong-password", "password": "rita-password-2"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		e.sessionClient().loginAs(t, "rita", "rita-password-1").Want(t, http.StatusOK)
		rita.Call(t, http.MethodPost, "/api/user/rita/password/change",
			map[string]string{"currentPassword": "rita-password-1", "password": "rita-password-2"}).
			Want(t, http.StatusNoContent)
		e.sessionClient().loginAs(t, "rita", "rita-password-2").Want(t, http.StatusOK)
		e.sessionClient().loginAs(t, "rita", "rita-password-1").WantError(t, http.StatusUnauthorized, "AuthenticationError")
	})

	t.Run("change without a password", func(t *testing.T) {
		sam := e.user(t, "sam", orgA, roleRead)
		sam.Call(t, http.MethodPost, "/api/user/sam/password/change",
			map[string]string{"currentPassword": "", "password": "sam-password-1"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
	})

	t.Run("short passwords", func(t *testing.T) {
		r := admin.Call(t, http.MethodPost, "/api/user/rita/password/set", map[string]string{"password": "1234567"})
		r.WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		admin.Call(t, http.MethodPost, "/api/user/rita/password/set", map[string]string{}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		rita.Call(t, http.MethodPost, "/api/user/rita/password/change",
			map[string]string{"currentPassword": "rita-password-2", "password": "short"}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		e.sessionClient().loginAs(t, "rita", "rita-password-2").Want(t, http.StatusOK)
	})

	t.Run("unknown user", func(t *testing.T) {
		e.super.Call(t, http.MethodPost, "/api/user/nobody/password/set", map[string]string{"password": "password-123"}).
			WantError(t, http.StatusNotFound, "NotFoundError")
	})
}

// --- organizations ---

func TestAPI_Organizations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("created", func(t *testing.T) {
		r := e.super.Call(t, http.MethodPost, "/api/organization", map[string]string{"name": orgA, "description": "Org A"})
		o := r.Want(t, http.StatusCreated).Object(t)
		want := map[string]any{"id": orgA, "name": orgA, "description": "Org A", "status": "Active", "createdBy": superLogin}
		for k, v := range want {
			if o[k] != v {
				t.Errorf("created org %s = %v, want %v (body %s)", k, o[k], v, r.Body)
			}
		}
		if n, _ := o["createdAt"].(float64); n < 1e12 {
			t.Errorf("createdAt %v is not epoch milliseconds", o["createdAt"])
		}
		if back := e.getOrg(t, orgA); back["description"] != "Org A" || back["status"] != "Active" {
			t.Errorf("read back %v", back)
		}
		locked := e.super.Call(t, http.MethodPost, "/api/organization", map[string]string{"name": "born-locked", "status": "Locked"}).
			Want(t, http.StatusCreated).Object(t)
		if locked["status"] != "Locked" {
			t.Errorf("created with status Locked: %v", locked["status"])
		}
	})

	t.Run("duplicate", func(t *testing.T) {
		e.super.Call(t, http.MethodPost, "/api/organization", map[string]string{"name": orgA, "description": "again"}).
			WantError(t, http.StatusBadRequest, "CreateError")
		if d := e.getOrg(t, orgA)["description"]; d != "Org A" {
			t.Errorf("duplicate create changed the description to %v", d)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"name": ""}, {"name": "has space"}, {"name": "-x"}, {"name": "a/b"}, {"name": strings.Repeat("o", 65)},
			{"name": "ok-name", "status": "Sleeping"}, {"name": "ok-name", "description": strings.Repeat("d", 4097)},
			{"name": 42},
		} {
			e.super.Call(t, http.MethodPost, "/api/organization", body).
				WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		}
		e.super.Call(t, http.MethodGet, "/api/organization/ok-name", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	e.createOrg(t, orgB)
	readerA := e.user(t, "ra", orgA, roleRead)
	readerB := e.user(t, "rb", orgB, roleRead)

	t.Run("own and other", func(t *testing.T) {
		if o := readerA.Call(t, http.MethodGet, "/api/organization/"+orgA, nil).Want(t, http.StatusOK).Object(t); o["id"] != orgA {
			t.Errorf("own org: %v", o)
		}
		readerA.Call(t, http.MethodGet, "/api/organization/"+orgB, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		readerA.Call(t, http.MethodGet, "/api/organization/admin", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("update", func(t *testing.T) {
		o := e.super.Call(t, http.MethodPatch, "/api/organization/"+orgB, map[string]string{"description": "Org B v2"}).
			Want(t, http.StatusOK).Object(t)
		if o["description"] != "Org B v2" || o["status"] != "Active" || o["updatedBy"] != superLogin {
			t.Errorf("PATCH description: %v", o)
		}
		e.super.Call(t, http.MethodPatch, "/api/organization/"+orgB, map[string]string{"status": "Locked"}).Want(t, http.StatusOK)
		if s := e.getOrg(t, orgB)["status"]; s != "Locked" {
			t.Errorf("status %v after PATCH Locked", s)
		}
		readerB.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		e.super.Call(t, http.MethodPatch, "/api/organization/"+orgB, map[string]string{"status": "Active"}).Want(t, http.StatusOK)
		readerB.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
		if d := e.getOrg(t, orgB)["description"]; d != "Org B v2" {
			t.Errorf("description %v after status PATCHes", d)
		}
		for _, body := range []map[string]any{{"status": "Sleeping"}, {"status": ""}, {"description": strings.Repeat("d", 4097)}} {
			e.super.Call(t, http.MethodPatch, "/api/organization/"+orgB, body).
				WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		}
		e.super.Call(t, http.MethodPatch, "/api/organization/nope", map[string]string{"description": "x"}).
			WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("delete locks and keeps the data", func(t *testing.T) {
		e.super.Call(t, http.MethodDelete, "/api/organization/"+orgA, nil).Want(t, http.StatusNoContent)
		if s := e.getOrg(t, orgA)["status"]; s != "Locked" {
			t.Errorf("status %v after DELETE, want Locked", s)
		}
		readerA.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		r := e.super.Call(t, http.MethodGet, "/api/organization/"+orgA+"/user", nil).Want(t, http.StatusOK)
		if ids := r.IDs(t); !slices.Equal(ids, []string{"ra"}) || r.Header.Get("X-Total") != "1" {
			t.Errorf("users of the locked org: %v (X-Total %s), want [ra]", ids, r.Header.Get("X-Total"))
		}
		if u := e.getUser(t, "ra"); u["status"] != "Active" || u["organization"] != orgA {
			t.Errorf("user of the locked org: %v", u)
		}
		e.super.Call(t, http.MethodDelete, "/api/organization/nope", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})

	t.Run("admin cannot be locked", func(t *testing.T) {
		e.super.Call(t, http.MethodDelete, "/api/organization/admin", nil).WantError(t, http.StatusBadRequest, "BadRequest")
		e.super.Call(t, http.MethodPatch, "/api/organization/admin", map[string]string{"status": "Locked"}).
			WantError(t, http.StatusBadRequest, "BadRequest")
		if s := e.getOrg(t, "admin")["status"]; s != "Active" {
			t.Errorf("admin status %v", s)
		}
		e.super.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK)
	})
}

// --- lists and search ---

// listNames are the users of org "big", by login and name. "bo" occurs in Bob, Bobby and Robot.
var listNames = map[string]string{
	"alice": "Alice", "bob": "Bob", "bobby": "Bobby", "carol": "Carol", "dave": "Dave", "eve": "Eve",
	"frank": "Frank", "grace": "Grace", "heidi": "Heidi", "ivan": "Ivan", "judy": "Judy", "robot": "Robot",
}

func TestAPI_Lists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, "big")
	for login, name := range listNames {
		e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": name,
			"organization": "big", "roles": roleRead}).Want(t, http.StatusCreated)
	}
	e.super.Call(t, http.MethodPatch, "/api/user/bobby", map[string]string{"status": "Locked"}).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodPatch, "/api/user/carol", map[string]any{"roles": roleOrgAdmin}).Want(t, http.StatusOK)
	logins := slices.Sorted(func(yield func(string) bool) {
		for l := range listNames {
			if !yield(l) {
				return
			}
		}
	})
	const users = "/api/organization/big/user"
	const search = "/api/organization/big/user/_search"

	t.Run("range", func(t *testing.T) {
		cases := []struct {
			rng  string
			want []string
		}{
			{"", logins[:10]},
			{"0-2", logins[:2]},
			{"3-5", logins[3:5]},
			{"10-100", logins[10:]},
			{"all", logins},
			{"ALL", logins},
			{"50-60", []string{}},
		}
		for _, tc := range cases {
			path := users
			if tc.rng != "" {
				path += "?range=" + tc.rng
			}
			r := e.super.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK)
			if got := r.IDs(t); !slices.Equal(got, tc.want) {
				t.Errorf("range %q: %v, want %v", tc.rng, got, tc.want)
			}
			if x := r.Header.Get("X-Total"); x != "12" {
				t.Errorf("range %q: X-Total %q, want 12", tc.rng, x)
			}
		}
		// range in the body of a search.
		r := e.super.Call(t, http.MethodPost, search, map[string]any{"query": map[string]any{}, "range": "0-3"}).Want(t, http.StatusOK)
		if got := r.IDs(t); !slices.Equal(got, logins[:3]) {
			t.Errorf("range in body: %v", got)
		}
		for _, bad := range []string{"abc", "2-1", "2-2", "-1", "1-x", "0-", "1.5", "%20"} {
			e.super.Call(t, http.MethodGet, users+"?range="+bad, nil).WantError(t, http.StatusBadRequest, "BadRequest")
		}
	})

	t.Run("X-Total on every list", func(t *testing.T) {
		for _, tc := range []struct{ method, path, total string }{
			{"GET", "/api/user", "13"}, // with root
			{"POST", "/api/user/_search", "13"},
			{"GET", "/api/organization", "2"}, // admin and big
			{"POST", "/api/organization/_search", "2"},
		} {
			r := e.super.Call(t, tc.method, tc.path+"?range=0-1", nil).Want(t, http.StatusOK)
			if x := r.Header.Get("X-Total"); x != tc.total || len(r.List(t)) != 1 {
				t.Errorf("%s %s: X-Total %q and %d items, want %s and 1", tc.method, tc.path, x, len(r.List(t)), tc.total)
			}
		}
	})

	t.Run("sort", func(t *testing.T) {
		names := make([]string, 0, len(listNames))
		for _, n := range listNames {
			names = append(names, n)
		}
		sort.Strings(names)
		desc := slices.Clone(names)
		slices.Reverse(desc)
		for _, tc := range []struct {
			sort string
			want []string
		}{
			{"%2Bname", names}, {"name", names}, {"-name", desc}, {"+name", names},
		} {
			r := e.super.Call(t, http.MethodGet, users+"?range=all&sort="+tc.sort, nil).Want(t, http.StatusOK)
			var got []string
			for _, u := range r.List(t) {
				got = append(got, u["name"].(string))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sort %s: %v, want %v", tc.sort, got, tc.want)
			}
		}
		r := e.super.Call(t, http.MethodPost, search, map[string]any{"query": map[string]any{}, "sort": []string{"-name"}, "range": "0-2"}).
			Want(t, http.StatusOK)
		if got := r.IDs(t); !slices.Equal(got, []string{"robot", "judy"}) {
			t.Errorf("sort in body: %v", got)
		}
		r = e.super.Call(t, http.MethodGet, users+"?range=0-3&sort=-status&sort=%2Bname", nil).Want(t, http.StatusOK)
		if got := r.IDs(t); !slices.Equal(got, []string{"bobby", "alice", "bob"}) {
			t.Errorf("sort=-status&sort=+name: %v, want [bobby alice bob]", got)
		}
		for _, bad := range []string{"nosuch", "-password", "%2Bkey", "-"} {
			e.super.Call(t, http.MethodGet, users+"?sort="+bad, nil).WantError(t, http.StatusBadRequest, "BadRequest")
		}
	})

	t.Run("search DSL", func(t *testing.T) {
		cases := []struct {
			name  string
			query string
			want  []string
		}{
			{"empty", `{}`, logins[:10]},
			{"and like", `{"_and":[{"status":"Active"},{"_like":{"_field":"name","_value":"bo"}}]}`, []string{"bob", "robot"}},
			{"like ignores case", `{"_like":{"_field":"name","_value":"BO"}}`, []string{"bob", "bobby", "robot"}},
			{"like is literal", `{"_like":{"_field":"name","_value":".*"}}`, []string{}},
			{"in", `{"_in":{"_field":"login","_values":["alice","eve","nobody"]}}`, []string{"alice", "eve"}},
			{"not", `{"_not":{"status":"Active"}}`, []string{"bobby"}},
			{"string", `{"_string":"status:Locked OR login:alice"}`, []string{"alice", "bobby"}},
			{"string and", `{"_string":"status:Active AND name:\"Bob\""}`, []string{"bob"}},
			{"wildcard", `{"_wildcard":{"_field":"login","_value":"b*"}}`, []string{"bob", "bobby"}},
			{"wildcard ?", `{"_wildcard":{"_field":"login","_value":"?ve"}}`, []string{"eve"}},
			{"field value", `{"_field":"name","_value":"Grace"}`, []string{"grace"}},
			{"role", `{"roles":"orgadmin"}`, []string{"carol"}},
			{"or", `{"_or":[{"login":"judy"},{"login":"ivan"}]}`, []string{"ivan", "judy"}},
			{"id", `{"_id":"heidi"}`, []string{"heidi"}},
		}
		for _, tc := range cases {
			r := e.super.Raw(t, http.MethodPost, search, "application/json", `{"query":`+tc.query+`}`)
			if r.Status != http.StatusOK {
				t.Errorf("%s: status %d %s", tc.name, r.Status, r.Body)
				continue
			}
			if got := r.IDs(t); !slices.Equal(got, tc.want) {
				t.Errorf("%s %s: %v, want %v", tc.name, tc.query, got, tc.want)
			}
			wantTotal := len(tc.want)
			if tc.name == "empty" {
				wantTotal = 12
			}
			if x := r.Header.Get("X-Total"); x != strconv.Itoa(wantTotal) {
				t.Errorf("%s: X-Total %q, want %d", tc.name, x, wantTotal)
			}
		}
		// The org-scoped search never leaves its organization.
		r := e.super.Raw(t, http.MethodPost, search, "application/json", `{"query":{"login":"root"}}`).Want(t, http.StatusOK)
		if got := r.IDs(t); len(got) != 0 {
			t.Errorf("org search found %v outside org big", got)
		}
		r = e.super.Raw(t, http.MethodPost, "/api/user/_search", "application/json", `{"query":{"organization":"admin"}}`).Want(t, http.StatusOK)
		if got := r.IDs(t); !slices.Equal(got, []string{superLogin}) {
			t.Errorf("user search by organization: %v", got)
		}
		r = e.super.Raw(t, http.MethodPost, "/api/organization/_search", "application/json", `{"query":{"_like":{"_field":"name","_value":"bi"}}}`).Want(t, http.StatusOK)
		if got := r.IDs(t); !slices.Equal(got, []string{"big"}) {
			t.Errorf("organization search: %v", got)
		}
	})

	t.Run("same search in every format", func(t *testing.T) {
		q := `{"_and":[{"status":"Active"},{"_like":{"_field":"name","_value":"bo"}}]}`
		want := []string{"bob", "robot"}
		var qv any
		if err := json.Unmarshal([]byte(q), &qv); err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]*resp{
			"json":          e.super.Raw(t, http.MethodPost, search, "application/json", `{"query":`+q+`}`),
			"form":          e.super.Form(t, http.MethodPost, search, url.Values{"query": {q}}),
			"query string":  e.super.Call(t, http.MethodPost, search+"?query="+url.QueryEscape(q), nil),
			"multipart":     e.super.MultipartJSON(t, http.MethodPost, search, map[string]any{"query": qv}),
			"GET with form": e.super.Call(t, http.MethodGet, users+"?query="+url.QueryEscape(q), nil),
		} {
			if r.Status != http.StatusOK {
				t.Errorf("%s: status %d %s", name, r.Status, r.Body)
				continue
			}
			if got := r.IDs(t); !slices.Equal(got, want) || r.Header.Get("X-Total") != "2" {
				t.Errorf("%s: %v X-Total %s, want %v and 2", name, got, r.Header.Get("X-Total"), want)
			}
		}
	})

	t.Run("bad queries", func(t *testing.T) {
		for _, tc := range []struct{ name, ctype, body string }{
			{"unknown field", "application/json", `{"query":{"nosuch":"x"}}`},
			{"secret field", "application/json", `{"query":{"password":"x"}}`},
			{"secret field in like", "application/json", `{"query":{"_like":{"_field":"keyHash","_value":"a"}}}`},
			{"unknown operator", "application/json", `{"query":{"_regex":{"_field":"name","_value":"a"}}}`},
			{"body not an object", "application/json", `["query"]`},
			{"body a string", "application/json", `"query"`},
			{"malformed JSON", "application/json", `{"query":`},
			{"trailing data", "application/json", `{"query":{}} {}`},
			{"query not an object", "application/json", `{"query":"name:bob"}`},
			{"query an array", "application/json", `{"query":[{"login":"bob"}]}`},
			{"bad _string", "application/json", `{"query":{"_string":"name:bob AND (login:x)"}}`},
			{"bad _string bare word", "application/json", `{"query":{"_string":"bob"}}`},
			{"malformed JSON in form", "application/x-www-form-urlencoded", "query=" + url.QueryEscape(`{"_and":[`)},
			{"bad range in body", "application/json", `{"range":{"from":0}}`},
			{"bad sort in body", "application/json", `{"sort":[1]}`},
		} {
			r := e.super.Raw(t, http.MethodPost, search, tc.ctype, tc.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d %s, want 400", tc.name, r.Status, r.Body)
				continue
			}
			if typ, _ := r.CheckErrorShape(t); typ != "BadRequest" {
				t.Errorf("%s: type %s, want BadRequest", tc.name, typ)
			}
		}
	})

	t.Run("operator injection", func(t *testing.T) {
		before := e.super.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, http.StatusOK).Body
		for _, q := range []string{
			`{"query":{"name":{"$ne":""}}}`,
			`{"query":{"$where":"1==1"}}`,
			`{"query":{"$or":[{"name":"x"}]}}`,
			`{"query":{"_field":"name","_value":{"$gt":""}}}`,
			`{"query":{"_in":{"_field":"login","_values":[{"$ne":""}]}}}`,
			`{"query":{"name.$ne":""}}`,
		} {
			for _, path := range []string{search, "/api/user/_search", "/api/organization/_search"} {
				r := e.super.Raw(t, http.MethodPost, path, "application/json", q)
				if r.Status != http.StatusBadRequest {
					t.Errorf("%s %s: status %d %s, want 400", path, q, r.Status, r.Body)
					continue
				}
				r.CheckErrorShape(t)
			}
		}
		for _, body := range []string{`{"name":{"$set":{"roles":["superadmin"]}}}`, `{"status":{"$ne":""}}`, `{"roles":{"$in":["x"]}}`} {
			e.super.Raw(t, http.MethodPatch, "/api/user/alice", "application/json", body).
				WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		}
		after := e.super.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, http.StatusOK).Body
		if string(before) != string(after) {
			t.Errorf("users changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// --- error shape, transport, status, secrets ---

func TestAPI_ErrorShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	reader := e.user(t, "rd", orgA, roleRead)

	cases := []struct {
		name   string
		do     func() *resp
		status int
		typ    string
	}{
		{"unknown route", func() *resp { return e.super.Call(t, http.MethodGet, "/api/nothing-here", nil) }, 404, "NotFoundError"},
		{"unknown route without auth", func() *resp { return e.anon().Call(t, http.MethodGet, "/nope", nil) }, 404, "NotFoundError"},
		{"no credentials", func() *resp { return e.anon().Call(t, http.MethodGet, "/api/user", nil) }, 401, "AuthenticationError"},
		{"missing role", func() *resp { return reader.Call(t, http.MethodGet, "/api/user", nil) }, 403, "AuthorizationError"},
		{"unknown user", func() *resp { return e.super.Call(t, http.MethodGet, "/api/user/ghost", nil) }, 404, "NotFoundError"},
		{"validation", func() *resp {
			return e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "x y", "roles": []string{"analyze"}})
		}, 400, "AttributeCheckingError"},
		{"duplicate", func() *resp {
			return e.super.Call(t, http.MethodPost, "/api/organization", map[string]any{"name": orgA})
		}, 400, "CreateError"},
		{"malformed JSON", func() *resp {
			return e.super.Raw(t, http.MethodPost, "/api/user", "application/json", `{"login":`)
		}, 400, "BadRequest"},
		{"wrong type", func() *resp {
			return e.super.Raw(t, http.MethodPost, "/api/user", "application/json", `{"login":["a"],"roles":"read"}`)
		}, 400, "AttributeCheckingError"},
		{"body too large", func() *resp {
			big := `{"login":"big","name":"` + strings.Repeat("x", 2<<20) + `"}`
			return e.super.Raw(t, http.MethodPost, "/api/user", "application/json", big)
		}, 413, "BadRequest"},
		{"malformed multipart", func() *resp {
			return e.super.Raw(t, http.MethodPost, "/api/user", "multipart/form-data; boundary=xyz", "garbage")
		}, 400, "BadRequest"},
		{"malformed form", func() *resp {
			return e.super.Raw(t, http.MethodPost, "/api/user", "application/x-www-form-urlencoded", "login=%zz")
		}, 400, "BadRequest"},
		{"malformed login body", func() *resp {
			return e.anon().Raw(t, http.MethodPost, "/api/login", "application/json", `{"user":`)
		}, 400, "BadRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.do().WantError(t, tc.status, tc.typ)
		})
	}
	t.Run("wrong method", func(t *testing.T) {
		// Echo answers 405, or 404 under a group with middleware (its catch-all route wins): both are fine as
		// long as the body has the error shape.
		for _, c := range []struct{ method, path string }{{"PUT", "/api/status"}, {"PUT", "/api/user/rd"}, {"POST", "/healthz"}} {
			r := e.super.Call(t, c.method, c.path, nil)
			if r.Status != http.StatusMethodNotAllowed && r.Status != http.StatusNotFound {
				t.Errorf("%s %s: status %d, want 405 or 404", c.method, c.path, r.Status)
			}
			r.CheckErrorShape(t)
		}
	})
}

func TestAPI_SecureTransport(t *testing.T) {
	t.Parallel()
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	// Every password and key endpoint, called by the superadmin on user u of org A.
	calls := []struct {
		method, path, body string
		ok                 int
	}{
		{"POST", "/api/user/u/password/set", `{"password":"u-password-1"}`, 204},
		{"POST", "/api/user/root/password/change", `{"currentPassword":"` + superPassword + `","password":"root-password-2"}`, 204},
		{"POST", "/api/user/u/key/renew", ``, 200},
		{"GET", "/api/user/u/key", ``, 200},
		{"DELETE", "/api/user/u/key", ``, 200},
	}
	setup := func(t *testing.T, sc web.SecureConfig) *env {
		e := newEnv(t, withSecure(sc), withSuperPassword())
		e.createOrg(t, orgA)
		e.createUser(t, e.super, "u", orgA, roleRead)
		return e
	}
	run := func(t *testing.T, e *env, hdr http.Header, wantOK bool) {
		t.Helper()
		for _, c := range calls {
			var ctype string
			if c.body != "" {
				ctype = "application/json"
			}
			r := e.super.Send(t, c.method, c.path, ctype, strings.NewReader(c.body), hdr)
			if wantOK {
				r.Want(t, c.ok)
			} else {
				r.WantError(t, http.StatusForbidden, "AuthorizationError")
			}
		}
	}

	t.Run("plain HTTP is refused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, web.SecureConfig{})
		run(t, e, nil, false)
		// Nothing changed, and the other endpoints still work over plain HTTP.
		if u := e.getUser(t, "u"); u["hasPassword"] != false || u["hasKey"] != false {
			t.Errorf("refused calls changed the user: %v", u)
		}
		// Password login follows the same rule (issue 15).
		e.sessionClient().loginAs(t, superLogin, superPassword).WantError(t, http.StatusForbidden, "AuthorizationError")
		// Authentication comes first: no credentials is still a 401.
		e.anon().Call(t, http.MethodGet, "/api/user/u/key", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	})

	t.Run("X-Forwarded-Proto from an untrusted peer is ignored", func(t *testing.T) {
		t.Parallel()
		e := setup(t, web.SecureConfig{})
		run(t, e, https, false)
	})

	t.Run("trusted proxy", func(t *testing.T) {
		t.Parallel()
		e := setup(t, web.SecureConfig{TrustedProxies: localhostOnly(t)})
		run(t, e, nil, false)
		run(t, e, http.Header{"X-Forwarded-Proto": {"http"}}, false)
		run(t, e, https, true)
		e.sessionClient().loginAs(t, "u", "u-password-1").WantError(t, http.StatusForbidden, "AuthorizationError")
		c := e.sessionClient()
		c.Header.Set("X-Forwarded-Proto", "https")
		c.loginAs(t, "u", "u-password-1").Want(t, http.StatusOK)
	})
}

func TestAPI_Status(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK)
	var st struct {
		Versions map[string]string `json:"versions"`
	}
	r.Decode(t, &st)
	if len(st.Versions) == 0 || st.Versions["analysis-svc"] == "" {
		t.Errorf("status versions %v, want the analysis-svc version", st.Versions)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		e.anon().Call(t, http.MethodGet, p, nil).Want(t, http.StatusOK)
	}
	e.anon().Call(t, http.MethodGet, "/api/user", nil).Want(t, http.StatusUnauthorized)
	m := e.anon().Call(t, http.MethodGet, "/metrics", nil).Want(t, http.StatusOK)
	if !strings.Contains(string(m.Body), "http_requests_total") {
		t.Errorf("/metrics lacks http_requests_total")
	}
	if !strings.Contains(string(m.Body), `route="/api/status"`) {
		t.Errorf("/metrics has no series for /api/status")
	}
}

// userFields are the only keys a user object may have.
var userFields = []string{"id", "name", "roles", "status", "organization", "createdAt", "createdBy", "updatedAt",
	"updatedBy", "hasKey", "hasPassword"}

func TestAPI_Secrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSuperPassword())
	e.createOrg(t, orgA)
	const password = "very-secret-password-42"
	vic := e.user(t, "vic", orgA, roleOrgAdmin)
	e.setPassword(t, "vic", password)
	e.sessionClient().loginAs(t, "vic", password).Want(t, http.StatusOK)
	secrets := []string{password, vic.Key, superKey, superPassword}

	t.Run("responses", func(t *testing.T) {
		var bodies []*resp
		bodies = append(bodies,
			e.super.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, http.StatusOK),
			e.super.Call(t, http.MethodPost, "/api/user/_search", map[string]any{"query": map[string]any{}}).Want(t, http.StatusOK),
			vic.Call(t, http.MethodGet, "/api/organization/"+orgA+"/user", nil).Want(t, http.StatusOK),
		)
		for _, r := range bodies {
			for _, u := range r.List(t) {
				checkUserKeys(t, r, u)
			}
		}
		bodies = append(bodies,
			e.super.Call(t, http.MethodGet, "/api/user/vic", nil).Want(t, http.StatusOK),
			vic.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK),
			vic.Call(t, http.MethodPatch, "/api/user/vic", map[string]string{"name": "Vic"}).Want(t, http.StatusOK),
			e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "wes", "roles": roleRead,
				"organization": orgA, "password": "wes-password-1"}).Want(t, http.StatusCreated),
		)
		for _, r := range bodies[3:] {
			checkUserKeys(t, r, r.Object(t))
		}
		for _, r := range bodies {
			for _, s := range append(secrets, "$argon2", "$2a$", "$2b$") {
				if strings.Contains(string(r.Body), s) {
					t.Errorf("%s %s: body contains secret %q", r.Method, r.Path, s)
				}
			}
		}
	})

	t.Run("database", func(t *testing.T) {
		for _, coll := range []string{"users", "apikeys", "organizations"} {
			docs := e.rawDocs(t, coll)
			if coll != "organizations" && len(docs) == 0 {
				t.Fatalf("collection %s is empty: the test reads the wrong collection", coll)
			}
			for _, d := range docs {
				var b strings.Builder
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(d); err != nil {
					t.Fatal(err)
				}
				js := b.String()
				for _, s := range secrets {
					if strings.Contains(js, s) {
						t.Errorf("%s document %s holds the secret %q in clear", coll, d["_id"], s)
					}
				}
				if coll == "users" && d["_id"] == "vic" {
					if pw, _ := d["password"].(string); !strings.HasPrefix(pw, "$argon2id$") && !strings.HasPrefix(pw, "$2") {
						t.Errorf("vic's stored password %q is not an argon2id or bcrypt hash", pw)
					}
				}
			}
		}
	})

	t.Run("logs", func(t *testing.T) {
		logs := e.logs.String()
		if !strings.Contains(logs, "/api/user") {
			t.Fatalf("no request logs captured")
		}
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Errorf("the logs contain the secret %q", s)
			}
		}
	})
}

func checkUserKeys(t *testing.T, r *resp, u map[string]any) {
	t.Helper()
	for k := range u {
		if !slices.Contains(userFields, k) {
			t.Errorf("%s %s: user object has the key %q", r.Method, r.Path, k)
		}
	}
}

// --- helpers ---

func stringsOf(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func findCookie(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}
