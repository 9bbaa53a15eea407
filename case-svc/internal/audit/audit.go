// Package audit owns what case-svc tells about its changes: the audit trail (one record per change of a case,
// task, log, observable, alert, template, custom field, user, organisation, job or action), the live streams
// that follow it, and the webhooks delivered from a durable outbox. It sees the changes through decorators of
// the cases stores (wrap.go), so every write path of the domain is audited without a hook in each service
// method; who made the change and in which request comes from the context (WithActor, set by the API).
//
// The record is written right after the change, in the same service call, before the request answers: it is
// not one transaction with the change (DECISIONS.md rules out multi-document transactions). A crash between
// the change and the record loses that record (the change stays); an insert that fails makes the request
// answer 500 although the change was made, so that the failure is seen. The webhook deliveries of an event are
// queued right after its record, with the same caveat.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync/atomic"
	"time"

	"crypto/rand"
	"encoding/binary"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Operations of an event.
const (
	Creation = "Creation"
	Update   = "Update"
	Delete   = "Delete"
)

// Event is one change: what changed (objectType, objectId, rootId: the case or alert it belongs to), how
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

// Store persists events.
type Store interface {
	InsertEvent(ctx context.Context, e Event) error
	// InsertEvents stores several events at once (the tasks of a new case).
	InsertEvents(ctx context.Context, es []Event) error
	// Events lists the events matching f (the caller's organisation is part of f).
	Events(ctx context.Context, f search.Node, p search.Page) ([]Event, int64, error)
	// EventsSince returns the events dated at or after since, oldest first, at most limit.
	EventsSince(ctx context.Context, since time.Time, limit int) ([]Event, error)
	// DeleteBefore removes the events older than t.
	DeleteBefore(ctx context.Context, t time.Time) (int64, error)
}

// Fields is the allow-list of audit searches and sorts.
var Fields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "operation": {Path: "operation"}, "objectType": {Path: "objectType"},
	"objectId": {Path: "objectId"}, "rootId": {Path: "rootId"}, "requestId": {Path: "requestId"},
	"user": {Path: "user"}, "createdBy": {Path: "user"}, "_createdBy": {Path: "user"},
	"date": {Path: "date", Type: search.Number}, "startDate": {Path: "date", Type: search.Number},
	"createdAt": {Path: "date", Type: search.Number}, "_createdAt": {Path: "date", Type: search.Number},
}

// Actor is who makes the changes of a request.
type Actor struct {
	User      string
	Org       string
	RequestID string
}

type actorKey struct{}

// WithActor returns ctx carrying the actor of its changes.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns the actor ctx carries.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// Renderer writes a domain record (cases.Case, cases.Task…) as the API shows it.
type Renderer func(v any) map[string]any

// Config tunes the service.
type Config struct {
	// Retention: events older than this are deleted in the background; 0 keeps them.
	Retention time.Duration
	// Poll is how often the stream tailer reads new events written by other replicas (default 1 s); events of
	// this replica wake it at once.
	Poll time.Duration
	// Lookback is how far before the last seen event the tailer reads again, for events committed late or
	// dated by a replica whose clock is behind (default 2 s).
	Lookback time.Duration
	// Refresh is how long a stream poll waits for an event (default 60 s); Window batches the events that
	// follow the first (default 200 ms); Idle drops a stream nobody polled for that long (default 5 min).
	Refresh, Window, Idle time.Duration
	Webhooks              WebhookConfig
	Log                   *slog.Logger
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Poll, time.Second)
	def(&c.Lookback, 2*time.Second)
	def(&c.Refresh, time.Minute)
	def(&c.Window, 200*time.Millisecond)
	def(&c.Idle, 5*time.Minute)
	c.Webhooks.defaults()
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Service records events, serves them, streams them and delivers them to webhooks.
type Service struct {
	store   Store
	hooks   WebhookStore
	cfg     Config
	render  atomic.Pointer[Renderer]
	now     func() time.Time
	seq     atomic.Uint64
	hub     *Hub
	sender  *Sender
	Metrics *Metrics
}

// New returns the service. hooks may be nil (no webhooks).
func New(st Store, hooks WebhookStore, sealer Sealer, cfg Config, now func() time.Time) *Service {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	s := &Service{store: st, hooks: hooks, cfg: cfg, now: now, Metrics: newMetrics()}
	s.hub = newHub(st, cfg, now)
	if hooks != nil {
		s.sender = newSender(hooks, sealer, cfg.Webhooks, s.Metrics, cfg.Log, now)
	}
	return s
}

// SetRenderer sets how records are written into events (the API's rendering); before it is set, records are
// written as their JSON encoding.
func (s *Service) SetRenderer(r Renderer) { s.render.Store(&r) }

// Hub is the service's stream hub.
func (s *Service) Hub() *Hub { return s.hub }

// Sender is the webhook sender (nil without webhooks).
func (s *Service) Sender() *Sender { return s.sender }

// Run runs the background work until ctx ends: the stream tailer, the webhook sender and the retention sweep.
func (s *Service) Run(ctx context.Context) {
	done := make(chan struct{}, 3)
	go func() { s.hub.Run(ctx); done <- struct{}{} }()
	n := 1
	if s.sender != nil {
		n++
		go func() { s.sender.Run(ctx); done <- struct{}{} }()
	}
	if s.cfg.Retention > 0 {
		n++
		go func() { s.retain(ctx); done <- struct{}{} }()
	}
	for range n {
		<-done
	}
}

// retain deletes the events older than the retention, at start and then hourly.
func (s *Service) retain(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := s.store.DeleteBefore(cctx, s.now().Add(-s.cfg.Retention))
		cancel()
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("audit retention", "err", err)
		} else if n > 0 {
			s.cfg.Log.Info("audit retention", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// newEventID returns an id that sorts by date, then by the order of this process's events, then at random.
func (s *Service) newEventID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%011x%08x%08x", now.UnixMilli(), s.seq.Add(1)&0xffffffff, binary.BigEndian.Uint32(b[:]))
}

// change is one change seen by a store decorator.
type change struct {
	op         string
	objectType string
	id, root   string
	org        string // the record's organisation, "" for platform records (custom fields, users, organisations)
	by         string // who the store call names, when it does
	obj        any    // the record after the change (before it for a deletion)
	before     any    // the record before an update whose changed fields are not named, to compare
	fields     []string
}

// record writes the event of one change, wakes the streams and queues the webhook deliveries.
func (s *Service) record(ctx context.Context, c change) error {
	return s.recordAll(ctx, []change{c})
}

// recordAll writes the events of several changes of one call at once.
func (s *Service) recordAll(ctx context.Context, cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	evs := make([]Event, len(cs))
	for i, c := range cs {
		evs[i] = s.event(ctx, c)
	}
	var err error
	if len(evs) == 1 {
		err = s.store.InsertEvent(ctx, evs[0])
	} else {
		err = s.store.InsertEvents(ctx, evs)
	}
	if err != nil {
		s.Metrics.recordFailures.Add(float64(len(evs)))
		return apperr.Wrap(apperr.Internal, "the change was made but its audit record could not be written", err)
	}
	for _, e := range evs {
		s.Metrics.events.WithLabelValues(e.ObjectType, e.Operation).Inc()
	}
	s.hub.Kick()
	if s.sender != nil {
		if err := s.sender.enqueue(ctx, evs); err != nil {
			return apperr.Wrap(apperr.Internal, "the change was made but its webhooks could not be queued", err)
		}
	}
	return nil
}

// event builds the event of a change.
func (s *Service) event(ctx context.Context, c change) Event {
	a, _ := ActorOf(ctx)
	e := Event{Operation: c.op, ObjectType: c.objectType, ObjectID: c.id, RootID: c.root, User: a.User,
		RequestID: a.RequestID, Org: c.org, Date: s.now().UTC().Truncate(time.Millisecond)}
	if e.Org == "" {
		e.Org = a.Org
	}
	if e.Org == "" {
		e.Org = "admin"
	}
	if e.User == "" {
		e.User = c.by
	}
	if e.User == "" {
		e.User = "system"
	}
	if e.RootID == "" {
		e.RootID = c.id
	}
	e.ID = s.newEventID(e.Date)
	e.Object = s.renderOf(c.obj)
	switch c.op {
	case Creation:
		e.Details = maps.Clone(e.Object)
		for _, k := range []string{"_id", "id", "_type", "createdAt", "createdBy", "updatedAt", "updatedBy"} {
			delete(e.Details, k)
		}
	case Update:
		e.Details = map[string]any{}
		if c.before != nil {
			old := s.renderOf(c.before)
			for k, v := range e.Object {
				if k == "updatedAt" || k == "updatedBy" {
					continue
				}
				if !reflect.DeepEqual(old[k], v) {
					e.Details[k] = v
				}
			}
			for k := range old {
				if _, ok := e.Object[k]; !ok {
					e.Details[k] = nil
				}
			}
		}
		for _, f := range c.fields {
			e.Details[f] = e.Object[f]
		}
	default:
		e.Details = map[string]any{}
	}
	return e
}

// renderOf renders a record, or encodes it as JSON without a renderer.
func (s *Service) renderOf(v any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	if r := s.render.Load(); r != nil {
		if m := (*r)(v); m != nil {
			return m
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	return m
}

// Events lists the events of the caller's organisation matching f.
func (s *Service) Events(ctx context.Context, org string, f search.Node, p search.Page) ([]Event, int64, error) {
	if org == "" {
		return nil, 0, errors.New("audit: no organisation")
	}
	and := search.Node{Op: search.OpAnd, Children: []search.Node{{Op: search.OpEq, Path: "organisation", Value: org}}}
	if f.Op != "" && f.Op != search.OpAll {
		and.Children = append(and.Children, f)
	}
	if len(p.Sort) == 0 {
		p.Sort = []search.SortKey{{Path: "date", Desc: true}}
	}
	return s.store.Events(ctx, and, p)
}
