package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/web"
)

// Lengths are counted in characters, as the messages say, not in bytes.
func TestRegression_LengthsInCharacters(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "q", orgA, roleRead)
	t.Run("4-character password", func(t *testing.T) {
		e.super.Call(t, http.MethodPost, "/api/user/q/password/set", map[string]string{"password": "ключ"}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	})
	t.Run("200-character name on PATCH", func(t *testing.T) {
		e.super.Call(t, http.MethodPatch, "/api/user/q", map[string]string{"name": strings.Repeat("я", 200)}).Want(t, http.StatusOK)
	})
	t.Run("200-character name on create", func(t *testing.T) {
		e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "w", "organization": orgA, "roles": roleRead,
			"name": strings.Repeat("я", 200)}).Want(t, http.StatusCreated)
	})
	t.Run("3000-character description", func(t *testing.T) {
		e.super.Call(t, http.MethodPost, "/api/organization", map[string]string{"name": "o2",
			"description": strings.Repeat("я", 3000)}).Want(t, http.StatusCreated)
	})
}

func TestRegression_EncodedPathParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "dan@example.com", orgA, roleRead)
	e.createUser(t, e.super, "bob+x", orgA, roleRead)
	e.super.Call(t, http.MethodGet, "/api/user/dan%40example.com", nil).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodGet, "/api/user/bob%2Bx", nil).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodPatch, "/api/user/dan%40example.com", map[string]string{"name": "Dan"}).Want(t, http.StatusOK)
	e.super.Call(t, http.MethodPost, "/api/user/dan%40example.com/key/renew", nil).Want(t, http.StatusOK)
}

func TestRegression_CreateWithPasswordOverPlainHTTP(t *testing.T) {
	e := newEnv(t, withSecure(web.SecureConfig{}))
	e.createOrg(t, orgA)
	e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "pw", "organization": orgA, "roles": roleRead,
		"password": "plain-http-password"}).WantError(t, http.StatusForbidden, "AuthorizationError")
	e.super.Call(t, http.MethodGet, "/api/user/pw", nil).WantError(t, http.StatusNotFound, "NotFoundError")
}

func TestRegression_LoginCurrentIsReserved(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "current", "organization": orgA, "roles": roleRead}).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	// "current" names the caller on every user route, as on case-svc (pkg/auth.UserRef).
	reader := e.user(t, "reader", orgA, roleRead)
	u := reader.Call(t, http.MethodPatch, "/api/user/current", map[string]string{"name": "Reader Renamed"}).
		Want(t, http.StatusOK).Object(t)
	if u.Str(t, "id") != "reader" || u.Str(t, "name") != "Reader Renamed" {
		t.Fatalf("PATCH /api/user/current answered %v", u)
	}
	if got := e.getUser(t, "reader"); got["name"] != "Reader Renamed" {
		t.Fatalf("reader after the PATCH: %v", got)
	}
	if got := e.super.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK).Object(t); got.Str(t, "id") == "reader" {
		t.Fatalf("the superadmin's current user: %v", got)
	}
}

func TestRegression_UnknownRouteWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	e.anon().Call(t, http.MethodGet, "/api/nothing-here", nil).WantError(t, http.StatusNotFound, "NotFoundError")
}
