package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
)

// offlineServer is an analysis server configured for every organisation that nobody listens on: enough for
// the routes that only check the configuration (analyzer sets).
func offlineServer(name string) connector.AnalysisServer {
	return connector.Adapter{Client: connector.New(connector.Server{Name: name, URL: "http://127.0.0.1:1", Key: "k", Timeout: time.Second},
		connector.Options{RetryMax: 0}, nil)}
}

// Analyzer sets: org-admins manage them (manageAutomation), every member reads them, another organisation
// sees none; bad input is a 400 naming the field and stores nothing.
func TestAutomation_Sets(t *testing.T) {
	tm := newTeam(t, withServers(fastTracker, offlineServer("local"), offlineServer("second")))
	body := map[string]any{"name": "triage", "description": "first look", "analyzers": map[string]any{
		"ip":     []any{map[string]any{"analysisId": "local", "name": "Echo", "parameters": map[string]any{"depth": 2, "a.b": "x"}}},
		"domain": []any{map[string]any{"analysisId": "local", "name": "Echo"}, map[string]any{"analysisId": "second", "name": "Whois"}},
	}}
	set := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", body).Want(t, http.StatusCreated).Object(t)
	id := set.Str(t, "id")
	if set.Str(t, "_type") != "analyzerSet" || set.Str(t, "name") != "triage" || set.Str(t, "createdBy") != "socadmin" {
		t.Fatalf("set %v", set)
	}
	ip := set.Obj(t, "analyzers")["ip"].([]any)[0].(map[string]any)
	if ip["analysisId"] != "local" || ip["name"] != "Echo" || ip["parameters"].(map[string]any)["a.b"] != "x" ||
		ip["parameters"].(map[string]any)["depth"] != float64(2) {
		t.Fatalf("ip analyzers %v", ip)
	}
	if n := len(set.Obj(t, "analyzers")["domain"].([]any)); n != 2 {
		t.Fatalf("domain analyzers %v", set["analyzers"])
	}

	t.Run("every member reads, by id or name", func(t *testing.T) {
		for _, who := range []*client{tm.orgAdmin, tm.analyst, tm.readOnly} {
			got := who.Call(t, http.MethodGet, "/api/automation/set/"+id, nil).Want(t, http.StatusOK).Object(t)
			if got.Str(t, "name") != "triage" {
				t.Fatalf("get %v", got)
			}
			who.Call(t, http.MethodGet, "/api/automation/set/triage", nil).Want(t, http.StatusOK)
		}
		r := tm.analyst.Call(t, http.MethodGet, "/api/automation/set", nil).Want(t, http.StatusOK)
		if r.Total(t) != "1" || len(r.List(t)) != 1 {
			t.Fatalf("list %s", r.Body)
		}
		found := tm.analyst.Call(t, http.MethodPost, "/api/automation/set/_search", map[string]any{"query": map[string]any{"dataType": "domain"}}).
			Want(t, http.StatusOK).List(t)
		none := tm.analyst.Call(t, http.MethodPost, "/api/automation/set/_search", map[string]any{"query": map[string]any{"dataType": "mail"}}).
			Want(t, http.StatusOK).List(t)
		if len(found) != 1 || len(none) != 0 {
			t.Fatalf("search by data type: %v / %v", found, none)
		}
		tm.analyst.Call(t, http.MethodPost, "/api/automation/set/_search", map[string]any{"query": map[string]any{"secret": "x"}}).
			WantError(t, http.StatusBadRequest, "BadRequest")
	})

	t.Run("another organisation sees nothing", func(t *testing.T) {
		tm.other.Call(t, http.MethodGet, "/api/automation/set/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		tm.other.Call(t, http.MethodGet, "/api/automation/set/triage", nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if r := tm.other.Call(t, http.MethodGet, "/api/automation/set", nil).Want(t, http.StatusOK); r.Total(t) != "0" {
			t.Fatalf("other organisation's list %s", r.Body)
		}
		certAdmin := tm.user(t, "certadmin", "cert", "org-admin")
		certAdmin.Call(t, http.MethodPatch, "/api/automation/set/"+id, map[string]any{"name": "mine"}).WantError(t, http.StatusNotFound, "NotFoundError")
		certAdmin.Call(t, http.MethodDelete, "/api/automation/set/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		// The same name in another organisation is another set.
		certAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "triage"}).Want(t, http.StatusCreated)
		if got := tm.analyst.Call(t, http.MethodGet, "/api/automation/set/triage", nil).Want(t, http.StatusOK).Object(t); got.Str(t, "id") != id {
			t.Fatalf("soc's triage is %v", got)
		}
	})

	t.Run("only manageAutomation writes", func(t *testing.T) {
		for _, who := range []*client{tm.analyst, tm.readOnly} {
			msg := who.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "x"}).WantError(t, http.StatusForbidden, "AuthorizationError")
			if !strings.Contains(msg, "manageAutomation") {
				t.Fatalf("message %q", msg)
			}
			who.Call(t, http.MethodPatch, "/api/automation/set/"+id, map[string]any{"name": "x"}).WantError(t, http.StatusForbidden, "AuthorizationError")
			who.Call(t, http.MethodDelete, "/api/automation/set/"+id, nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		}
		if r := tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/set", nil).Want(t, http.StatusOK); r.Total(t) != "1" {
			t.Fatalf("after refusals %s", r.Body)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body  any
			field string
		}{
			"no name":             {map[string]any{"description": "d"}, "name"},
			"blank name":          {map[string]any{"name": "  "}, "name"},
			"name like an id":     {map[string]any{"name": "~1"}, "name"},
			"unknown data type":   {map[string]any{"name": "a", "analyzers": map[string]any{"car": []any{map[string]any{"analysisId": "local", "name": "Echo"}}}}, "analyzers.car"},
			"unknown server":      {map[string]any{"name": "a", "analyzers": map[string]any{"ip": []any{map[string]any{"analysisId": "nope", "name": "Echo"}}}}, "analyzers.ip"},
			"no server":           {map[string]any{"name": "a", "analyzers": map[string]any{"ip": []any{map[string]any{"name": "Echo"}}}}, "analyzers.ip"},
			"no analyzer name":    {map[string]any{"name": "a", "analyzers": map[string]any{"ip": []any{map[string]any{"analysisId": "local"}}}}, "analyzers.ip"},
			"huge parameters":     {map[string]any{"name": "a", "analyzers": map[string]any{"ip": []any{map[string]any{"analysisId": "local", "name": "E", "parameters": map[string]any{"v": strings.Repeat("x", 20000)}}}}}, "analyzers.ip"},
			"parameters a string": {map[string]any{"name": "a", "analyzers": map[string]any{"ip": []any{map[string]any{"analysisId": "local", "name": "E", "parameters": "x"}}}}, ""},
			"analyzers a list":    {map[string]any{"name": "a", "analyzers": []any{"x"}}, "analyzers"},
		} {
			t.Run(name, func(t *testing.T) {
				r := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", tc.body)
				if r.Status != http.StatusBadRequest {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				r.CheckErrorShape(t)
				if tc.field != "" && !bytes.Contains(r.Body, []byte(`"name":"`+tc.field+`"`)) {
					t.Fatalf("no problem named %s: %s", tc.field, r.Body)
				}
			})
		}
		tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "triage"}).WantError(t, http.StatusBadRequest, "CreateError")
		tm.orgAdmin.Raw(t, http.MethodPost, "/api/automation/set", "application/json", `{"name": `).WantError(t, http.StatusBadRequest, "BadRequest")
		if r := tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/set", nil).Want(t, http.StatusOK); r.Total(t) != "1" {
			t.Fatalf("bad input stored something: %s", r.Body)
		}
	})

	t.Run("update and delete", func(t *testing.T) {
		other := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "deep"}).Want(t, http.StatusCreated).Object(t)
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/automation/set/"+other.Str(t, "id"), map[string]any{"name": "triage"}).
			WantError(t, http.StatusBadRequest, "CreateError")
		up := tm.orgAdmin.Call(t, http.MethodPatch, "/api/automation/set/"+id, map[string]any{"description": "changed",
			"analyzers": map[string]any{"mail": []any{map[string]any{"analysisId": "second", "name": "Mailer"}}}}).Want(t, http.StatusOK).Object(t)
		an := up.Obj(t, "analyzers")
		if up.Str(t, "description") != "changed" || up.Str(t, "name") != "triage" || len(an) != 1 || an["mail"] == nil || up.Str(t, "updatedBy") != "socadmin" {
			t.Fatalf("updated %v", up)
		}
		tm.orgAdmin.Call(t, http.MethodPatch, "/api/automation/set/"+id, map[string]any{"name": ""}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		if got := tm.analyst.Call(t, http.MethodGet, "/api/automation/set/"+id, nil).Want(t, http.StatusOK).Object(t); got.Str(t, "name") != "triage" {
			t.Fatalf("a refused update changed the set: %v", got)
		}
		tm.orgAdmin.Call(t, http.MethodDelete, "/api/automation/set/"+other.Str(t, "id"), nil).Want(t, http.StatusNoContent)
		tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/set/"+other.Str(t, "id"), nil).WantError(t, http.StatusNotFound, "NotFoundError")
		tm.orgAdmin.Call(t, http.MethodDelete, "/api/automation/set/~nope", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	})
}

// jsonOf is v as a JSON string (for messages).
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
