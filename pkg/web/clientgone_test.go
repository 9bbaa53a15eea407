package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A request whose client went away (its context cancelled) is not logged as a server error: the stream long
// polls a browser leaves filled the log with "request failed" and status 500.
func TestErrorHandler_ClientGoneIsNoServerError(t *testing.T) {
	var logs bytes.Buffer
	e := New(Options{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	e.GET("/poll", func(c echo.Context) error { return c.Request().Context().Err() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/poll", nil).WithContext(ctx))
	if rec.Code != StatusClientClosed || strings.Contains(logs.String(), "request failed") || strings.Contains(logs.String(), `"status":500`) {
		t.Fatalf("status %d, logs %s", rec.Code, logs.String())
	}
	// A handler's own cancellation while the client is still there stays a server error.
	logs.Reset()
	e.GET("/own", func(c echo.Context) error { return context.Canceled })
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/own", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), "request failed") {
		t.Fatalf("own cancellation: status %d, logs %s", rec.Code, logs.String())
	}
}
