package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// EventLog keeps events in a collection of pkg/docstore. An event's details and object are kept as JSON
// text: they hold client-chosen keys, and searches never look inside them. A held event carries held: 1
// until it is released.
type EventLog struct {
	coll *docstore.Collection
}

var _ Log = (*EventLog)(nil)

// LogSpec declares an event collection: the tailers' and the retention's reads by date, and the repair's
// held events by date, plus the service's own indexes (its searches).
func LogSpec(name string, extra ...docstore.Index) docstore.Spec {
	return docstore.Spec{Name: name, Indexes: append(extra,
		docstore.Index{Name: "date__id", Keys: []docstore.Key{docstore.Asc("date"), docstore.Asc("_id")}},
		docstore.Index{Name: "held_date", Keys: []docstore.Key{docstore.Asc("held"), docstore.Asc("date"), docstore.Asc("_id")}},
	)}
}

// NewEventLog opens the collection of spec (LogSpec) and creates its indexes.
func NewEventLog(ctx context.Context, db *docstore.DB, spec docstore.Spec) (*EventLog, error) {
	coll, err := db.Collection(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &EventLog{coll: coll}, nil
}

type eventDoc struct {
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
	Held       int    `json:"held,omitempty"`
}

func (d eventDoc) event() Event {
	e := Event{ID: d.ID, Operation: d.Operation, ObjectType: d.ObjectType, ObjectID: d.ObjectID, RootID: d.RootID,
		User: d.User, RequestID: d.RequestID, Org: d.Org, Date: docstore.Time(d.Date)}
	_ = json.Unmarshal([]byte(d.Details), &e.Details)
	_ = json.Unmarshal([]byte(d.Object), &e.Object)
	return e
}

func toEventDoc(e Event, held bool) (eventDoc, error) {
	details, err := encodeJSON(e.Details)
	if err != nil {
		return eventDoc{}, fmt.Errorf("encode event details: %w", err)
	}
	object, err := encodeJSON(e.Object)
	if err != nil {
		return eventDoc{}, fmt.Errorf("encode event object: %w", err)
	}
	d := eventDoc{ID: e.ID, Operation: e.Operation, ObjectType: e.ObjectType, ObjectID: e.ObjectID,
		RootID: e.RootID, Details: details, Object: object, User: e.User, RequestID: e.RequestID, Org: e.Org,
		Date: docstore.Millis(e.Date)}
	if held {
		d.Held = 1
	}
	return d, nil
}

// encodeJSON writes v as compact JSON text without HTML escaping.
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// InsertEvents stores events in one call; an id already stored is kept as it is.
func (s *EventLog) InsertEvents(ctx context.Context, es []Event, held bool) error {
	docs := make([]any, len(es))
	for i, e := range es {
		d, err := toEventDoc(e, held)
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
		if e != nil && !docstore.IsDuplicate(e) {
			return e
		}
	}
	return nil
}

// Insertions returns the insertions into the log's collection that store es.
func (s *EventLog) Insertions(es []Event, held bool) ([]docstore.Insertion, error) {
	ins := make([]docstore.Insertion, len(es))
	for i, e := range es {
		d, err := toEventDoc(e, held)
		if err != nil {
			return nil, err
		}
		ins[i] = docstore.Insertion{Coll: s.coll, Doc: d}
	}
	return ins, nil
}

// Find lists the events matching f.
func (s *EventLog) Find(ctx context.Context, f search.Node, p search.Page) ([]Event, int64, error) {
	var docs []eventDoc
	total, err := s.coll.FindPage(ctx, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Event, len(docs))
	for i, d := range docs {
		out[i] = d.event()
	}
	return out, total, nil
}

func (s *EventLog) find(ctx context.Context, q docstore.Query) ([]Event, error) {
	var docs []eventDoc
	if err := s.coll.Find(ctx, q, &docs); err != nil {
		return nil, err
	}
	out := make([]Event, len(docs))
	for i, d := range docs {
		out[i] = d.event()
	}
	return out, nil
}

// EventsSince returns the events dated at or after since, oldest first.
func (s *EventLog) EventsSince(ctx context.Context, since time.Time, limit int) ([]Event, error) {
	// A held event is not yet released: its change may still fail and drop it, so no stream shows it until then.
	f := docstore.And(docstore.Gte("date", docstore.Millis(since)), docstore.Not(docstore.Exists("held")))
	return s.find(ctx, docstore.Query{Filter: f, Sort: docstore.Sort("date", "_id"), Limit: limit})
}

// eventHead is an event without its details and object (HeadsSince).
type eventHead struct {
	ID         string `json:"_id"`
	Operation  string `json:"operation"`
	ObjectType string `json:"objectType"`
	ObjectID   string `json:"objectId"`
	RootID     string `json:"rootId"`
	User       string `json:"user"`
	RequestID  string `json:"requestId"`
	Org        string `json:"organisation"`
	Date       int64  `json:"date"`
}

// headFields are the paths of an eventHead (the projection of HeadsSince).
var headFields = []string{"operation", "objectType", "objectId", "rootId", "user", "requestId", "organisation", "date"}

// HeadsSince returns the released events dated at or after since, oldest first, at most limit, without their
// details and object (nil): what a tailer that goes over a window of events again (for those committed late)
// needs to tell the events it has from the new ones, at a fraction of the cost of decoding whole events. It
// reads the whole events it wants with EventsByID.
func (s *EventLog) HeadsSince(ctx context.Context, since time.Time, limit int) ([]Event, error) {
	f := docstore.And(docstore.Gte("date", docstore.Millis(since)), docstore.Not(docstore.Exists("held")))
	var docs []eventHead
	if err := s.coll.Find(ctx, docstore.Query{Filter: f, Sort: docstore.Sort("date", "_id"), Limit: limit, Fields: headFields}, &docs); err != nil {
		return nil, err
	}
	out := make([]Event, len(docs))
	for i, d := range docs {
		out[i] = Event{ID: d.ID, Operation: d.Operation, ObjectType: d.ObjectType, ObjectID: d.ObjectID, RootID: d.RootID,
			User: d.User, RequestID: d.RequestID, Org: d.Org, Date: docstore.Time(d.Date)}
	}
	return out, nil
}

// EventsByID returns the stored events with these ids (held or not), oldest first; an id not stored is absent.
func (s *EventLog) EventsByID(ctx context.Context, ids []string) ([]Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.find(ctx, docstore.Query{Filter: docstore.In("_id", ids...), Sort: docstore.Sort("date", "_id")})
}

// Held lists the held events dated before t, oldest first.
func (s *EventLog) Held(ctx context.Context, before time.Time, limit int) ([]Event, error) {
	return s.find(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("held", 1), docstore.Lt("date", docstore.Millis(before))),
		Sort: docstore.Sort("date", "_id"), Limit: limit})
}

// Release marks events as queued.
func (s *EventLog) Release(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if _, err := s.coll.UpdateOne(ctx, docstore.ID(id), docstore.Unset("held"), false); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEvents removes events by id.
func (s *EventLog) DeleteEvents(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.coll.DeleteMany(ctx, docstore.In("_id", ids...))
	return err
}

// DeleteBefore removes the events older than t.
func (s *EventLog) DeleteBefore(ctx context.Context, t time.Time) (int64, error) {
	return s.coll.DeleteMany(ctx, docstore.Lt("date", docstore.Millis(t)))
}

// Outbox keeps webhook endpoints (webhook_endpoint) and the outbox of their deliveries (webhook_delivery)
// in pkg/docstore. Claims are single-document atomic updates, so several replicas share the outbox.
type Outbox struct {
	endpoints  *docstore.Collection
	deliveries *docstore.Collection
}

var _ WebhookStore = (*Outbox)(nil)

// OutboxSpecs declares the endpoints' collection (an organisation's endpoints) and the deliveries' (an
// endpoint's next pending delivery in order, an endpoint's recent deliveries, the backlog by age).
func OutboxSpecs() []docstore.Spec {
	return []docstore.Spec{
		{Name: "webhook_endpoint", Indexes: []docstore.Index{
			{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Asc("_id")}},
		}},
		{Name: "webhook_delivery", Indexes: []docstore.Index{
			{Name: "endpoint_status_seq", Keys: []docstore.Key{docstore.Asc("endpoint"), docstore.Asc("status"), docstore.Asc("seq")}},
			{Name: "organisation_endpoint_createdAt", Keys: []docstore.Key{docstore.Asc("organisation"), docstore.Asc("endpoint"), docstore.Desc("createdAt")}},
			{Name: "status_createdAt", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("createdAt")}},
		}},
	}
}

// NewOutbox returns the store and creates its indexes.
func NewOutbox(ctx context.Context, db *docstore.DB) (*Outbox, error) {
	specs := OutboxSpecs()
	ep, err := db.Collection(ctx, specs[0])
	if err != nil {
		return nil, err
	}
	dl, err := db.Collection(ctx, specs[1])
	if err != nil {
		return nil, err
	}
	return &Outbox{endpoints: ep, deliveries: dl}, nil
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

func toEndpointDoc(e Endpoint) endpointDoc {
	return endpointDoc{ID: e.ID, Org: e.Org, Name: e.Name, URL: e.URL, Auth: e.Auth, Username: e.Username,
		Password: e.Password, Token: e.Token, Secret: e.Secret, Filter: e.Filter, Enabled: e.Enabled,
		CreatedBy: e.CreatedBy, CreatedAt: docstore.Millis(e.CreatedAt), UpdatedAt: docstore.Millis(e.UpdatedAt)}
}

func (d endpointDoc) endpoint() Endpoint {
	return Endpoint{ID: d.ID, Org: d.Org, Name: d.Name, URL: d.URL, Auth: d.Auth, Username: d.Username,
		Password: d.Password, Token: d.Token, Secret: d.Secret, Filter: d.Filter, Enabled: d.Enabled,
		CreatedBy: d.CreatedBy, CreatedAt: docstore.Time(d.CreatedAt), UpdatedAt: docstore.Time(d.UpdatedAt)}
}

// CreateEndpoint stores an endpoint.
func (s *Outbox) CreateEndpoint(ctx context.Context, e Endpoint) error {
	return s.endpoints.Insert(ctx, toEndpointDoc(e))
}

// Endpoint finds an endpoint of org.
func (s *Outbox) Endpoint(ctx context.Context, org, id string) (Endpoint, error) {
	var d endpointDoc
	err := s.endpoints.FindOne(ctx, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)), nil, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return Endpoint{}, ErrEndpointNotFound
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("find webhook: %w", err)
	}
	return d.endpoint(), nil
}

// Endpoints lists the endpoints of org ("" = all).
func (s *Outbox) Endpoints(ctx context.Context, org string) ([]Endpoint, error) {
	q := docstore.Query{Filter: docstore.All(), Sort: docstore.Sort("_id")}
	if org != "" {
		q.Filter = docstore.Eq("organisation", org)
	}
	var docs []endpointDoc
	if err := s.endpoints.Find(ctx, q, &docs); err != nil {
		return nil, err
	}
	out := make([]Endpoint, len(docs))
	for i, d := range docs {
		out[i] = d.endpoint()
	}
	return out, nil
}

// UpdateEndpoint replaces an endpoint.
func (s *Outbox) UpdateEndpoint(ctx context.Context, e Endpoint) error {
	err := s.endpoints.Replace(ctx, toEndpointDoc(e), false)
	if errors.Is(err, docstore.ErrNotFound) {
		return ErrEndpointNotFound
	}
	return err
}

// DeleteEndpoint removes an endpoint of org.
func (s *Outbox) DeleteEndpoint(ctx context.Context, org, id string) error {
	ok, err := s.endpoints.DeleteOne(ctx, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)))
	if err != nil {
		return err
	}
	if !ok {
		return ErrEndpointNotFound
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

func (d deliveryDoc) delivery() Delivery {
	return Delivery{ID: d.ID, EventID: d.EventID, Endpoint: d.Endpoint, Org: d.Org, Seq: d.Seq, Payload: d.Payload,
		Status: d.Status, Attempts: d.Attempts, NextAttempt: docstore.Time(d.NextAttempt), LeaseUntil: docstore.Time(d.LeaseUntil),
		LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: docstore.Time(d.CreatedAt), DeliveredAt: docstore.Time(d.DeliveredAt)}
}

// Enqueue stores deliveries; one already queued (same event and endpoint) is kept as it is.
func (s *Outbox) Enqueue(ctx context.Context, ds []Delivery) error {
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
func (s *Outbox) Head(ctx context.Context, endpoint string) (Delivery, error) {
	var d deliveryDoc
	err := s.deliveries.FindOne(ctx, docstore.And(docstore.Eq("endpoint", endpoint), docstore.Eq("status", Pending)),
		docstore.Sort("seq"), &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return Delivery{}, ErrDeliveryNotFound
	}
	if err != nil {
		return Delivery{}, err
	}
	return d.delivery(), nil
}

// Claim leases a pending delivery whose lease has expired.
func (s *Outbox) Claim(ctx context.Context, id string, now, until time.Time) (Delivery, bool, error) {
	var d deliveryDoc
	err := s.deliveries.FindOneAndUpdate(ctx, docstore.And(docstore.ID(id), docstore.Eq("status", Pending),
		docstore.Lte("leaseUntil", docstore.Millis(now))), nil, docstore.Set("leaseUntil", docstore.Millis(until)),
		docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return Delivery{}, false, nil
	}
	if err != nil {
		return Delivery{}, false, err
	}
	return d.delivery(), true, nil
}

// Finish writes an attempt's outcome.
func (s *Outbox) Finish(ctx context.Context, d Delivery) error {
	_, err := s.deliveries.UpdateOne(ctx, docstore.ID(d.ID), docstore.Set("status", d.Status).Set("attempts", d.Attempts).
		Set("nextAttempt", docstore.Millis(d.NextAttempt)).Set("leaseUntil", int64(0)).Set("lastStatus", d.LastStatus).
		Set("lastError", d.LastError).Set("deliveredAt", docstore.Millis(d.DeliveredAt)), false)
	return err
}

// Deliveries lists an endpoint's deliveries, newest first.
func (s *Outbox) Deliveries(ctx context.Context, org, endpoint string, p search.Page) ([]Delivery, int64, error) {
	p.Sort = []search.SortKey{{Path: "createdAt", Desc: true}}
	var docs []deliveryDoc
	total, err := s.deliveries.FindPage(ctx, docstore.And(docstore.Eq("organisation", org), docstore.Eq("endpoint", endpoint)), p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.delivery()
	}
	return out, total, nil
}

// Resend makes a delivery pending again.
func (s *Outbox) Resend(ctx context.Context, org, id string, now time.Time) (Delivery, error) {
	var d deliveryDoc
	err := s.deliveries.FindOneAndUpdate(ctx, docstore.And(docstore.ID(id), docstore.Eq("organisation", org)), nil,
		docstore.Set("status", Pending).Set("attempts", 0).Set("nextAttempt", docstore.Millis(now)).Set("lastError", ""),
		docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return Delivery{}, ErrDeliveryNotFound
	}
	if err != nil {
		return Delivery{}, err
	}
	return d.delivery(), nil
}

// Backlog counts the pending deliveries and finds the oldest.
func (s *Outbox) Backlog(ctx context.Context) (int64, time.Time, error) {
	f := docstore.Eq("status", Pending)
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
