package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestCustomFields_Definitions(t *testing.T) {
	tm := newTeam(t)
	f := tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit",
		"displayName": "Business unit", "description": "Who is hit", "type": "string", "options": []string{"HR", "IT", "HR"},
		"mandatory": false}).want(t, 201).object(t)
	id := f.str(t, "id")
	if !strings.HasPrefix(id, "~") || f.str(t, "_type") != "customField" || f.str(t, "name") != "businessUnit" ||
		f.str(t, "reference") != "businessUnit" || f.str(t, "displayName") != "Business unit" || f.str(t, "type") != "string" ||
		!slices.Equal(f.strs(t, "options"), []string{"HR", "IT"}) || f["mandatory"] != false || f.str(t, "createdBy") != adminLogin {
		t.Fatalf("definition %v", f)
	}
	// reference is accepted as the name; the admin may define fields too.
	g := tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"reference": "score", "type": "float"}).
		want(t, 201).object(t)
	if g.str(t, "name") != "score" || g.str(t, "displayName") != "score" || len(g["options"].([]any)) != 0 {
		t.Fatalf("definition %v", g)
	}

	// Everyone reads, by id or name; lists have X-Total.
	tm.readOnly.call(t, http.MethodGet, "/api/customField/"+id, nil).want(t, 200)
	tm.other.call(t, http.MethodGet, "/api/customField/businessUnit", nil).want(t, 200)
	r := tm.readOnly.call(t, http.MethodGet, "/api/customField?sort=+name", nil).want(t, 200)
	if l := r.list(t); len(l) != 2 || l[0].str(t, "name") != "businessUnit" || r.total(t) != "2" {
		t.Fatalf("list %s", r.body)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/customFields/_search", map[string]any{"query": map[string]any{"type": "float"}}).want(t, 200)
	if l := r.list(t); len(l) != 1 || l[0].str(t, "name") != "score" {
		t.Fatalf("search %s", r.body)
	}
	tm.readOnly.call(t, http.MethodGet, "/api/customField/nope", nil).wantError(t, 404, "NotFoundError")

	// Refusals.
	tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit", "type": "string"}).
		wantError(t, 400, "CreateError")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"type": "string"}, "name"},
		{map[string]any{"name": "has space", "type": "string"}, "name"},
		{map[string]any{"name": "x", "type": "text"}, "type"},
		{map[string]any{"name": "x"}, "type"},
		{map[string]any{"name": "x", "type": "integer", "options": []any{1, "two"}}, "options"},
		{map[string]any{"name": "x", "type": "integer", "options": []any{1.5}}, "options"},
		{map[string]any{"name": "x", "type": "boolean", "mandatory": "maybe"}, "mandatory"},
	} {
		r := tm.admin.call(t, http.MethodPost, "/api/customField", tc.body)
		r.wantError(t, 400, "AttributeCheckingError")
		if got := r.fieldErrors(t); !slices.Contains(got, tc.field) {
			t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
		}
	}
	for _, r := range []*resp{
		tm.analyst.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "x", "type": "string"}),
		tm.analyst.call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"description": "x"}),
		tm.analyst.call(t, http.MethodDelete, "/api/customField/"+id, nil),
	} {
		if msg := r.wantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "manageCustomField") {
			t.Errorf("message %q", msg)
		}
	}

	// Update: everything but the name and type.
	u := tm.admin.call(t, http.MethodPatch, "/api/customField/businessUnit", map[string]any{"displayName": "BU",
		"options": []string{"HR", "IT", "Sales"}, "mandatory": true}).want(t, 200).object(t)
	if u.str(t, "displayName") != "BU" || len(u.strs(t, "options")) != 3 || u["mandatory"] != true || u.str(t, "updatedBy") != adminLogin {
		t.Fatalf("updated %v", u)
	}
	tm.admin.call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"type": "integer"}).
		wantError(t, 400, "AttributeCheckingError")
	tm.admin.call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"options": []any{1}}).
		wantError(t, 400, "AttributeCheckingError")

	// Delete.
	tm.admin.call(t, http.MethodDelete, "/api/customField/score", nil).want(t, 204)
	tm.admin.call(t, http.MethodGet, "/api/customField/score", nil).wantError(t, 404, "NotFoundError")
	tm.admin.call(t, http.MethodDelete, "/api/customField/score", nil).wantError(t, 404, "NotFoundError")
}

func TestCustomFields_OnCases(t *testing.T) {
	tm := newTeam(t)
	for _, d := range []map[string]any{
		{"name": "s", "type": "string", "options": []string{"a", "b"}},
		{"name": "i", "type": "integer"},
		{"name": "f", "type": "float"},
		{"name": "b", "type": "boolean"},
		{"name": "d", "type": "date"},
		{"name": "free", "type": "string"},
	} {
		tm.admin.call(t, http.MethodPost, "/api/customField", d).want(t, 201)
	}

	t.Run("typed values", func(t *testing.T) {
		c := tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{
			"s": map[string]any{"string": "a", "order": 4}, "i": map[string]any{"integer": 42}, "f": map[string]any{"float": 1.5},
			"b": map[string]any{"boolean": true}, "d": map[string]any{"date": 1700000000000}, "free": "bare value",
		}})
		cf := c.obj(t, "customFields")
		if cf.obj(t, "s").str(t, "string") != "a" || cf.obj(t, "s").num(t, "order") != 4 || cf.obj(t, "i").num(t, "integer") != 42 ||
			cf.obj(t, "f").num(t, "float") != 1.5 || cf.obj(t, "b")["boolean"] != true || cf.obj(t, "d").num(t, "date") != 1700000000000 ||
			cf.obj(t, "free").str(t, "string") != "bare value" {
			t.Fatalf("custom fields %v", cf)
		}
		// Fields without an order get the next ones, by name.
		orders := map[string]float64{}
		for name := range cf {
			orders[name] = cf.obj(t, name).num(t, "order")
		}
		if orders["b"] != 5 || orders["d"] != 6 || orders["f"] != 7 || orders["free"] != 8 || orders["i"] != 9 {
			t.Fatalf("orders %v", orders)
		}
		got := tm.readOnly.call(t, http.MethodGet, "/api/case/"+c.str(t, "id"), nil).want(t, 200).object(t)
		if got.obj(t, "customFields").obj(t, "i").num(t, "integer") != 42 {
			t.Fatalf("read back %v", got["customFields"])
		}
		// An integral float is fine for an integer field; null is a value-less field.
		c = tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 3.0}, "f": map[string]any{"float": nil}}})
		if c.obj(t, "customFields").obj(t, "i").num(t, "integer") != 3 {
			t.Fatalf("integral float %v", c["customFields"])
		}
		c.obj(t, "customFields").obj(t, "f").null(t, "float")
	})

	t.Run("invalid values", func(t *testing.T) {
		for _, tc := range []struct {
			cf    any
			field string
		}{
			{map[string]any{"nope": map[string]any{"string": "x"}}, "customFields.nope"},
			{map[string]any{"i": map[string]any{"string": "x"}}, "customFields.i"},
			{map[string]any{"i": map[string]any{"integer": "42"}}, "customFields.i"},
			{map[string]any{"i": map[string]any{"integer": 4.5}}, "customFields.i"},
			{map[string]any{"b": map[string]any{"boolean": 1}}, "customFields.b"},
			{map[string]any{"d": map[string]any{"date": "yesterday"}}, "customFields.d"},
			{map[string]any{"s": map[string]any{"string": "c"}}, "customFields.s"},
			{map[string]any{"s": map[string]any{"text": "a"}}, "customFields.s"},
			{map[string]any{"s": map[string]any{"string": "a", "integer": 1}}, "customFields.s"},
			{map[string]any{"s": map[string]any{"string": "a", "order": "first"}}, "customFields.s.order"},
			{map[string]any{"s": []string{"a"}}, "customFields.s"},
			{"not an object", "customFields"},
		} {
			r := tm.orgAdmin.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d", "customFields": tc.cf})
			r.wantError(t, 400, "AttributeCheckingError")
			if got := r.fieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.cf, got, tc.field)
			}
		}
	})

	t.Run("permission", func(t *testing.T) {
		msg := tm.analyst.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d",
			"customFields": map[string]any{"i": map[string]any{"integer": 1}}}).wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCustomField") {
			t.Errorf("message %q", msg)
		}
		// On update: a value for a field the case has needs manageCase only; a new field needs manageCustomField.
		c := tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 1}}})
		path := "/api/case/" + c.str(t, "id")
		u := tm.analyst.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 2}}}).
			want(t, 200).object(t)
		if i := u.obj(t, "customFields").obj(t, "i"); i.num(t, "integer") != 2 || i.num(t, "order") != 0 {
			t.Fatalf("updated value %v", i)
		}
		tm.analyst.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{
			"i": map[string]any{"integer": 2}, "b": map[string]any{"boolean": true}}}).wantError(t, 403, "AuthorizationError")
		// customFields replace the case's: the org-admin adds one and drops another.
		u = tm.orgAdmin.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"b": map[string]any{"boolean": false}}}).
			want(t, 200).object(t)
		if cf := u.obj(t, "customFields"); len(cf) != 1 || cf.obj(t, "b")["boolean"] != false {
			t.Fatalf("replaced %v", cf)
		}
		tm.orgAdmin.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"b": map[string]any{"boolean": "no"}}}).
			wantError(t, 400, "AttributeCheckingError")
	})

	t.Run("mandatory", func(t *testing.T) {
		tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "ticket", "type": "string", "mandatory": true}).
			want(t, 201)
		r := tm.orgAdmin.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"})
		r.wantError(t, 400, "AttributeCheckingError")
		if got := r.fieldErrors(t); !slices.Equal(got, []string{"customFields.ticket"}) {
			t.Fatalf("fields %v", got)
		}
		tm.orgAdmin.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d",
			"customFields": map[string]any{"ticket": map[string]any{"string": nil}}}).wantError(t, 400, "AttributeCheckingError")
		// A mandatory field is every case's business: an analyst may give it without manageCustomField.
		c := tm.analyst.newCase(t, map[string]any{"customFields": map[string]any{"ticket": map[string]any{"string": "INC-1"}}})
		path := "/api/case/" + c.str(t, "id")
		// ...and no one may clear or drop it.
		tm.analyst.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"ticket": map[string]any{"string": nil}}}).
			wantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{}}).
			wantError(t, 400, "AttributeCheckingError")
		tm.analyst.call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"ticket": "INC-2"}}).want(t, 200)
		// Updates that leave customFields alone are fine on cases made before the field was mandatory.
		tm.orgAdmin.call(t, http.MethodPatch, path, map[string]any{"title": "x"}).want(t, 200)
	})
}
