package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// tenantUser is a principal of an organisation.
type tenantUser struct{ login, org string }

func (u tenantUser) Tenant() string { return u.org }

// tenantAuth knows the keys "<login>@<org>".
type tenantAuth struct{}

func (tenantAuth) ByKey(_ context.Context, key string) (tenantUser, error) {
	login, org, ok := strings.Cut(key, "@")
	if !ok {
		return tenantUser{}, ErrAuthentication
	}
	return tenantUser{login, org}, nil
}

func (tenantAuth) ByPassword(context.Context, string, string) (tenantUser, error) {
	return tenantUser{}, ErrAuthentication
}

func (tenantAuth) BySession(context.Context, string) (tenantUser, int64, error) {
	return tenantUser{}, 0, ErrAuthentication
}

// newTenantServer serves a search route with the default limits and returns its raw budget.
func newTenantServer(t *testing.T) (*httptest.Server, *rawBudget) {
	lim := Limits{}.withDefaults()
	p := newPools(lim.JSON)
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(slog.New(slog.DiscardHandler))
	e.Use(limitBodies(lim, p))
	e.POST("/search", func(c echo.Context) error {
		f, err := Fields(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]int{"fields": len(f)})
	}, Authenticate[tenantUser](tenantAuth{}, AuthConfig{}))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv, p.raw
}

// holdBodies opens n connections as key that declare a body of size bytes and send only its first sent
// bytes; they stay open until the test ends.
func holdBodies(t *testing.T, srv *httptest.Server, key string, n, size, sent int) {
	body := `{"junk":"` + strings.Repeat("x", size-len(`{"junk":"`)-2) + `"}`
	for range n {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_, err = fmt.Fprintf(conn, "POST /search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, size, body[:sent])
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// postSearch posts a body of size bytes as key and returns the status; a client deadline of 30 s stands for
// "never": the body costs milliseconds to send and read.
func postSearch(t *testing.T, srv *httptest.Server, key string, size int) int {
	t.Helper()
	body := `{"junk":"` + strings.Repeat("y", size-len(`{"junk":"`)-2) + `"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/search", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("search as %s: %v", key, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Issue 28: 9 connections of a read-only user declaring 1 MiB bodies and sending 1 byte/s held the shared raw
// budget (reserved for the declared length before reading) and another organisation's request waited for
// them. A body is now held as it arrives: the slow senders hold what they sent, and others, of their
// organisation or another, are read at once.
func TestLimits_SlowBodiesHoldOnlyWhatTheySent(t *testing.T) {
	srv, raw := newTenantServer(t)
	holdBodies(t, srv, "reader@org-a", 9, DefaultBodyLimit, 1)
	waitFor(t, "the 9 slow bodies to be read", func() bool { _, _, n := raw.held(); return n == 9 })

	if st := postSearch(t, srv, "analyst@org-b", DefaultBodyLimit); st != http.StatusOK {
		t.Errorf("another organisation's 1 MiB search: %d", st)
	}
	if st := postSearch(t, srv, "analyst@org-a", DefaultBodyLimit); st != http.StatusOK {
		t.Errorf("a 1 MiB search of the slow senders' organisation: %d", st)
	}
	used, per, active := raw.held()
	t.Logf("with 9 slow bodies: %d bytes held (org-a %d), %d readers", used, per["org-a"], active)
	if per["org-a"] > 9*(4<<10) {
		t.Errorf("the 9 slow bodies hold %d bytes, want at most 9×4 KiB for the byte each sent", per["org-a"])
	}
}

// An organisation whose requests send most of their bodies and stall holds at most its share of the raw
// budget (a quarter), plus the body its oldest reader finishes (1.33 MiB counted for 1 MiB: readRaw): another organisation is read at once.
func TestLimits_OrganisationHoldsAtMostItsShare(t *testing.T) {
	srv, raw := newTenantServer(t)
	holdBodies(t, srv, "reader@org-a", 9, DefaultBodyLimit, DefaultBodyLimit-1)
	// The oldest reader of org-a always gets its whole body; the others fill the share as far as it goes.
	waitFor(t, "org-a to hold a body", func() bool { _, per, _ := raw.held(); return per["org-a"] >= DefaultBodyLimit })

	if st := postSearch(t, srv, "analyst@org-b", DefaultBodyLimit); st != http.StatusOK {
		t.Errorf("another organisation's 1 MiB search: %d", st)
	}
	used, per, _ := raw.held()
	t.Logf("org-a's 9 stalled bodies: org-a holds %d bytes of %d (share %d)", per["org-a"], used, raw.share)
	if per["org-a"] > raw.share+DefaultBodyLimit*4/3 {
		t.Errorf("org-a holds %d bytes, want at most its share %d plus one body", per["org-a"], raw.share)
	}
}
