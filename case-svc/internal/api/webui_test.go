package api_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// page GETs a page of the web interface with the client's API key (pages accept every credential the API
// does) and returns its status, headers and body; redirects are not followed.
func (c *client) page(t testing.TB, path string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

func TestWebUI_Smoke(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, map[string]any{"title": "Phishing"})
	for _, p := range []string{"/ui/cases", "/ui/cases/" + cs["_id"].(string), "/ui/cases/" + cs["_id"].(string) + "?tab=tasks",
		"/ui/cases/" + cs["_id"].(string) + "?tab=observables", "/ui/cases/" + cs["_id"].(string) + "?tab=activity", "/ui/alerts",
		"/ui/tasks/mine", "/ui/tasks/waiting"} {
		st, _, body := tm.analyst.page(t, p)
		if st != 200 {
			t.Errorf("%s: %d %s", p, st, body)
		}
	}
	_ = cookiejar.New
	_ = url.Parse
	_ = strings.Contains
	_ = html.Parse
}
