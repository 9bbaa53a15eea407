// Package events owns what the services tell about their changes, written once for both: the event record,
// the bus that records events and queues their webhook deliveries in a durable outbox (Bus), the live streams
// that tail the events (Hub), the webhook sender with its backoff, dead letter, SSRF guard and HMAC signature
// (Sender), the management of an organisation's endpoints (Webhooks), their Prometheus metrics, and the
// stores of all of it on pkg/docstore (EventLog, Outbox). A service supplies its events (case-svc: the audit
// trail; analysis-svc: job events) and checks its callers' permissions itself.
package events

import (
	"context"
	"time"

	"github.com/openir/platform/pkg/docstore"
)

// Operations of an event.
const (
	Creation = "Creation"
	Update   = "Update"
	Delete   = "Delete"
)

// Event is one change: what changed (objectType, objectId, rootId: the object it belongs to), how
// (operation and the changed attributes in Details), the object after the change, who, in which request and
// organisation, and when.
type Event struct {
	ID         string
	Operation  string
	ObjectType string
	ObjectID   string
	RootID     string
	Details    map[string]any
	Object     map[string]any
	User       string
	RequestID  string
	Org        string
	Date       time.Time
}

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
