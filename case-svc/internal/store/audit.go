package store

import (
	"context"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
)

// AuditStore keeps the audit trail in the collection audit, as pkg/events's event log, and searches it
// (auditbus.Store).
type AuditStore struct {
	*events.EventLog
}

// auditSpec: an organisation's trail by date, a case's or alert's flow by date, an object's history, plus
// the event log's own (the tailers', the retention's and the repair's reads by date).
var auditSpec = events.LogSpec("audit",
	docstore.Index{Name: "organisation_date", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Desc("date")}},
	docstore.Index{Name: "rootId_date", Keys: []docstore.Key{docstore.Asc("rootId"), docstore.Desc("date")}},
	docstore.Index{Name: "objectId", Keys: []docstore.Key{docstore.Asc("objectId")}},
)

// NewAuditStore returns the store and creates its indexes.
func NewAuditStore(ctx context.Context, db *docstore.DB) (*AuditStore, error) {
	l, err := events.NewEventLog(ctx, db, auditSpec)
	if err != nil {
		return nil, err
	}
	return &AuditStore{l}, nil
}

// Events lists events.
func (s *AuditStore) Events(ctx context.Context, f search.Node, p search.Page) ([]audit.Event, int64, error) {
	return s.Find(ctx, f, p)
}

// WebhookStore keeps webhook endpoints and the outbox of their deliveries (pkg/events).
type WebhookStore = events.Outbox

var (
	endpointSpec = events.OutboxSpecs()[0]
	deliverySpec = events.OutboxSpecs()[1]
)

// NewWebhookStore returns the store and creates its indexes.
func NewWebhookStore(ctx context.Context, db *docstore.DB) (*WebhookStore, error) {
	return events.NewOutbox(ctx, db)
}
