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
	ids := []string{a.str(t, "id"), b.str(t, "id")}

	l := tm.analyst.call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 3, "tags": []string{"bulk"}}).
		want(t, 200).list(t)
	if len(l) != 2 || l[0].str(t, "id") != ids[0] || l[1].str(t, "id") != ids[1] {
		t.Fatalf("answer %v", l)
	}
	for _, id := range ids {
		got := tm.readOnly.call(t, http.MethodGet, "/api/case/"+id, nil).want(t, 200).object(t)
		if got.num(t, "severity") != 3 || len(got.strs(t, "tags")) != 1 || got.str(t, "updatedBy") != "ana" {
			t.Fatalf("case %s after bulk update: %v", id, got)
		}
	}
	// by number too, under /api/v0
	tm.analyst.call(t, http.MethodPatch, "/api/v0/case/_bulk", map[string]any{"ids": []any{a.num(t, "caseId")}, "title": "A2"}).want(t, 400)
	tm.analyst.call(t, http.MethodPatch, "/api/v0/case/_bulk", map[string]any{"ids": []string{"1"}, "title": "A2"}).want(t, 200)

	// one id of another organisation, or unknown: 404 and nothing changed
	for _, bad := range []string{foreign.str(t, "id"), "~424242"} {
		tm.analyst.call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": []string{ids[1], bad}, "severity": 1}).
			wantError(t, 404, "NotFoundError")
		if got := tm.analyst.call(t, http.MethodGet, "/api/case/"+ids[1], nil).want(t, 200).object(t); got.num(t, "severity") != 3 {
			t.Fatalf("a refused bulk update changed the case: %v", got)
		}
	}
	tm.readOnly.call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 1}).wantError(t, 403, "AuthorizationError")
	tm.analyst.call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"severity": 1}).want(t, 400)
	tm.analyst.call(t, http.MethodPatch, "/api/case/_bulk", map[string]any{"ids": ids, "severity": 9}).wantError(t, 400, "AttributeCheckingError")
}

func TestBulk_UpdateObservables(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil)
	l := tm.analyst.observables(t, "/api/case/"+cs.str(t, "id")+"/artifact", map[string]any{"dataType": "domain",
		"data": []string{"a.example", "b.example"}})
	theirs := tm.other.newCase(t, nil)
	foreign := tm.other.observables(t, "/api/case/"+theirs.str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "c.example"})
	ids := []string{l[0].str(t, "id"), l[1].str(t, "id")}

	tm.analyst.call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "ioc": true, "tags": []string{"t"}}).want(t, 204)
	for _, id := range ids {
		if got := tm.readOnly.call(t, http.MethodGet, "/api/case/artifact/"+id, nil).want(t, 200).object(t); got["ioc"] != true {
			t.Fatalf("observable %s: %v", id, got)
		}
	}
	tm.analyst.call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": []string{ids[0], foreign[0].str(t, "id")}, "ioc": false}).
		wantError(t, 404, "NotFoundError")
	if got := tm.analyst.call(t, http.MethodGet, "/api/case/artifact/"+ids[0], nil).want(t, 200).object(t); got["ioc"] != true {
		t.Fatalf("a refused bulk update changed the observable: %v", got)
	}
	tm.readOnly.call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "ioc": false}).wantError(t, 403, "AuthorizationError")
	tm.analyst.call(t, http.MethodPatch, "/api/case/artifact/_bulk", map[string]any{"ids": ids, "data": "changed"}).wantError(t, 400, "AttributeCheckingError")
}

func TestBulk_DeleteAlerts(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newAlert(t, "bulk-1", nil)
	b := tm.analyst.newAlert(t, "bulk-2", nil)
	keep := tm.analyst.newAlert(t, "bulk-3", nil)
	foreign := tm.other.newAlert(t, "bulk-x", nil)

	tm.analyst.call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.str(t, "id"), foreign.str(t, "id")}}).
		wantError(t, 404, "NotFoundError")
	tm.analyst.call(t, http.MethodGet, "/api/alert/"+a.str(t, "id"), nil).want(t, 200)
	tm.readOnly.call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.str(t, "id")}}).wantError(t, 403, "AuthorizationError")

	tm.analyst.call(t, http.MethodPost, "/api/alert/delete/_bulk", map[string]any{"ids": []string{a.str(t, "id"), b.str(t, "id")}}).want(t, 204)
	for _, al := range []obj{a, b} {
		tm.analyst.call(t, http.MethodGet, "/api/alert/"+al.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	}
	tm.analyst.call(t, http.MethodGet, "/api/alert/"+keep.str(t, "id"), nil).want(t, 200)
	tm.other.call(t, http.MethodGet, "/api/alert/"+foreign.str(t, "id"), nil).want(t, 200)
}

func TestStats_Cases(t *testing.T) {
	tm := newTeam(t)
	tm.analyst.newCase(t, map[string]any{"title": "one", "severity": 1})
	tm.analyst.newCase(t, map[string]any{"title": "two", "severity": 3})
	c := tm.analyst.newCase(t, map[string]any{"title": "three", "severity": 3})
	tm.analyst.call(t, http.MethodPatch, "/api/case/"+c.str(t, "id"), map[string]any{"status": "Resolved",
		"resolutionStatus": "TruePositive", "impactStatus": "NoImpact", "summary": "done"}).want(t, 200)
	tm.other.newCase(t, map[string]any{"title": "theirs"})

	got := tm.readOnly.call(t, http.MethodPost, "/api/case/_stats", map[string]any{"query": map[string]any{},
		"stats": []any{map[string]any{"_agg": "field", "_field": "status"}, map[string]any{"_agg": "field", "_field": "severity"},
			map[string]any{"_agg": "count"}}}).want(t, 200).object(t)
	if got.num(t, "count") != 3 {
		t.Fatalf("count %v", got)
	}
	st, sev := got.obj(t, "status"), got.obj(t, "severity")
	if st.obj(t, "Open").num(t, "count") != 2 || st.obj(t, "Resolved").num(t, "count") != 1 || len(st) != 2 {
		t.Fatalf("status %v", st)
	}
	if sev.obj(t, "3").num(t, "count") != 2 || sev.obj(t, "1").num(t, "count") != 1 {
		t.Fatalf("severity %v", sev)
	}
	// the query narrows, under /api/v0 too
	got = tm.analyst.call(t, http.MethodPost, "/api/v0/case/_stats", map[string]any{"query": map[string]any{"status": "Open"},
		"stats": []any{map[string]any{"_agg": "count"}}}).want(t, 200).object(t)
	if got.num(t, "count") != 2 {
		t.Fatalf("narrowed count %v", got)
	}
	tm.analyst.call(t, http.MethodPost, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "field", "_field": "nope"}}}).want(t, 400)
	tm.analyst.call(t, http.MethodPost, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "median", "_field": "severity"}}}).want(t, 400)
	tm.anon().call(t, http.MethodPost, "/api/case/_stats", map[string]any{}).wantError(t, 401, "AuthenticationError")
}
