package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openir/platform/pkg/apitest"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// New builds the service with its audit decorators: a case created over HTTP leaves its events (the case's
// and its task's) in the organisation's audit trail. Options.NoAudit (the benchmark's floor) builds the same
// service without them: the case is created and nothing is recorded.
func TestNew_AuditDecorators(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noAudit bool
	}{{"with audit", false}, {"without audit", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Default()
			if err != nil {
				t.Fatal(err)
			}
			const adminKey = "app-test-admin-key-0123456789-abcdef"
			cfg.Auth.Secret, cfg.HTTP.AllowInsecureCredentials = "app-test-secret-0123456789", true
			cfg.Bootstrap.Login, cfg.Bootstrap.Key = "root", adminKey
			ctx := context.Background()
			a, err := New(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)),
				Options{DB: docstoretest.New(t), NoAudit: tc.noAudit, Overrides: conf.Overrides{NoThrottle: true}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close(ctx) })
			srv := httptest.NewServer(a.Handler)
			t.Cleanup(srv.Close)
			admin := apitest.NewClient(srv.URL, nil, "root").WithKey(adminKey)
			admin.Call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "soc", "description": "d"}).Want(t, http.StatusCreated)
			admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "ana", "name": "Ana", "organisation": "soc",
				"profile": "analyst"}).Want(t, http.StatusCreated)
			key := admin.Call(t, http.MethodPost, "/api/user/ana/key/renew", nil).Want(t, http.StatusOK).Text(t)
			ana := apitest.NewClient(srv.URL, nil, "ana").WithKey(key)
			ana.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d",
				"tasks": []map[string]any{{"title": "task"}}}).Want(t, http.StatusCreated)

			_, n, err := a.Events.Events(ctx, "soc", search.Node{}, search.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if tc.noAudit && n != 0 {
				t.Errorf("%d events recorded without the audit decorators", n)
			}
			if !tc.noAudit && n < 2 {
				t.Errorf("%d events recorded, want the case's and its task's at least", n)
			}
		})
	}
}
