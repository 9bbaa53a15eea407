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
// be the same, so every handler receives the decoded value. GET routes get existing ids where there are
// (a login with "@", the organization), the others an id that does not exist (no change is made).
func TestRoutes_EncodedParams(t *testing.T) {
	e := newEnv(t)
	e.createOrg(t, "soc")
	oa := e.user(t, "dan@example.com", "soc", []string{"read", "analyze", "orgadmin"})
	existing := map[string]string{"login": "dan@example.com", "orgId": "soc"}

	oa.call(t, http.MethodGet, "/api/user/dan%40example.com", nil).want(t, http.StatusOK)
	walked := 0
	for _, r := range e.echo.Routes() {
		if !strings.Contains(r.Path, ":") {
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
		if known && a.status == http.StatusNotFound {
			t.Errorf("%s %s: 404 for an existing record", r.Method, plain)
		}
		walked++
	}
	if walked < 20 {
		t.Fatalf("walked only %d routes", walked)
	}
}
