package audit

import "github.com/openir/platform/pkg/events"

// The webhooks' types live in pkg/events, one home for both services.
type (
	// Endpoint is a webhook of an organisation.
	Endpoint = events.Endpoint
	// Delivery is one event to send to one endpoint: a row of the durable outbox.
	Delivery = events.Delivery
	// WebhookStore persists endpoints and the outbox.
	WebhookStore = events.WebhookStore
	// Sealer encrypts the endpoints' credentials at rest.
	Sealer = events.Sealer
	// EndpointInput is a webhook endpoint as a request writes it.
	EndpointInput = events.EndpointInput
)

// Pending is the status of a delivery not yet delivered (pkg/events).
const Pending = events.Pending
