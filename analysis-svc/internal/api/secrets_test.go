package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// API keys never reach the logs, however a client sends them and whether the call succeeds or not.
func TestSecrets_KeysNeverLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBasic())
	e.createOrg(t, orgA)
	e.createUser(t, e.super, "kim", orgA, roleOrgAdmin)
	first := e.renewKey(t, e.super, "kim")
	kim := e.keyClient("kim", first)
	second := kim.Call(t, http.MethodPost, "/api/user/kim/key/renew", nil).Want(t, http.StatusOK).Text(t)
	kim.Key = second
	if revealed := kim.Call(t, http.MethodGet, "/api/user/kim/key", nil).Want(t, http.StatusOK).Text(t); revealed != second {
		t.Fatalf("revealed key differs from the renewed one")
	}
	keys := []string{first, second, superKey}

	// The old key, a near miss, keys in the query string, other headers and basic credentials.
	e.keyClient("kim", first).Call(t, http.MethodGet, "/api/user/current", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	nearMiss := second[:len(second)-1] + "x"
	if nearMiss == second {
		nearMiss = second[:len(second)-1] + "y"
	}
	e.keyClient("kim", nearMiss).Call(t, http.MethodGet, "/api/user/current", nil).
		WantError(t, http.StatusUnauthorized, "AuthenticationError")
	for _, p := range []string{"/api/user/current?key=" + second, "/api/user/current?api_key=" + second,
		"/api/job?access_token=" + second, "/api/nothing?key=" + second} {
		r := e.anon().Call(t, http.MethodGet, p, nil)
		r.CheckErrorShape(t)
	}
	e.anon().Send(t, http.MethodGet, "/api/user/current", "", nil, http.Header{"X-Api-Key": {second}}).
		WantError(t, http.StatusUnauthorized, "AuthenticationError")
	e.basicClient("kim", second).Call(t, http.MethodGet, "/api/user/current", nil).
		WantError(t, http.StatusUnauthorized, "AuthenticationError")
	e.anon().Send(t, http.MethodGet, "/api/user/current", "", nil, http.Header{"Authorization": {"Bearer " + second + "x"}}). // longer: never equal
																	WantError(t, http.StatusUnauthorized, "AuthenticationError")
	// A forced 5xx by a key holder.
	e.insertRaw(t, "users", `{"_id":"broken","name":42,"roles":"x","organization":"`+orgA+`"}`)
	kim.Call(t, http.MethodGet, "/api/user/broken", nil).WantError(t, http.StatusInternalServerError, "InternalError")
	kim.Call(t, http.MethodDelete, "/api/user/kim/key", nil).Want(t, http.StatusOK)

	logs := e.logs.String()
	if !strings.Contains(logs, "request failed") || !strings.Contains(logs, "/api/user/current") {
		t.Fatalf("the logs were not captured: %s", logs)
	}
	for _, k := range keys {
		if strings.Contains(logs, k) {
			t.Errorf("the logs contain an API key")
		}
	}
}

// logLines returns the service's JSON log lines.
func logLines(t *testing.T, e *env) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// A 5xx never carries driver text: the client gets {"type":"InternalError","message":"internal error"} and the
// request id; the cause is logged once with that id. Malformed documents written straight into the database
// make the driver fail to decode them.
func TestSecrets_InternalErrorsAreOpaque(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	for coll, doc := range map[string]string{
		"users":   `{"_id":"broken","name":42,"roles":"x","organization":"soc","status":"Active"}`,
		"jobs":    `{"_id":"brokenjob","organization":"soc","tlp":"high","createdAt":"yesterday","status":"Success"}`,
		"workers": `{"_id":"brokenworker","organization":"soc","kind":"analyzer","rate":"many","dataTypeList":7}`,
	} {
		f.e.insertRaw(t, coll, doc)
	}
	for _, tc := range []struct {
		c            *client
		method, path string
	}{
		{f.e.super, http.MethodGet, "/api/user/broken"},
		{f.e.super, http.MethodGet, "/api/user?range=all"},
		{f.admin, http.MethodGet, "/api/organization/soc/user?range=all"},
		{f.analyst, http.MethodGet, "/api/job/brokenjob"},
		{f.analyst, http.MethodGet, "/api/job/brokenjob/report"},
		{f.analyst, http.MethodGet, "/api/job?range=all"},
		{f.admin, http.MethodGet, "/api/analyzer/brokenworker"},
		{f.admin, http.MethodGet, "/api/analyzer?range=all"},
		{f.analyst, http.MethodPost, "/api/analyzer/brokenworker/run"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := tc.c.Call(t, tc.method, tc.path, map[string]any{"dataType": "ip", "data": "1.2.3.4"})
			if r.Status != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500: the malformed document no longer breaks this route (pick another); body %s", r.Status, r.Body)
			}
			r.CheckErrorShape(t)
			if got := strings.TrimSpace(string(r.Body)); got != `{"type":"InternalError","message":"internal error"}` {
				t.Errorf("5xx body %s", got)
			}
			id := r.Header.Get("X-Request-Id")
			if id == "" {
				t.Fatal("no X-Request-Id on a 5xx")
			}
			var failed, requests int
			for _, l := range logLines(t, f.e) {
				if l["request_id"] != id {
					continue
				}
				switch l["msg"] {
				case "request failed":
					failed++
					if cause, _ := l["err"].(string); cause == "" {
						t.Errorf("the failure is logged without its cause: %v", l)
					}
				case "request":
					requests++
					if l["status"] != float64(500) {
						t.Errorf("request log status %v", l["status"])
					}
				}
			}
			if failed != 1 || requests != 1 {
				t.Errorf("request %s logged %d failures and %d request lines, want 1 and 1", id, failed, requests)
			}
		})
	}
}
