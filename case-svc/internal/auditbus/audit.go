// Package auditbus is the adapter of case-svc's audit trail (package audit): it records the changes on
// pkg/events's bus, which also feeds the live streams and queues the webhooks in a durable outbox, and it
// implements audit.Service. It sees the changes through decorators of the domain's stores (wrap.go), so every
// write path of the domain is audited without a hook in each service method; who made the change and in
// which request comes from the context (audit.WithActor, set by the API).
//
// The record is written right after the change, in the same service call, before the request answers (or,
// for a request whose handler collects its events with Batch, once its changes are made and before it
// answers, all in one write): it is not one transaction with the change (DECISIONS.md rules out multi-document transactions). A crash between
// the change and the record loses that record (the change stays); an insert that fails makes the request
// answer 500 although the change was made, so that the failure is seen. The webhook deliveries of an event
// cannot be lost that way: an event with deliveries is written held, and the bus's repair sweep queues the
// deliveries of an event a crash left held (pkg/events.Bus).
package auditbus

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
)

// Store persists events: pkg/events's log, and the searches of the audit API.
type Store interface {
	events.Log
	// Events lists the events matching f (the caller's organisation is part of f).
	Events(ctx context.Context, f search.Node, p search.Page) ([]audit.Event, int64, error)
}

// Config tunes the service: pkg/events's (retention, streams, webhooks).
type Config = events.Config

// WebhookConfig tunes delivery (pkg/events).
type WebhookConfig = events.WebhookConfig

var _ audit.Service = (*Service)(nil)

// Service records events, serves them, streams them and delivers them to webhooks (audit.Service).
type Service struct {
	store    Store
	bus      *events.Bus
	render   atomic.Pointer[audit.Renderer]
	onRecord atomic.Pointer[func([]audit.Event)]
	now      func() time.Time
	Metrics  *events.Metrics
}

// New returns the service. hooks may be nil (no webhooks).
func New(st Store, hooks WebhookStore, sealer Sealer, cfg Config, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	m := events.NewMetrics("case", "audit")
	if hooks == nil { // a nil *Outbox in the interface would look like webhooks
		return &Service{store: st, bus: events.NewBus(st, nil, sealer, m, cfg, now), now: now, Metrics: m}
	}
	return &Service{store: st, bus: events.NewBus(st, hooks, sealer, m, cfg, now), now: now, Metrics: m}
}

// SetRenderer sets how records are written into events (the API's rendering); before it is set, records are
// written as their JSON encoding.
func (s *Service) SetRenderer(r audit.Renderer) { s.render.Store(&r) }

// Hub is the service's stream hub.
func (s *Service) Hub() *events.Hub { return s.bus.Hub() }

// CreateStream opens a stream of the hub for user in org (audit.Service).
func (s *Service) CreateStream(user, org string) (string, error) {
	return s.bus.Hub().Create(user, org)
}

// PollStream polls a stream of the hub (audit.Service).
func (s *Service) PollStream(ctx context.Context, id, user string) ([]audit.Event, error) {
	return s.bus.Hub().Poll(ctx, id, user)
}

// Sender is the webhook sender (nil without webhooks).
func (s *Service) Sender() *events.Sender { return s.bus.Sender() }

// Bus is the event bus (record, repair).
func (s *Service) Bus() *events.Bus { return s.bus }

// Run runs the background work until ctx ends: the stream tailer, the webhook sender, the repair sweep and
// the retention sweep.
func (s *Service) Run(ctx context.Context) { s.bus.Run(ctx) }

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

// recordAll writes the events of several changes of one call at once (or adds them to ctx's batch).
func (s *Service) recordAll(ctx context.Context, cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	evs := make([]audit.Event, len(cs))
	for i, c := range cs {
		evs[i] = s.event(ctx, c)
	}
	if b, ok := ctx.Value(batchKey{}).(*batch); ok && b.s == s {
		b.mu.Lock()
		held := !b.written // once written, a late change (work the call left running) is recorded at once
		if held {
			b.evs = append(b.evs, evs...)
		}
		b.mu.Unlock()
		if held {
			return nil
		}
	}
	return s.write(ctx, evs)
}

func (s *Service) write(ctx context.Context, evs []audit.Event) error {
	err := s.bus.Record(ctx, evs)
	// Also after a failure: the events may have been stored (held, for the repair sweep to release).
	if f := s.onRecord.Load(); f != nil {
		(*f)(evs)
	}
	if err != nil {
		return apperr.Wrap(apperr.Internal, "the change was made but its audit record or webhooks could not be written", err)
	}
	return nil
}

// OnRecord sets a function called with the events of each write (it must not block nor keep them): the
// automation engine reads the new events at once instead of at its next poll, from the earliest of their
// dates (an event is dated when its change is made, and may be written after later ones).
func (s *Service) OnRecord(f func([]audit.Event)) { s.onRecord.Store(&f) }

// batch holds the events of the changes made with a context of Batch until they are written.
type batch struct {
	s       *Service
	mu      sync.Mutex
	evs     []audit.Event
	written bool
}

type batchKey struct{}

// Batch returns ctx collecting the events of the changes made with it, and write, which writes them in one
// call of the bus (one insert of the events, one plan and queueing of their webhook deliveries) instead of
// one per store call: a request that makes several changes (a case and its tasks) calls write once they are
// made, whether they all succeeded or not, and before it answers. Write returns the error of writing them;
// changes made with ctx after it (work the call left running) are recorded one call at a time again. It is a
// no-op for a ctx that already collects (the outer Batch writes).
func (s *Service) Batch(ctx context.Context) (context.Context, func() error) {
	if b, ok := ctx.Value(batchKey{}).(*batch); ok && b.s == s {
		return ctx, func() error { return nil }
	}
	b := &batch{s: s}
	return context.WithValue(ctx, batchKey{}, b), func() error {
		b.mu.Lock()
		evs := b.evs
		b.evs, b.written = nil, true
		b.mu.Unlock()
		if len(evs) == 0 {
			return nil
		}
		// The changes are made: their record does not depend on the client still waiting.
		return s.write(context.WithoutCancel(ctx), evs)
	}
}

// event builds the event of a change.
func (s *Service) event(ctx context.Context, c change) audit.Event {
	a, _ := audit.ActorOf(ctx)
	e := audit.Event{Operation: c.op, ObjectType: c.objectType, ObjectID: c.id, RootID: c.root, User: a.User,
		RequestID: a.RequestID, Org: c.org, Date: s.now().UTC().Truncate(time.Millisecond)}
	if e.RequestID == "" {
		e.RequestID = record.CauseOf(ctx) // a job's import or a rule's action (record.WithCause)
	}
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
	e.ID = s.bus.NewID(e.Date)
	e.Object = s.renderOf(c.obj)
	switch c.op {
	case audit.Creation:
		e.Details = maps.Clone(e.Object)
		for _, k := range []string{"_id", "id", "_type", "createdAt", "createdBy", "updatedAt", "updatedBy"} {
			delete(e.Details, k)
		}
	case audit.Update:
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
func (s *Service) Events(ctx context.Context, org string, f search.Node, p search.Page) ([]audit.Event, int64, error) {
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
