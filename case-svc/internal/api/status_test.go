package api_test

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// TestStatus_ConnectorsAndHealth plays what TheHive 4's status page and thehive4py's health() read: the
// config keys, connectors.cortex with one entry per analysis server (a real analysis-svc answering OK, the
// same server with a key it refuses as AUTH_ERROR, a closed port as ERROR, a server that accepts and never
// answers as ERROR once the probe's own timeout ends it), the sum WARNING, and the health
// word as text. The check is cached: a second status right after costs no new call to the servers.
func TestStatus_ConnectorsAndHealth(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	bad := *as
	bad.Key = "not-a-key-of-this-server-0123456789abcdef"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	hung, probes := hungServer(t)
	e := newEnv(t, withServers(fastTracker, server("main", as, ""), server("badkey", &bad, ""), server("down", as, down),
		server("hung", as, hung)), withoutTracker())

	st := e.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK).Object(t)
	if probes.Load() == 0 {
		t.Fatalf("the hung server was never probed")
	}
	cfg := st["config"].(map[string]any)
	for k, want := range map[string]any{"protectDownloadsWith": "malware", "ssoAutoLogin": false,
		"pollingDuration": float64(1000), "freeTagDefaultColour": "#000000"} {
		if cfg[k] != want {
			t.Errorf("config.%s = %v, want %v", k, cfg[k], want)
		}
	}
	if _, ok := cfg["authType"].([]any); !ok {
		t.Errorf("config.authType = %v", cfg["authType"])
	}
	cortex, ok := st["connectors"].(map[string]any)["cortex"].(map[string]any)
	if !ok {
		t.Fatalf("connectors = %v", st["connectors"])
	}
	if cortex["enabled"] != true || cortex["status"] != "WARNING" {
		t.Errorf("cortex = %v", cortex)
	}
	servers := cortex["servers"].([]any)
	want := []struct{ name, status string }{{"main", "OK"}, {"badkey", "AUTH_ERROR"}, {"down", "ERROR"}, {"hung", "ERROR"}}
	if len(servers) != len(want) {
		t.Fatalf("servers = %v", servers)
	}
	for i, w := range want {
		s := servers[i].(map[string]any)
		if s["name"] != w.name || s["status"] != w.status {
			t.Errorf("server %d = %v, want %s %s", i, s, w.name, w.status)
		}
		v, _ := s["version"].(string)
		if (w.status == "ERROR") != (v == "") {
			t.Errorf("server %s version %q", w.name, v)
		}
	}

	// cached: a second status within connector.StatusTTL probes no server again and answers the same servers
	before := probes.Load()
	again := e.anon().Call(t, http.MethodGet, "/api/v0/status", nil).Want(t, http.StatusOK).Object(t)
	if n := probes.Load(); n != before {
		t.Errorf("cached status probed the servers again (%d connections, was %d)", n, before)
	}
	if got := again["connectors"].(map[string]any)["cortex"].(map[string]any)["status"]; got != "WARNING" {
		t.Errorf("cached status = %v", got)
	}

	if h := e.anon().Call(t, http.MethodGet, "/api/health", nil).Want(t, http.StatusOK).Text(t); h != "Warning" {
		t.Errorf("health = %q, want Warning (a server is not OK)", h)
	}
}

// TestStatus_NoServers: without analysis servers there is no cortex connector and health is Ok.
func TestStatus_NoServers(t *testing.T) {
	e := newEnv(t)
	st := e.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK).Object(t)
	if c := st["connectors"].(map[string]any); len(c) != 0 {
		t.Errorf("connectors = %v", c)
	}
	if h := e.anon().Call(t, http.MethodGet, "/api/health", nil).Want(t, http.StatusOK).Text(t); h != "Ok" {
		t.Errorf("health = %q", h)
	}
}

// hungServer accepts connections and never answers (a server that hangs); it counts the connections, so a test
// sees whether it was probed. The connections are closed when the test ends.
func hungServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), &n
}
