package api_test

// The OpenAPI document (openapi.yaml, docs/openapi.md): it is a valid 3.1 document, it names exactly the
// routes the router serves, it is served without credentials, and every response the API tests receive
// through the harness's clients matches it (openapiTransport). The tests' bodies are pkg/apitest's.

import (
	"net/http"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/pkg/apitest"
	"github.com/openir/platform/pkg/openapi"
)

// openapiDoc is the service's document, its validator made once for the package's tests.
var openapiDoc = apitest.NewOpenAPI(api.OpenAPI)

// openapiTransport is the harness clients' transport: a response the document does not declare fails t.
func openapiTransport(t testing.TB) http.RoundTripper { return openapiDoc.Transport(t) }

// routes are the routes the env's router serves.
func (e *env) routes() []openapi.Route {
	var out []openapi.Route
	for _, r := range e.echo.Routes() {
		out = append(out, openapi.Route{Method: r.Method, Path: r.Path})
	}
	return out
}

func TestOpenAPI_DocumentIsValid(t *testing.T) { openapiDoc.Valid(t) }

func TestOpenAPI_CoversEveryRoute(t *testing.T) {
	openapiDoc.CoversEveryRoute(t, newEnv(t).routes(), "analysis-svc/internal/api/openapi.yaml")
}

func TestOpenAPI_ServedWithoutCredentials(t *testing.T) {
	openapiDoc.ServedWithoutCredentials(t, newEnv(t).anon().Client, "/api/job/{id}/waitreport")
}
