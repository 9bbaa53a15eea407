package api_test

import (
	"net/http"
	"testing"
)

// Issue 28: for an account in two organisations, members of one saw its membership and profile in the other
// (GET /api/user, the listUser step). They see the caller's organisation's only; the user and the platform
// administrator see all.
func TestRegressionMembershipsOfOtherOrganisations(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	tm.admin.Call(t, http.MethodPatch, "/api/user/ana", map[string]any{"organisations": []map[string]string{
		{"organisation": "soc", "profile": "analyst"}, {"organisation": "cert", "profile": "read-only"}}}).Want(t, 200)
	ana := tm.keyClient("ana", tm.renewKey(t, tm.admin, "ana"))

	orgs := func(o obj) []string {
		var out []string
		for _, m := range o["organisations"].([]any) {
			out = append(out, m.(map[string]any)["organisation"].(string))
		}
		return out
	}
	check := func(who string, o obj, want ...string) {
		t.Helper()
		got := orgs(o)
		if len(got) != len(want) {
			t.Errorf("%s sees ana's memberships %v, want %v", who, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s sees ana's memberships %v, want %v", who, got, want)
			}
		}
	}
	check("bob of cert (GET)", tm.other.Call(t, http.MethodGet, "/api/user/ana", nil).Want(t, 200).Object(t), "cert")
	check("a reader of soc (GET)", tm.readOnly.Call(t, http.MethodGet, "/api/user/ana", nil).Want(t, 200).Object(t), "soc")
	found := false
	for _, u := range tm.other.query(t, "/api/v1/query", q{"_name": "listUser"}).Want(t, 200).List(t) {
		if u.Str(t, "login") == "ana" {
			found = true
			check("bob of cert (listUser)", u, "cert")
		}
	}
	if !found {
		t.Error("ana is not in cert's listUser")
	}
	check("ana herself", ana.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200).Object(t), "soc", "cert")
	check("the platform administrator", tm.admin.Call(t, http.MethodGet, "/api/user/ana", nil).Want(t, 200).Object(t), "soc", "cert")
}
