package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/apitest"
)

// TestRoutes_EncodedParams walks every registered route with a path parameter and calls it twice, the
// parameters once as they are and once with every byte percent-encoded: the answers (status and body) must
// be the same, so every handler receives the decoded value (apitest.EncodedParams). GET routes get the ids
// of existing records (so a route that did not decode would answer 404 to the encoded call); the others an
// id that does not exist (no change is made). A login with "@" is found encoded.
func TestRoutes_EncodedParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "soc")
	oa := e.user(t, "dan@example.com", "soc", "org-admin")
	cs := oa.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	task := oa.Call(t, http.MethodGet, "/api/case/"+cs.Str(t, "id")+"/task", nil).Want(t, 200).List(t)[0].Str(t, "id")
	obs := oa.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "a.example"})
	al := oa.newAlert(t, "enc-1", nil)
	existing := map[string]string{"userId": "dan@example.com", "orgId": "soc", "profileId": "analyst",
		"caseId": cs.Str(t, "id"), "taskId": task, "observableId": obs[0].Str(t, "id"), "alertId": al.Str(t, "id")}

	oa.Call(t, http.MethodGet, "/api/user/dan%40example.com", nil).Want(t, http.StatusOK)
	stream := func(path string) bool { return strings.Contains(path, "/stream/") } // a stream poll waits
	apitest.EncodedParams(t, oa.Client, e.routes(), existing, stream, 50)
}
