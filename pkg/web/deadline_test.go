package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every request's context has the deadline of Limits.Request, except long polls; a request that runs past it
// answers 500 with a safe message, logged once with the request id; a server fault's text (a path) is logged,
// never answered.
func TestRequestDeadline(t *testing.T) {
	var logs lockedBuffer
	e := New(Options{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Limits: Limits{Request: 50 * time.Millisecond}})
	hasDeadline := func(c echo.Context) error {
		_, ok := c.Request().Context().Deadline()
		return c.String(http.StatusOK, fmt.Sprint(ok))
	}
	e.GET("/plain", hasDeadline)
	e.GET("/poll", hasDeadline, LongPoll)
	e.GET("/slow", func(c echo.Context) error {
		<-c.Request().Context().Done() // the deadline ends it
		return fmt.Errorf("find job: %w", c.Request().Context().Err())
	})
	e.GET("/fault", func(c echo.Context) error {
		return fmt.Errorf("spool attachment: %w", errors.New("open /var/lib/secret/attachment-123: no space left on device"))
	})
	e.GET("/refused", func(c echo.Context) error { return apperr.New(apperr.NotFound, "job not found") })
	srv := httptest.NewServer(e)
	defer srv.Close()

	get := func(path, id string) (int, string, map[string]string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set(echo.HeaderXRequestID, id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		var body map[string]string
		_ = json.Unmarshal(buf.Bytes(), &body)
		return resp.StatusCode, buf.String(), body
	}
	if code, text, _ := get("/plain", "r-plain"); code != 200 || text != "true" {
		t.Errorf("/plain: %d %q, want a deadline", code, text)
	}
	if code, text, _ := get("/poll", "r-poll"); code != 200 || text != "false" {
		t.Errorf("/poll: %d %q, want no deadline on a long poll", code, text)
	}
	if code, _, body := get("/slow", "r-slow"); code != 500 || body["type"] != "InternalError" || body["message"] != "the request took too long" {
		t.Errorf("/slow: %d %v", code, body)
	}
	if code, text, body := get("/fault", "r-fault"); code != 500 || body["type"] != "InternalError" || body["message"] != "internal error" ||
		strings.Contains(text, "/var/lib") {
		t.Errorf("/fault: %d %s", code, text)
	}
	if code, _, body := get("/refused", "r-refused"); code != 404 || body["message"] != "job not found" {
		t.Errorf("/refused: %d %v", code, body)
	}
	failures := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
			Err       string `json:"err"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request failed" {
			failures[l.RequestID]++
			if l.RequestID == "r-fault" && !strings.Contains(l.Err, "/var/lib/secret") {
				t.Errorf("the fault's cause is not logged: %s", line)
			}
		}
	}
	if want := map[string]int{"r-slow": 1, "r-fault": 1}; fmt.Sprint(failures) != fmt.Sprint(want) {
		t.Errorf("logged failures %v, want %v (each 500 once, with its request id; nothing else)", failures, want)
	}
}

func TestSafeMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("open /etc/x: denied"), "fallback"},
		{apperr.Wrap(apperr.Internal, "docker engine said no", errors.New("x")), "fallback"},
		{fmt.Errorf("run: %w", apperr.New(apperr.Unavailable, "the docker image a:1 is not available on this server")), "the docker image a:1 is not available on this server"},
	} {
		if got := apperr.SafeMessage(c.err, "fallback"); got != c.want {
			t.Errorf("SafeMessage(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
