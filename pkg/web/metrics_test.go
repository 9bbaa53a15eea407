package web

import (
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

// Every label of the HTTP metrics comes from a closed set whatever a client sends: invented methods share
// "other", unknown paths "unmatched" (issue 28: 80,000 invented methods grew the process by 260 MiB for good).
func TestMetrics_ClientCannotGrowLabels(t *testing.T) {
	e := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.GET("/api/thing/:id", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	srv := httptest.NewServer(e)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	// One connection, pipelined: 300 requests with invented methods and paths, then one of a known route.
	var sb strings.Builder
	for i := range 300 {
		fmt.Fprintf(&sb, "INVENTED%d /nowhere/%d HTTP/1.1\r\nHost: x\r\n\r\n", i, i)
		fmt.Fprintf(&sb, "BREW%d /api/thing/%d HTTP/1.1\r\nHost: x\r\n\r\n", i, i)
	}
	sb.WriteString("GET /api/thing/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	go func() { _, _ = io.WriteString(conn, sb.String()) }()
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var series []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "http_requests_total{") {
			series = append(series, l)
		}
	}
	for _, l := range series {
		if strings.Contains(l, "INVENTED") || strings.Contains(l, "BREW") || strings.Contains(l, "/nowhere/") {
			t.Errorf("a client-chosen value became a label: %s", l)
		}
	}
	if len(series) > 5 {
		t.Errorf("%d series of http_requests_total after 601 requests, want at most 5:\n%s", len(series), strings.Join(series, "\n"))
	}
	want := []string{`method="other",route="unmatched"`, `method="other",route="/api/thing/:id"`, `method="GET",route="/api/thing/:id",status="200"`}
	for _, w := range want {
		if !strings.Contains(strings.Join(series, "\n"), w) {
			t.Errorf("no series with %s:\n%s", w, strings.Join(series, "\n"))
		}
	}
}
