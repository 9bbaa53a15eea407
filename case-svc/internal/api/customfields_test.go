package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestCustomFields_Definitions(t *testing.T) {
	tm := newTeam(t)
	f := tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit",
		"displayName": "Business unit", "description": "Who is hit", "type": "string", "options": []string{"HR", "IT", "HR"},
		"mandatory": false}).Want(t, 201).Object(t)
	id := f.Str(t, "id")
	if !strings.HasPrefix(id, "~") || f.Str(t, "_type") != "customField" || f.Str(t, "name") != "businessUnit" ||
		f.Str(t, "reference") != "businessUnit" || f.Str(t, "displayName") != "Business unit" || f.Str(t, "type") != "string" ||
		!slices.Equal(f.Strs(t, "options"), []string{"HR", "IT"}) || f["mandatory"] != false || f.Str(t, "createdBy") != adminLogin {
		t.Fatalf("definition %v", f)
	}
	// reference is accepted as the name; the admin may define fields too.
	g := tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"reference": "score", "type": "float"}).
		Want(t, 201).Object(t)
	if g.Str(t, "name") != "score" || g.Str(t, "displayName") != "score" || len(g["options"].([]any)) != 0 {
		t.Fatalf("definition %v", g)
	}

	// Everyone reads, by id or name; lists have X-Total.
	tm.readOnly.Call(t, http.MethodGet, "/api/customField/"+id, nil).Want(t, 200)
	tm.other.Call(t, http.MethodGet, "/api/customField/businessUnit", nil).Want(t, 200)
	r := tm.readOnly.Call(t, http.MethodGet, "/api/customField?sort=+name", nil).Want(t, 200)
	if l := r.List(t); len(l) != 2 || l[0].Str(t, "name") != "businessUnit" || r.Total(t) != "2" {
		t.Fatalf("list %s", r.Body)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/customFields/_search", map[string]any{"query": map[string]any{"type": "float"}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "name") != "score" {
		t.Fatalf("search %s", r.Body)
	}
	tm.readOnly.Call(t, http.MethodGet, "/api/customField/nope", nil).WantError(t, 404, "NotFoundError")

	// Refusals.
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "businessUnit", "type": "string"}).
		WantError(t, 400, "CreateError")
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
		r := tm.admin.Call(t, http.MethodPost, "/api/customField", tc.body)
		r.WantError(t, 400, "AttributeCheckingError")
		if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
			t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
		}
	}
	for _, r := range []*resp{
		tm.analyst.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "x", "type": "string"}),
		tm.analyst.Call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"description": "x"}),
		tm.analyst.Call(t, http.MethodDelete, "/api/customField/"+id, nil),
	} {
		if msg := r.WantError(t, 403, "AuthorizationError"); !strings.Contains(msg, "manageCustomField") {
			t.Errorf("message %q", msg)
		}
	}

	// Update: everything but the name and type.
	u := tm.admin.Call(t, http.MethodPatch, "/api/customField/businessUnit", map[string]any{"displayName": "BU",
		"options": []string{"HR", "IT", "Sales"}, "mandatory": true}).Want(t, 200).Object(t)
	if u.Str(t, "displayName") != "BU" || len(u.Strs(t, "options")) != 3 || u["mandatory"] != true || u.Str(t, "updatedBy") != adminLogin {
		t.Fatalf("updated %v", u)
	}
	tm.admin.Call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"type": "integer"}).
		WantError(t, 400, "AttributeCheckingError")
	tm.admin.Call(t, http.MethodPatch, "/api/customField/"+id, map[string]any{"options": []any{1}}).
		WantError(t, 400, "AttributeCheckingError")

	// Delete.
	tm.admin.Call(t, http.MethodDelete, "/api/customField/score", nil).Want(t, 204)
	tm.admin.Call(t, http.MethodGet, "/api/customField/score", nil).WantError(t, 404, "NotFoundError")
	tm.admin.Call(t, http.MethodDelete, "/api/customField/score", nil).WantError(t, 404, "NotFoundError")
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
		tm.admin.Call(t, http.MethodPost, "/api/customField", d).Want(t, 201)
	}

	t.Run("typed values", func(t *testing.T) {
		c := tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{
			"s": map[string]any{"string": "a", "order": 4}, "i": map[string]any{"integer": 42}, "f": map[string]any{"float": 1.5},
			"b": map[string]any{"boolean": true}, "d": map[string]any{"date": 1700000000000}, "free": "bare value",
		}})
		cf := c.Obj(t, "customFields")
		if cf.Obj(t, "s").Str(t, "string") != "a" || cf.Obj(t, "s").Num(t, "order") != 4 || cf.Obj(t, "i").Num(t, "integer") != 42 ||
			cf.Obj(t, "f").Num(t, "float") != 1.5 || cf.Obj(t, "b")["boolean"] != true || cf.Obj(t, "d").Num(t, "date") != 1700000000000 ||
			cf.Obj(t, "free").Str(t, "string") != "bare value" {
			t.Fatalf("custom fields %v", cf)
		}
		// Fields without an order get the next ones, by name.
		orders := map[string]float64{}
		for name := range cf {
			orders[name] = cf.Obj(t, name).Num(t, "order")
		}
		if orders["b"] != 5 || orders["d"] != 6 || orders["f"] != 7 || orders["free"] != 8 || orders["i"] != 9 {
			t.Fatalf("orders %v", orders)
		}
		got := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id"), nil).Want(t, 200).Object(t)
		if got.Obj(t, "customFields").Obj(t, "i").Num(t, "integer") != 42 {
			t.Fatalf("read back %v", got["customFields"])
		}
		// An integral float is fine for an integer field; null is a value-less field.
		c = tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 3.0}, "f": map[string]any{"float": nil}}})
		if c.Obj(t, "customFields").Obj(t, "i").Num(t, "integer") != 3 {
			t.Fatalf("integral float %v", c["customFields"])
		}
		c.Obj(t, "customFields").Obj(t, "f").Null(t, "float")
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
			r := tm.orgAdmin.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d", "customFields": tc.cf})
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.cf, got, tc.field)
			}
		}
	})

	t.Run("permission", func(t *testing.T) {
		msg := tm.analyst.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d",
			"customFields": map[string]any{"i": map[string]any{"integer": 1}}}).WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCustomField") {
			t.Errorf("message %q", msg)
		}
		// On update: a value for a field the case has needs manageCase only; a new field needs manageCustomField.
		c := tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 1}}})
		path := "/api/case/" + c.Str(t, "id")
		u := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"i": map[string]any{"integer": 2}}}).
			Want(t, 200).Object(t)
		if i := u.Obj(t, "customFields").Obj(t, "i"); i.Num(t, "integer") != 2 || i.Num(t, "order") != 0 {
			t.Fatalf("updated value %v", i)
		}
		tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{
			"i": map[string]any{"integer": 2}, "b": map[string]any{"boolean": true}}}).WantError(t, 403, "AuthorizationError")
		// customFields replace the case's: the org-admin adds one and drops another.
		u = tm.orgAdmin.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"b": map[string]any{"boolean": false}}}).
			Want(t, 200).Object(t)
		if cf := u.Obj(t, "customFields"); len(cf) != 1 || cf.Obj(t, "b")["boolean"] != false {
			t.Fatalf("replaced %v", cf)
		}
		tm.orgAdmin.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"b": map[string]any{"boolean": "no"}}}).
			WantError(t, 400, "AttributeCheckingError")
	})

	t.Run("mandatory", func(t *testing.T) {
		tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "ticket", "type": "string", "mandatory": true}).
			Want(t, 201)
		r := tm.orgAdmin.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"})
		r.WantError(t, 400, "AttributeCheckingError")
		if got := r.FieldErrors(t); !slices.Equal(got, []string{"customFields.ticket"}) {
			t.Fatalf("fields %v", got)
		}
		tm.orgAdmin.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d",
			"customFields": map[string]any{"ticket": map[string]any{"string": nil}}}).WantError(t, 400, "AttributeCheckingError")
		// A mandatory field is every case's business: an analyst may give it without manageCustomField.
		c := tm.analyst.newCase(t, map[string]any{"customFields": map[string]any{"ticket": map[string]any{"string": "INC-1"}}})
		path := "/api/case/" + c.Str(t, "id")
		// ...and no one may clear or drop it.
		tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"ticket": map[string]any{"string": nil}}}).
			WantError(t, 400, "AttributeCheckingError")
		tm.orgAdmin.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{}}).
			WantError(t, 400, "AttributeCheckingError")
		tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"customFields": map[string]any{"ticket": "INC-2"}}).Want(t, 200)
		// Updates that leave customFields alone are fine on cases made before the field was mandatory.
		tm.orgAdmin.Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).Want(t, 200)
	})
}
