package openapi

import (
	"strings"
	"testing"
)

const testDoc = `
openapi: 3.1.0
info: {title: t, version: "1"}
x-anchors:
  errors: &errors
    4XX: {$ref: "#/components/responses/Error"}
paths:
  /api/thing/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        <<: *errors
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Thing"}}}}
  /api/thing/_search:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: array}}}}
components:
  schemas:
    Thing: {type: object, required: [id], properties: {id: {type: string}}}
`

func load(t *testing.T, doc string) *Doc {
	t.Helper()
	d, err := Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLoad_RefusesABrokenDocument(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"version":          {"openapi: 3.1.0", "openapi: 3.0.3", "want 3.1.x"},
		"unresolved ref":   {`$ref: "#/components/schemas/Thing"`, `$ref: "#/components/schemas/Nothing"`, "does not resolve"},
		"undeclared param": {"parameters: [{name: id,", "parameters: [{name: other,", "path parameter {id} is not declared"},
		"shared name":      {"Thing: {type", "Error: {type", `components.schemas "Error" is defined`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]byte(strings.Replace(testDoc, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCoverage_NamesWhatToAddAndRemove(t *testing.T) {
	d := load(t, testDoc)
	shared := []Route{{"GET", "/api/openapi.json"}, {"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"}}
	ok := append([]Route{{"GET", "/api/thing/:id"}, {"GET", "/api/thing/_search"}, {"echo_route_any", "/*"}}, shared...)
	if err := d.Coverage(ok, "x.yaml"); err != nil {
		t.Fatal(err)
	}
	err := d.Coverage(append([]Route{{"GET", "/api/thing/:id"}, {"PATCH", "/api/thing/:id"}}, shared...), "x.yaml")
	if err == nil {
		t.Fatal("no error for a missing and an extra route")
	}
	for _, want := range []string{
		"PATCH /api/thing/:id is registered but not in x.yaml: add under paths:\n    /api/thing/{id}:\n      patch:",
		"x.yaml names GET /api/thing/_search, which no route serves",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
}

func TestValidator_Check(t *testing.T) {
	v, err := load(t, testDoc).NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	js := "application/json; charset=UTF-8"
	for _, tc := range []struct {
		method, path string
		status       int
		ct, body     string
		want         string // "" = valid
	}{
		{"GET", "/api/thing/a%2Fb", 200, js, `{"id":"x"}`, ""},
		{"GET", "/api/thing/_search", 200, js, `[]`, ""}, // the static segment wins over {id}
		{"GET", "/api/thing/x", 404, js, `{"type":"NotFoundError","message":"thing not found"}`, ""},
		{"GET", "/api/nothing", 404, js, `{"type":"NotFoundError","message":"x"}`, ""},
		{"GET", "/api/thing/x", 200, js, `{"name":"x"}`, "does not match the document"},
		{"GET", "/api/thing/x", 201, js, `{"id":"x"}`, "a status its responses do not declare"},
		{"GET", "/api/thing/x", 400, js, `{"kind":"x"}`, "does not match"},
		{"GET", "/api/thing/x", 200, "text/html", `<p>`, "a media type the document does not declare"},
		{"POST", "/api/thing/x", 200, js, `{}`, "no operation"},
	} {
		err := v.Check(tc.method, tc.path, tc.status, tc.ct, []byte(tc.body))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %s %d %s: %v, want %q", tc.method, tc.path, tc.status, tc.body, err, tc.want)
		}
	}
}
