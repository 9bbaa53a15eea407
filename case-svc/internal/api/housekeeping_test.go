package api_test

import (
	"net/http"
	"testing"
)

// Log edit and delete (TheHive v0 PATCH/DELETE /api/case/task/log/{id}): manageTask, the caller's organisation.
func TestLog_UpdateDelete(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil)
	task := tm.analyst.call(t, http.MethodPost, "/api/case/"+cs.str(t, "id")+"/task", map[string]any{"title": "t"}).want(t, 201).object(t)
	logID := tm.analyst.call(t, http.MethodPost, "/api/case/task/"+task.str(t, "id")+"/log", map[string]any{"message": "first"}).
		want(t, 201).object(t).str(t, "id")
	path := "/api/case/task/log/" + logID

	t.Run("edit", func(t *testing.T) {
		l := tm.analyst.call(t, http.MethodPatch, path, map[string]any{"message": "edited"}).want(t, 200).object(t)
		if l.str(t, "message") != "edited" || l.str(t, "updatedBy") != "ana" || l.str(t, "id") != logID {
			t.Errorf("edited log: %v", l)
		}
		if got := tm.readOnly.call(t, http.MethodGet, path, nil).want(t, 200).object(t); got.str(t, "message") != "edited" {
			t.Errorf("stored message %v", got["message"])
		}
		// without a message: the log as it is
		if l := tm.analyst.call(t, http.MethodPatch, path, map[string]any{}).want(t, 200).object(t); l.str(t, "message") != "edited" {
			t.Errorf("empty patch: %v", l)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		tm.analyst.call(t, http.MethodPatch, path, map[string]any{"message": ""}).wantError(t, 400, "AttributeCheckingError")
		tm.analyst.call(t, http.MethodPatch, path, map[string]any{"message": 3}).want(t, 400)
		if msg := tm.readOnly.call(t, http.MethodPatch, path, map[string]any{"message": "x"}).wantError(t, 403, "AuthorizationError"); msg != "missing permission manageTask" {
			t.Errorf("message %q", msg)
		}
		tm.readOnly.call(t, http.MethodDelete, path, nil).wantError(t, 403, "AuthorizationError")
		tm.other.call(t, http.MethodPatch, path, map[string]any{"message": "x"}).wantError(t, 404, "NotFoundError")
		tm.other.call(t, http.MethodDelete, path, nil).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodDelete, "/api/case/task/log/~nope", nil).wantError(t, 404, "NotFoundError")
		if got := tm.analyst.call(t, http.MethodGet, path, nil).want(t, 200).object(t); got.str(t, "message") != "edited" {
			t.Errorf("a refused call changed the log: %v", got["message"])
		}
	})
	t.Run("delete", func(t *testing.T) {
		tm.analyst.call(t, http.MethodDelete, path, nil).want(t, 204)
		tm.analyst.call(t, http.MethodGet, path, nil).wantError(t, 404, "NotFoundError")
		if n := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+task.str(t, "id")+"/log", nil).want(t, 200).total(t); n != "0" {
			t.Errorf("logs of the task after delete: %s", n)
		}
		tm.analyst.call(t, http.MethodDelete, path, nil).wantError(t, 404, "NotFoundError")
	})
}

// Force-delete of a user (TheHive v1 DELETE /api/v1/user/{id}/force): out of the organisation, and the account
// goes with its last one.
func TestUser_ForceDelete(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	gone := tm.user(t, "gone", "soc", "analyst")
	gone.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200)

	tm.analyst.call(t, http.MethodDelete, "/api/user/gone/force", nil).wantError(t, 403, "AuthorizationError")
	tm.other.call(t, http.MethodDelete, "/api/user/gone/force", nil).wantError(t, 403, "AuthorizationError") // an analyst of cert
	certAdmin := tm.user(t, "certadmin", "cert", "org-admin")
	certAdmin.call(t, http.MethodDelete, "/api/user/gone/force", nil).wantError(t, 404, "NotFoundError")
	tm.orgAdmin.call(t, http.MethodDelete, "/api/user/socadmin/force", nil).wantError(t, 403, "AuthorizationError")
	tm.orgAdmin.call(t, http.MethodDelete, "/api/user/gone/force?organisation=cert", nil).wantError(t, 403, "AuthorizationError")
	tm.orgAdmin.call(t, http.MethodDelete, "/api/v1/user/nobody/force", nil).wantError(t, 404, "NotFoundError")
	gone.call(t, http.MethodGet, "/api/user/current", nil).want(t, 200) // refusals changed nothing

	tm.orgAdmin.call(t, http.MethodDelete, "/api/v1/user/gone/force", nil).want(t, 204)
	tm.admin.call(t, http.MethodGet, "/api/user/gone", nil).wantError(t, 404, "NotFoundError")
	gone.call(t, http.MethodGet, "/api/user/current", nil).wantError(t, 401, "AuthenticationError")
	// the login is free again
	tm.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": "gone", "organisation": "soc", "profile": "read-only"}).want(t, 201)

	// a user of two organisations leaves one and keeps its account
	tm.user(t, "both", "soc", "analyst")
	tm.admin.call(t, http.MethodPatch, "/api/user/both", map[string]any{"organisations": []map[string]any{
		{"organisation": "soc", "profile": "analyst"}, {"organisation": "cert", "profile": "analyst"}}}).want(t, 200)
	certAdmin.call(t, http.MethodDelete, "/api/user/both/force", nil).want(t, 204)
	u := tm.admin.call(t, http.MethodGet, "/api/user/both", nil).want(t, 200).object(t)
	if u.str(t, "organisation") != "soc" {
		t.Errorf("user after leaving cert: %v", u)
	}
	certAdmin.call(t, http.MethodGet, "/api/user/both", nil).wantError(t, 404, "NotFoundError")
	tm.admin.call(t, http.MethodDelete, "/api/user/both/force?organisation=soc", nil).want(t, 204)
	tm.admin.call(t, http.MethodGet, "/api/user/both", nil).wantError(t, 404, "NotFoundError")
}
