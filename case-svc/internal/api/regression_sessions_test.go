package api_test

import (
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/auth"
)

// Issue 15: a session cookie outlived logout and password resets. Each action below ends every session of
// the user: a copy of the SESSION cookie taken before it is refused after it (401).
func TestRegressionSessionsEndOnLogoutPasswordKeyAndLock(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "soc")
	const password, other = "first-password-0123", "second-password-0123"
	for _, tc := range []struct {
		name string
		act  func(t *testing.T, login string, s *client)
	}{
		{"logout", func(t *testing.T, _ string, s *client) {
			s.Call(t, http.MethodPost, "/api/logout", nil).Want(t, 204)
		}},
		{"password change", func(t *testing.T, login string, s *client) {
			s.CSRF = true
			s.Call(t, http.MethodPost, "/api/user/"+login+"/password/change",
				map[string]string{"currentPassword": password, "password": other}).Want(t, 204)
		}},
		{"password set", func(t *testing.T, login string, _ *client) {
			e.admin.Call(t, http.MethodPost, "/api/user/"+login+"/password/set", map[string]string{"password": other}).Want(t, 204)
		}},
		{"key revocation", func(t *testing.T, login string, _ *client) {
			e.renewKey(t, e.admin, login)
			e.admin.Call(t, http.MethodDelete, "/api/user/"+login+"/key", nil).Want(t, 204)
		}},
		{"lock", func(t *testing.T, login string, _ *client) {
			e.admin.Call(t, http.MethodDelete, "/api/user/"+login, nil).Want(t, 204)
			// Unlocking does not bring the session back.
			e.admin.Call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"locked": false}).Want(t, 200)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			login := "u" + string(rune('a'+len(tc.name)%26)) + tc.name[:3]
			e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "organisation": "soc",
				"profile": "analyst", "password": password}).Want(t, 201)
			s := e.sessionClient()
			s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": login, "password": password}).Want(t, 200)
			copied := e.cookieClient(s.Cookie(auth.SessionCookie))
			copied.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
			tc.act(t, login, s)
			copied.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
			copied.Call(t, http.MethodGet, "/api/case", nil).WantError(t, 401, "AuthenticationError")
		})
	}
}
