package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fullTemplate is a template with every field, made by the org-admin of soc.
func (tm *team) fullTemplate(t testing.TB, name string) obj {
	t.Helper()
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit", "type": "string",
		"options": []string{"HR", "IT"}}).Want(t, 201)
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "hits", "type": "integer"}).Want(t, 201)
	return tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{
		"name": name, "displayName": "Malware", "titlePrefix": "[MAL]", "description": "Template description",
		"severity": 3, "tlp": 3, "pap": 1, "tags": []string{"malware"}, "flag": true,
		"tasks": []map[string]any{
			{"order": 1, "title": "Contain", "group": "response", "description": "isolate"},
			{"order": 0, "title": "Identify", "group": "analysis"},
		},
		"customFields": map[string]any{"businessUnit": map[string]any{"string": "IT", "order": 1},
			"hits": map[string]any{"integer": nil, "order": 0}},
	}).Want(t, 201).Object(t)
}

func TestTemplates(t *testing.T) {
	tm := newTeam(t)
	tpl := tm.fullTemplate(t, "malware")
	id := tpl.Str(t, "id")

	t.Run("create", func(t *testing.T) {
		if !strings.HasPrefix(id, "~") || tpl.Str(t, "_id") != id || tpl.Str(t, "_type") != "caseTemplate" ||
			tpl.Str(t, "name") != "malware" || tpl.Str(t, "displayName") != "Malware" || tpl.Str(t, "titlePrefix") != "[MAL]" ||
			tpl.Num(t, "severity") != 3 || tpl.Num(t, "tlp") != 3 || tpl.Num(t, "pap") != 1 || tpl["flag"] != true ||
			tpl.Str(t, "status") != "Ok" || tpl.Str(t, "createdBy") != "socadmin" {
			t.Fatalf("template %v", tpl)
		}
		tpl.Null(t, "updatedAt")
		if len(tpl.Obj(t, "metrics")) != 0 || len(tpl["tasks"].([]any)) != 2 {
			t.Fatalf("template %v", tpl)
		}
		cf := tpl.Obj(t, "customFields")
		bu, hits := cf.Obj(t, "businessUnit"), cf.Obj(t, "hits")
		if bu.Str(t, "string") != "IT" || bu.Num(t, "order") != 1 || !strings.HasPrefix(bu.Str(t, "_id"), "~") {
			t.Fatalf("custom field %v", bu)
		}
		hits.Null(t, "integer")
		got := tm.readOnly.Call(t, http.MethodGet, "/api/case/template/"+id, nil).Want(t, 200).Object(t)
		if got.Str(t, "name") != "malware" || got.Obj(t, "customFields").Obj(t, "businessUnit").Str(t, "_id") != bu.Str(t, "_id") {
			t.Fatalf("read back %v", got)
		}
		tm.readOnly.Call(t, http.MethodGet, "/api/case/template/malware", nil).Want(t, 200)
	})

	t.Run("unique name", func(t *testing.T) {
		msg := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "malware"}).
			WantError(t, 400, "CreateError")
		if msg == "" {
			t.Fatal("no message")
		}
		// Names are unique per organisation.
		cert := tm.user(t, "certadmin", "cert", "org-admin")
		cert.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "malware"}).Want(t, 201)
		// A rename onto a taken name is refused too.
		tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing"}).Want(t, 201)
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/case/template/phishing", map[string]any{"name": "malware"}).
			WantError(t, 400, "CreateError")
		r := tm.orgAdmin.Call(t, http.MethodGet, "/api/case/template?sort=+name", nil).Want(t, 200)
		var names []string
		for _, x := range r.List(t) {
			names = append(names, x.Str(t, "name"))
		}
		if !slices.Equal(names, []string{"malware", "phishing"}) || r.Total(t) != "2" {
			t.Fatalf("soc templates %v", names)
		}
		r = tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template/_search", map[string]any{"query": map[string]any{"name": "phishing"}}).Want(t, 200)
		if len(r.List(t)) != 1 {
			t.Fatalf("search %s", r.Body)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"titlePrefix": "x"}, "name"},
			{map[string]any{"name": ""}, "name"},
			{map[string]any{"name": "a", "severity": 9}, "severity"},
			{map[string]any{"name": "a", "tasks": []map[string]any{{"group": "g"}}}, "tasks.title"},
			{map[string]any{"name": "a", "customFields": map[string]any{"nope": map[string]any{"string": "x"}}}, "customFields.nope"},
			{map[string]any{"name": "a", "customFields": map[string]any{"hits": map[string]any{"string": "x"}}}, "customFields.hits"},
			{map[string]any{"name": "a", "customFields": map[string]any{"businessUnit": map[string]any{"string": "Sales"}}}, "customFields.businessUnit"},
		} {
			r := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
	})

	t.Run("update", func(t *testing.T) {
		u := tm.orgAdmin.Call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"titlePrefix": "[M]",
			"severity": nil, "tasks": []map[string]any{{"title": "Only"}}}).Want(t, 200).Object(t)
		if u.Str(t, "titlePrefix") != "[M]" || u["severity"] != nil || len(u["tasks"].([]any)) != 1 ||
			u.Str(t, "name") != "malware" || u.Str(t, "updatedBy") != "socadmin" || u.Num(t, "tlp") != 3 {
			t.Fatalf("updated %v", u)
		}
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"tlp": 8}).
			WantError(t, 400, "AttributeCheckingError")
		got := tm.orgAdmin.Call(t, http.MethodGet, "/api/case/template/"+id, nil).Want(t, 200).Object(t)
		if got.Str(t, "titlePrefix") != "[M]" || got.Num(t, "tlp") != 3 {
			t.Fatalf("read back %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, r := range []*resp{
			tm.analyst.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "x"}),
			tm.analyst.Call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"name": "x"}),
			tm.analyst.Call(t, http.MethodDelete, "/api/case/template/"+id, nil),
		} {
			if msg := r.WantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "manageCaseTemplate") {
				t.Errorf("message %q", msg)
			}
		}
		tm.other.Call(t, http.MethodGet, "/api/case/template/"+id, nil).WantError(t, 404, "NotFoundError")
		certAdmin := tm.user(t, "certadmin2", "cert", "org-admin")
		certAdmin.Call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"name": "x"}).WantError(t, 404, "NotFoundError")
		certAdmin.Call(t, http.MethodDelete, "/api/case/template/"+id, nil).WantError(t, 404, "NotFoundError")
		if n := tm.other.Call(t, http.MethodGet, "/api/case/template", nil).Want(t, 200).List(t); len(n) != 1 {
			t.Fatalf("cert sees %d templates, want its own one", len(n))
		}
	})

	t.Run("delete", func(t *testing.T) {
		x := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "temp"}).Want(t, 201).Object(t)
		tm.orgAdmin.Call(t, http.MethodDelete, "/api/case/template/"+x.Str(t, "id"), nil).Want(t, 204)
		tm.orgAdmin.Call(t, http.MethodGet, "/api/case/template/"+x.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
		tm.orgAdmin.Call(t, http.MethodDelete, "/api/case/template/temp", nil).WantError(t, 404, "NotFoundError")
	})
}

func TestCase_FromTemplate(t *testing.T) {
	tm := newTeam(t)
	tpl := tm.fullTemplate(t, "malware")

	// By name: prefix, defaults, tags union, tasks and custom fields of the template.
	c := tm.analyst.newCase(t, map[string]any{"title": "Emotet", "template": "malware", "tags": []string{"emotet"}})
	if c.Str(t, "title") != "[MAL] Emotet" || c.Num(t, "severity") != 3 || c.Num(t, "tlp") != 3 || c.Num(t, "pap") != 1 ||
		c["flag"] != true || !slices.Equal(c.Strs(t, "tags"), []string{"emotet", "malware"}) {
		t.Fatalf("case from template %v", c)
	}
	cf := c.Obj(t, "customFields")
	if cf.Obj(t, "businessUnit").Str(t, "string") != "IT" || cf.Obj(t, "businessUnit").Num(t, "order") != 1 {
		t.Fatalf("custom fields %v", cf)
	}
	if _, ok := cf.Obj(t, "businessUnit")["_id"]; ok {
		t.Errorf("a case's custom field carries the template's _id")
	}
	cf.Obj(t, "hits").Null(t, "integer")
	tasks := tm.analyst.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id")+"/task?sort=+order", nil).Want(t, 200).List(t)
	if len(tasks) != 2 || tasks[0].Str(t, "title") != "Identify" || tasks[1].Str(t, "title") != "Contain" ||
		tasks[1].Str(t, "group") != "response" || tasks[1].Str(t, "description") != "isolate" {
		t.Fatalf("tasks %v", tasks)
	}

	// By id, with the caseTemplate key, input values winning, extra tasks after the template's, the template's
	// description when the request has none, and custom values for the template's fields without
	// manageCustomField.
	c = tm.analyst.newCase(t, map[string]any{"title": "Other", "description": "", "caseTemplate": tpl.Str(t, "id"),
		"severity": 1, "flag": false, "tasks": []map[string]any{{"title": "Extra"}},
		"customFields": map[string]any{"hits": map[string]any{"integer": 5}}})
	if c.Num(t, "severity") != 1 || c["flag"] != false || c.Str(t, "description") != "Template description" {
		t.Fatalf("overrides %v", c)
	}
	if c.Obj(t, "customFields").Obj(t, "hits").Num(t, "integer") != 5 {
		t.Fatalf("custom fields %v", c["customFields"])
	}
	tasks = tm.analyst.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id")+"/task?sort=+order", nil).Want(t, 200).List(t)
	if len(tasks) != 3 || tasks[2].Str(t, "title") != "Extra" {
		t.Fatalf("tasks %v", tasks)
	}

	// Another organisation's template is not found.
	tm.other.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d", "template": tpl.Str(t, "id")}).
		WantError(t, 400, "AttributeCheckingError")
}
