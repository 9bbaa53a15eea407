package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/pkg/mongox/mongotest"
	"github.com/openir/platform/pkg/web"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

func TestStatusAndProbes(t *testing.T) {
	db := mongotest.New(t)
	srv := httptest.NewServer(api.New(web.Options{Log: slog.New(slog.DiscardHandler), Ready: db.Ping}))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		want int
	}{{"/api/status", 200}, {"/healthz", 200}, {"/readyz", 200}, {"/metrics", 200}, {"/api/nope", 404}} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
		if tc.path == "/api/status" {
			var s struct{ Versions map[string]string }
			if err := json.Unmarshal(body, &s); err != nil || s.Versions["case-svc"] == "" {
				t.Errorf("status body %s", body)
			}
		}
		if tc.want == 404 {
			var e struct{ Type, Message string }
			if err := json.Unmarshal(body, &e); err != nil || e.Type != "NotFoundError" {
				t.Errorf("404 body %s", body)
			}
		}
	}
}
