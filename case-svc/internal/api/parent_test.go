package api_test

// thehive4py's find_tasks and task-log searches send the reference system's _parent filter: {"_parent":
// {"_type": "case", "_query": {"_id": id}}} for tasks and {"_type": "case_task", …} for logs. They share the
// observable and alert searches' rewrite (observables.go rewriteSearchQuery).

import (
	"net/http"
	"testing"
)

func TestSearch_ParentTasksAndLogs(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "A"}).Str(t, "id")
	b := tm.analyst.newCase(t, map[string]any{"title": "B"}).Str(t, "id")
	var tasksA []string
	for _, title := range []string{"one", "two"} {
		tasksA = append(tasksA, tm.analyst.Call(t, http.MethodPost, "/api/case/"+a+"/task", map[string]any{"title": title}).
			Want(t, 201).Object(t).Str(t, "id"))
	}
	taskB := tm.analyst.Call(t, http.MethodPost, "/api/case/"+b+"/task", map[string]any{"title": "three"}).Want(t, 201).Object(t).Str(t, "id")
	for _, m := range []string{"first", "second"} {
		tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+tasksA[0]+"/log", map[string]any{"message": m}).Want(t, 201)
	}
	tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+taskB+"/log", map[string]any{"message": "other"}).Want(t, 201)

	parent := func(typ, id string) map[string]any {
		return map[string]any{"_parent": map[string]any{"_type": typ, "_query": map[string]any{"_id": id}}}
	}
	for _, tc := range []struct {
		path  string
		query any
		want  string
	}{
		{"/api/case/task/_search", parent("case", a), "2"},
		{"/api/v0/case/task/_search", parent("case", b), "1"},
		{"/api/case/task/_search", map[string]any{"_and": []any{parent("case", a), map[string]any{"title": "two"}}}, "1"},
		{"/api/case/task/_search", map[string]any{"_parent": map[string]any{"_type": "case",
			"_query": map[string]any{"_field": "_id", "_value": a}}}, "2"},
		{"/api/case/task/log/_search", parent("case_task", tasksA[0]), "2"},
		{"/api/v0/case/task/log/_search", parent("case_task", taskB), "1"},
		{"/api/case/task/log/_search", map[string]any{"_and": []any{parent("case_task", tasksA[0]), map[string]any{"message": "second"}}}, "1"},
		{"/api/case/task/log/_search", parent("case_task", tasksA[1]), "0"},
	} {
		r := tm.readOnly.Call(t, http.MethodPost, tc.path, map[string]any{"query": tc.query}).Want(t, 200)
		if r.Total(t) != tc.want {
			t.Errorf("%s %v: total %s, want %s", tc.path, tc.query, r.Total(t), tc.want)
		}
	}
	// another organisation's parent finds nothing of it
	if r := tm.other.Call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": parent("case", a)}).Want(t, 200); r.Total(t) != "0" {
		t.Fatalf("another organisation found %s tasks", r.Total(t))
	}
	// unsupported shapes and a parent the records lack are 400s
	for path, q := range map[string]any{
		"/api/case/task/_search":     map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{"title": "x"}}},
		"/api/case/task/log/_search": map[string]any{"_parent": map[string]any{"_type": "dashboard", "_query": map[string]any{"_id": a}}},
		"/api/v0/case/task/_search":  parent("case_task", tasksA[0]),
	} {
		tm.readOnly.Call(t, http.MethodPost, path, map[string]any{"query": q}).Want(t, 400)
	}
}
