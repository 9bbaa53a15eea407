package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/auth"
)

// Issue 15: a session cookie outlived logout and password resets. Each action below ends every session of
// the user: a copy of the SESSION cookie taken before it is refused after it (401), also once a lock is
// lifted.
func TestRegressionSessionsEndOnLogoutPasswordKeyAndLocks(t *testing.T) {
	e := newEnv(t)
	const password, other = "first-password-0123", "second-password-0123"
	for i, tc := range []struct {
		name string
		act  func(t *testing.T, org, login string, s *client)
	}{
		{"logout", func(t *testing.T, _, _ string, s *client) {
			s.Call(t, http.MethodPost, "/api/logout", nil).Want(t, 204)
		}},
		{"password change", func(t *testing.T, _, login string, s *client) {
			s.CSRF = true
			s.Call(t, http.MethodPost, "/api/user/"+login+"/password/change",
				map[string]string{"currentPassword": password, "password": other}).Want(t, 204)
		}},
		{"password set", func(t *testing.T, _, login string, _ *client) {
			e.setPassword(t, login, other)
		}},
		{"key revocation", func(t *testing.T, _, login string, _ *client) {
			e.renewKey(t, e.super, login)
			e.super.Call(t, http.MethodDelete, "/api/user/"+login+"/key", nil).Want(t, 200)
		}},
		{"user lock", func(t *testing.T, _, login string, _ *client) {
			e.super.Call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"status": "Locked"}).Want(t, 200)
			e.super.Call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"status": "Active"}).Want(t, 200)
		}},
		{"organization lock", func(t *testing.T, org, _ string, _ *client) {
			e.super.Call(t, http.MethodDelete, "/api/organization/"+org, nil).Want(t, 204)
			e.super.Call(t, http.MethodPatch, "/api/organization/"+org, map[string]any{"status": "Active"}).Want(t, 200)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			org, login := fmt.Sprintf("org%d", i), fmt.Sprintf("user%d", i)
			e.createOrg(t, org)
			e.createUser(t, e.super, login, org, []string{"read", "analyze"})
			e.setPassword(t, login, password)
			s := e.sessionClient()
			s.loginAs(t, login, password).Want(t, 200)
			copied := e.newClient(login)
			copied.Header.Set("Cookie", auth.SessionCookie+"="+s.Cookie(auth.SessionCookie))
			copied.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
			tc.act(t, org, login, s)
			copied.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
			copied.Call(t, http.MethodGet, "/api/job", nil).WantError(t, 401, "AuthenticationError")
		})
	}
}
