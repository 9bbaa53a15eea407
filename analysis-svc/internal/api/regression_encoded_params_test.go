package api_test

import (
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/apitest"
)

// TestRoutes_EncodedParams walks every registered route with a path parameter and calls it twice, the
// parameters once as they are and once with every byte percent-encoded: the answers (status and body) must
// be the same, so every handler receives the decoded value (apitest.EncodedParams). GET routes get existing
// ids where there are (a login with "@", the organization), the others an id that does not exist (no change
// is made).
func TestRoutes_EncodedParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "soc")
	oa := e.user(t, "dan@example.com", "soc", []string{"read", "analyze", "orgadmin"})
	existing := map[string]string{"login": "dan@example.com", "orgId": "soc"}

	oa.Call(t, http.MethodGet, "/api/user/dan%40example.com", nil).Want(t, http.StatusOK)
	apitest.EncodedParams(t, oa.Client, e.routes(), existing, nil, 20)
}
