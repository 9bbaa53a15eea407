package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openir/platform/pkg/benchkit"
)

// --- 5b: job events (issue 13) ---

// events measures the stream wake-up (how long after the start of the request that creates a job a long
// poll waiting on GET /api/stream/{id} answers with its creation, pkg/events's batch window included) and the outbox throughput (JobFinished deliveries to a receiver on
// 127.0.0.1, one endpoint: one delivery at a time, in order).
func (a *analysisRun) events(ctx context.Context) error {
	polls, deliveries := 200, 1000
	if a.b.Opts.Quick {
		polls, deliveries = 20, 100
	}
	if err := a.streamWakeUp(ctx, polls); err != nil {
		return err
	}
	return a.outboxThroughput(ctx, deliveries)
}

func (a *analysisRun) streamWakeUp(ctx context.Context, n int) error {
	r, err := a.s.admin.Call(ctx, http.MethodPost, "/api/stream", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	stream := "/api/stream/" + string(r.Body)
	path := "/api/analyzer/" + a.s.echoID + "/run"
	lat := make([]time.Duration, 0, n)
	for i := range n {
		data := fmt.Sprintf("10.6.%d.%d", i/250, i%250+1)
		got := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			// Poll until the job's Creation comes (an answer may first bring the previous job's end).
			for {
				var msgs []struct {
					Operation string         `json:"operation"`
					Object    map[string]any `json:"object"`
				}
				if _, err := a.s.admin.Call(ctx, http.MethodGet, stream, nil, http.StatusOK, &msgs); err != nil {
					errc <- err
					return
				}
				for _, m := range msgs {
					if m.Operation == "Creation" && m.Object["data"] == data {
						got <- time.Now()
						return
					}
				}
			}
		}()
		changed := time.Now() // the event is written during the request: an upper bound of the wake-up
		if _, err := a.s.admin.Call(ctx, http.MethodPost, path, fmt.Sprintf(`{"dataType":"ip","data":%q}`, data), http.StatusOK, nil); err != nil {
			return err
		}
		select {
		case t := <-got:
			lat = append(lat, t.Sub(changed))
		case err := <-errc:
			return err
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("stream: no Creation event for job %d within 2 min", i)
		}
	}
	floor, err := longPollFloor(ctx, n)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d jobs; from the start of the run request to the poll's answer, the 50 ms batch window included", n)
	what := "a bare long poll woken by a bare POST (from the POST's start to the poll's answer)"
	a.b.Add(benchkit.TimeKind, secEvents, "stream wake-up p50", "ms", benchkit.Percentile(lat, .5), benchkit.Percentile(floor, .5), what, note)
	a.b.Add(benchkit.TimeKind, secEvents, "stream wake-up p99", "ms", benchkit.Percentile(lat, .99), benchkit.Percentile(floor, .99), what, note)
	return nil
}

// longPollFloor is the wake-up of a bare long poll: a GET held on a channel until a POST signals it, over real
// HTTP on 127.0.0.1, timed as streamWakeUp times the stream (from the POST's start to the GET's answer).
func longPollFloor(ctx context.Context, n int) ([]time.Duration, error) {
	wake := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			wake <- struct{}{}
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	hc := srv.Client()
	lat := make([]time.Duration, 0, n)
	for range n {
		got := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			resp, err := hc.Do(req)
			if err != nil {
				errc <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got <- time.Now()
		}()
		changed := time.Now()
		resp, err := hc.Post(srv.URL, "application/json", nil)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case t := <-got:
			lat = append(lat, t.Sub(changed))
		case err := <-errc:
			return nil, err
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("long-poll floor: no answer within 1 min")
		}
	}
	return lat, nil
}

// postFloor is the rate of n POSTs of a body of size bytes sent one after the other to a bare receiver on
// 127.0.0.1: what an outbox delivering in order to one endpoint could reach at best.
func postFloor(ctx context.Context, n, size int) (float64, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	hc := srv.Client()
	body := bytes.Repeat([]byte("x"), size)
	start := time.Now()
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func (a *analysisRun) outboxThroughput(ctx context.Context, n int) error {
	// The receiver holds its first request until every job has ended, so the deliveries wait in the outbox
	// and the measure is the sender's alone.
	release := make(chan struct{})
	var got, bodySize atomic.Int64
	done := make(chan struct{})
	var once, first sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() { <-release })
		size, _ := io.Copy(io.Discard, r.Body)
		bodySize.Store(size)
		if got.Add(1) == int64(n) {
			once.Do(func() { close(done) })
		}
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	if _, err := a.s.admin.Call(ctx, http.MethodPost, "/api/webhook", map[string]any{"url": srv.URL, "secret": "bench-secret"},
		http.StatusCreated, nil); err != nil {
		return err
	}
	path := "/api/analyzer/" + a.s.echoID + "/run"
	ids := make([]string, n)
	err := benchkit.Parallel(a.b.sizes.Clients, n, func(i int) error {
		var j jobView
		_, err := a.s.admin.Call(ctx, http.MethodPost, path, fmt.Sprintf(`{"dataType":"ip","data":"10.7.%d.%d"}`, i/250, i%250+1), http.StatusOK, &j)
		ids[i] = j.ID
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := a.waitSuccess(ctx, id, &jobView{}); err != nil {
			return err
		}
	}
	start := time.Now()
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("outbox: %d of %d deliveries within 10 min", got.Load(), n)
	}
	d := time.Since(start)
	floor, err := postFloor(ctx, n, int(bodySize.Load()))
	if err != nil {
		return err
	}
	a.b.Add(benchkit.RateKind, secEvents, "outbox throughput (one endpoint)", "events/s", float64(n)/d.Seconds(), floor,
		"the same number of POSTs of the same size, one after the other, to a bare receiver",
		fmt.Sprintf("%d JobFinished queued, then delivered in order to a receiver on 127.0.0.1", n))
	return nil
}
