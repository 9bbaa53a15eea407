package events

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/ids"
)

// Config tunes a bus.
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
	// follow the first (default 50 ms: a change's records, written within its request, reach the poll together,
	// and a waiting poll still answers within 100 ms of the change); Idle drops a stream nobody polled for that long (default 5 min).
	Refresh, Window, Idle time.Duration
	// StreamMaxPerUser bounds the open streams of one user in one organisation on a replica (default 20): a new
	// one closes the user's least recently polled. StreamMaxPerOrg bounds an organisation's (default 200): past
	// it, opening one is a 429. StreamBuffer is how many of an organisation's latest events a replica keeps for
	// its streams (default 1000), shared by them: a stream that falls further behind gets a Resync marker
	// instead of the events it missed.
	StreamMaxPerUser, StreamMaxPerOrg, StreamBuffer int
	// Repair is how old a held event must be before the repair sweep finishes its work (default 1 min):
	// younger ones may still be in the hands of the request that holds them.
	Repair time.Duration
	// RepairAllAtStart repairs every held event at start, whatever its age: for a database only this process
	// writes (the embedded one), where a held event at start is always a crash's orphan.
	RepairAllAtStart bool
	// Confirm tells the repair sweep what a held event became: the event to queue (ok) or nothing (the change
	// did not happen: the event is dropped). Nil confirms every held event as it is.
	Confirm  func(ctx context.Context, e Event) (Event, bool, error)
	Webhooks WebhookConfig
	Log      *slog.Logger
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
	def(&c.Window, 50*time.Millisecond)
	def(&c.Idle, 5*time.Minute)
	def(&c.Repair, time.Minute)
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defInt(&c.StreamMaxPerUser, 20)
	defInt(&c.StreamMaxPerOrg, 200)
	defInt(&c.StreamBuffer, 1000)
	c.Webhooks.defaults()
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Bus records events in a Log, wakes the streams and queues the webhook deliveries of each event in the
// outbox (WebhookStore).
//
// No multi-document transaction joins an event and its deliveries (DECISIONS.md), so an event that has
// deliveries is written held, its deliveries are queued, and it is released; a crash in between leaves it
// held, and the repair sweep (at start and every Repair interval) queues its deliveries again (queueing is
// idempotent: a delivery's id is its event's id and its endpoint's) and releases it. An event without
// deliveries is written released, in one write.
type Bus struct {
	log     Log
	hooks   WebhookStore
	cfg     Config
	now     func() time.Time
	ids     ids.Generator
	hub     *Hub
	sender  *Sender
	webhook *Webhooks
	Metrics *Metrics
}

// NewBus returns the bus. hooks may be nil (no webhooks); m names the metrics (NewMetrics).
func NewBus(l Log, hooks WebhookStore, sealer Sealer, m *Metrics, cfg Config, now func() time.Time) *Bus {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	b := &Bus{log: l, hooks: hooks, cfg: cfg, now: now, Metrics: m}
	b.hub = newHub(l, cfg, now)
	if hooks != nil {
		b.sender = newSender(hooks, sealer, cfg.Webhooks, m, cfg.Log, now)
		b.webhook = &Webhooks{store: hooks, sender: b.sender, sealer: sealer, allowPrivate: cfg.Webhooks.AllowPrivate,
			maxEndpoints: cfg.Webhooks.MaxEndpoints, now: now, ids: &b.ids}
	}
	return b
}

// NewID returns a new event id for an event dated t.
func (b *Bus) NewID(t time.Time) string { return b.ids.New(t) }

// Hub is the bus's stream hub.
func (b *Bus) Hub() *Hub { return b.hub }

// Sender is the webhook sender (nil without webhooks).
func (b *Bus) Sender() *Sender { return b.sender }

// Webhooks manages the endpoints (nil without webhooks).
func (b *Bus) Webhooks() *Webhooks { return b.webhook }

// Record writes events, wakes the streams and queues their webhook deliveries.
func (b *Bus) Record(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	var ds []Delivery
	if b.sender != nil {
		var err error
		if ds, err = b.sender.plan(ctx, evs); err != nil {
			b.Metrics.recordFailures.Add(float64(len(evs)))
			return fmt.Errorf("plan webhook deliveries: %w", err)
		}
	}
	if err := b.log.InsertEvents(ctx, evs, len(ds) > 0); err != nil {
		b.Metrics.recordFailures.Add(float64(len(evs)))
		return fmt.Errorf("record events: %w", err)
	}
	if len(ds) == 0 {
		b.recorded(evs)
		return nil
	}
	err := b.queue(ctx, evs, ds)
	b.recorded(evs) // after the release: the streams' tail skips held events
	return err
}

// RecordOnly writes events that no webhook receives (the trail and the streams only), released.
func (b *Bus) RecordOnly(ctx context.Context, evs []Event) error {
	if err := b.log.InsertEvents(ctx, evs, false); err != nil {
		b.Metrics.recordFailures.Add(float64(len(evs)))
		return fmt.Errorf("record events: %w", err)
	}
	b.recorded(evs)
	return nil
}

// Hold writes events held: their change is about to be made, and Release (or Drop when it was not made)
// follows. A crash in between leaves them to the repair sweep and its Confirm.
func (b *Bus) Hold(ctx context.Context, evs []Event) error {
	if err := b.log.InsertEvents(ctx, evs, true); err != nil {
		b.Metrics.recordFailures.Add(float64(len(evs)))
		return fmt.Errorf("record events: %w", err)
	}
	return nil
}

// Recording is the events of a change that the change's store writes with it (RecordWith).
type Recording struct {
	b   *Bus
	evs []Event
	ds  []Delivery
	// Insertions write the events: held when they have webhook deliveries to queue, released otherwise.
	Insertions []docstore.Insertion
}

// RecordWith plans the webhook deliveries of evs and returns the insertions that write them, for a caller
// that stores them with its own change in one docstore.DB.InsertAll, before the change's documents (on
// MongoDB they are written in order), so that the change is never stored without its events. Events with
// deliveries are written held, the others released (as Record writes them). Once the change is stored,
// Stored finishes them; when it was not, Drop removes them.
func (b *Bus) RecordWith(ctx context.Context, evs []Event) (*Recording, error) {
	var ds []Delivery
	if b.sender != nil {
		var err error
		if ds, err = b.sender.plan(ctx, evs); err != nil {
			return nil, fmt.Errorf("plan webhook deliveries: %w", err)
		}
	}
	ins, err := b.log.Insertions(evs, len(ds) > 0)
	if err != nil {
		return nil, err
	}
	return &Recording{b: b, evs: evs, ds: ds, Insertions: ins}, nil
}

// RecordOnlyWith is RecordWith for events that no webhook receives (RecordOnly's): written released.
func (b *Bus) RecordOnlyWith(evs []Event) (*Recording, error) {
	ins, err := b.log.Insertions(evs, false)
	if err != nil {
		return nil, err
	}
	return &Recording{b: b, evs: evs, Insertions: ins}, nil
}

// Stored finishes the events once their change is stored: held ones have their deliveries queued and are
// released; the streams are woken.
func (p *Recording) Stored(ctx context.Context) error {
	var err error
	if len(p.ds) > 0 {
		err = p.b.queue(ctx, p.evs, p.ds)
	}
	p.b.recorded(p.evs) // after the release: the streams' tail skips held events
	return err
}

// Release queues the webhook deliveries of held events, releases them and wakes the streams.
func (b *Bus) Release(ctx context.Context, evs []Event) error {
	var ds []Delivery
	if b.sender != nil {
		var err error
		if ds, err = b.sender.plan(ctx, evs); err != nil {
			return fmt.Errorf("plan webhook deliveries: %w", err)
		}
	}
	err := b.queue(ctx, evs, ds)
	b.recorded(evs) // after the release: the streams' tail skips held events
	return err
}

// Drop deletes held events whose change was not made.
func (b *Bus) Drop(ctx context.Context, evs []Event) error {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return b.log.DeleteEvents(ctx, ids)
}

func (b *Bus) recorded(evs []Event) {
	for _, e := range evs {
		b.Metrics.events.WithLabelValues(e.ObjectType, e.Operation).Inc()
	}
	b.hub.Kick()
}

// queue enqueues ds and releases evs.
func (b *Bus) queue(ctx context.Context, evs []Event, ds []Delivery) error {
	if len(ds) > 0 {
		if err := b.hooks.Enqueue(ctx, ds); err != nil {
			return fmt.Errorf("queue webhook deliveries: %w", err)
		}
	}
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	if err := b.log.Release(ctx, ids); err != nil {
		return fmt.Errorf("release events: %w", err)
	}
	if b.sender != nil && len(ds) > 0 {
		b.sender.Kick()
	}
	return nil
}

// Repair finishes the events held since before t: confirmed ones have their deliveries queued and are
// released, the others are dropped. It returns how many it queued.
func (b *Bus) Repair(ctx context.Context, before time.Time) (int, error) {
	n := 0
	for {
		evs, err := b.log.Held(ctx, before, 100)
		if err != nil {
			return n, err
		}
		var keep, drop []Event
		for _, e := range evs {
			if b.cfg.Confirm == nil {
				keep = append(keep, e)
				continue
			}
			c, ok, err := b.cfg.Confirm(ctx, e)
			if err != nil {
				return n, err
			}
			if ok {
				keep = append(keep, c)
			} else {
				drop = append(drop, e)
			}
		}
		if len(drop) > 0 {
			if err := b.Drop(ctx, drop); err != nil {
				return n, err
			}
		}
		if len(keep) > 0 {
			if err := b.Release(ctx, keep); err != nil {
				return n, err
			}
		}
		n += len(keep)
		if len(evs) < 100 {
			return n, nil
		}
	}
}

// Run runs the background work until ctx ends: the stream tailer, the webhook sender, the repair sweep and
// the retention sweep.
func (b *Bus) Run(ctx context.Context) {
	done := make(chan struct{}, 4)
	go func() { b.hub.Run(ctx); done <- struct{}{} }()
	go func() { b.repairLoop(ctx); done <- struct{}{} }()
	n := 2
	if b.sender != nil {
		n++
		go func() { b.sender.Run(ctx); done <- struct{}{} }()
	}
	if b.cfg.Retention > 0 {
		n++
		go func() { b.retain(ctx); done <- struct{}{} }()
	}
	for range n {
		<-done
	}
}

// repairLoop repairs at start (the events held for longer than Repair, or all with RepairAllAtStart) and then
// every Repair interval.
func (b *Bus) repairLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.Repair)
	defer t.Stop()
	before := b.now().Add(-b.cfg.Repair)
	if b.cfg.RepairAllAtStart {
		before = b.now().Add(time.Millisecond)
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := b.Repair(cctx, before)
		cancel()
		if err != nil && ctx.Err() == nil {
			b.cfg.Log.Error("event repair", "err", err)
		} else if n > 0 {
			b.cfg.Log.Info("event repair: deliveries queued for events a crash left held", "events", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before = b.now().Add(-b.cfg.Repair)
	}
}

// retain deletes the events older than the retention, at start and then hourly.
func (b *Bus) retain(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := b.log.DeleteBefore(cctx, b.now().Add(-b.cfg.Retention))
		cancel()
		if err != nil && ctx.Err() == nil {
			b.cfg.Log.Error("event retention", "err", err)
		} else if n > 0 {
			b.cfg.Log.Info("event retention", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
