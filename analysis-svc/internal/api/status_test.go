package api_test

import (
	"net/http"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/api"
)

// TestStatus_WhatTheHiveReads: TheHive's Cortex client takes a 2xx /api/status whose versions.Cortex is a
// string as "server up" (else it marks the server ERROR and hides its analyzers), then asks
// /api/user/current for an id (else AUTH_ERROR). The config object carries the reference server's keys, and
// /api/health answers the health word as text.
func TestStatus_WhatTheHiveReads(t *testing.T) {
	e := newEnv(t)
	st := e.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, http.StatusOK).Object(t)
	versions := st["versions"].(map[string]any)
	if v, ok := versions["Cortex"].(string); !ok || v != api.CortexVersion || v == "" {
		t.Errorf("versions.Cortex = %v", versions["Cortex"])
	}
	cfg := st["config"].(map[string]any)
	if cfg["protectDownloadsWith"] != "malware" || cfg["ssoAutoLogin"] != false {
		t.Errorf("config = %v", cfg)
	}
	if _, ok := cfg["authType"].([]any); !ok {
		t.Errorf("config.authType = %v", cfg["authType"])
	}
	if _, ok := cfg["capabilities"].([]any); !ok {
		t.Errorf("config.capabilities = %v", cfg["capabilities"])
	}
	cur := e.super.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, http.StatusOK).Object(t)
	if id, _ := cur["id"].(string); id == "" {
		t.Errorf("user/current id = %v", cur["id"])
	}
	if h := e.anon().Call(t, http.MethodGet, "/api/health", nil).Want(t, http.StatusOK).Text(t); h != "Ok" {
		t.Errorf("health = %q", h)
	}
}
