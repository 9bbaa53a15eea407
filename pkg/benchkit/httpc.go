// Package benchkit holds what the benchmark programs of both services share: an HTTP client that reads
// whole responses, and helpers to run work in parallel and time it.
package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// transport is shared by every client of the run (service and floors alike), with enough idle connections
// per host that the concurrent clients keep theirs alive instead of reconnecting.
var transport = &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     time.Minute,
	DisableCompression:  true,
}

// Client calls one server with one API key.
type Client struct {
	base string
	key  string
	hc   *http.Client
}

func NewClient(base, key string) *Client {
	return &Client{base: base, key: key, hc: &http.Client{Transport: transport, Timeout: 5 * time.Minute}}
}

// Response is a response read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends body (nil: none; []byte or string: as is; else JSON) and reads the whole response.
func (c *Client) Do(ctx context.Context, method, path string, body any) (*Response, error) {
	var rd io.Reader
	ct := ""
	switch v := body.(type) {
	case nil:
	case []byte:
		rd, ct = bytes.NewReader(v), "application/json"
	case string:
		rd, ct = bytes.NewReader([]byte(v)), "application/json"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		rd, ct = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// Call is Do that wants a status and decodes the JSON body into out (nil: ignore).
func (c *Client) Call(ctx context.Context, method, path string, body any, want int, out any) (*Response, error) {
	r, err := c.Do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if r.Status != want {
		return r, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, r.Status, want, r.Body)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return r, nil
}

// Parallel runs f(i) for i in [0, n) on `workers` goroutines taking the next i in order, and returns the
// first error (the others stop taking work).
func Parallel(workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// Timed runs f and returns how long it took.
func Timed(f func() error) (time.Duration, error) {
	t0 := time.Now()
	err := f()
	return time.Since(t0), err
}

// Key returns the API key the client sends.
func (c *Client) Key() string { return c.key }
