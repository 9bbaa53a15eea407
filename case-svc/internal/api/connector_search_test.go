package api_test

import (
	"net/http"
	"testing"
)

// The connector's lookups against a real analysis-svc: job search, one analyzer, responder search, and the
// reference system's cortexId/cortexJobId on job records.
func TestConnector_Lookups(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	cs := tm.analyst.newCase(t, nil).Str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "ip", "data": "203.0.113.9"})[0]
	j := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/job",
		map[string]any{"cortexId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).Want(t, 201).Object(t)
	if j.Str(t, "cortexId") != "local" || j.Str(t, "cortexJobId") == "" || j.Str(t, "cortexJobId") != j.Str(t, "analysisJobId") {
		t.Fatalf("job %v", j)
	}

	t.Run("job search", func(t *testing.T) {
		for _, p := range []string{"/api/connector/cortex/job/_search", "/api/connector/analysis/job/_search"} {
			r := tm.readOnly.Call(t, http.MethodPost, p, map[string]any{"query": map[string]any{"_and": []any{
				map[string]any{"analyzerId": as.Analyzers["Echo"]}, map[string]any{"cortexId": "local"}}}}).Want(t, 200)
			if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != j.Str(t, "id") || r.Total(t) != "1" {
				t.Errorf("%s: %v (X-Total %s)", p, l, r.Total(t))
			}
		}
		if l := tm.readOnly.Call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{"status": "Failure"}}).
			Want(t, 200).List(t); len(l) != 0 {
			t.Errorf("failed jobs: %v", l)
		}
		if l := tm.other.Call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{}}).Want(t, 200).List(t); len(l) != 0 {
			t.Errorf("another organisation sees %v", l)
		}
		tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{"secret": 1}}).
			WantError(t, 400, "BadRequest")
	})

	t.Run("one analyzer", func(t *testing.T) {
		for _, id := range []string{as.Analyzers["Echo"], "Echo"} {
			a := tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/analyzer/"+id, nil).Want(t, 200).Object(t)
			if a.Str(t, "name") != "Echo" || a.Str(t, "id") != as.Analyzers["Echo"] || len(a.Strs(t, "cortexIds")) != 1 {
				t.Errorf("analyzer %s: %v", id, a)
			}
		}
		tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/analyzer/nope", nil).WantError(t, 404, "NotFoundError")
		tm.readOnly.Call(t, http.MethodGet, "/api/connector/cortex/analyzer/Echo", nil).WantError(t, 403, "AuthorizationError")
	})

	t.Run("responder search", func(t *testing.T) {
		r := tm.readOnly.Call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"name": "Tagger"}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != as.Responder["Tagger"] || r.Total(t) != "1" {
			t.Errorf("Tagger: %v", l)
		}
		all := tm.readOnly.Call(t, http.MethodPost, "/api/connector/cortex/responder/_search", map[string]any{"query": map[string]any{}}).Want(t, 200)
		if len(all.List(t)) < 2 {
			t.Errorf("all responders: %v", all.List(t))
		}
		if l := tm.readOnly.Call(t, http.MethodPost, "/api/connector/cortex/responder/_search?range=0-1", map[string]any{"query": map[string]any{
			"_or": []any{map[string]any{"name": "Tagger"}, map[string]any{"_like": map[string]any{"_field": "name", "_value": "helper"}}}}}).
			Want(t, 200); len(l.List(t)) != 1 || l.Total(t) != "2" {
			t.Errorf("a page of two: %v (X-Total %s)", l.List(t), l.Total(t))
		}
		tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"_gt": map[string]any{"version": "1"}}}).WantError(t, 400, "BadRequest")
		tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"nope": "x"}}).WantError(t, 400, "BadRequest")
		tm.anon().Call(t, http.MethodPost, "/api/connector/cortex/responder/_search", map[string]any{}).WantError(t, 401, "AuthenticationError")
	})

	t.Run("responder history of an object", func(t *testing.T) {
		act := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{
			"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": cs, "cortexId": "local"}).Want(t, 201).Object(t)
		for _, typ := range []string{"case", "Case"} {
			r := tm.readOnly.Call(t, http.MethodGet, "/api/connector/cortex/action/"+typ+"/"+cs, nil).Want(t, 200)
			if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != act.Str(t, "id") || l[0].Str(t, "responderId") != as.Responder["Tagger"] ||
				r.Total(t) != "1" {
				t.Errorf("%s history: %v", typ, l)
			}
		}
		task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+cs+"/task", map[string]any{"title": "t"}).Want(t, 201).Object(t).Str(t, "id")
		if l := tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/case_task/"+task, nil).Want(t, 200).List(t); len(l) != 0 {
			t.Errorf("a task without actions: %v", l)
		}
		// the query steps: listAction, getAction, actions (from the case)
		query := func(c *client, steps ...map[string]any) []obj {
			return c.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": steps}).Want(t, 200).List(t)
		}
		for name, steps := range map[string][]map[string]any{
			"listAction": {{"_name": "listAction"}, {"_name": "filter", "_field": "responderId", "_value": as.Responder["Tagger"]}},
			"getAction":  {{"_name": "getAction", "idOrName": act.Str(t, "id")}},
			"actions":    {{"_name": "getCase", "idOrName": cs}, {"_name": "actions"}, {"_name": "sort", "_fields": []any{"-startDate"}}},
		} {
			if l := query(tm.readOnly, steps...); len(l) != 1 || l[0].Str(t, "id") != act.Str(t, "id") || l[0]["_createdAt"] == nil {
				t.Errorf("%s: %v", name, l)
			}
		}
		if l := query(tm.readOnly, map[string]any{"_name": "getTask", "idOrName": task}, map[string]any{"_name": "actions"}); len(l) != 0 {
			t.Errorf("actions of a task: %v", l)
		}
		if l := query(tm.other, map[string]any{"_name": "listAction"}); len(l) != 0 {
			t.Errorf("cert lists soc's actions: %v", l)
		}
		tm.other.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{map[string]any{"_name": "getAction", "idOrName": act.Str(t, "id")}}}).
			WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{map[string]any{"_name": "listJob"}, map[string]any{"_name": "actions"}}}).
			WantError(t, 400, "BadRequest")
		tm.other.Call(t, http.MethodGet, "/api/connector/cortex/action/case/"+cs, nil).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/action/planet/"+cs, nil).WantError(t, 400, "AttributeCheckingError")
		tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/action/case/"+cs+"?sort=-secret", nil).WantError(t, 400, "BadRequest")
	})
}
