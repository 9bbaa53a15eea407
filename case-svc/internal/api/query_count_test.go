package api_test

// The query API's counting steps (query_count.go) and the steps a UI starts with (ui.go), over HTTP: count…,
// limitedCount, aggregation, myTasks; currentUser, listUser, listOrganisation, getOrganisation + users,
// assignableUsers, listCustomField, listCaseTemplate, listProfile, listObservableType.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func query(t *testing.T, c *client, version string, steps ...map[string]any) *resp {
	t.Helper()
	list := make([]any, len(steps))
	for i, s := range steps {
		list[i] = s
	}
	return c.Call(t, http.MethodPost, "/api/"+version+"/query", map[string]any{"query": list})
}

func number(t *testing.T, r *resp) float64 {
	t.Helper()
	var n float64
	r.Want(t, 200).Decode(t, &n)
	return n
}

func TestQuery_CountSteps(t *testing.T) {
	t.Parallel()
	tm, _ := statsFixture(t)
	step := func(name string) map[string]any { return map[string]any{"_name": name} }
	for name, want := range map[string]float64{"countCase": 4, "countAlert": 2, "countUnreadAlert": 0,
		"countImportedAlert": 1, "countRelatedAlert": 1, "countTask": 3, "countCaseObservable": 3, "countAlertObservable": 1} {
		for _, v := range []string{"v0", "v1"} {
			if got := number(t, query(t, tm.readOnly, v, step(name))); got != want {
				t.Errorf("%s %s: %v, want %v", v, name, got, want)
			}
		}
	}
	// cert: its own alert, unread, with its observable
	for name, want := range map[string]float64{"countCase": 1, "countAlert": 1, "countUnreadAlert": 1, "countAlertObservable": 1,
		"countCaseObservable": 0} {
		if got := number(t, query(t, tm.other, "v1", step(name))); got != want {
			t.Errorf("cert %s: %v, want %v", name, got, want)
		}
	}
	// limitedCount: the count, at most threshold
	if got := number(t, query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "limitedCount", "threshold": 2})); got != 2 {
		t.Errorf("limitedCount 2: %v", got)
	}
	if got := number(t, query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "filter", "severity": 3},
		step("limitedCount"))); got != 2 {
		t.Errorf("limitedCount: %v", got)
	}
	// myTasks: the caller's tasks (ana's one; bob's is in cert)
	if got := number(t, query(t, tm.analyst, "v1", step("myTasks"), step("count"))); got != 1 {
		t.Errorf("myTasks of ana: %v", got)
	}
	l := query(t, tm.analyst, "v1", step("myTasks"), map[string]any{"_name": "page", "from": 0, "to": 10}).Want(t, 200).List(t)
	if len(l) != 1 || l[0].Str(t, "owner") != "ana" {
		t.Errorf("myTasks page %v", l)
	}
	if got := number(t, query(t, tm.readOnly, "v1", step("myTasks"), step("count"))); got != 0 {
		t.Errorf("myTasks of reader: %v", got)
	}

	// aggregation: the v1 shape (no field name around the values), after filters
	var agg map[string]map[string]float64
	query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "aggregation", "_agg": "field", "_field": "status"}).
		Want(t, 200).Decode(t, &agg)
	if agg["Open"]["count"] != 3 || agg["Resolved"]["count"] != 1 || len(agg) != 2 {
		t.Errorf("aggregation by status %v", agg)
	}
	var fn map[string]float64
	query(t, tm.analyst, "v1", step("listAlert"), map[string]any{"_name": "filter", "read": true},
		map[string]any{"_name": "aggregation", "_agg": "count"}).Want(t, 200).Decode(t, &fn)
	if fn["count"] != 2 {
		t.Errorf("aggregation count %v", fn)
	}
	fn = nil
	query(t, tm.other, "v1", step("listTask"), map[string]any{"_name": "aggregation", "_agg": "avg", "_field": "order"}).Want(t, 200).Decode(t, &fn)
	if _, ok := fn["avg_order"]; !ok || len(fn) != 1 {
		t.Errorf("aggregation avg %v", fn)
	}

	// refusals: a step after a count, bad threshold, unknown aggregation, an aggregation of similar cases
	query(t, tm.analyst, "v1", step("countCase"), step("page")).WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", step("countCase"), map[string]any{"_name": "countCase", "x": 1}).WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", map[string]any{"_name": "countCase", "x": 1}).WantError(t, 400, "BadRequest")
	if msg := query(t, tm.analyst, "v1", step("listCase"), step("countCase")).WantError(t, 400, "BadRequest"); !strings.Contains(msg, "first step") {
		t.Errorf("a count… step after the first: %q", msg)
	}
	if msg := query(t, tm.analyst, "v1", step("limitedCount")).WantError(t, 400, "BadRequest"); !strings.Contains(msg, "cannot start") {
		t.Errorf("limitedCount first: %q", msg)
	}
	query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "limitedCount", "threshold": -1}).WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "aggregation", "_agg": "nope"}).
		WantError(t, 400, "AttributeCheckingError")
	query(t, tm.analyst, "v1", step("listCase"), map[string]any{"_name": "aggregation", "_agg": "field", "_field": "status"},
		step("count")).WantError(t, 400, "BadRequest")
}

func TestQuery_UISteps(t *testing.T) {
	t.Parallel()
	tm, cs := statsFixture(t)
	step := func(name string) map[string]any { return map[string]any{"_name": name} }
	me := query(t, tm.analyst, "v1", step("currentUser")).Want(t, 200).List(t)
	if len(me) != 1 || me[0].Str(t, "login") != "ana" || me[0].Str(t, "organisation") != "soc" || me[0].Str(t, "_createdBy") == "" {
		t.Fatalf("currentUser %v", me)
	}
	// users of the caller's organisation, paged with X-Total (v0), sorted
	r := query(t, tm.analyst, "v0", step("listUser"), map[string]any{"_name": "sort", "_fields": []any{map[string]any{"login": "desc"}}},
		map[string]any{"_name": "page", "from": 0, "to": 2}).Want(t, 200)
	if l := r.List(t); len(l) != 2 || r.Total(t) != "3" || l[0].Str(t, "login") != "socadmin" {
		t.Errorf("listUser %v total %s", l, r.Total(t))
	}
	if n := number(t, query(t, tm.other, "v1", step("listUser"), step("count"))); n != 1 {
		t.Errorf("cert's users: %v", n)
	}
	if n := number(t, query(t, tm.analyst, "v1", step("listUser"), map[string]any{"_name": "filter", "login": "ana"}, step("count"))); n != 1 {
		t.Errorf("filtered users: %v", n)
	}
	orgs := query(t, tm.analyst, "v1", step("listOrganisation")).Want(t, 200).List(t)
	if len(orgs) != 1 || orgs[0].Str(t, "name") != "soc" {
		t.Errorf("listOrganisation %v", orgs)
	}
	users := query(t, tm.analyst, "v1", map[string]any{"_name": "getOrganisation", "idOrName": "soc"}, step("users")).Want(t, 200).List(t)
	if len(users) != 3 {
		t.Errorf("users of soc %v", users)
	}
	query(t, tm.other, "v1", map[string]any{"_name": "getOrganisation", "idOrName": "soc"}, step("users")).WantError(t, 404, "NotFoundError")
	if n := number(t, query(t, tm.env.admin, "v1", map[string]any{"_name": "getOrganisation", "idOrName": "cert"}, step("users"), step("count"))); n != 1 {
		t.Errorf("the administrator's count of cert's users: %v", n)
	}
	// assignable users: the unlocked users of the record's organisation; another organisation's record is a 404
	tm.env.admin.Call(t, http.MethodPatch, "/api/user/reader", map[string]any{"locked": true}).Want(t, 200)
	au := query(t, tm.analyst, "v1", map[string]any{"_name": "getCase", "idOrName": cs[0].Str(t, "id")}, step("assignableUsers"),
		map[string]any{"_name": "sort", "_fields": []any{"login"}}).Want(t, 200).List(t)
	if len(au) != 2 || au[0].Str(t, "login") != "ana" || au[1].Str(t, "login") != "socadmin" {
		t.Errorf("assignableUsers %v", au)
	}
	query(t, tm.other, "v1", map[string]any{"_name": "getCase", "idOrName": cs[0].Str(t, "id")}, step("assignableUsers")).
		WantError(t, 404, "NotFoundError")
	query(t, tm.analyst, "v1", map[string]any{"_name": "getCase", "idOrName": cs[0].Str(t, "id")}, step("assignableUsers"), step("users")).
		WantError(t, 400, "BadRequest")

	// definitions
	tm.env.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "cf1", "type": "string"}).Want(t, 201)
	if l := query(t, tm.analyst, "v1", step("listCustomField")).Want(t, 200).List(t); len(l) != 1 || l[0].Str(t, "reference") == "" && l[0].Str(t, "name") == "" {
		t.Errorf("listCustomField %v", l)
	}
	if l := query(t, tm.analyst, "v1", step("listCaseTemplate")).Want(t, 200).List(t); len(l) != 1 || l[0].Str(t, "name") != "tpl" {
		t.Errorf("listCaseTemplate %v", l)
	}
	if l := query(t, tm.other, "v1", step("listCaseTemplate")).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("cert's templates %v", l)
	}
	if l := query(t, tm.analyst, "v1", step("listProfile")).Want(t, 200).List(t); len(l) != 4 {
		t.Errorf("listProfile %v", l)
	}
	if l := query(t, tm.analyst, "v1", step("listProfile"), map[string]any{"_name": "filter", "name": "analyst"}).Want(t, 200).List(t); len(l) != 1 ||
		l[0].Str(t, "name") != "analyst" {
		t.Errorf("listProfile filtered %v", l)
	}
	types := query(t, tm.analyst, "v1", step("listObservableType"), map[string]any{"_name": "page", "from": 0, "to": 100}).Want(t, 200).List(t)
	var file obj
	for _, o := range types {
		if o.Str(t, "name") == "file" {
			file = o
		}
	}
	if len(types) < 10 || file == nil || file["isAttachment"] != true {
		t.Errorf("listObservableType %v", types)
	}
	query(t, tm.analyst, "v1", step("listProfile"), map[string]any{"_name": "filter", "_like": map[string]any{"_field": "name", "_value": "a"}}).
		WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", step("listUser"), map[string]any{"_name": "filter", "password": "x"}).WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", step("listUser"), step("tasks")).WantError(t, 400, "BadRequest")
	query(t, tm.analyst, "v1", step("listUser"), step("count"), step("page")).WantError(t, 400, "BadRequest")
}

func TestUI_DescribeAndConfig(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	tm.env.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "business", "type": "string",
		"options": []string{"a", "b"}}).Want(t, 201)
	var v0, v1 map[string]struct {
		Label      string `json:"label"`
		Attributes []struct {
			Name   string            `json:"name"`
			Type   string            `json:"type"`
			Values []json.RawMessage `json:"values"`
		} `json:"attributes"`
	}
	tm.readOnly.Call(t, http.MethodGet, "/api/describe/_all", nil).Want(t, 200).Decode(t, &v0)
	tm.readOnly.Call(t, http.MethodGet, "/api/v1/describe/_all", nil).Want(t, 200).Decode(t, &v1)
	for _, m := range []string{"case", "case_task", "case_task_log", "alert", "case_artifact", "user", "caseTemplate"} {
		if v0[m].Label != m || len(v0[m].Attributes) == 0 {
			t.Errorf("v0 %s: %+v", m, v0[m])
		}
	}
	for _, m := range []string{"case", "task", "log", "alert", "observable", "user", "organisation", "profile", "customField"} {
		if v1[m].Label != m || len(v1[m].Attributes) == 0 {
			t.Errorf("v1 %s: %+v", m, v1[m])
		}
	}
	types := map[string]string{}
	var status, custom int
	for _, a := range v1["case"].Attributes {
		types[a.Name] = a.Type
		if a.Name == "status" {
			status = len(a.Values)
		}
		if a.Name == "customFields.business" {
			custom = len(a.Values)
		}
	}
	if types["title"] != "string" || types["severity"] != "number" || types["startDate"] != "date" || types["flag"] != "boolean" ||
		types["owner"] != "user" || types["status"] != "enumeration" || status != 3 || custom != 2 {
		t.Errorf("case attributes %v (status values %d, custom field values %d)", types, status, custom)
	}
	one := tm.readOnly.Call(t, http.MethodGet, "/api/v0/describe/case_task", nil).Want(t, 200).Object(t)
	if one.Str(t, "label") != "case_task" {
		t.Errorf("describe case_task %v", one)
	}
	tm.readOnly.Call(t, http.MethodGet, "/api/v1/describe/case_task", nil).WantError(t, 404, "NotFoundError")
	tm.readOnly.Call(t, http.MethodGet, "/api/describe/nope", nil).WantError(t, 404, "NotFoundError")

	// config: the list needs manageConfig; preferences answer their default
	items := tm.orgAdmin.Call(t, http.MethodGet, "/api/config", nil).Want(t, 200).List(t)
	if len(items) == 0 || items[0].Str(t, "path") == "" {
		t.Errorf("config %v", items)
	}
	tm.analyst.Call(t, http.MethodGet, "/api/config", nil).WantError(t, 403, "AuthorizationError")
	for _, p := range []string{"/api/config/user/ui.theme", "/api/v1/config/organisation/ui.hideEmptyCaseButton"} {
		it := tm.readOnly.Call(t, http.MethodGet, p, nil).Want(t, 200).Object(t)
		if it["value"] != "" || it["defaultValue"] != "" || it.Str(t, "path") == "" {
			t.Errorf("%s: %v", p, it)
		}
	}
	tm.readOnly.Call(t, http.MethodGet, "/api/config/user/%24where", nil).WantError(t, 400, "BadRequest")
	tm.anon().Call(t, http.MethodGet, "/api/describe/_all", nil).WantError(t, 401, "AuthenticationError")
}
