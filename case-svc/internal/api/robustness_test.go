package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Bad input is never a 500: every field of every write route gets values of every JSON type (and some
// awkward ones); the answer is a success or a 4xx with the error shape, and nothing is logged as failed.
func TestBadInputIsNeverServerError(t *testing.T) {
	tm := newTeam(t)
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "cf", "type": "integer", "options": []int{1, 2}}).Want(t, 201)
	c := tm.orgAdmin.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	caseID := c.Str(t, "id")
	taskID := tm.orgAdmin.Call(t, http.MethodGet, "/api/case/"+caseID+"/task", nil).Want(t, 200).List(t)[0].Str(t, "id")
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "tpl"}).Want(t, 201)
	obsID := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "1.2.3.4"}).
		Want(t, 201).List(t)[0].Str(t, "id")
	alertID := tm.orgAdmin.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r",
		"title": "t", "description": "d"}).Want(t, 201).Object(t).Str(t, "id")

	long := strings.Repeat("é", 40000) // beyond every text limit but maxDescription
	values := []any{nil, true, -1, 1.5, 1e300, "x", "", long, []any{}, []any{1, "a", nil}, map[string]any{},
		map[string]any{"string": 1, "order": "x"}, map[string]any{"integer": 1, "order": 1e20}}
	routes := []struct {
		method, path string
		fields       []string
	}{
		{"POST", "/api/case", []string{"title", "description", "severity", "Severity", "tlp", "pap", "startDate", "tags",
			"flag", "owner", "tasks", "customFields", "template", "summary"}},
		{"PATCH", "/api/case/" + caseID, []string{"title", "severity", "startDate", "endDate", "status", "resolutionStatus",
			"impactStatus", "tags", "flag", "owner", "customFields", "summary"}},
		{"POST", "/api/case/" + caseID + "task", []string{"title", "status", "owner", "startDate", "dueDate", "order", "flag"}},
		{"PATCH", "/api/case/task/" + taskID, []string{"title", "status", "owner", "startDate", "endDate", "order", "flag"}},
		{"POST", "/api/case/task/" + taskID + "/log", []string{"message"}},
		{"POST", "/api/case/template", []string{"name", "severity", "tasks", "customFields", "tags"}},
		{"PATCH", "/api/case/template/tpl", []string{"name", "tlp", "tasks", "customFields", "flag"}},
		{"POST", "/api/customField", []string{"name", "type", "options", "mandatory"}},
		{"PATCH", "/api/customField/cf", []string{"options", "type", "mandatory", "displayName"}},
		{"POST", "/api/user", []string{"login", "name", "profile", "organisation", "password"}},
		{"PATCH", "/api/user/reader", []string{"name", "locked", "status", "profile", "organisations"}},
		{"POST", "/api/organisation", []string{"name", "description"}},
		{"PATCH", "/api/organisation/soc", []string{"description", "name"}},
		{"POST", "/api/case/_search", []string{"query", "range", "sort", "nstats"}},
		{"POST", "/api/case/task/_search", []string{"query", "range", "sort"}},
		{"POST", "/api/user/_search", []string{"query", "range", "sort"}},
		{"POST", "/api/login", []string{"user", "password", "organisation"}},
		{"POST", "/api/case/" + caseID + "/artifact", []string{"dataType", "data", "tlp", "tags", "ioc", "startDate", "isZip",
			"zipPassword", "message"}},
		{"PATCH", "/api/case/artifact/" + obsID, []string{"ioc", "sighted", "ignoreSimilarity", "tags", "message", "tlp",
			"dataType", "data"}},
		{"POST", "/api/alert", []string{"type", "source", "sourceRef", "severity", "date", "tags", "customFields", "artifacts",
			"caseTemplate", "follow", "externalLink"}},
		{"PATCH", "/api/alert/" + alertID, []string{"title", "severity", "date", "tags", "customFields", "caseTemplate",
			"follow", "sourceRef"}},
		{"POST", "/api/alert/" + alertID + "/createCase", []string{"caseTemplate"}},
		{"POST", "/api/alert/merge/_bulk", []string{"caseId", "alertIds"}},
		{"POST", "/api/alert/_search", []string{"query", "range", "sort"}},
		{"POST", "/api/case/artifact/_search", []string{"query", "range", "sort"}},
		{"POST", "/api/v1/query", []string{"query"}},
		{"POST", "/api/v0/query", []string{"query"}},
	}
	n := 0
	for _, rt := range routes {
		for _, f := range rt.fields {
			for _, v := range values {
				body := map[string]any{f: v}
				if rt.method == "POST" && !strings.HasSuffix(rt.path, "_search") {
					// a plausible body around the bad field, so validation reaches it
					for k, x := range map[string]any{"title": "t", "description": "d", "name": "n", "login": "l",
						"message": "m", "type": "string", "profile": "analyst"} {
						if k != f {
							body[k] = x
						}
					}
				}
				r := tm.orgAdmin.Call(t, rt.method, rt.path, body)
				n++
				if r.Status >= 500 {
					t.Errorf("%s %s with %s=%.60v: %d %s", rt.method, rt.path, f, v, r.Status, r.Body)
				} else if r.Status >= 400 {
					r.CheckErrorShape(t)
				}
			}
		}
	}
	for _, raw := range []string{"", "{", "[]", "null", `{"a":1}{`, "\x00", `{"title":"\ud800"}`} {
		for _, rt := range routes {
			r := tm.orgAdmin.Raw(t, rt.method, rt.path, "application/json", raw)
			if r.Status >= 500 {
				t.Errorf("%s %s with body %q: %d %s", rt.method, rt.path, raw, r.Status, r.Body)
			}
		}
	}
	for _, p := range []string{"/api/case/%00", "/api/case/~%00task", "/api/case/task/%2e%2e", "/api/user/%ff",
		"/api/organisation/" + strings.Repeat("x", 5000), "/api/customField/~", "/api/case/template/%00",
		"/api/datastore/" + strings.Repeat("a", 64), "/api/alert/%00", "/api/alert/a;b;c%00", "/api/case/artifact/%ff",
		"/api/alert/artifact/~", "/api/case/%00/artifact", "/api/alert/" + strings.Repeat(";", 3000)} {
		for _, m := range []string{"GET", "PATCH", "DELETE", "POST"} {
			if r := tm.orgAdmin.Call(t, m, p, map[string]any{}); r.Status >= 500 {
				t.Errorf("%s %s: %d %s", m, p, r.Status, r.Body)
			}
		}
	}
	if strings.Contains(tm.logs.String(), "request failed") {
		t.Errorf("the service logged failures:\n%s", tm.logs.String())
	}
	t.Logf("%d requests", n)
}

// "$"-prefixed keys and values never act as database operators: as values they are stored and matched
// literally, as keys they are refused (or ignored, for a body's unknown fields).
func TestDollarKeysNeverBecomeOperators(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "other",
		"data": []string{"$where", `{"$ne": null}`, "plain"}})
	for q, want := range map[string]string{`{"data": "$where"}`: "1", `{"data": "{\"$ne\": null}"}`: "1",
		`{"_like": {"_field": "data", "_value": "$ne"}}`: "1", `{"_in": {"_field": "data", "_values": ["$where", "$gt"]}}`: "1"} {
		r := tm.analyst.Raw(t, http.MethodPost, "/api/case/artifact/_search", "application/json", `{"query": `+q+`}`).Want(t, 200)
		if r.Total(t) != want {
			t.Errorf("%s: %s, want %s", q, r.Total(t), want)
		}
	}
	a := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "$type", "source": "$source", "sourceRef": "$gt",
		"title": "$where", "description": "d", "tags": []string{"$set"}}).Want(t, 201).Object(t)
	id := a.Str(t, "id")
	tm.analyst.Call(t, http.MethodGet, "/api/alert/"+url.PathEscape("$type;$source;$gt"), nil).Want(t, 200)
	tm.analyst.Call(t, http.MethodPatch, "/api/alert/"+id, map[string]any{"$set": map[string]any{"read": true},
		"description": "d2"}).Want(t, 200)
	if got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t); got["read"] != false ||
		got.Str(t, "description") != "d2" {
		t.Fatalf("a $set key changed the alert: %v", got)
	}
	r := tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []map[string]any{{"_name": "listAlert"},
		{"_name": "filter", "_and": []any{map[string]any{"title": "$where"}, map[string]any{"tags": "$set"}}}, {"_name": "count"}}}).
		Want(t, 200)
	if string(r.Body) != "1\n" && string(r.Body) != "1" {
		t.Fatalf("literal $ values: %s", r.Body)
	}
	for _, body := range []map[string]any{
		{"query": []map[string]any{{"_name": "listAlert"}, {"_name": "filter", "_and": []any{map[string]any{"$or": []any{}}}}}},
		{"query": []map[string]any{{"_name": "listAlert"}, {"_name": "filter", "title": map[string]any{"$regex": ".*"}}}},
		{"query": []map[string]any{{"_name": "listAlert"}, {"_name": "sort", "_fields": []any{map[string]any{"$natural": "desc"}}}}},
		{"query": []map[string]any{{"_name": "getAlert", "idOrName": map[string]any{"$ne": ""}}}},
	} {
		tm.analyst.Call(t, http.MethodPost, "/api/v1/query", body).WantError(t, 400, "BadRequest")
	}
	tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t",
		"description": "d", "customFields": map[string]any{"$where": map[string]any{"string": "1"}}}).WantError(t, 400, "AttributeCheckingError")
	tm.analyst.Call(t, http.MethodPost, "/api/alert/_search", map[string]any{"query": map[string]any{"$where": "1"}}).WantError(t, 400, "BadRequest")
}
