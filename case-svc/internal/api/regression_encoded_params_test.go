package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// pctAll percent-encodes every byte of s, as a client that escapes more than it must would send it.
func pctAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

var routeParam = regexp.MustCompile(`:[A-Za-z]+`)

// TestRoutes_EncodedParams walks every registered route with a path parameter and calls it twice, the
// parameters once as they are and once with every byte percent-encoded: the answers (status and body) must
// be the same, so every handler receives the decoded value. GET routes get the ids of existing records (so a
// route that did not decode would answer 404 to the encoded call); the others an id that does not exist (no
// change is made). A login with "@" is found encoded.
func TestRoutes_EncodedParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "soc")
	oa := e.user(t, "dan@example.com", "soc", "org-admin")
	cs := oa.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	task := oa.call(t, http.MethodGet, "/api/case/"+cs.str(t, "id")+"/task", nil).want(t, 200).list(t)[0].str(t, "id")
	obs := oa.observables(t, "/api/case/"+cs.str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "a.example"})
	al := oa.newAlert(t, "enc-1", nil)
	existing := map[string]string{"userId": "dan@example.com", "orgId": "soc", "profileId": "analyst",
		"caseId": cs.str(t, "id"), "taskId": task, "observableId": obs[0].str(t, "id"), "alertId": al.str(t, "id")}

	oa.call(t, http.MethodGet, "/api/user/dan%40example.com", nil).want(t, http.StatusOK)
	walked := 0
	for _, r := range e.echo.Routes() {
		if !strings.Contains(r.Path, ":") || strings.Contains(r.Path, "/stream/") { // a stream poll waits
			continue
		}
		plain, enc := r.Path, r.Path
		known := true
		for _, p := range routeParam.FindAllString(r.Path, -1) {
			v, ok := existing[p[1:]]
			if r.Method != http.MethodGet || !ok {
				v, known = "no-such-id@x", false
			}
			plain = strings.Replace(plain, p, v, 1)
			enc = strings.Replace(enc, p, pctAll(v), 1)
		}
		var body any
		if r.Method != http.MethodGet && r.Method != http.MethodDelete {
			body = map[string]any{}
		}
		a := oa.call(t, r.Method, plain, body)
		b := oa.call(t, r.Method, enc, body)
		if a.status != b.status || string(a.body) != string(b.body) {
			t.Errorf("%s %s: plain %s → %d %s; encoded → %d %s", r.Method, r.Path, plain, a.status, a.body, b.status, b.body)
		}
		if known && r.Method == http.MethodGet && a.status == http.StatusNotFound {
			t.Errorf("%s %s: 404 for an existing record", r.Method, plain)
		}
		walked++
	}
	if walked < 50 {
		t.Fatalf("walked only %d routes", walked)
	}
}
