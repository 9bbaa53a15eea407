package auditbus

import "github.com/openir/platform/pkg/events"

// The webhooks' types live in pkg/events, one home for both services.
type (
	// WebhookStore persists endpoints and the outbox.
	WebhookStore = events.WebhookStore
	// Sealer encrypts the endpoints' credentials at rest.
	Sealer = events.Sealer
)
