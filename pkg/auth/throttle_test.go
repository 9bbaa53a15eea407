package auth

import (
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	now := time.Unix(1000, 0)
	th := NewThrottle(3, 5, time.Minute, func() time.Time { return now })
	for i := range 3 {
		if !th.Allow("Bob", "1.1.1.1") {
			t.Fatalf("attempt %d refused", i)
		}
		th.Fail("Bob", "1.1.1.1")
	}
	if th.Allow("bob", "2.2.2.2") {
		t.Fatal("a fourth attempt for the user (any case, any address) was allowed")
	}
	if !th.Allow("alice", "1.1.1.1") {
		t.Fatal("another user from the same address refused before the address limit")
	}
	th.Fail("alice", "1.1.1.1")
	th.Fail("carol", "1.1.1.1")
	if th.Allow("dave", "1.1.1.1") {
		t.Fatal("the address limit did not apply")
	}
	now = now.Add(time.Minute)
	if !th.Allow("bob", "1.1.1.1") {
		t.Fatal("failures did not expire with the window")
	}
	th.Fail("bob", "3.3.3.3")
	th.Succeed("bob")
	if !th.Allow("bob", "3.3.3.3") {
		t.Fatal("success did not clear the user's failures")
	}
	var none *Throttle
	if !none.Allow("x", "y") {
		t.Fatal("a nil throttle refuses")
	}
}
