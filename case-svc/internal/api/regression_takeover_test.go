package api_test

import (
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/auth"
)

// Issue 15: an org-admin of a pre-registered the login of a future member of b, set its password and key;
// when the platform administrator then created that login in b, the account silently gained b (201) and the
// squatter's key and password read b's cases.
func TestRegressionTakeoverByPreRegisteredLogin(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "a")
	e.createOrg(t, "b")
	aAdmin := e.user(t, "aadmin", "a", "org-admin")
	bAnalyst := e.user(t, "banalyst", "b", "analyst")
	secret := bAnalyst.newCase(t, map[string]any{"title": "b's secret case"})

	const login = "new.hire@b.org"
	aAdmin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "profile": "org-admin", "organisation": "a"}).
		Want(t, 201)
	aAdmin.Call(t, http.MethodPost, "/api/user/"+login+"/password/set", map[string]string{"password": "squatter-password"}).
		Want(t, 204)
	squatterKey := e.renewKey(t, aAdmin, login)
	squatter := e.keyClient(login, squatterKey)
	session := e.sessionClient()
	session.Call(t, http.MethodPost, "/api/login", map[string]string{"user": login, "password": "squatter-password"}).
		Want(t, 200)
	oldSession := session.Cookie(auth.SessionCookie)

	// The platform administrator creates the login in b: refused, the account is unchanged.
	e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "profile": "analyst", "organisation": "b"}).
		WantError(t, 400, "CreateError")
	u := e.admin.Call(t, http.MethodGet, "/api/user/"+login, nil).Want(t, 200).Object(t)
	if ms := u["organisations"].([]any); len(ms) != 1 {
		t.Fatalf("memberships after the refused creation: %v", u["organisations"])
	}
	squatter.in("b").Call(t, http.MethodGet, "/api/case/"+secret.Str(t, "id"), nil).WantError(t, 403, "AuthorizationError")
	squatter.in("b").Call(t, http.MethodPost, "/api/case/_search", map[string]any{}).WantError(t, 403, "AuthorizationError")

	// The explicit action (platform administrator only) adds b and ends everything the squatter held.
	aAdmin.Call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"organisations": []map[string]string{
		{"organisation": "a", "profile": "org-admin"}, {"organisation": "b", "profile": "analyst"}}}).
		WantError(t, 403, "AuthorizationError")
	e.admin.Call(t, http.MethodPatch, "/api/user/"+login, map[string]any{"organisations": []map[string]string{
		{"organisation": "a", "profile": "org-admin"}, {"organisation": "b", "profile": "analyst"}}}).Want(t, 200)
	squatter.in("b").Call(t, http.MethodGet, "/api/case/"+secret.Str(t, "id"), nil).WantError(t, 401, "AuthenticationError")
	squatter.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
	e.cookieClient(oldSession).in("b").Call(t, http.MethodGet, "/api/case/"+secret.Str(t, "id"), nil).
		WantError(t, 401, "AuthenticationError")
	e.sessionClient().Call(t, http.MethodPost, "/api/login", map[string]string{"user": login, "password": "squatter-password"}).
		WantError(t, 401, "AuthenticationError")
	e.admin.Call(t, http.MethodGet, "/api/user/"+login+"/key", nil).WantError(t, 404, "NotFoundError")
	// The org-admin of a no longer administers the account (it is also in b).
	aAdmin.Call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).WantError(t, 403, "AuthorizationError")
}

// cookieClient returns a client that sends the given SESSION cookie on every request (a copied cookie,
// whatever the server later sets).
func (e *env) cookieClient(session string) *client {
	c := e.newClient("")
	c.Header.Set("Cookie", auth.SessionCookie+"="+session)
	return c
}
