package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"
)

// LogBuffer collects a service's logs; handlers write from several goroutines.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartRun runs a service's run function (its main's, reading flags and env variables) as main would, with
// the env variables env (t.Setenv; http.addr should be 127.0.0.1:0). It returns the base URL of the
// "listening" log line, the logs, and a stop function that ends run and waits for a clean shutdown.
func StartRun(t *testing.T, run func(ctx context.Context, args []string, stdout io.Writer) error, env map[string]string) (string, *LogBuffer, func()) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &logWatch{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, out) }()
	select {
	case a := <-out.addr:
		return "http://" + a, &out.LogBuffer, func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("run did not stop within 30 s")
			}
		}
	case err := <-done:
		cancel()
		t.Fatalf("run ended before listening: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("run did not listen within 60 s")
	}
	return "", nil, nil
}

// logWatch keeps the service's JSON log lines and reports the address of the "listening" line.
type logWatch struct {
	LogBuffer
	addr chan string
}

func (w *logWatch) Write(p []byte) (int, error) {
	n, err := w.LogBuffer.Write(p)
	for _, l := range bytes.Split(p, []byte("\n")) {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(l, &line) == nil && line.Msg == "listening" {
			select {
			case w.addr <- line.Addr:
			default:
			}
		}
	}
	return n, err
}
