package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func reserve(t *testing.T, th *Throttle, login, addr string) (*Attempt, bool) {
	t.Helper()
	a, ok, err := th.Reserve(context.Background(), login, addr)
	if err != nil {
		t.Fatal(err)
	}
	return a, ok
}

func TestThrottle(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	th := NewThrottle(3, 5, time.Minute, func() time.Time { return now })
	for i := range 3 {
		a, ok := reserve(t, th, "Bob", "1.1.1.1")
		if !ok {
			t.Fatalf("attempt %d refused", i)
		}
		a.Failed(ctx)
	}
	if _, ok := reserve(t, th, "bob", "1.1.1.1"); ok {
		t.Fatal("a fourth attempt for the login from the same address (any case) was allowed")
	}
	// A stranger guessing bob's password elsewhere does not lock bob out.
	a, ok := reserve(t, th, "bob", "2.2.2.2")
	if !ok {
		t.Fatal("bob from another address was locked out by the failures of 1.1.1.1")
	}
	a.Succeeded(ctx)
	if _, ok := reserve(t, th, "alice", "1.1.1.1"); !ok {
		t.Fatal("another login from the same address refused before the address limit")
	}
	if a, ok := reserve(t, th, "carol", "1.1.1.1"); !ok {
		t.Fatal("the address limit applied too early")
	} else {
		a.Failed(ctx)
	}
	if _, ok := reserve(t, th, "dave", "1.1.1.1"); ok {
		t.Fatal("the address limit (5 attempts) did not apply")
	}
	now = now.Add(time.Minute)
	if _, ok := reserve(t, th, "bob", "1.1.1.1"); !ok {
		t.Fatal("failures did not expire with the window")
	}
	var none *Throttle
	if _, ok := reserve(t, none, "x", "y"); !ok {
		t.Fatal("a nil throttle refuses")
	}
}

func TestThrottle_SuccessAndCancel(t *testing.T) {
	ctx := context.Background()
	th := NewThrottle(2, 10, time.Minute, nil)
	a, _ := reserve(t, th, "bob", "1.1.1.1")
	a.Failed(ctx)
	a, _ = reserve(t, th, "bob", "1.1.1.1")
	a.Succeeded(ctx)
	for i := range 2 {
		a, ok := reserve(t, th, "bob", "1.1.1.1")
		if !ok {
			t.Fatalf("attempt %d after a success refused: the success did not clear the failures", i)
		}
		a.Cancel(ctx) // an internal error: nothing was checked
	}
	if _, ok := reserve(t, th, "bob", "1.1.1.1"); !ok {
		t.Fatal("cancelled attempts were counted")
	}
}

// IPv6 clients are counted per /64: a client holds the whole prefix.
func TestThrottle_IPv6Prefix(t *testing.T) {
	th := NewThrottle(0, 2, time.Minute, nil)
	reserve(t, th, "a", "2001:db8::1")
	reserve(t, th, "b", "2001:db8::2")
	if _, ok := reserve(t, th, "c", "2001:db8::ffff:3"); ok {
		t.Fatal("another address of the same /64 escaped the address limit")
	}
	if _, ok := reserve(t, th, "c", "2001:db8:0:1::3"); !ok {
		t.Fatal("another /64 was refused")
	}
}

// Regression (issue 15): the check and the count were separate steps, so 40 parallel wrong passwords for one
// login got 36 to 40 passwords checked with a limit of 5.
func TestThrottle_ParallelAttemptsReserveFirst(t *testing.T) {
	ctx := context.Background()
	th := NewThrottle(5, 1000, time.Minute, nil)
	var checked atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a, ok, err := th.Reserve(ctx, "victim", "10.0.0.1")
			if err != nil || !ok {
				return
			}
			checked.Add(1)
			a.Failed(ctx)
		}()
	}
	close(start)
	wg.Wait()
	if n := checked.Load(); n != 5 {
		t.Fatalf("%d of 40 parallel attempts were let through, want exactly 5", n)
	}
}
