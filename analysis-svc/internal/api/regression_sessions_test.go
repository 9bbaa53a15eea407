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
			s.call(t, http.MethodPost, "/api/logout", nil).want(t, 204)
		}},
		{"password change", func(t *testing.T, _, login string, s *client) {
			s.csrf = true
			s.call(t, http.MethodPost, "/api/user/"+login+"/password/change",
				map[string]string{"currentPassword": password, "password": other}).want(t, 204)
		}},
		{"password set", func(t *testing.T, _, login string, _ *client) {
			e.setPassword(t, login, other)
		}},
		{"key revocation", func(t *testing.T, _, login string, _ *client) {
			e.renewKey(t, e.super, login)
			e.super.call(t, http.MethodDelete, "/api/user/"+login+"/key", nil).want(t, 200)
		}},
		{"user lock", func(t *testing.T, _, login string, _ *client) {
			e.super.call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"status": "Locked"}).want(t, 200)
			e.super.call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"status": "Active"}).want(t, 200)
		}},
		{"organization lock", func(t *testing.T, org, _ string, _ *client) {
			e.super.call(t, http.MethodDelete, "/api/organization/"+org, nil).want(t, 204)
			e.super.call(t, http.MethodPatch, "/api/organization/"+org, map[string]any{"status": "Active"}).want(t, 200)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			org, login := fmt.Sprintf("org%d", i), fmt.Sprintf("user%d", i)
			e.createOrg(t, org)
			e.createUser(t, e.super, login, org, []string{"read", "analyze"})
			e.setPassword(t, login, password)
			s := e.sessionClient()
			s.loginAs(t, login, password).want(t, 200)
			copied := e.newClient(login)
			copied.header.Set("Cookie", auth.SessionCookie+"="+s.cookie(auth.SessionCookie))
			copied.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)
			tc.act(t, org, login, s)
			copied.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
			copied.call(t, http.MethodGet, "/api/job", nil).wantError(t, 401, "AuthenticationError")
		})
	}
}
