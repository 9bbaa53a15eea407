package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	"github.com/openir/platform/pkg/apperr"
)

// ErrStreamNotFound is returned for an unknown or expired stream, or another user's.
var ErrStreamNotFound = apperr.New(apperr.NotFound, "Stream not found")

// Hub holds the live streams of this replica and feeds them from the event log.
//
// Fan-out across replicas: every replica tails the shared event collection by date (EventsSince from the last
// date seen minus Lookback, deduplicated by event id), every Poll interval; a replica that records an event
// wakes its own tailer at once (Kick), so a stream on the replica that made the change sees it in the time of
// one query, and a stream on another replica within Poll. Streams hold nothing durable: they start empty and
// vanish on restart; the audit trail is the record. While no stream is open the tailer reads nothing (it only
// moves its cursor to now): reading and decoding the lookback window on every recorded event cost a third of
// the job pipeline's CPU with nobody listening. A stream gets the events dated from Lookback before its
// creation on, whichever tail reads them.
type Hub struct {
	store Log
	cfg   Config
	now   func() time.Time
	kick  chan struct{}

	mu      sync.Mutex
	streams map[string]*stream
	cursor  time.Time
	seen    map[string]time.Time // ids delivered in the lookback window
}

type stream struct {
	user, org string
	events    []Event
	wake      chan struct{} // closed and replaced when events arrive
	last      time.Time
	since     time.Time // events dated before are not the stream's (its creation minus Lookback)
}

func newHub(st Log, cfg Config, now func() time.Time) *Hub {
	return &Hub{store: st, cfg: cfg, now: now, kick: make(chan struct{}, 1), streams: map[string]*stream{},
		seen: map[string]time.Time{}}
}

// Kick makes the tailer read new events now.
func (h *Hub) Kick() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// Create opens a stream for a user working in org and returns its id.
func (h *Hub) Create(user, org string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	h.streams[id] = &stream{user: user, org: org, wake: make(chan struct{}), last: now, since: now.Add(-h.cfg.Lookback)}
	return id
}

// Count returns the number of open streams.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// Poll waits up to the refresh interval for events of the stream, then for the batch window, and returns them
// (none when the interval passed without any).
func (h *Hub) Poll(ctx context.Context, id, user string) ([]Event, error) {
	h.mu.Lock()
	st, ok := h.streams[id]
	if !ok || st.user != user {
		h.mu.Unlock()
		return nil, ErrStreamNotFound
	}
	st.last = h.now()
	wake := st.wake
	has := len(st.events) > 0
	h.mu.Unlock()

	if !has {
		t := time.NewTimer(h.cfg.Refresh)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return h.take(id), nil
		case <-wake:
		}
	}
	// Let the rest of the change (the same request's other records) arrive.
	w := time.NewTimer(h.cfg.Window)
	defer w.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.C:
	}
	return h.take(id), nil
}

func (h *Hub) take(id string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.streams[id]
	if !ok {
		return nil
	}
	st.last = h.now()
	ev := st.events
	st.events = nil
	return ev
}

// Run tails the event log until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	h.mu.Lock()
	h.cursor = h.now()
	h.mu.Unlock()
	t := time.NewTicker(h.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.kick:
		}
		h.tail(ctx)
	}
}

// tail reads the events since the cursor (minus the lookback) and hands the new ones to the streams.
func (h *Hub) tail(ctx context.Context) {
	h.mu.Lock()
	if len(h.streams) == 0 { // nobody listens: skip the read
		h.cursor = h.now()
		clear(h.seen)
		h.mu.Unlock()
		return
	}
	since := h.cursor.Add(-h.cfg.Lookback)
	h.mu.Unlock()
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		evs, err := h.store.EventsSince(cctx, since, 500)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Log.Warn("stream tail", "err", err)
			}
			return
		}
		h.dispatch(evs)
		if len(evs) < 500 {
			break
		}
		since = evs[len(evs)-1].Date
	}
	h.expire()
}

func (h *Hub) dispatch(evs []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range evs {
		if _, dup := h.seen[e.ID]; dup {
			continue
		}
		h.seen[e.ID] = e.Date
		if e.Date.After(h.cursor) {
			h.cursor = e.Date
		}
		for _, st := range h.streams {
			// A stream sees its creator's organisation only; inside it every member may read every record.
			if st.org != e.Org || e.Date.Before(st.since) {
				continue
			}
			if len(st.events) < 10000 { // a stream nobody reads keeps a bounded backlog
				st.events = append(st.events, e)
			}
			close(st.wake)
			st.wake = make(chan struct{})
		}
	}
	floor := h.cursor.Add(-h.cfg.Lookback)
	for id, d := range h.seen {
		if d.Before(floor) {
			delete(h.seen, id)
		}
	}
}

// expire drops the streams nobody polled within Idle.
func (h *Hub) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, st := range h.streams {
		if h.now().Sub(st.last) > h.cfg.Idle {
			delete(h.streams, id)
		}
	}
}

// Group is one message of a stream answer: an event with base (the first event of its request, the change
// the user made; the others follow from it) and summary (per object type, per operation, how many events the
// request made), as the reference systems' streams send them.
type Group struct {
	Event   Event
	Base    bool
	Summary map[string]map[string]int
}

// Grouped groups events by request in order (of date, then id: an id need not sort by its event's date, as
// analysis-svc's JobFinished, whose id is its job's); events without a request id are groups of one.
func Grouped(evs []Event) []Group {
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].Date.Equal(evs[j].Date) {
			return evs[i].Date.Before(evs[j].Date)
		}
		return evs[i].ID < evs[j].ID
	})
	summaries := map[string]map[string]map[string]int{}
	key := func(e Event) string {
		if e.RequestID == "" {
			return "event:" + e.ID
		}
		return "request:" + e.RequestID
	}
	for _, e := range evs {
		k := key(e)
		if summaries[k] == nil {
			summaries[k] = map[string]map[string]int{}
		}
		if summaries[k][e.ObjectType] == nil {
			summaries[k][e.ObjectType] = map[string]int{}
		}
		summaries[k][e.ObjectType][e.Operation]++
	}
	out := make([]Group, 0, len(evs))
	first := map[string]bool{}
	for _, e := range evs {
		k := key(e)
		out = append(out, Group{Event: e, Base: !first[k], Summary: summaries[k]})
		first[k] = true
	}
	return out
}
