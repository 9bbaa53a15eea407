package api_test

// The Cortex routes of issue 30: POST /api/job/status, GET /api/organization/{analyzer,responder}/_search,
// GET/PATCH /api/{analyzer,responder}config.

import (
	"net/http"
	"strings"
	"testing"
)

func TestJobStatus(t *testing.T) {
	f := newJobFixture(t)
	ok := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.1.0.1"})["id"].(string)
	failed := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.1.0.2", "parameters": map[string]any{"fail": "no"}})["id"].(string)
	f.wait(t, f.analyst, ok)
	f.wait(t, f.analyst, failed)
	deleted := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.1.0.3"})["id"].(string)
	f.wait(t, f.analyst, deleted)
	f.analyst.Call(t, http.MethodDelete, "/api/job/"+deleted, nil).Want(t, http.StatusNoContent)

	ids := []string{ok, failed, deleted, "nosuchjob", ok}
	for _, as := range []*client{f.reads, f.analyst, f.admin} {
		got := as.Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": ids}).Want(t, http.StatusOK).Object(t)
		want := map[string]any{ok: "Success", failed: "Failure", deleted: "Deleted", "nosuchjob": "NotFound"}
		if len(got) != len(want) {
			t.Errorf("statuses %v", got)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("status of %s: %v, want %v", k, got[k], v)
			}
		}
	}
	// Another organization's jobs are not found; an empty list is an empty answer.
	if got := f.other.Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": []string{ok}}).Want(t, http.StatusOK).Object(t); got[ok] != "NotFound" {
		t.Errorf("other organization: %v", got)
	}
	if got := f.reads.Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": []string{}}).Want(t, http.StatusOK).Object(t); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
	// Refusals: no credentials, a superadmin (no organization), bad bodies (a single string is one id, as
	// list fields take it).
	f.e.anon().Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": []string{ok}}).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	f.e.super.Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": []string{ok}}).WantError(t, http.StatusForbidden, "AuthorizationError")
	for _, body := range []string{`{}`, `{"jobIds":null}`, `{"jobIds":{}}`, `{"jobIds":[1,2]}`, `[1]`, `{"jobIds":[`} {
		r := f.reads.Raw(t, http.MethodPost, "/api/job/status", "application/json", body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d %s", body, r.Status, r.Body)
		}
		r.CheckErrorShape(t)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = "j"
	}
	f.reads.Call(t, http.MethodPost, "/api/job/status", map[string]any{"jobIds": many}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
}

func TestOrganizationWorkerSearch(t *testing.T) {
	f := newJobFixture(t)
	f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).Want(t, http.StatusCreated)
	for _, as := range []*client{f.admin, f.analyst} {
		l := as.Call(t, http.MethodGet, "/api/organization/analyzer/_search", nil).Want(t, http.StatusOK).List(t)
		if len(l) != 1 || l[0]["id"] != f.analyzer {
			t.Errorf("analyzers %v", l)
		}
		r := as.Call(t, http.MethodGet, "/api/organization/responder/_search?range=all", nil).Want(t, http.StatusOK)
		if l := r.List(t); len(l) != 1 || l[0]["workerDefinitionId"] != "Test_Responder_1_0" || r.Header.Get("X-Total") != "1" {
			t.Errorf("responders %v (X-Total %q)", l, r.Header.Get("X-Total"))
		}
	}
	// A query in the body, as Cortex's GET takes it.
	if l := f.admin.Call(t, http.MethodGet, "/api/organization/analyzer/_search", map[string]any{"query": map[string]any{"name": "nope"}}).
		Want(t, http.StatusOK).List(t); len(l) != 0 {
		t.Errorf("filtered: %v", l)
	}
	if l := f.other.Call(t, http.MethodGet, "/api/organization/analyzer/_search", nil).Want(t, http.StatusOK).List(t); len(l) != 0 {
		t.Errorf("another organization sees %v", l)
	}
	f.reads.Call(t, http.MethodGet, "/api/organization/analyzer/_search", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	f.e.anon().Call(t, http.MethodGet, "/api/organization/analyzer/_search", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	r := f.admin.Raw(t, http.MethodGet, "/api/organization/analyzer/_search", "application/json", `{"query":{"_bogus_op":[}`)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "type") {
		t.Errorf("bad query: %d %s", r.Status, r.Body)
	}
}
