package events_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
)

// headCounter counts the reads of the first pending delivery of the endpoints in watch.
type headCounter struct {
	events.WebhookStore
	watch map[string]bool // written before the sender starts, read only afterwards
	reads atomic.Int64
}

func (h *headCounter) Head(ctx context.Context, endpoint string) (events.Delivery, error) {
	if h.watch[endpoint] {
		h.reads.Add(1)
	}
	return h.WebhookStore.Head(ctx, endpoint)
}

// holdingReceiver answers 500 to every delivery, after holding it until release is closed; it counts the
// deliveries it holds at once.
type holdingReceiver struct {
	release        chan struct{}
	hits, now, max atomic.Int64
}

func (r *holdingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	n := r.now.Add(1)
	for m := r.max.Load(); n > m && !r.max.CompareAndSwap(m, n); m = r.max.Load() {
	}
	select {
	case <-r.release:
	case <-req.Context().Done():
	}
	r.now.Add(-1)
	w.WriteHeader(http.StatusInternalServerError)
}

// waitFor polls cond until it holds (deadline 60 s: the sender works 300 endpoints on a loaded machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation: the deadline bounds it
	}
}

// Issue 28: one organisation's failing webhooks (300, the probe's) cut another's deliveries. The sender runs
// at most MaxInFlightPerOrg (2) attempts of one organisation at once, so the other's deliveries go out while
// 2 of the first's hang; and an endpoint whose delivery waits for its retry is not read again until then, so
// 300 endpoints in backoff cost the rounds that deliver the other organisation nothing.
func TestWebhooks_OneOrganisationsFailingEndpointsDoNotHoldTheOthers(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	l, err := events.NewEventLog(ctx, db, events.LogSpec("audit"))
	if err != nil {
		t.Fatal(err)
	}
	ob, err := events.NewOutbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	store := &headCounter{WebhookStore: ob, watch: map[string]bool{}}
	bus := events.NewBus(l, store, nil, events.NewMetrics("test", "audit"), events.Config{Webhooks: events.WebhookConfig{
		AllowPrivate: true, MaxEndpoints: 300, MaxAttempts: 5, Timeout: 30 * time.Second,
		BackoffMin: time.Hour, BackoffMax: time.Hour, Tick: 20 * time.Millisecond}}, nil)

	noisy := &holdingReceiver{release: make(chan struct{})}
	noisySrv := httptest.NewServer(noisy)
	t.Cleanup(noisySrv.Close)
	var quietHits atomic.Int64
	quietSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { quietHits.Add(1) }))
	t.Cleanup(quietSrv.Close)
	t.Cleanup(func() {
		select {
		case <-noisy.release:
		default:
			close(noisy.release) // before the servers close: they wait for their requests
		}
	})

	w := bus.Webhooks()
	noisyURL, quietURL := noisySrv.URL, quietSrv.URL
	for range 300 {
		id := events.NewEndpointID()
		store.watch[id] = true
		if _, err := w.Create(ctx, "noisy", "admin", id, events.EndpointInput{URL: &noisyURL}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Create(ctx, "quiet", "admin", events.NewEndpointID(), events.EndpointInput{URL: &quietURL}); err != nil {
		t.Fatal(err)
	}
	record := func(org, object string) {
		t.Helper()
		now := time.Now().UTC().Truncate(time.Millisecond)
		if err := bus.Record(ctx, []events.Event{{ID: bus.NewID(now), Operation: events.Creation, ObjectType: "case",
			ObjectID: object, Org: org, User: "admin", Date: now}}); err != nil {
			t.Fatal(err)
		}
	}
	record("noisy", "n1") // 300 deliveries

	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Add(1)
	go func() { defer running.Done(); bus.Sender().Run(runCtx) }()
	t.Cleanup(func() { stop(); running.Wait() })

	// The noisy organisation's attempts hang, two at a time; the quiet one's deliveries go out meanwhile.
	waitFor(t, "two noisy deliveries under way", func() bool { return noisy.now.Load() >= 2 })
	for i := range 5 {
		record("quiet", "q"+string(rune('0'+i)))
	}
	waitFor(t, "the quiet organisation's 5 deliveries", func() bool { return quietHits.Load() == 5 })
	if n := noisy.now.Load(); n != 2 {
		t.Fatalf("%d noisy deliveries under way, want the 2 still held", n)
	}
	if m := noisy.max.Load(); m != 2 {
		t.Fatalf("%d attempts of one organisation at once, want at most 2", m)
	}

	// Every noisy endpoint fails once and waits an hour for its retry.
	close(noisy.release)
	waitFor(t, "one attempt per noisy endpoint", func() bool { return noisy.hits.Load() == 300 })
	if m := noisy.max.Load(); m > 2 {
		t.Fatalf("%d attempts of one organisation at once, want at most 2", m)
	}
	// Ten rounds at least deliver ten quiet events one after the other: they read no waiting endpoint's head
	// again (at most once each, after its own attempt; 3,000 reads when every round read them all).
	store.reads.Store(0)
	for i := range 10 {
		record("quiet", "r"+string(rune('0'+i)))
		want := int64(6 + i)
		waitFor(t, "a quiet delivery", func() bool { return quietHits.Load() == want })
	}
	t.Logf("head reads of the waiting endpoints while 10 quiet events went out: %d", store.reads.Load())
	if n := store.reads.Load(); n > 300 {
		t.Fatalf("the rounds that delivered 10 quiet events read the waiting noisy endpoints %d times", n)
	}
	if n := noisy.hits.Load(); n != 300 {
		t.Fatalf("%d noisy attempts, want 300 (each endpoint's retry is an hour away)", n)
	}
}
