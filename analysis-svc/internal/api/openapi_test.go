package api_test

// The OpenAPI document (openapi.yaml, docs/openapi.md): it is a valid 3.1 document, it names exactly the
// routes the router serves, it is served without credentials, and every response the API tests receive
// through the harness's clients matches it (openapiTransport).

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/pkg/openapi"
)

// openapiValidator is the document's validator, loaded once for the package's tests.
var openapiValidator = sync.OnceValues(func() (*openapi.Validator, error) {
	doc, err := api.OpenAPI()
	if err != nil {
		return nil, err
	}
	return doc.NewValidator()
})

// openapiTransport is the harness clients' transport: a response the document does not declare fails t.
func openapiTransport(t testing.TB) http.RoundTripper {
	v, err := openapiValidator()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return v.Transport(nil, t.Errorf)
}

func TestOpenAPI_DocumentIsValid(t *testing.T) {
	if _, err := api.OpenAPI(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAPI_CoversEveryRoute(t *testing.T) {
	e := newEnv(t)
	doc, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var routes []openapi.Route
	for _, r := range e.echo.Routes() {
		routes = append(routes, openapi.Route{Method: r.Method, Path: r.Path})
	}
	if err := doc.Coverage(routes, "analysis-svc/internal/api/openapi.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAPI_ServedWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	r := e.anon().call(t, http.MethodGet, "/api/openapi.json", nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil || got["openapi"] != "3.1.0" {
		t.Fatalf("not the 3.1 document (%v): %.200s", err, r.body)
	}
	if _, ok := got["paths"].(map[string]any)["/api/job/{id}/waitreport"]; !ok {
		t.Fatal("the served document lacks /api/job/{id}/waitreport")
	}
}
