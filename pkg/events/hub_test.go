package events

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/apperr"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testHub(t *testing.T) (*Hub, *testClock) {
	clock := &testClock{t: time.UnixMilli(1_700_000_000_000).UTC()}
	cfg := Config{Window: time.Millisecond, Refresh: time.Millisecond}
	cfg.defaults()
	return newHub(nil, cfg, clock.now), clock
}

// changes hands n events of org, each with a 1 KiB detail, to the streams as the tailer does (500 a read).
func changes(h *Hub, clock *testClock, org string, n int) {
	pad := strings.Repeat("x", 1<<10)
	for i := 0; i < n; i += 500 {
		var evs []Event
		for j := i; j < min(i+500, n); j++ {
			clock.add(time.Millisecond)
			evs = append(evs, Event{ID: fmt.Sprintf("%s-%08d", org, j), Operation: Update, ObjectType: "case",
				ObjectID: "c1", Org: org, Date: clock.now(), Details: map[string]any{"description": pad + fmt.Sprint(j)}})
		}
		h.dispatch(evs)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A user's streams are capped (the least recently polled closes), an organisation's too (429), and idle ones
// expire (issue 28: 300 streams of a read-only user and 10,000 changes took case-svc from 202 to 1,340 MiB).
func TestHub_StreamsAreCapped(t *testing.T) {
	h, clock := testHub(t)
	ctx := context.Background()
	var first string
	for i := range 300 {
		id, err := h.Create("reader", "soc")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = id
		}
		clock.add(time.Millisecond)
	}
	if n := h.Count(); n != h.cfg.StreamMaxPerUser {
		t.Fatalf("300 streams of one user: %d open, want %d", n, h.cfg.StreamMaxPerUser)
	}
	if _, err := h.Poll(ctx, first, "reader"); !errors.Is(err, ErrStreamNotFound) {
		t.Errorf("the user's oldest stream still answers: %v", err)
	}
	// Other members fill the organisation up to its cap; one more is a 429, another organisation is unaffected.
	for i := 0; h.Count() < h.cfg.StreamMaxPerOrg; i++ {
		if _, err := h.Create(fmt.Sprintf("member%d", i/h.cfg.StreamMaxPerUser), "soc"); err != nil {
			t.Fatalf("stream %d: %v", h.Count(), err)
		}
	}
	_, err := h.Create("another", "soc")
	if e := apperr.As(err); e == nil || e.Kind != apperr.RateLimited {
		t.Fatalf("a stream past the organisation's cap: %v, want RateLimited", err)
	}
	if _, err := h.Create("someone", "other-org"); err != nil {
		t.Fatalf("another organisation's stream: %v", err)
	}
	// Nobody polls: every stream expires after Idle, and the organisations' logs go with them.
	clock.add(h.cfg.Idle + time.Second)
	h.expire()
	if n := h.Count(); n != 0 {
		t.Errorf("%d streams left after Idle", n)
	}
	if len(h.orgs) != 0 {
		t.Errorf("%d organisation logs left without streams", len(h.orgs))
	}
}

// The events held for streams are bounded whatever the number of streams and of changes: a stream that falls
// behind gets a Resync marker, then the latest events.
func TestHub_StreamMemoryIsBounded(t *testing.T) {
	h, clock := testHub(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < h.cfg.StreamMaxPerOrg; i++ {
		id, err := h.Create(fmt.Sprintf("reader%d", i/h.cfg.StreamMaxPerUser), "soc")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	before := heapInUse()
	changes(h, clock, "soc", 10000)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d streams, 10,000 changes of 1 KiB: %d events held, heap grown by %.1f MiB", len(ids), h.Buffered(), float64(grown)/(1<<20))
	if n := h.Buffered(); n > h.cfg.StreamBuffer {
		t.Errorf("%d events held, want at most %d", n, h.cfg.StreamBuffer)
	}
	if grown > 32<<20 {
		t.Errorf("the heap grew by %d MiB, want under 32 MiB", grown>>20)
	}

	evs, err := h.Poll(ctx, ids[0], "reader0")
	if err != nil {
		t.Fatal(err)
	}
	msgs := Messages(evs)
	if len(msgs) != h.cfg.StreamBuffer+1 {
		t.Fatalf("%d messages, want the marker and %d events", len(msgs), h.cfg.StreamBuffer)
	}
	if m := msgs[0]; m.Operation != Resync || fmt.Sprint(m.Details["missed"]) != "9000" {
		t.Errorf("first message %s %v, want Resync with missed 9000", m.Operation, m.Details)
	}
	if m := msgs[1]; m.ID != "soc-00009000" {
		t.Errorf("first event after the marker %s, want soc-00009000", m.ID)
	}
	// Caught up: the next change comes alone, without a marker.
	changes(h, clock, "soc", 1)
	evs, err = h.Poll(ctx, ids[0], "reader0")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Operation == Resync {
		t.Errorf("after catching up: %v, want the one new event", evs)
	}
	// Another user cannot read the stream.
	if _, err := h.Poll(ctx, ids[0], "reader1"); !errors.Is(err, ErrStreamNotFound) {
		t.Errorf("another user's poll: %v", err)
	}
}
