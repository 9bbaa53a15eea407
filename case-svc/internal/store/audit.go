package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// AuditStore keeps the audit trail in the collection audit. An event's details and object are kept as JSON
// text: they hold client-chosen keys, and searches never look inside them.
type AuditStore struct {
	coll *docstore.Collection
}

var _ audit.Store = (*AuditStore)(nil)

// auditSpec: an organisation's trail by date, a case's or alert's flow by date, an object's history, and the
// tailers' and the retention's reads by date.
var auditSpec = docstore.Spec{Name: "audit", Indexes: []docstore.Index{
	{Name: "organisation_date", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Desc("date")}},
	{Name: "rootId_date", Keys: []docstore.Key{docstore.Asc("rootId"), docstore.Desc("date")}},
	{Name: "objectId", Keys: []docstore.Key{docstore.Asc("objectId")}},
	{Name: "date__id", Keys: []docstore.Key{docstore.Asc("date"), docstore.Asc("_id")}},
}}

// NewAuditStore returns the store and creates its indexes.
func NewAuditStore(ctx context.Context, db *docstore.DB) (*AuditStore, error) {
	coll, err := db.Collection(ctx, auditSpec)
	if err != nil {
		return nil, err
	}
	return &AuditStore{coll: coll}, nil
}

type auditDoc struct {
	ID         string `json:"_id"`
	Operation  string `json:"operation"`
	ObjectType string `json:"objectType"`
	ObjectID   string `json:"objectId"`
	RootID     string `json:"rootId"`
	Details    string `json:"details"`
	Object     string `json:"object"`
	User       string `json:"user"`
	RequestID  string `json:"requestId"`
	Org        string `json:"organisation"`
	Date       int64  `json:"date"`
}

func (d auditDoc) event() audit.Event {
	e := audit.Event{ID: d.ID, Operation: d.Operation, ObjectType: d.ObjectType, ObjectID: d.ObjectID, RootID: d.RootID,
		User: d.User, RequestID: d.RequestID, Org: d.Org, Date: docstore.Time(d.Date)}
	_ = json.Unmarshal([]byte(d.Details), &e.Details)
	_ = json.Unmarshal([]byte(d.Object), &e.Object)
	return e
}

// InsertEvents stores events in one call.
func (s *AuditStore) InsertEvents(ctx context.Context, es []audit.Event) error {
	docs := make([]any, len(es))
	for i, e := range es {
		d, err := toAuditDoc(e)
		if err != nil {
			return err
		}
		docs[i] = d
	}
	res, err := s.coll.InsertMany(ctx, docs)
	if err != nil {
		return err
	}
	for _, e := range res {
		if e != nil {
			return e
		}
	}
	return nil
}

// InsertEvent stores an event.
func (s *AuditStore) InsertEvent(ctx context.Context, e audit.Event) error {
	d, err := toAuditDoc(e)
	if err != nil {
		return err
	}
	return s.coll.Insert(ctx, d)
}

func toAuditDoc(e audit.Event) (auditDoc, error) {
	details, err := encodeJSON(e.Details)
	if err != nil {
		return auditDoc{}, fmt.Errorf("encode audit details: %w", err)
	}
	object, err := encodeJSON(e.Object)
	if err != nil {
		return auditDoc{}, fmt.Errorf("encode audit object: %w", err)
	}
	return auditDoc{ID: e.ID, Operation: e.Operation, ObjectType: e.ObjectType, ObjectID: e.ObjectID,
		RootID: e.RootID, Details: details, Object: object, User: e.User, RequestID: e.RequestID, Org: e.Org,
		Date: docstore.Millis(e.Date)}, nil
}

// Events lists events.
func (s *AuditStore) Events(ctx context.Context, f search.Node, p search.Page) ([]audit.Event, int64, error) {
	return page(ctx, s.coll, f, p, auditDoc.event)
}

// EventsSince returns the events dated at or after since, oldest first.
func (s *AuditStore) EventsSince(ctx context.Context, since time.Time, limit int) ([]audit.Event, error) {
	var docs []auditDoc
	if err := s.coll.Find(ctx, docstore.Query{Filter: docstore.Gte("date", docstore.Millis(since)),
		Sort: docstore.Sort("date", "_id"), Limit: limit}, &docs); err != nil {
		return nil, err
	}
	out := make([]audit.Event, len(docs))
	for i, d := range docs {
		out[i] = d.event()
	}
	return out, nil
}

// DeleteBefore removes the events older than t.
func (s *AuditStore) DeleteBefore(ctx context.Context, t time.Time) (int64, error) {
	return s.coll.DeleteMany(ctx, docstore.Lt("date", docstore.Millis(t)))
}

// WebhookStore keeps webhook endpoints (webhook_endpoint) and the outbox of their deliveries
// (webhook_delivery). Claims are single-document atomic updates, so several replicas share the outbox.
type WebhookStore struct {
	endpoints  *docstore.Collection
	deliveries *docstore.Collection
}

var _ audit.WebhookStore = (*WebhookStore)(nil)

var endpointSpec = docstore.Spec{Name: "webhook_endpoint", Indexes: []docstore.Index{
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Asc("_id")}},
}}

// deliverySpec: an endpoint's next pending delivery in order, an endpoint's recent deliveries, and the
// backlog (pending by age).
var deliverySpec = docstore.Spec{Name: "webhook_delivery", Indexes: []docstore.Index{
	{Name: "endpoint_status_seq", Keys: []docstore.Key{docstore.Asc("endpoint"), docstore.Asc("status"), docstore.Asc("seq")}},
	{Name: "organisation_endpoint_createdAt", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Asc("endpoint"), docstore.Desc("createdAt")}},
	{Name: "status_createdAt", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("createdAt")}},
}}

// NewWebhookStore returns the store and creates its indexes.
func NewWebhookStore(ctx context.Context, db *docstore.DB) (*WebhookStore, error) {
	ep, err := db.Collection(ctx, endpointSpec)
	if err != nil {
		return nil, err
	}
	dl, err := db.Collection(ctx, deliverySpec)
	if err != nil {
		return nil, err
	}
	return &WebhookStore{endpoints: ep, deliveries: dl}, nil
}

type endpointDoc struct {
	ID        string `json:"_id"`
	Org       string `json:"organisation"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	Auth      string `json:"auth"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	Token     string `json:"token"`
	Secret    string `json:"secret"`
	Filter    string `json:"filter"`
	Enabled   bool   `json:"enabled"`
	CreatedBy string `json:"createdBy"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
}

func toEndpointDoc(e audit.Endpoint) endpointDoc {
	return endpointDoc{ID: e.ID, Org: e.Org, Name: e.Name, URL: e.URL, Auth: e.Auth, Username: e.Username,
		Password: e.Password, Token: e.Token, Secret: e.Secret, Filter: e.Filter, Enabled: e.Enabled,
		CreatedBy: e.CreatedBy, CreatedAt: docstore.Millis(e.CreatedAt), UpdatedAt: docstore.Millis(e.UpdatedAt)}
}

func (d endpointDoc) endpoint() audit.Endpoint {
	return audit.Endpoint{ID: d.ID, Org: d.Org, Name: d.Name, URL: d.URL, Auth: d.Auth, Username: d.Username,
		Password: d.Password, Token: d.Token, Secret: d.Secret, Filter: d.Filter, Enabled: d.Enabled,
		CreatedBy: d.CreatedBy, CreatedAt: docstore.Time(d.CreatedAt), UpdatedAt: docstore.Time(d.UpdatedAt)}
}

// CreateEndpoint stores an endpoint.
func (s *WebhookStore) CreateEndpoint(ctx context.Context, e audit.Endpoint) error {
	return s.endpoints.Insert(ctx, toEndpointDoc(e))
}

// Endpoint finds an endpoint of org.
func (s *WebhookStore) Endpoint(ctx context.Context, org, id string) (audit.Endpoint, error) {
	var d endpointDoc
	if err := findOne(ctx, s.endpoints, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)), &d, audit.ErrEndpointNotFound); err != nil {
		return audit.Endpoint{}, err
	}
	return d.endpoint(), nil
}

// Endpoints lists the endpoints of org ("" = all).
func (s *WebhookStore) Endpoints(ctx context.Context, org string) ([]audit.Endpoint, error) {
	f := docstore.All()
	if org != "" {
		f = docstore.Eq("organisation", org)
	}
	var docs []endpointDoc
	if err := s.endpoints.Find(ctx, docstore.Query{Filter: f, Sort: docstore.Sort("organisation", "_id")}, &docs); err != nil {
		return nil, err
	}
	out := make([]audit.Endpoint, len(docs))
	for i, d := range docs {
		out[i] = d.endpoint()
	}
	return out, nil
}

// UpdateEndpoint replaces an endpoint.
func (s *WebhookStore) UpdateEndpoint(ctx context.Context, e audit.Endpoint) error {
	err := s.endpoints.Replace(ctx, toEndpointDoc(e), false)
	if errors.Is(err, docstore.ErrNotFound) {
		return audit.ErrEndpointNotFound
	}
	return err
}

// DeleteEndpoint removes an endpoint of org.
func (s *WebhookStore) DeleteEndpoint(ctx context.Context, org, id string) error {
	ok, err := s.endpoints.DeleteOne(ctx, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)))
	if err != nil {
		return err
	}
	if !ok {
		return audit.ErrEndpointNotFound
	}
	return nil
}

type deliveryDoc struct {
	ID          string `json:"_id"`
	EventID     string `json:"event"`
	Endpoint    string `json:"endpoint"`
	Org         string `json:"organisation"`
	Seq         string `json:"seq"`
	Payload     string `json:"payload"`
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	NextAttempt int64  `json:"nextAttempt"`
	LeaseUntil  int64  `json:"leaseUntil"`
	LastStatus  int    `json:"lastStatus"`
	LastError   string `json:"lastError"`
	CreatedAt   int64  `json:"createdAt"`
	DeliveredAt int64  `json:"deliveredAt"`
}

func (d deliveryDoc) delivery() audit.Delivery {
	return audit.Delivery{ID: d.ID, EventID: d.EventID, Endpoint: d.Endpoint, Org: d.Org, Seq: d.Seq, Payload: d.Payload,
		Status: d.Status, Attempts: d.Attempts, NextAttempt: docstore.Time(d.NextAttempt), LeaseUntil: docstore.Time(d.LeaseUntil),
		LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: docstore.Time(d.CreatedAt), DeliveredAt: docstore.Time(d.DeliveredAt)}
}

// Enqueue stores deliveries; one already queued (same event and endpoint) is kept as it is.
func (s *WebhookStore) Enqueue(ctx context.Context, ds []audit.Delivery) error {
	docs := make([]any, len(ds))
	for i, d := range ds {
		docs[i] = deliveryDoc{ID: d.ID, EventID: d.EventID, Endpoint: d.Endpoint, Org: d.Org, Seq: d.Seq, Payload: d.Payload,
			Status: d.Status, NextAttempt: docstore.Millis(d.NextAttempt), CreatedAt: docstore.Millis(d.CreatedAt)}
	}
	res, err := s.deliveries.InsertMany(ctx, docs)
	if err != nil {
		return err
	}
	for _, e := range res {
		if e != nil && !docstore.IsDuplicate(e) {
			return e
		}
	}
	return nil
}

// Head returns an endpoint's first pending delivery.
func (s *WebhookStore) Head(ctx context.Context, endpoint string) (audit.Delivery, error) {
	var d deliveryDoc
	err := s.deliveries.FindOne(ctx, docstore.And(docstore.Eq("endpoint", endpoint), docstore.Eq("status", audit.Pending)),
		docstore.Sort("seq"), &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return audit.Delivery{}, audit.ErrDeliveryNotFound
	}
	if err != nil {
		return audit.Delivery{}, err
	}
	return d.delivery(), nil
}

// Claim leases a pending delivery whose lease has expired.
func (s *WebhookStore) Claim(ctx context.Context, id string, now, until time.Time) (audit.Delivery, bool, error) {
	var d deliveryDoc
	err := s.deliveries.FindOneAndUpdate(ctx, docstore.And(docstore.ID(id), docstore.Eq("status", audit.Pending),
		docstore.Lte("leaseUntil", docstore.Millis(now))), nil, docstore.Set("leaseUntil", docstore.Millis(until)),
		docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return audit.Delivery{}, false, nil
	}
	if err != nil {
		return audit.Delivery{}, false, err
	}
	return d.delivery(), true, nil
}

// Finish writes an attempt's outcome.
func (s *WebhookStore) Finish(ctx context.Context, d audit.Delivery) error {
	_, err := s.deliveries.UpdateOne(ctx, docstore.ID(d.ID), docstore.Set("status", d.Status).Set("attempts", d.Attempts).
		Set("nextAttempt", docstore.Millis(d.NextAttempt)).Set("leaseUntil", int64(0)).Set("lastStatus", d.LastStatus).
		Set("lastError", d.LastError).Set("deliveredAt", docstore.Millis(d.DeliveredAt)), false)
	return err
}

// Deliveries lists an endpoint's deliveries, newest first.
func (s *WebhookStore) Deliveries(ctx context.Context, org, endpoint string, p search.Page) ([]audit.Delivery, int64, error) {
	p.Sort = []search.SortKey{{Path: "createdAt", Desc: true}}
	return page(ctx, s.deliveries, docstore.And(docstore.Eq("organisation", org), docstore.Eq("endpoint", endpoint)), p, deliveryDoc.delivery)
}

// Resend makes a delivery pending again.
func (s *WebhookStore) Resend(ctx context.Context, org, id string, now time.Time) (audit.Delivery, error) {
	var d deliveryDoc
	err := s.deliveries.FindOneAndUpdate(ctx, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)), nil,
		docstore.Set("status", audit.Pending).Set("attempts", 0).Set("nextAttempt", docstore.Millis(now)).Set("lastError", ""),
		docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return audit.Delivery{}, audit.ErrDeliveryNotFound
	}
	if err != nil {
		return audit.Delivery{}, err
	}
	return d.delivery(), nil
}

// Backlog counts the pending deliveries and finds the oldest.
func (s *WebhookStore) Backlog(ctx context.Context) (int64, time.Time, error) {
	f := docstore.Eq("status", audit.Pending)
	n, err := s.deliveries.Count(ctx, f)
	if err != nil || n == 0 {
		return n, time.Time{}, err
	}
	var d deliveryDoc
	if err := s.deliveries.FindOne(ctx, f, docstore.Sort("createdAt"), &d); err != nil {
		return n, time.Time{}, err
	}
	return n, docstore.Time(d.CreatedAt), nil
}
