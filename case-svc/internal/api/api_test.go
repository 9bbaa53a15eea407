package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The operational endpoints answer without credentials; an unknown route is a 404 NotFoundError with or
// without credentials (DECISIONS.md: unknown routes keep their 404).
func TestStatusAndProbes(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		path string
		want int
	}{{"/api/status", 200}, {"/api/v1/status", 200}, {"/healthz", 200}, {"/readyz", 200}, {"/metrics", 200},
		{"/api/nope", 404}, {"/api/v0/nope", 404}, {"/api/case/~1/nope", 404}} {
		r := e.anon().Call(t, http.MethodGet, tc.path, nil)
		if r.Status != tc.want {
			t.Errorf("%s: %d, want %d", tc.path, r.Status, tc.want)
		}
		if tc.path == "/api/status" {
			if v := r.Object(t).Obj(t, "versions").Str(t, "case-svc"); v == "" {
				t.Errorf("status body %s", r.Body)
			}
		}
	}
	e.admin.Call(t, http.MethodGet, "/api/nope", nil).WantError(t, 404, "NotFoundError")
	e.anon().Call(t, http.MethodGet, "/api/nope", nil).WantError(t, 404, "NotFoundError")
	e.anon().Call(t, http.MethodPost, "/api/v1/alert/nope/x", nil).WantError(t, 404, "NotFoundError")
}

// Every API route but the public ones refuses a request without credentials with 401.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	e := newEnv(t)
	public := regexp.MustCompile(`^/(healthz|readyz|metrics|api/openapi\.json|api(/v[01])?/(status|health|login|logout))$`)
	param := regexp.MustCompile(`:[A-Za-z]+`)
	n := 0
	for _, r := range e.echo.Routes() {
		if public.MatchString(r.Path) || !strings.HasPrefix(r.Path, "/api") || r.Method == "echo_route_not_found" {
			continue
		}
		path := strings.ReplaceAll(param.ReplaceAllString(r.Path, "~1"), "*", "x")
		e.anon().Call(t, r.Method, path, map[string]any{}).WantError(t, 401, "AuthenticationError")
		n++
	}
	if n < 100 {
		t.Fatalf("only %d routes checked", n)
	}
}
