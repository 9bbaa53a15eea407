package auth

import (
	"strings"
	"sync"
	"time"
)

// Throttle counts failed logins per user and per client address within a sliding window, so that password
// guessing gets 429 after a few tries. It lives in memory: each instance of a service counts on its own.
type Throttle struct {
	mu      sync.Mutex
	perUser int
	perAddr int
	window  time.Duration
	now     func() time.Time
	fails   map[string][]time.Time
}

// NewThrottle allows perUser failures per login and perAddr per address within window (0 disables one).
func NewThrottle(perUser, perAddr int, window time.Duration, now func() time.Time) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{perUser: perUser, perAddr: perAddr, window: window, now: now, fails: map[string][]time.Time{}}
}

func userKey(u string) string { return "u:" + strings.ToLower(u) }
func addrKey(a string) string { return "a:" + a }

// recent drops the failures of key older than the window and returns those left. Called with mu held.
func (t *Throttle) recent(key string, now time.Time) []time.Time {
	list := t.fails[key]
	i := 0
	for i < len(list) && now.Sub(list[i]) >= t.window {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(t.fails, key)
		return nil
	}
	t.fails[key] = list
	return list
}

// Allow reports whether a login attempt for user from addr may be checked at all.
func (t *Throttle) Allow(user, addr string) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.perUser > 0 && len(t.recent(userKey(user), now)) >= t.perUser {
		return false
	}
	if t.perAddr > 0 && len(t.recent(addrKey(addr), now)) >= t.perAddr {
		return false
	}
	return true
}

// Fail records a failed attempt.
func (t *Throttle) Fail(user, addr string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.fails) > 100000 { // bound memory under a spray of logins: forget what is out of the window
		for k := range t.fails {
			t.recent(k, now)
		}
	}
	for _, k := range []string{userKey(user), addrKey(addr)} {
		if l := t.recent(k, now); len(l) < 1000 {
			t.fails[k] = append(l, now)
		}
	}
}

// Succeed clears the user's failures after a good login.
func (t *Throttle) Succeed(user string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.fails, userKey(user))
}
