// Command receiver is the webhook receiver of the container suite: it records every request posted to it
// (path, headers, body, in arrival order) and serves the record back, so the test can check what the
// services delivered. It is built static (CGO_ENABLED=0) into a FROM scratch image (Dockerfile beside it).
//
//	POST <any path>      recorded; answers 200
//	GET  /deliveries     {"deliveries": [{seq, path, header, body}], "maxInFlight": {path: n}}
//	GET  /readyz         200 (the container's readiness)
//
// maxInFlight is the largest number of requests to one path the receiver was handling at once: a sender that
// delivers one event at a time per endpoint never makes it more than 1.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

type delivery struct {
	Seq    int         `json:"seq"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

type receiver struct {
	mu          sync.Mutex
	deliveries  []delivery
	inFlight    map[string]int
	maxInFlight map[string]int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/readyz":
		_, _ = io.WriteString(w, "ok\n")
	case req.Method == http.MethodGet && req.URL.Path == "/deliveries":
		r.mu.Lock()
		b, err := json.Marshal(map[string]any{"deliveries": r.deliveries, "maxInFlight": r.maxInFlight})
		r.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	case req.Method == http.MethodPost:
		r.record(w, req)
	default:
		http.Error(w, "POST a delivery, or GET /deliveries", http.StatusMethodNotAllowed)
	}
}

func (r *receiver) record(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	r.mu.Lock()
	r.inFlight[path]++
	r.maxInFlight[path] = max(r.maxInFlight[path], r.inFlight[path])
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[path]--
		r.mu.Unlock()
	}()
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest) // not recorded: the sender retries
		return
	}
	r.mu.Lock()
	r.deliveries = append(r.deliveries, delivery{Seq: len(r.deliveries) + 1, Path: path, Header: req.Header.Clone(), Body: string(body)})
	r.mu.Unlock()
	_, _ = io.WriteString(w, "ok\n")
}

func main() {
	addr := os.Getenv("RECEIVER_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	srv := &http.Server{Addr: addr, Handler: &receiver{inFlight: map[string]int{}, maxInFlight: map[string]int{}},
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
