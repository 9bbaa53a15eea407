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
	cs := tm.analyst.newCase(t, nil).str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "ip", "data": "203.0.113.9"})[0]
	j := tm.analyst.call(t, http.MethodPost, "/api/connector/cortex/job",
		map[string]any{"cortexId": "local", "artifactId": ip.str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).want(t, 201).object(t)
	if j.str(t, "cortexId") != "local" || j.str(t, "cortexJobId") == "" || j.str(t, "cortexJobId") != j.str(t, "analysisJobId") {
		t.Fatalf("job %v", j)
	}

	t.Run("job search", func(t *testing.T) {
		for _, p := range []string{"/api/connector/cortex/job/_search", "/api/connector/analysis/job/_search"} {
			r := tm.readOnly.call(t, http.MethodPost, p, map[string]any{"query": map[string]any{"_and": []any{
				map[string]any{"analyzerId": as.Analyzers["Echo"]}, map[string]any{"cortexId": "local"}}}}).want(t, 200)
			if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != j.str(t, "id") || r.total(t) != "1" {
				t.Errorf("%s: %v (X-Total %s)", p, l, r.total(t))
			}
		}
		if l := tm.readOnly.call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{"status": "Failure"}}).
			want(t, 200).list(t); len(l) != 0 {
			t.Errorf("failed jobs: %v", l)
		}
		if l := tm.other.call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{}}).want(t, 200).list(t); len(l) != 0 {
			t.Errorf("another organisation sees %v", l)
		}
		tm.analyst.call(t, http.MethodPost, "/api/connector/cortex/job/_search", map[string]any{"query": map[string]any{"secret": 1}}).
			wantError(t, 400, "BadRequest")
	})

	t.Run("one analyzer", func(t *testing.T) {
		for _, id := range []string{as.Analyzers["Echo"], "Echo"} {
			a := tm.analyst.call(t, http.MethodGet, "/api/connector/cortex/analyzer/"+id, nil).want(t, 200).object(t)
			if a.str(t, "name") != "Echo" || a.str(t, "id") != as.Analyzers["Echo"] || len(a.strs(t, "cortexIds")) != 1 {
				t.Errorf("analyzer %s: %v", id, a)
			}
		}
		tm.analyst.call(t, http.MethodGet, "/api/connector/cortex/analyzer/nope", nil).wantError(t, 404, "NotFoundError")
		tm.readOnly.call(t, http.MethodGet, "/api/connector/cortex/analyzer/Echo", nil).wantError(t, 403, "AuthorizationError")
	})

	t.Run("responder search", func(t *testing.T) {
		r := tm.readOnly.call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"name": "Tagger"}}).want(t, 200)
		if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != as.Responder["Tagger"] || r.total(t) != "1" {
			t.Errorf("Tagger: %v", l)
		}
		all := tm.readOnly.call(t, http.MethodPost, "/api/connector/cortex/responder/_search", map[string]any{"query": map[string]any{}}).want(t, 200)
		if len(all.list(t)) < 2 {
			t.Errorf("all responders: %v", all.list(t))
		}
		if l := tm.readOnly.call(t, http.MethodPost, "/api/connector/cortex/responder/_search?range=0-1", map[string]any{"query": map[string]any{
			"_or": []any{map[string]any{"name": "Tagger"}, map[string]any{"_like": map[string]any{"_field": "name", "_value": "helper"}}}}}).
			want(t, 200); len(l.list(t)) != 1 || l.total(t) != "2" {
			t.Errorf("a page of two: %v (X-Total %s)", l.list(t), l.total(t))
		}
		tm.analyst.call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"_gt": map[string]any{"version": "1"}}}).wantError(t, 400, "BadRequest")
		tm.analyst.call(t, http.MethodPost, "/api/connector/cortex/responder/_search",
			map[string]any{"query": map[string]any{"nope": "x"}}).wantError(t, 400, "BadRequest")
		tm.anon().call(t, http.MethodPost, "/api/connector/cortex/responder/_search", map[string]any{}).wantError(t, 401, "AuthenticationError")
	})

	t.Run("responder history of an object", func(t *testing.T) {
		act := tm.analyst.call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{
			"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": cs, "cortexId": "local"}).want(t, 201).object(t)
		for _, typ := range []string{"case", "Case"} {
			r := tm.readOnly.call(t, http.MethodGet, "/api/connector/cortex/action/"+typ+"/"+cs, nil).want(t, 200)
			if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != act.str(t, "id") || l[0].str(t, "responderId") != as.Responder["Tagger"] ||
				r.total(t) != "1" {
				t.Errorf("%s history: %v", typ, l)
			}
		}
		task := tm.analyst.call(t, http.MethodPost, "/api/case/"+cs+"/task", map[string]any{"title": "t"}).want(t, 201).object(t).str(t, "id")
		if l := tm.analyst.call(t, http.MethodGet, "/api/connector/analysis/action/case_task/"+task, nil).want(t, 200).list(t); len(l) != 0 {
			t.Errorf("a task without actions: %v", l)
		}
		// the query steps: listAction, getAction, actions (from the case)
		query := func(c *client, steps ...map[string]any) []obj {
			return c.call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": steps}).want(t, 200).list(t)
		}
		for name, steps := range map[string][]map[string]any{
			"listAction": {{"_name": "listAction"}, {"_name": "filter", "_field": "responderId", "_value": as.Responder["Tagger"]}},
			"getAction":  {{"_name": "getAction", "idOrName": act.str(t, "id")}},
			"actions":    {{"_name": "getCase", "idOrName": cs}, {"_name": "actions"}, {"_name": "sort", "_fields": []any{"-startDate"}}},
		} {
			if l := query(tm.readOnly, steps...); len(l) != 1 || l[0].str(t, "id") != act.str(t, "id") || l[0]["_createdAt"] == nil {
				t.Errorf("%s: %v", name, l)
			}
		}
		if l := query(tm.readOnly, map[string]any{"_name": "getTask", "idOrName": task}, map[string]any{"_name": "actions"}); len(l) != 0 {
			t.Errorf("actions of a task: %v", l)
		}
		if l := query(tm.other, map[string]any{"_name": "listAction"}); len(l) != 0 {
			t.Errorf("cert lists soc's actions: %v", l)
		}
		tm.other.call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{map[string]any{"_name": "getAction", "idOrName": act.str(t, "id")}}}).
			wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{map[string]any{"_name": "listJob"}, map[string]any{"_name": "actions"}}}).
			wantError(t, 400, "BadRequest")
		tm.other.call(t, http.MethodGet, "/api/connector/cortex/action/case/"+cs, nil).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodGet, "/api/connector/cortex/action/planet/"+cs, nil).wantError(t, 400, "AttributeCheckingError")
		tm.analyst.call(t, http.MethodGet, "/api/connector/cortex/action/case/"+cs+"?sort=-secret", nil).wantError(t, 400, "BadRequest")
	})
}
