package auth

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"
)

// Counter keeps the attempt counts of a Throttle. Take checks and records in one atomic step, which is what
// makes the throttle hold under concurrency: an attempt is reserved before the password is checked, so N
// parallel attempts can never all pass a check made before any of them is counted.
//
// MemoryCounter serves one instance. A counter kept in the database (a document per key, updated with an
// atomic conditional increment) would let the replicas of a service share their counts; it only has to
// implement this interface.
type Counter interface {
	// Take records one attempt under key unless limit attempts are already recorded within the last window,
	// and reports whether it recorded it.
	Take(ctx context.Context, key string, limit int, window time.Duration) (bool, error)
	// Untake removes one attempt recorded by Take under key (the attempt did not fail after all).
	Untake(ctx context.Context, key string) error
	// Reset forgets every attempt recorded under key.
	Reset(ctx context.Context, key string) error
}

// Throttle limits password attempts: per login *and client address* (so that a stranger guessing a known
// login from elsewhere cannot lock its owner out) and per client address (so that one client cannot spray
// guesses over many logins). An attempt is reserved before the password is checked and counted as a failure
// unless it succeeds; a success clears the failures of that login from that address.
type Throttle struct {
	perUser int
	perAddr int
	window  time.Duration
	counter Counter
}

// NewThrottle allows perUser attempts per login and address and perAddr per address within window (0
// disables one), counted in memory with the clock now (nil = time.Now).
func NewThrottle(perUser, perAddr int, window time.Duration, now func() time.Time) *Throttle {
	return NewSharedThrottle(perUser, perAddr, window, NewMemoryCounter(now))
}

// NewSharedThrottle is NewThrottle with its counts kept by c.
func NewSharedThrottle(perUser, perAddr int, window time.Duration, c Counter) *Throttle {
	return &Throttle{perUser: perUser, perAddr: perAddr, window: window, counter: c}
}

// Attempt is a reserved password attempt. Exactly one of Succeeded, Failed or Cancel ends it.
type Attempt struct {
	t          *Throttle
	user, addr string
	keys       []string // the keys Take recorded
}

// Reserve reserves an attempt for login from addr. It answers false, without recording anything, when the
// login from that address or the address itself has used up its attempts.
func (t *Throttle) Reserve(ctx context.Context, login, addr string) (*Attempt, bool, error) {
	a := &Attempt{t: t, user: userKey(login, addr), addr: addrKey(addr)}
	if t == nil {
		return a, true, nil
	}
	for _, k := range []struct {
		key   string
		limit int
	}{{a.user, t.perUser}, {a.addr, t.perAddr}} {
		if k.limit <= 0 {
			continue
		}
		ok, err := t.counter.Take(ctx, k.key, k.limit, t.window)
		if err != nil || !ok {
			a.Cancel(ctx)
			return nil, false, err
		}
		a.keys = append(a.keys, k.key)
	}
	return a, true, nil
}

// Succeeded ends an attempt whose password was right: the failures of that login from that address are
// forgotten and the attempt does not count against the address.
func (a *Attempt) Succeeded(ctx context.Context) {
	if a == nil || a.t == nil {
		return
	}
	_ = a.t.counter.Reset(ctx, a.user)
	if a.hasKey(a.addr) {
		_ = a.t.counter.Untake(ctx, a.addr)
	}
}

// Failed ends an attempt whose password was wrong: the reservation stays as a failure.
func (a *Attempt) Failed(context.Context) {}

// Cancel ends an attempt that checked nothing (an internal error): the reservation is given back.
func (a *Attempt) Cancel(ctx context.Context) {
	if a == nil || a.t == nil {
		return
	}
	for _, k := range a.keys {
		_ = a.t.counter.Untake(ctx, k)
	}
	a.keys = nil
}

func (a *Attempt) hasKey(k string) bool {
	for _, x := range a.keys {
		if x == k {
			return true
		}
	}
	return false
}

// userKey is the key of a login tried from an address.
func userKey(login, addr string) string {
	return "u:" + strings.ToLower(login) + "\x00" + addrKey(addr)
}

// addrKey is the key of a client address. An IPv6 client usually holds a whole /64, so that is what counts.
func addrKey(a string) string {
	if ip := net.ParseIP(a); ip != nil && ip.To4() == nil {
		return "a:" + ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return "a:" + a
}

// MemoryCounter is a Counter in memory, with a sliding window per key.
type MemoryCounter struct {
	mu    sync.Mutex
	now   func() time.Time
	times map[string][]time.Time
}

// maxKeys bounds the memory of a MemoryCounter under a spray of logins: past it, expired keys are dropped.
const maxKeys = 100000

// NewMemoryCounter returns an empty counter on the clock now (nil = time.Now).
func NewMemoryCounter(now func() time.Time) *MemoryCounter {
	if now == nil {
		now = time.Now
	}
	return &MemoryCounter{now: now, times: map[string][]time.Time{}}
}

// recent drops the attempts of key older than window and returns those left. Called with mu held.
func (m *MemoryCounter) recent(key string, now time.Time, window time.Duration) []time.Time {
	list := m.times[key]
	i := 0
	for i < len(list) && now.Sub(list[i]) >= window {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(m.times, key)
		return nil
	}
	m.times[key] = list
	return list
}

// Take implements Counter.
func (m *MemoryCounter) Take(_ context.Context, key string, limit int, window time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.times) >= maxKeys {
		for k := range m.times {
			m.recent(k, now, window)
		}
	}
	l := m.recent(key, now, window)
	if len(l) >= limit {
		return false, nil
	}
	m.times[key] = append(l, now)
	return true, nil
}

// Untake implements Counter: it removes the key's latest attempt.
func (m *MemoryCounter) Untake(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.times[key]
	switch len(l) {
	case 0:
	case 1:
		delete(m.times, key)
	default:
		m.times[key] = l[:len(l)-1]
	}
	return nil
}

// Reset implements Counter.
func (m *MemoryCounter) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.times, key)
	return nil
}
