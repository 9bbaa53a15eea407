package api_test

import (
	"net/http"
	"testing"
)

// _child in a case search (TheHive v0): the cases having a task or an observable that matches.
func TestSearch_Child(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "a", "tasks": []map[string]any{{"title": "hunt"}}}).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+a+"/artifact", map[string]any{"dataType": "ip", "data": "10.0.0.1"})
	tm.analyst.newCase(t, map[string]any{"title": "b", "tasks": []map[string]any{{"title": "other"}}})
	cert := tm.other.newCase(t, map[string]any{"title": "c", "tasks": []map[string]any{{"title": "hunt"}}}).Str(t, "id")
	search := func(c *client, q any) *resp {
		return c.Call(t, http.MethodPost, "/api/case/_search", map[string]any{"query": q})
	}
	for name, q := range map[string]any{
		"task":       map[string]any{"_child": map[string]any{"_type": "case_task", "_query": map[string]any{"title": "hunt"}}},
		"observable": map[string]any{"_child": map[string]any{"_type": "case_artifact", "_query": map[string]any{"_field": "data", "_value": "10.0.0.1"}}},
		"inside _and": map[string]any{"_and": []any{map[string]any{"title": "a"},
			map[string]any{"_child": map[string]any{"_type": "case_task", "_query": map[string]any{"_is": map[string]any{"status": "Waiting"}}}}}},
	} {
		r := search(tm.readOnly, q).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != a || r.Total(t) != "1" {
			t.Errorf("%s: %v", name, l)
		}
	}
	if l := search(tm.analyst, map[string]any{"_child": map[string]any{"_type": "case_task", "_query": map[string]any{"title": "nothing"}}}).
		Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("no child: %v", l)
	}
	// each organisation's children only
	if l := search(tm.other, map[string]any{"_child": map[string]any{"_type": "case_task", "_query": map[string]any{"title": "hunt"}}}).
		Want(t, 200).List(t); len(l) != 1 || l[0].Str(t, "id") != cert {
		t.Errorf("cert: %v", l)
	}
	for _, q := range []any{
		map[string]any{"_child": map[string]any{"_type": "planet", "_query": map[string]any{}}},
		map[string]any{"_child": "case_task"},
		map[string]any{"_child": map[string]any{"_type": "case_task", "_query": map[string]any{"secret": 1}}},
	} {
		search(tm.analyst, q).WantError(t, 400, "BadRequest")
	}
}
