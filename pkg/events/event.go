// Package events owns what the services tell about their changes, written once for both: on the event record
// of package event (aliased here), the bus that records events and queues their webhook deliveries in a durable outbox (Bus), the live streams
// that tail the events (Hub), the webhook sender with its backoff, dead letter, SSRF guard and HMAC signature
// (Sender), the management of an organisation's endpoints (Webhooks), their Prometheus metrics, and the
// stores of all of it on pkg/docstore (EventLog, Outbox). A service supplies its events (case-svc: the audit
// trail; analysis-svc: job events) and checks its callers' permissions itself.
package events

import (
	"context"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/event"
)

// Operations of an event (package event).
const (
	Creation = event.Creation
	Update   = event.Update
	Delete   = event.Delete
)

// Event is one change (package event).
type Event = event.Event

// Log is the durable record of events a Bus writes and its Hub tails.
type Log interface {
	// InsertEvents stores events; an event already stored (same id) is left as it is. held marks them as not
	// yet queued for their webhooks, until Release.
	InsertEvents(ctx context.Context, es []Event, held bool) error
	// Insertions returns the insertions that store es (held or not), for a caller that writes them in its own
	// docstore.DB.InsertAll beside the change they tell of; a duplicate among their results is an event
	// already stored, left as it is (as InsertEvents leaves it).
	Insertions(es []Event, held bool) ([]docstore.Insertion, error)
	// EventsSince returns the released events (not held) dated at or after since, oldest first, at most limit.
	EventsSince(ctx context.Context, since time.Time, limit int) ([]Event, error)
	// Release marks held events as queued.
	Release(ctx context.Context, ids []string) error
	// Held lists the held events dated before t, oldest first, at most limit.
	Held(ctx context.Context, before time.Time, limit int) ([]Event, error)
	// DeleteEvents removes events by id.
	DeleteEvents(ctx context.Context, ids []string) error
	// DeleteBefore removes the events older than t.
	DeleteBefore(ctx context.Context, t time.Time) (int64, error)
}
