package apitest

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/openapi"
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

// EncodedParams walks every route with a path parameter (but those skip names) and calls it as c twice,
// the parameters once as they are and once with every byte percent-encoded: the answers (status and body)
// must be the same, so every handler receives the decoded value. GET routes get the values of existing for
// their parameters where it has them (so a route that did not decode would answer 404 to the encoded call);
// the others an id that does not exist (no change is made). It fails unless at least min routes were walked.
func EncodedParams(t *testing.T, c *Client, routes []openapi.Route, existing map[string]string, skip func(path string) bool, min int) {
	t.Helper()
	walked := 0
	for _, r := range routes {
		if !strings.Contains(r.Path, ":") || (skip != nil && skip(r.Path)) {
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
		a := c.Call(t, r.Method, plain, body)
		b := c.Call(t, r.Method, enc, body)
		if a.Status != b.Status || string(a.Body) != string(b.Body) {
			t.Errorf("%s %s: plain %s → %d %s; encoded → %d %s", r.Method, r.Path, plain, a.Status, a.Body, b.Status, b.Body)
		}
		if known && r.Method == http.MethodGet && a.Status == http.StatusNotFound {
			t.Errorf("%s %s: 404 for an existing record", r.Method, plain)
		}
		walked++
	}
	if walked < min {
		t.Fatalf("walked only %d routes", walked)
	}
}
