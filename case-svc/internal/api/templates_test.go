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
	tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit", "type": "string",
		"options": []string{"HR", "IT"}}).want(t, 201)
	tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "hits", "type": "integer"}).want(t, 201)
	return tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", map[string]any{
		"name": name, "displayName": "Malware", "titlePrefix": "[MAL]", "description": "Template description",
		"severity": 3, "tlp": 3, "pap": 1, "tags": []string{"malware"}, "flag": true,
		"tasks": []map[string]any{
			{"order": 1, "title": "Contain", "group": "response", "description": "isolate"},
			{"order": 0, "title": "Identify", "group": "analysis"},
		},
		"customFields": map[string]any{"businessUnit": map[string]any{"string": "IT", "order": 1},
			"hits": map[string]any{"integer": nil, "order": 0}},
	}).want(t, 201).object(t)
}

func TestTemplates(t *testing.T) {
	tm := newTeam(t)
	tpl := tm.fullTemplate(t, "malware")
	id := tpl.str(t, "id")

	t.Run("create", func(t *testing.T) {
		if !strings.HasPrefix(id, "~") || tpl.str(t, "_id") != id || tpl.str(t, "_type") != "caseTemplate" ||
			tpl.str(t, "name") != "malware" || tpl.str(t, "displayName") != "Malware" || tpl.str(t, "titlePrefix") != "[MAL]" ||
			tpl.num(t, "severity") != 3 || tpl.num(t, "tlp") != 3 || tpl.num(t, "pap") != 1 || tpl["flag"] != true ||
			tpl.str(t, "status") != "Ok" || tpl.str(t, "createdBy") != "socadmin" {
			t.Fatalf("template %v", tpl)
		}
		tpl.null(t, "updatedAt")
		if len(tpl.obj(t, "metrics")) != 0 || len(tpl["tasks"].([]any)) != 2 {
			t.Fatalf("template %v", tpl)
		}
		cf := tpl.obj(t, "customFields")
		bu, hits := cf.obj(t, "businessUnit"), cf.obj(t, "hits")
		if bu.str(t, "string") != "IT" || bu.num(t, "order") != 1 || !strings.HasPrefix(bu.str(t, "_id"), "~") {
			t.Fatalf("custom field %v", bu)
		}
		hits.null(t, "integer")
		got := tm.readOnly.call(t, http.MethodGet, "/api/case/template/"+id, nil).want(t, 200).object(t)
		if got.str(t, "name") != "malware" || got.obj(t, "customFields").obj(t, "businessUnit").str(t, "_id") != bu.str(t, "_id") {
			t.Fatalf("read back %v", got)
		}
		tm.readOnly.call(t, http.MethodGet, "/api/case/template/malware", nil).want(t, 200)
	})

	t.Run("unique name", func(t *testing.T) {
		msg := tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "malware"}).
			wantError(t, 400, "CreateError")
		if msg == "" {
			t.Fatal("no message")
		}
		// Names are unique per organisation.
		cert := tm.user(t, "certadmin", "cert", "org-admin")
		cert.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "malware"}).want(t, 201)
		// A rename onto a taken name is refused too.
		tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing"}).want(t, 201)
		tm.orgAdmin.call(t, http.MethodPatch, "/api/case/template/phishing", map[string]any{"name": "malware"}).
			wantError(t, 400, "CreateError")
		r := tm.orgAdmin.call(t, http.MethodGet, "/api/case/template?sort=+name", nil).want(t, 200)
		var names []string
		for _, x := range r.list(t) {
			names = append(names, x.str(t, "name"))
		}
		if !slices.Equal(names, []string{"malware", "phishing"}) || r.total(t) != "2" {
			t.Fatalf("soc templates %v", names)
		}
		r = tm.orgAdmin.call(t, http.MethodPost, "/api/case/template/_search", map[string]any{"query": map[string]any{"name": "phishing"}}).want(t, 200)
		if len(r.list(t)) != 1 {
			t.Fatalf("search %s", r.body)
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
			r := tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", tc.body)
			r.wantError(t, 400, "AttributeCheckingError")
			if got := r.fieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
	})

	t.Run("update", func(t *testing.T) {
		u := tm.orgAdmin.call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"titlePrefix": "[M]",
			"severity": nil, "tasks": []map[string]any{{"title": "Only"}}}).want(t, 200).object(t)
		if u.str(t, "titlePrefix") != "[M]" || u["severity"] != nil || len(u["tasks"].([]any)) != 1 ||
			u.str(t, "name") != "malware" || u.str(t, "updatedBy") != "socadmin" || u.num(t, "tlp") != 3 {
			t.Fatalf("updated %v", u)
		}
		tm.orgAdmin.call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"tlp": 8}).
			wantError(t, 400, "AttributeCheckingError")
		got := tm.orgAdmin.call(t, http.MethodGet, "/api/case/template/"+id, nil).want(t, 200).object(t)
		if got.str(t, "titlePrefix") != "[M]" || got.num(t, "tlp") != 3 {
			t.Fatalf("read back %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, r := range []*resp{
			tm.analyst.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "x"}),
			tm.analyst.call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"name": "x"}),
			tm.analyst.call(t, http.MethodDelete, "/api/case/template/"+id, nil),
		} {
			if msg := r.wantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "manageCaseTemplate") {
				t.Errorf("message %q", msg)
			}
		}
		tm.other.call(t, http.MethodGet, "/api/case/template/"+id, nil).wantError(t, 404, "NotFoundError")
		certAdmin := tm.user(t, "certadmin2", "cert", "org-admin")
		certAdmin.call(t, http.MethodPatch, "/api/case/template/"+id, map[string]any{"name": "x"}).wantError(t, 404, "NotFoundError")
		certAdmin.call(t, http.MethodDelete, "/api/case/template/"+id, nil).wantError(t, 404, "NotFoundError")
		if n := tm.other.call(t, http.MethodGet, "/api/case/template", nil).want(t, 200).list(t); len(n) != 1 {
			t.Fatalf("cert sees %d templates, want its own one", len(n))
		}
	})

	t.Run("delete", func(t *testing.T) {
		x := tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "temp"}).want(t, 201).object(t)
		tm.orgAdmin.call(t, http.MethodDelete, "/api/case/template/"+x.str(t, "id"), nil).want(t, 204)
		tm.orgAdmin.call(t, http.MethodGet, "/api/case/template/"+x.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
		tm.orgAdmin.call(t, http.MethodDelete, "/api/case/template/temp", nil).wantError(t, 404, "NotFoundError")
	})
}

func TestCase_FromTemplate(t *testing.T) {
	tm := newTeam(t)
	tpl := tm.fullTemplate(t, "malware")

	// By name: prefix, defaults, tags union, tasks and custom fields of the template.
	c := tm.analyst.newCase(t, map[string]any{"title": "Emotet", "template": "malware", "tags": []string{"emotet"}})
	if c.str(t, "title") != "[MAL] Emotet" || c.num(t, "severity") != 3 || c.num(t, "tlp") != 3 || c.num(t, "pap") != 1 ||
		c["flag"] != true || !slices.Equal(c.strs(t, "tags"), []string{"emotet", "malware"}) {
		t.Fatalf("case from template %v", c)
	}
	cf := c.obj(t, "customFields")
	if cf.obj(t, "businessUnit").str(t, "string") != "IT" || cf.obj(t, "businessUnit").num(t, "order") != 1 {
		t.Fatalf("custom fields %v", cf)
	}
	if _, ok := cf.obj(t, "businessUnit")["_id"]; ok {
		t.Errorf("a case's custom field carries the template's _id")
	}
	cf.obj(t, "hits").null(t, "integer")
	tasks := tm.analyst.call(t, http.MethodGet, "/api/case/"+c.str(t, "id")+"/task?sort=+order", nil).want(t, 200).list(t)
	if len(tasks) != 2 || tasks[0].str(t, "title") != "Identify" || tasks[1].str(t, "title") != "Contain" ||
		tasks[1].str(t, "group") != "response" || tasks[1].str(t, "description") != "isolate" {
		t.Fatalf("tasks %v", tasks)
	}

	// By id, with the caseTemplate key, input values winning, extra tasks after the template's, the template's
	// description when the request has none, and custom values for the template's fields without
	// manageCustomField.
	c = tm.analyst.newCase(t, map[string]any{"title": "Other", "description": "", "caseTemplate": tpl.str(t, "id"),
		"severity": 1, "flag": false, "tasks": []map[string]any{{"title": "Extra"}},
		"customFields": map[string]any{"hits": map[string]any{"integer": 5}}})
	if c.num(t, "severity") != 1 || c["flag"] != false || c.str(t, "description") != "Template description" {
		t.Fatalf("overrides %v", c)
	}
	if c.obj(t, "customFields").obj(t, "hits").num(t, "integer") != 5 {
		t.Fatalf("custom fields %v", c["customFields"])
	}
	tasks = tm.analyst.call(t, http.MethodGet, "/api/case/"+c.str(t, "id")+"/task?sort=+order", nil).want(t, 200).list(t)
	if len(tasks) != 3 || tasks[2].str(t, "title") != "Extra" {
		t.Fatalf("tasks %v", tasks)
	}

	// Another organisation's template is not found.
	tm.other.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d", "template": tpl.str(t, "id")}).
		wantError(t, 400, "AttributeCheckingError")
}
