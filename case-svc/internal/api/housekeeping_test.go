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
	task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+cs.Str(t, "id")+"/task", map[string]any{"title": "t"}).Want(t, 201).Object(t)
	logID := tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+task.Str(t, "id")+"/log", map[string]any{"message": "first"}).
		Want(t, 201).Object(t).Str(t, "id")
	path := "/api/case/task/log/" + logID

	t.Run("edit", func(t *testing.T) {
		l := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"message": "edited"}).Want(t, 200).Object(t)
		if l.Str(t, "message") != "edited" || l.Str(t, "updatedBy") != "ana" || l.Str(t, "id") != logID {
			t.Errorf("edited log: %v", l)
		}
		if got := tm.readOnly.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t); got.Str(t, "message") != "edited" {
			t.Errorf("stored message %v", got["message"])
		}
		// without a message: the log as it is
		if l := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{}).Want(t, 200).Object(t); l.Str(t, "message") != "edited" {
			t.Errorf("empty patch: %v", l)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"message": ""}).WantError(t, 400, "AttributeCheckingError")
		tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"message": 3}).Want(t, 400)
		if msg := tm.readOnly.Call(t, http.MethodPatch, path, map[string]any{"message": "x"}).WantError(t, 403, "AuthorizationError"); msg != "missing permission manageTask" {
			t.Errorf("message %q", msg)
		}
		tm.readOnly.Call(t, http.MethodDelete, path, nil).WantError(t, 403, "AuthorizationError")
		tm.other.Call(t, http.MethodPatch, path, map[string]any{"message": "x"}).WantError(t, 404, "NotFoundError")
		tm.other.Call(t, http.MethodDelete, path, nil).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodDelete, "/api/case/task/log/~nope", nil).WantError(t, 404, "NotFoundError")
		if got := tm.analyst.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t); got.Str(t, "message") != "edited" {
			t.Errorf("a refused call changed the log: %v", got["message"])
		}
	})
	t.Run("delete", func(t *testing.T) {
		tm.analyst.Call(t, http.MethodDelete, path, nil).Want(t, 204)
		tm.analyst.Call(t, http.MethodGet, path, nil).WantError(t, 404, "NotFoundError")
		if n := tm.analyst.Call(t, http.MethodGet, "/api/case/task/"+task.Str(t, "id")+"/log", nil).Want(t, 200).Total(t); n != "0" {
			t.Errorf("logs of the task after delete: %s", n)
		}
		tm.analyst.Call(t, http.MethodDelete, path, nil).WantError(t, 404, "NotFoundError")
	})
}

// Force-delete of a user (TheHive v1 DELETE /api/v1/user/{id}/force): out of the organisation, and the account
// goes with its last one.
func TestUser_ForceDelete(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	gone := tm.user(t, "gone", "soc", "analyst")
	gone.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)

	tm.analyst.Call(t, http.MethodDelete, "/api/user/gone/force", nil).WantError(t, 403, "AuthorizationError")
	tm.other.Call(t, http.MethodDelete, "/api/user/gone/force", nil).WantError(t, 403, "AuthorizationError") // an analyst of cert
	certAdmin := tm.user(t, "certadmin", "cert", "org-admin")
	certAdmin.Call(t, http.MethodDelete, "/api/user/gone/force", nil).WantError(t, 404, "NotFoundError")
	tm.orgAdmin.Call(t, http.MethodDelete, "/api/user/socadmin/force", nil).WantError(t, 403, "AuthorizationError")
	tm.orgAdmin.Call(t, http.MethodDelete, "/api/user/gone/force?organisation=cert", nil).WantError(t, 403, "AuthorizationError")
	tm.orgAdmin.Call(t, http.MethodDelete, "/api/v1/user/nobody/force", nil).WantError(t, 404, "NotFoundError")
	gone.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200) // refusals changed nothing

	tm.orgAdmin.Call(t, http.MethodDelete, "/api/v1/user/gone/force", nil).Want(t, 204)
	tm.admin.Call(t, http.MethodGet, "/api/user/gone", nil).WantError(t, 404, "NotFoundError")
	gone.Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, 401, "AuthenticationError")
	// the login is free again
	tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "gone", "organisation": "soc", "profile": "read-only"}).Want(t, 201)

	// a user of two organisations leaves one and keeps its account
	tm.user(t, "both", "soc", "analyst")
	tm.admin.Call(t, http.MethodPatch, "/api/user/both", map[string]any{"organisations": []map[string]any{
		{"organisation": "soc", "profile": "analyst"}, {"organisation": "cert", "profile": "analyst"}}}).Want(t, 200)
	certAdmin.Call(t, http.MethodDelete, "/api/user/both/force", nil).Want(t, 204)
	u := tm.admin.Call(t, http.MethodGet, "/api/user/both", nil).Want(t, 200).Object(t)
	if u.Str(t, "organisation") != "soc" {
		t.Errorf("user after leaving cert: %v", u)
	}
	certAdmin.Call(t, http.MethodGet, "/api/user/both", nil).WantError(t, 404, "NotFoundError")
	tm.admin.Call(t, http.MethodDelete, "/api/user/both/force?organisation=soc", nil).Want(t, 204)
	tm.admin.Call(t, http.MethodGet, "/api/user/both", nil).WantError(t, 404, "NotFoundError")
}
