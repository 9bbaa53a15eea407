package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// "current" names the caller in the user routes, as on analysis-svc (pkg/auth.CurrentUser): no user may take
// it as a login, and PATCH /api/user/current changes the caller, nobody else.
func TestCurrentUserIsReserved(t *testing.T) {
	tm := newTeam(t)
	for _, who := range []*client{tm.orgAdmin, tm.admin} {
		body := map[string]any{"login": "current", "name": "C", "profile": "analyst"}
		if who == tm.admin {
			body["organisation"] = "soc"
		}
		msg := who.Call(t, http.MethodPost, "/api/user", body).WantError(t, 400, "AttributeCheckingError")
		if !strings.Contains(msg, "login") {
			t.Errorf("message %q does not name the login", msg)
		}
	}
	tm.admin.Call(t, http.MethodGet, "/api/user/~current", nil).WantError(t, 404, "NotFoundError")
	// A login cannot be renamed to it either: the login is read-only.
	tm.orgAdmin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"login": "current"}).WantError(t, 400, "AttributeCheckingError")

	u := tm.analyst.Call(t, http.MethodPatch, "/api/user/current", map[string]any{"name": "Ana Renamed"}).Want(t, 200).Object(t)
	if u.Str(t, "login") != "ana" || u.Str(t, "name") != "Ana Renamed" {
		t.Fatalf("PATCH /api/user/current answered %v", u)
	}
	if got := tm.analyst.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t); got.Str(t, "name") != "Ana Renamed" {
		t.Fatalf("caller's name after the PATCH: %v", got)
	}
	if got := tm.orgAdmin.Call(t, http.MethodGet, "/api/user/ana", nil).Want(t, 200).Object(t); got.Str(t, "name") != "Ana Renamed" {
		t.Fatalf("ana as others see it: %v", got)
	}
	if got := tm.orgAdmin.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t); got.Str(t, "login") != "socadmin" ||
		got.Str(t, "name") == "Ana Renamed" {
		t.Fatalf("another caller's current user: %v", got)
	}
	// The caller's own rules still apply through "current": an analyst cannot lock itself.
	tm.analyst.Call(t, http.MethodPatch, "/api/user/current", map[string]any{"locked": true}).WantError(t, 403, "AuthorizationError")
	tm.analyst.Call(t, http.MethodGet, "/api/v1/user/current", nil).Want(t, 200)
}
