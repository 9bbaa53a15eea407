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
		e.super.call(t, http.MethodPost, "/api/user/q/password/set", map[string]string{"password": "ключ"}).
			wantError(t, http.StatusBadRequest, "AttributeCheckingError")
	})
	t.Run("200-character name on PATCH", func(t *testing.T) {
		e.super.call(t, http.MethodPatch, "/api/user/q", map[string]string{"name": strings.Repeat("я", 200)}).want(t, http.StatusOK)
	})
	t.Run("200-character name on create", func(t *testing.T) {
		e.super.call(t, http.MethodPost, "/api/user", map[string]any{"login": "w", "organization": orgA, "roles": roleRead,
			"name": strings.Repeat("я", 200)}).want(t, http.StatusCreated)
	})
	t.Run("3000-character description", func(t *testing.T) {
		e.super.call(t, http.MethodPost, "/api/organization", map[string]string{"name": "o2",
			"description": strings.Repeat("я", 3000)}).want(t, http.StatusCreated)
	})
}

func TestRegression_EncodedPathParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "dan@example.com", orgA, roleRead)
	e.createUser(t, e.super, "bob+x", orgA, roleRead)
	e.super.call(t, http.MethodGet, "/api/user/dan%40example.com", nil).want(t, http.StatusOK)
	e.super.call(t, http.MethodGet, "/api/user/bob%2Bx", nil).want(t, http.StatusOK)
	e.super.call(t, http.MethodPatch, "/api/user/dan%40example.com", map[string]string{"name": "Dan"}).want(t, http.StatusOK)
	e.super.call(t, http.MethodPost, "/api/user/dan%40example.com/key/renew", nil).want(t, http.StatusOK)
}

func TestRegression_CreateWithPasswordOverPlainHTTP(t *testing.T) {
	e := newEnv(t, withSecure(web.SecureConfig{}))
	e.createOrg(t, orgA)
	e.super.call(t, http.MethodPost, "/api/user", map[string]any{"login": "pw", "organization": orgA, "roles": roleRead,
		"password": "plain-http-password"}).wantError(t, http.StatusForbidden, "AuthorizationError")
	e.super.call(t, http.MethodGet, "/api/user/pw", nil).wantError(t, http.StatusNotFound, "NotFoundError")
}

func TestRegression_LoginCurrentIsReserved(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.super.call(t, http.MethodPost, "/api/user", map[string]any{"login": "current", "organization": orgA, "roles": roleRead}).
		wantError(t, http.StatusBadRequest, "AttributeCheckingError")
}

func TestRegression_UnknownRouteWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	e.anon().call(t, http.MethodGet, "/api/nothing-here", nil).wantError(t, http.StatusNotFound, "NotFoundError")
}
