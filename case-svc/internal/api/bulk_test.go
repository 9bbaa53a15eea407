package api_test

// The _bulk and _stats routes of TheHive 4.1's v0 router (bulk.go), as thehive4py and the reference UI send
// them: the static segment wins over /case/:caseId, every id is checked before any change, and one unknown id
// or one of another organisation is a 404 for the whole request.

import (
	"net/http"
	"testing"
)

func TestBulk_UpdateCases(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "A"})
	b := tm.analyst.newCase(t, map[string]any{"title": "B"})
	foreign := tm.other.newCase(t, map[string]any{"title": "theirs"})
	ids := []string{a.Str(t, "id"), b.Str(t, "id")}

	l := tm.analyst.Call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 3, "tags": []string{"bulk"}}).
		Want(t, 200).List(t)
	if len(l) != 2 || l[0].Str(t, "id") != ids[0] || l[1].Str(t, "id") != ids[1] {
		t.Fatalf("answer %v", l)
	}
	for _, id := range ids {
		got := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+id, nil).Want(t, 200).Object(t)
		if got.Num(t, "severity") != 3 || len(got.Strs(t, "tags")) != 1 || got.Str(t, "updatedBy") != "ana" {
			t.Fatalf("case %s after bulk update: %v", id, got)
		}
	}
	// by number too, under /api/v0
	tm.analyst.Call(t, http.MethodPatch, "/api/v0/case/_bulk", map[string]any{"ids": []any{a.Num(t, "caseId")}, "title": "A2"}).Want(t, 400)
	tm.analyst.Call(t, http.MethodPatch, "/api/v0/case/_bulk", map[string]any{"ids": []string{"1"}, "title": "A2"}).Want(t, 200)

	// one id of another organisation, or unknown: 404 and nothing changed
	for _, bad := range []string{foreign.Str(t, "id"), "~424242"} {
		tm.analyst.Call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": []string{ids[1], bad}, "severity": 1}).
			WantError(t, 404, "NotFoundError")
		if got := tm.analyst.Call(t, http.MethodGet, "/api/case/"+ids[1], nil).Want(t, 200).Object(t); got.Num(t, "severity") != 3 {
			t.Fatalf("a refused bulk update changed the case: %v", got)
		}
	}
	tm.readOnly.Call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 1}).WantError(t, 403, "AuthorizationError")
	tm.analyst.Call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"severity": 1}).Want(t, 400)
	tm.analyst.Call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 9}).WantError(t, 400, "AttributeCheckingError")
}

func TestBulk_UpdateObservables(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil)
	l := tm.analyst.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain",
		"data": []string{"a.example", "b.example"}})
	theirs := tm.other.newCase(t, nil)
	foreign := tm.other.observables(t, "/api/case/"+theirs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "c.example"})
	ids := []string{l[0].Str(t, "id"), l[1].Str(t, "id")}

	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "ioc": true, "tags": []string{"t"}}).Want(t, 204)
	for _, id := range ids {
		if got := tm.readOnly.Call(t, http.MethodGet, "/api/case/artifact/"+id, nil).Want(t, 200).Object(t); got["ioc"] != true {
			t.Fatalf("observable %s: %v", id, got)
		}
	}
	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": []string{ids[0], foreign[0].Str(t, "id")}, "ioc": false}).
		WantError(t, 404, "NotFoundError")
	if got := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+ids[0], nil).Want(t, 200).Object(t); got["ioc"] != true {
		t.Fatalf("a refused bulk update changed the observable: %v", got)
	}
	tm.readOnly.Call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "ioc": false}).WantError(t, 403, "AuthorizationError")
	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "data": "changed"}).WantError(t, 400, "AttributeCheckingError")
}

func TestBulk_DeleteAlerts(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newAlert(t, "bulk-1", nil)
	b := tm.analyst.newAlert(t, "bulk-2", nil)
	keep := tm.analyst.newAlert(t, "bulk-3", nil)
	foreign := tm.other.newAlert(t, "bulk-x", nil)

	tm.analyst.Call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.Str(t, "id"), foreign.Str(t, "id")}}).
		WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/alert/"+a.Str(t, "id"), nil).Want(t, 200)
	tm.readOnly.Call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.Str(t, "id")}}).WantError(t, 403, "AuthorizationError")

	tm.analyst.Call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.Str(t, "id"), b.Str(t, "id")}}).Want(t, 204)
	for _, al := range []obj{a, b} {
		tm.analyst.Call(t, http.MethodGet, "/api/alert/"+al.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	}
	tm.analyst.Call(t, http.MethodGet, "/api/alert/"+keep.Str(t, "id"), nil).Want(t, 200)
	tm.other.Call(t, http.MethodGet, "/api/alert/"+foreign.Str(t, "id"), nil).Want(t, 200)
}

func TestStats_Cases(t *testing.T) {
	tm := newTeam(t)
	tm.analyst.newCase(t, map[string]any{"title": "one", "severity": 1})
	tm.analyst.newCase(t, map[string]any{"title": "two", "severity": 3})
	c := tm.analyst.newCase(t, map[string]any{"title": "three", "severity": 3})
	tm.analyst.Call(t, http.MethodPatch, "/api/case/"+c.Str(t, "id"), map[string]any{"status": "Resolved",
		"resolutionStatus": "TruePositive", "impactStatus": "NoImpact", "summary": "done"}).Want(t, 200)
	tm.other.newCase(t, map[string]any{"title": "theirs"})

	got := tm.readOnly.Call(t, http.MethodPost, "/api/case/_stats", map[string]any{"query": map[string]any{},
		"stats": []any{map[string]any{"_agg": "field", "_field": "status"}, map[string]any{"_agg": "field", "_field": "severity"},
			map[string]any{"_agg": "count"}}}).Want(t, 200).Object(t)
	if got.Num(t, "count") != 3 {
		t.Fatalf("count %v", got)
	}
	st, sev := got.Obj(t, "status"), got.Obj(t, "severity")
	if st.Obj(t, "Open").Num(t, "count") != 2 || st.Obj(t, "Resolved").Num(t, "count") != 1 || len(st) != 2 {
		t.Fatalf("status %v", st)
	}
	if sev.Obj(t, "3").Num(t, "count") != 2 || sev.Obj(t, "1").Num(t, "count") != 1 {
		t.Fatalf("severity %v", sev)
	}
	// the query narrows, under /api/v0 too
	got = tm.analyst.Call(t, http.MethodPost, "/api/v0/case/_stats", map[string]any{"query": map[string]any{"status": "Open"},
		"stats": []any{map[string]any{"_agg": "count"}}}).Want(t, 200).Object(t)
	if got.Num(t, "count") != 2 {
		t.Fatalf("narrowed count %v", got)
	}
	tm.analyst.Call(t, http.MethodPost, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "field", "_field": "nope"}}}).Want(t, 400)
	tm.analyst.Call(t, http.MethodPost, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "median", "_field": "severity"}}}).Want(t, 400)
	tm.anon().Call(t, http.MethodPost, "/api/case/_stats", map[string]any{}).WantError(t, 401, "AuthenticationError")
}
