package connector_test

import (
	"log/slog"
	"math"
	"testing"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/case-svc/internal/store/identitytest"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// TestAnalyses_RunResponderUnencodableObject: the object a responder runs on is the API's own rendering, so
// failing to encode it is a server fault: an internal error (500, logged once with the request id by pkg/web)
// whose cause never reaches the client, and no action or pending record is left. The server is never called
// (its address refuses connections).
func TestAnalyses_RunResponderUnencodableObject(t *testing.T) {
	db := docstoretest.New(t)
	ids := identitytest.New(t, db)
	records, err := store.NewAnalysisStore(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	srv := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "a1", URL: "http://127.0.0.1:1"}, analysissvc.Options{},
		slog.New(slog.DiscardHandler))}
	// The case service and the case records are never reached: the object fails to encode first.
	a := connector.NewAnalyses(cases.NewService(cases.Stores{}, nil), nil, []connector.AnalysisServer{srv},
		connector.Stores{Actions: records, Pending: records}, connector.AnalysisConfig{}, nil)
	for _, tc := range []struct {
		name string
		data map[string]any
	}{
		{"NaN", map[string]any{"severity": math.NaN()}},
		{"infinity", map[string]any{"nested": map[string]any{"score": math.Inf(1)}}},
		{"channel", map[string]any{"c": make(chan int)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.RunResponder(t.Context(), ids.Analyst, "a1", "Mailer_1_0",
				connector.ResponderObject{Type: "case", ID: "~1", CaseID: "~1", TLP: 2, PAP: 2, Data: tc.data})
			if err == nil {
				t.Fatal("the action was accepted")
			}
			if k := apperr.KindOf(err); k != apperr.Internal {
				t.Errorf("kind %v, want Internal (500): %v", k, err)
			}
			if msg := apperr.SafeMessage(err, "internal error"); msg != "internal error" {
				t.Errorf("the client reads %q", msg)
			}
		})
	}
	if acts, n, err := records.Actions(t.Context(), search.Node{Op: search.OpAll}, search.Page{Limit: 10}); err != nil || n != 0 {
		t.Errorf("actions %v (%d), %v; want none", acts, n, err)
	}
	if p, err := records.PendingOf(t.Context(), "a1"); err != nil || len(p) != 0 {
		t.Errorf("pending %v, %v; want none", p, err)
	}
}
