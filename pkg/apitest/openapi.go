package apitest

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/openir/platform/pkg/openapi"
)

// OpenAPI is a service's OpenAPI document for its tests: a validator made once, the clients' transport, and
// the document's tests.
type OpenAPI struct {
	load      func() (*openapi.Doc, error)
	validator func() (*openapi.Validator, error)
}

// NewOpenAPI returns the document load gives (the service's api.OpenAPI).
func NewOpenAPI(load func() (*openapi.Doc, error)) *OpenAPI {
	return &OpenAPI{load: load, validator: sync.OnceValues(func() (*openapi.Validator, error) {
		doc, err := load()
		if err != nil {
			return nil, err
		}
		return doc.NewValidator()
	})}
}

// Transport is the clients' transport: a response the document does not declare fails t.
func (o *OpenAPI) Transport(t testing.TB) http.RoundTripper {
	v, err := o.validator()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return v.Transport(nil, t.Errorf)
}

// Valid fails unless the document loads (a valid 3.1 document).
func (o *OpenAPI) Valid(t *testing.T) {
	if _, err := o.load(); err != nil {
		t.Fatal(err)
	}
}

// CoversEveryRoute fails unless the document names exactly the routes the router serves; file is the
// document's path in the repository, for the message.
func (o *OpenAPI) CoversEveryRoute(t *testing.T, routes []openapi.Route, file string) {
	doc, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Coverage(routes, file); err != nil {
		t.Fatal(err)
	}
}

// ServedWithoutCredentials fails unless anon gets the 3.1 document at /api/openapi.json, with the path
// wantPath among its paths.
func (o *OpenAPI) ServedWithoutCredentials(t *testing.T, anon *Client, wantPath string) {
	r := anon.Call(t, http.MethodGet, "/api/openapi.json", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Body, &got); err != nil || got["openapi"] != "3.1.0" {
		t.Fatalf("not the 3.1 document (%v): %.200s", err, r.Body)
	}
	if _, ok := got["paths"].(map[string]any)[wantPath]; !ok {
		t.Fatalf("the served document lacks %s", wantPath)
	}
}
