package api_test

// Cortex's own word for an active user is Ok (cortex4py sends it in PATCH, creation and searches); the
// service accepts it as a synonym of Active and keeps answering Active. cortex4py's organizations.count()
// posts {query, stats: [{_agg: "count"}]} to /api/organization/_stats and reads "count".

import (
	"net/http"
	"testing"
)

func TestAPI_StatusOkSynonym(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "okuser", orgA, roleAnalyze)
	e.createUser(t, e.super, "lockeduser", orgA, roleAnalyze)

	e.super.Call(t, http.MethodPatch, "/api/user/lockeduser", map[string]any{"status": "Locked"}).Want(t, http.StatusOK)
	u := e.super.Call(t, http.MethodPatch, "/api/user/okuser", map[string]any{"status": "Ok"}).Want(t, http.StatusOK).Object(t)
	if u["status"] != "Active" {
		t.Fatalf("PATCH status Ok answered %v", u["status"])
	}
	if got := e.getUser(t, "okuser"); got["status"] != "Active" {
		t.Fatalf("stored status %v", got["status"])
	}

	// creation with status Ok or Locked; anything else is a 400
	e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "created-ok", "name": "C", "organization": orgA,
		"roles": roleAnalyze, "status": "Ok"}).Want(t, http.StatusCreated)
	if got := e.getUser(t, "created-ok"); got["status"] != "Active" {
		t.Fatalf("created with Ok: %v", got["status"])
	}
	r := e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "created-locked", "name": "C", "organization": orgA,
		"roles": roleAnalyze, "status": "Locked"}).Want(t, http.StatusCreated).Object(t)
	if r["status"] != "Locked" || e.getUser(t, "created-locked")["status"] != "Locked" {
		t.Fatalf("created with Locked: %v", r["status"])
	}
	e.super.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "created-bad", "name": "C", "organization": orgA,
		"roles": roleAnalyze, "status": "Sleeping"}).Want(t, http.StatusBadRequest)

	// searches: Ok finds the active users, in every list of users
	for _, path := range []string{"/api/user/_search?range=all", "/api/organization/" + orgA + "/user/_search?range=all"} {
		for _, q := range []map[string]any{
			{"status": "Ok"},
			{"_field": "status", "_value": "ok"},
			{"_and": []any{map[string]any{"organization": orgA}, map[string]any{"_in": map[string]any{"_field": "status", "_values": []string{"Ok"}}}}},
		} {
			l := e.super.Call(t, http.MethodPost, path, map[string]any{"query": q}).Want(t, http.StatusOK).List(t)
			found := map[string]bool{}
			for _, x := range l {
				found[x["id"].(string)] = true
				if x["status"] != "Active" {
					t.Fatalf("%s %v: answered status %v", path, q, x["status"])
				}
			}
			if !found["okuser"] || !found["created-ok"] || found["lockeduser"] || found["created-locked"] {
				t.Fatalf("%s %v found %v", path, q, found)
			}
		}
	}
}

func TestAPI_OrganizationStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createOrg(t, orgA)
	e.createOrg(t, orgB)
	e.super.Call(t, http.MethodPatch, "/api/organization/"+orgB, map[string]any{"status": "Locked"}).Want(t, http.StatusOK)
	count := func(q map[string]any) float64 {
		t.Helper()
		r := e.super.Call(t, http.MethodPost, "/api/organization/_stats", map[string]any{"query": q,
			"stats": []any{map[string]any{"_agg": "count"}}}).Want(t, http.StatusOK).Object(t)
		n, ok := r["count"].(float64)
		if !ok {
			t.Fatalf("answer %v", r)
		}
		return n
	}
	if n := count(map[string]any{}); n != 3 { // the superadmins' organization and the two
		t.Fatalf("all organizations: %v", n)
	}
	if n := count(map[string]any{"status": "Ok"}); n != 2 {
		t.Fatalf("active organizations: %v", n)
	}
	if n := count(map[string]any{"name": orgB}); n != 1 {
		t.Fatalf("one organization: %v", n)
	}
	e.super.Call(t, http.MethodPost, "/api/organization/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "field", "_field": "status"}}}).
		Want(t, http.StatusBadRequest)
	oa := e.user(t, "oa", orgA, roleOrgAdmin)
	oa.Call(t, http.MethodPost, "/api/organization/_stats", map[string]any{"query": map[string]any{}}).Want(t, http.StatusForbidden)
}
