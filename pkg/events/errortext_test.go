package events

import (
	"errors"
	"net"
	"net/url"
	"testing"
)

// A delivery's error text names what the receiver's side did, not the service's network: a failed lookup
// does not show the resolver's address.
func TestErrorText_HidesTheResolver(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "hooks.example.invalid", Server: "10.255.255.53:53", IsNotFound: true}
	err := &url.Error{Op: "Post", URL: "https://hooks.example.invalid/in", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}
	if got, want := errorText(err), "dial tcp: lookup hooks.example.invalid: no such host"; got != want {
		t.Fatalf("errorText = %q, want %q", got, want)
	}
	if got := errorText(errors.New("connection refused")); got != "connection refused" {
		t.Fatalf("errorText = %q", got)
	}
}
