package api_test

import (
	"net/http"
	"testing"
)

// Issue 15 (5b): case numbers were one sequence across organisations, so each new case told its creator how
// many cases the other organisations had opened. Each organisation now has its own sequence, and a number in
// a path names a case of the caller's organisation only.
func TestRegressionCaseNumbersPerOrganisation(t *testing.T) {
	tm := newTeam(t)
	a1 := tm.analyst.newCase(t, map[string]any{"title": "soc one"})
	a2 := tm.analyst.newCase(t, map[string]any{"title": "soc two"})
	b1 := tm.other.newCase(t, map[string]any{"title": "cert one"})
	a3 := tm.analyst.newCase(t, map[string]any{"title": "soc three"})
	b2 := tm.other.newCase(t, map[string]any{"title": "cert two"})
	for _, c := range []struct {
		got  obj
		want float64
	}{{a1, 1}, {a2, 2}, {a3, 3}, {b1, 1}, {b2, 2}} {
		if n := c.got.Num(t, "caseId"); n != c.want {
			t.Errorf("case %q has number %v, want %v (its organisation's own sequence)", c.got.Str(t, "title"), n, c.want)
		}
	}
	ids := map[string]bool{}
	for _, c := range []obj{a1, a2, a3, b1, b2} {
		ids[c.Str(t, "id")] = true
	}
	if len(ids) != 5 {
		t.Fatalf("case ids are not unique: %v", ids)
	}

	// Number 1 in a path is the caller's own case 1, on every route that takes a case id or number.
	for _, c := range []struct {
		as    *client
		title string
	}{{tm.analyst, "soc one"}, {tm.other, "cert one"}} {
		for _, p := range []string{"/api/case/1", "/api/v0/case/1"} {
			if got := c.as.Call(t, http.MethodGet, p, nil).Want(t, http.StatusOK).Object(t); got.Str(t, "title") != c.title {
				t.Errorf("GET %s as %s: %q, want %q", p, c.title, got.Str(t, "title"), c.title)
			}
		}
	}
	tm.other.Call(t, http.MethodPatch, "/api/case/1", map[string]any{"title": "cert one, renamed"}).Want(t, http.StatusOK)
	if got := tm.analyst.Call(t, http.MethodGet, "/api/case/1", nil).Want(t, http.StatusOK).Object(t); got.Str(t, "title") != "soc one" {
		t.Errorf("another organisation's PATCH /api/case/1 changed soc's case 1: %v", got)
	}
	tm.other.Call(t, http.MethodPost, "/api/case/2/task", map[string]any{"title": "cert task"}).Want(t, http.StatusCreated)
	if n := tm.analyst.Call(t, http.MethodGet, "/api/case/"+a2.Str(t, "id")+"/task", nil).Want(t, http.StatusOK).Total(t); n != "0" {
		t.Errorf("a task made by the other organisation on its case 2 landed on soc's case 2 (%s tasks)", n)
	}
	// A number the caller's organisation does not have is a 404, even when another organisation has it.
	tm.other.Call(t, http.MethodGet, "/api/case/3", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.other.Call(t, http.MethodGet, "/api/case/"+a3.Str(t, "id"), nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.other.Call(t, http.MethodDelete, "/api/case/3", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/3", nil).Want(t, http.StatusOK)

	// An id (~n, one sequence for all) and a number (n, per organisation) name different cases: cert's second
	// case is ~5 and number 2; cert has no number 5 (docs/decisions.md, case-svc/README.md say so).
	if b2.Str(t, "id") != "~5" {
		t.Fatalf("cert's second case has id %s, want ~5 (ids are one sequence)", b2.Str(t, "id"))
	}
	if got := tm.other.Call(t, http.MethodGet, "/api/case/~5", nil).Want(t, http.StatusOK).Object(t); got.Num(t, "caseId") != 2 {
		t.Errorf("/api/case/~5 is number %v, want 2", got.Num(t, "caseId"))
	}
	tm.other.Call(t, http.MethodGet, "/api/case/5", nil).WantError(t, http.StatusNotFound, "NotFoundError")
}
