// Package eventstest is a webhook receiver for the services' tests: it records what it acknowledges, checks
// each body's signature, and can answer 500 a number of times or be down.
package eventstest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/events"
)

// Receiver is an HTTP server playing a webhook endpoint.
type Receiver struct {
	Srv    *httptest.Server
	secret string
	fail   atomic.Int64 // answer 500 while positive (decremented per request)
	hits   atomic.Int64

	mu  sync.Mutex
	got []map[string]any
	bad []map[string]any // bodies whose signature did not match
}

// NewReceiver starts a receiver that checks signatures with secret ("" = unsigned) until t ends.
func NewReceiver(t testing.TB, secret string) *Receiver {
	return NewReceiverOn(t, secret, "127.0.0.1:0")
}

// NewReceiverOn starts a receiver listening on addr (a fixed address lets a test bring it back after Close).
func NewReceiverOn(t testing.TB, secret, addr string) *Receiver {
	t.Helper()
	r := &Receiver{secret: secret}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	r.Srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.Srv.Listener.Close()
	r.Srv.Listener = l
	r.Srv.Start()
	t.Cleanup(r.Srv.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	b, _ := io.ReadAll(req.Body)
	if r.fail.Add(-1) >= 0 {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	ok := true
	if r.secret != "" {
		m := hmac.New(sha256.New, []byte(r.secret))
		m.Write(b)
		ok = hmac.Equal([]byte(req.Header.Get(events.SignatureHeader)), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		r.bad = append(r.bad, v)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.got = append(r.got, v)
}

// URL is the receiver's address.
func (r *Receiver) URL() string { return r.Srv.URL }

// Fail makes the next n requests answer 500.
func (r *Receiver) Fail(n int64) { r.fail.Store(n) }

// Hits counts the requests received, answered or not.
func (r *Receiver) Hits() int64 { return r.hits.Load() }

// Wait waits up to timeout until the receiver acknowledged a body for which ok holds, and returns it; it fails
// t at the deadline.
func (r *Receiver) Wait(t testing.TB, timeout time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		for _, v := range r.got {
			if ok(v) {
				r.mu.Unlock()
				return v
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got no such event within %s", timeout)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Count counts the acknowledged bodies for which ok holds.
func (r *Receiver) Count(ok func(map[string]any) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.got {
		if ok(v) {
			n++
		}
	}
	return n
}

// BadSignatures counts the bodies refused for a wrong or missing signature.
func (r *Receiver) BadSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bad)
}

// Object matches the bodies of an object's events.
func Object(id string) func(map[string]any) bool {
	return func(v map[string]any) bool { return v["objectId"] == id }
}
