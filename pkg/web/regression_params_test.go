package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/web"
)

// TestRoutes_DecodeParams: a route of web.Routes sees its parameters percent-decoded once, whether the handler
// reads c.Param or web.Param; "%2540" decodes to "%40", not to "@".
func TestRoutes_DecodeParams(t *testing.T) {
	e := echo.New()
	var got [2]string
	web.Routes{E: e}.GET("/u/:a/x/:b", func(c echo.Context) error {
		got = [2]string{c.Param("a"), web.Param(c, "b")}
		return nil
	})
	for _, tc := range []struct{ path, a, b string }{
		{"/u/dan%40example.com/x/%7E42", "dan@example.com", "~42"},
		{"/u/a%2Bb/x/%2540", "a+b", "%40"},
		{"/u/sl%2Fash/x/sp%20ace", "sl/ash", "sp ace"},
	} {
		got = [2]string{}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != http.StatusOK || got != [2]string{tc.a, tc.b} {
			t.Errorf("%s: %d %q, want %q %q", tc.path, rec.Code, got, tc.a, tc.b)
		}
	}
}
