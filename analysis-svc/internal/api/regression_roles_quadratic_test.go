package api_test

// Regression: identity.ParseRoles (internal/identity/service.go) removes duplicates with slices.Contains on a
// growing slice: O(n²) in the number of distinct roles sent. handler.updateUser (internal/api/identity.go)
// calls it before any authorization check, so any authenticated user, a read-only one included, burns CPU
// with PATCH /api/user/{anyone} {"roles": [100k distinct strings]} (16 s on 2 cores for an 800 KB body; the
// default http.body_limit is 100M). POST /api/user (superadmin, orgadmin) is affected the same way.
// Expected: a 400 AttributeCheckingError in milliseconds (e.g. stop as soon as more than 4 distinct roles are
// seen, or cap the list).
//
// Save as internal/api/bugs_roles_test.go once fixed.

import (
	"fmt"
	"net/http"
	"testing"
)

func TestRegression_RoleListsAreLinear(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	roles := make([]string, 100000)
	for i := range roles {
		roles[i] = fmt.Sprintf("r%d", i)
	}
	body := jsonText(t, map[string]any{"roles": roles})
	for _, c := range []struct {
		name, method, path string
		as                 *client
		body               string
		want               []int
	}{
		{"PATCH self as read", http.MethodPatch, "/api/user/soc-reader", f.reads, body, []int{400, 403}},
		{"PATCH another as read", http.MethodPatch, "/api/user/soc-admin", f.reads, body, []int{400, 403}},
		{"PATCH as orgadmin", http.MethodPatch, "/api/user/soc-reader", f.admin, body, []int{400}},
		{"create as superadmin", http.MethodPost, "/api/user", f.e.super,
			jsonText(t, map[string]any{"login": "many", "organization": "soc", "roles": roles}), []int{400}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostileJSON(t, c.as, c.method, c.path, c.body, c.want...)
		})
	}
	if st := f.e.getUser(t, "soc-reader")["roles"]; fmt.Sprint(st) != "[read]" {
		t.Errorf("roles changed: %v", st)
	}
}
