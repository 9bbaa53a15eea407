package events_test

import (
	"context"
	"testing"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
)

// Issue 28: 2,000 webhooks of one org-admin kept an idle service at one core. An organisation has at most
// WebhookConfig.MaxEndpoints (20) endpoints; past it a creation is a 400 and stores nothing; another
// organisation is not affected.
func TestWebhooks_EndpointsPerOrganisationCapped(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	l, err := events.NewEventLog(ctx, db, events.LogSpec("audit"))
	if err != nil {
		t.Fatal(err)
	}
	ob, err := events.NewOutbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus(l, ob, nil, events.NewMetrics("test", "audit"), events.Config{}, nil)
	w := bus.Webhooks()
	url := "https://hooks.example.com/in"
	for i := range 20 {
		if _, err := w.Create(ctx, "soc", "admin", events.NewEndpointID(), events.EndpointInput{URL: &url}); err != nil {
			t.Fatalf("webhook %d: %v", i+1, err)
		}
	}
	_, err = w.Create(ctx, "soc", "admin", events.NewEndpointID(), events.EndpointInput{URL: &url})
	if e := apperr.As(err); e == nil || e.Kind != apperr.BadRequest {
		t.Fatalf("the 21st webhook: %v, want BadRequest", err)
	}
	if eps, err := w.Endpoints(ctx, "soc"); err != nil || len(eps) != 20 {
		t.Fatalf("soc's webhooks: %d, %v", len(eps), err)
	}
	if _, err := w.Create(ctx, "cert", "admin", events.NewEndpointID(), events.EndpointInput{URL: &url}); err != nil {
		t.Fatalf("another organisation's webhook: %v", err)
	}
}
