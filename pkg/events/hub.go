package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
	orgs    map[string]*orgLog // the recent events of each organisation with an open stream
	cursor  time.Time
	seen    map[string]time.Time // ids delivered in the lookback window
}

// A stream is a cursor in its organisation's log: it holds no events of its own, so its memory does not grow
// with the changes it has not read.
type stream struct {
	user, org string
	next      uint64 // sequence number of the next event of the org log to answer
	last      time.Time
	since     time.Time // events dated before are not the stream's (its creation minus Lookback)
}

// orgLog is a ring of the last StreamBuffer events of an organisation, shared by its streams. Event number s
// is at ring[s%len] once the ring is full, and end is the number of the next event.
type orgLog struct {
	ring    []Event
	end     uint64
	wake    chan struct{} // closed and replaced when events arrive
	streams int
}

func (o *orgLog) first() uint64 { return o.end - uint64(len(o.ring)) }

func (o *orgLog) add(e Event, size int) {
	if len(o.ring) < size {
		o.ring = append(o.ring, e)
	} else {
		o.ring[o.end%uint64(size)] = e
	}
	o.end++
}

// Resync is the operation of the marker a stream answer starts with when the stream fell behind: more than
// StreamBuffer events of its organisation came between two of its polls, and the oldest were dropped. Its
// details.missed is how many; the client reloads what it shows.
const Resync = "Resync"

// ErrTooManyStreams is the 429 of a stream the organisation has no room for (StreamMaxPerOrg).
var ErrTooManyStreams = apperr.New(apperr.RateLimited, "too many open streams in this organisation; close idle ones or wait for them to expire")

func newHub(st Log, cfg Config, now func() time.Time) *Hub {
	return &Hub{store: st, cfg: cfg, now: now, kick: make(chan struct{}, 1), streams: map[string]*stream{},
		orgs: map[string]*orgLog{}, seen: map[string]time.Time{}}
}

// Kick makes the tailer read new events now.
func (h *Hub) Kick() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// Create opens a stream for a user working in org and returns its id. A user has at most StreamMaxPerUser
// streams on this replica: a new one closes the user's least recently polled one. An organisation has at most
// StreamMaxPerOrg: past it the answer is ErrTooManyStreams.
func (h *Hub) Create(user, org string) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	var mine []string
	for sid, st := range h.streams {
		if st.user == user && st.org == org {
			mine = append(mine, sid)
		}
	}
	if len(mine) >= h.cfg.StreamMaxPerUser {
		sort.Slice(mine, func(i, j int) bool { return h.streams[mine[i]].last.Before(h.streams[mine[j]].last) })
		for _, sid := range mine[:len(mine)-h.cfg.StreamMaxPerUser+1] {
			h.close(sid)
		}
	}
	o := h.orgs[org]
	if o != nil && o.streams >= h.cfg.StreamMaxPerOrg {
		return "", ErrTooManyStreams
	}
	if o == nil {
		o = &orgLog{wake: make(chan struct{})}
		h.orgs[org] = o
	}
	o.streams++
	h.streams[id] = &stream{user: user, org: org, next: o.end, last: now, since: now.Add(-h.cfg.Lookback)}
	return id, nil
}

// close drops a stream, and its organisation's log with its last stream. Called with mu held.
func (h *Hub) close(id string) {
	st, ok := h.streams[id]
	if !ok {
		return
	}
	delete(h.streams, id)
	if o := h.orgs[st.org]; o != nil {
		if o.streams--; o.streams <= 0 {
			delete(h.orgs, st.org)
		}
	}
}

// Count returns the number of open streams.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// Buffered returns the number of events held for the streams (at most StreamBuffer per organisation with an
// open stream).
func (h *Hub) Buffered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, o := range h.orgs {
		n += len(o.ring)
	}
	return n
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
	o := h.orgs[st.org]
	wake := o.wake
	has := st.next < o.end
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

// take returns the stream's events not answered yet (a Resync marker first when some were dropped) and moves
// its cursor past them.
func (h *Hub) take(id string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.streams[id]
	if !ok {
		return nil
	}
	now := h.now()
	st.last = now
	o := h.orgs[st.org]
	var ev []Event
	from, first := st.next, o.first()
	if from < first {
		from = first
	}
	size := uint64(len(o.ring))
	for s := from; s < o.end; s++ {
		e := o.ring[s%size]
		if !e.Date.Before(st.since) {
			ev = append(ev, e)
		}
	}
	if st.next < first {
		// Dated before the events that follow it, so that it comes first in the answer's order.
		date := now
		for _, e := range ev {
			if e.Date.Before(date) {
				date = e.Date
			}
		}
		marker := Event{ID: fmt.Sprintf("resync-%s-%d", id, first), Operation: Resync, ObjectType: "stream",
			ObjectID: id, Org: st.org, Date: date.Add(-time.Millisecond), Details: map[string]any{"missed": first - st.next}}
		ev = append([]Event{marker}, ev...)
	}
	st.next = o.end
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
		// A stream sees its creator's organisation only; inside it every member may read every record.
		if o := h.orgs[e.Org]; o != nil {
			o.add(e, h.cfg.StreamBuffer)
			close(o.wake)
			o.wake = make(chan struct{})
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
			h.close(id)
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
