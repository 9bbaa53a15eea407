package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// start runs the service as main would, on a free port, and returns its base URL and a stop function that
// waits for a clean shutdown.
func start(t *testing.T, env map[string]string) (string, func()) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &logWatch{t: t, addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, out) }()
	addr := out.addr
	select {
	case a := <-addr:
		return "http://" + a, func() {
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
	return "", nil
}

// logWatch receives the service's JSON log lines and reports the address of the "listening" line.
type logWatch struct {
	t    *testing.T
	mu   sync.Mutex
	addr chan string
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range bytes.Split(p, []byte("\n")) {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(l, &line) == nil && line.Msg == "listening" {
			select {
			case w.addr <- line.Addr:
			default:
			}
		}
	}
	return len(p), nil
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The first start creates the superadmin from bootstrap.*; a restart keeps users, keys and the generated
// auth secret, and does not bootstrap again.
func TestRun_BootstrapAndRestart(t *testing.T) {
	dir := t.TempDir()
	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := map[string]string{
		"ANALYSIS_HTTP_ADDR": "127.0.0.1:0", "ANALYSIS_DATABASE_PATH": dir,
		"ANALYSIS_BOOTSTRAP_LOGIN": "root", "ANALYSIS_BOOTSTRAP_KEY": key,
	}
	base, stop := start(t, env)
	if code, body := get(t, base+"/api/user/current", key); code != 200 {
		t.Fatalf("current user: %d %s", code, body)
	}
	if code, _ := get(t, base+"/readyz", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
	stop()

	env["ANALYSIS_BOOTSTRAP_LOGIN"] = "other" // ignored: a user exists
	base, stop = start(t, env)
	defer stop()
	code, body := get(t, base+"/api/user/current", key)
	if code != 200 {
		t.Fatalf("after restart: %d %s", code, body)
	}
	var u struct{ ID string }
	_ = json.Unmarshal([]byte(body), &u)
	if u.ID != "root" {
		t.Fatalf("current user = %q, want root", u.ID)
	}
	if code, _ := get(t, base+"/api/user/other", key); code != 404 {
		t.Fatalf("second bootstrap user exists: %d", code)
	}
}

// An external database needs an explicit auth.secret: replicas must share it.
func TestAuthSecret_RequiredWithExternalDatabase(t *testing.T) {
	var c config
	c.Database.Path = t.TempDir()
	if _, err := authSecret(c, false, nil); err == nil {
		t.Fatal("want an error without auth.secret and an external database")
	}
}
