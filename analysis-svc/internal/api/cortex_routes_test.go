package api_test

// The Cortex routes of issue 30: POST /api/job/status, GET /api/organization/{analyzer,responder}/_search,
// GET/PATCH /api/{analyzer,responder}config.

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
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

// baseWorker reports whether its config holds the values the test's base configurations set.
const baseWorker = `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
cfg = json.load(open(os.path.join(job, "input", "input.json")))["config"]
out = {"success": True, "summary": {}, "full": {"key": cfg.get("api_key") == "KEY-7f3e9c1d", "region": cfg.get("region"),
       "proxy": (cfg.get("proxy") or {}).get("http") == "http://u:Pr0xyPw@proxy.example:3128"}}
open(os.path.join(job, "output", "output.json"), "w").write(json.dumps(out))
`

func sharedFlavor(name string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "version": "1.0", "author": "test", "url": "https://example.org",
		"license": "AGPL-V3", "description": name, "dataTypeList": []string{"other"}, "command": "Shared/shared.py",
		"baseConfig": "Shared", "configurationItems": []any{
			map[string]any{"name": "api_key", "description": "key", "type": "string", "multi": false, "required": true},
			map[string]any{"name": "region", "description": "region", "type": "string", "multi": false, "required": false, "defaultValue": "eu"},
			map[string]any{"name": "score", "description": "score", "type": "number", "multi": false, "required": false}}})
	return string(b)
}

// GET/PATCH /api/analyzerconfig: an organization's settings shared by every flavor of an analyzer, set once;
// they fill what a flavor leaves unset, at enable time and when a job runs.
func TestBaseConfigs(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Shared", "shared.py"), baseWorker, 0o755)
	writeFile(t, filepath.Join(root, "Shared", "A.json"), sharedFlavor("SharedA"), 0o644)
	writeFile(t, filepath.Join(root, "Shared", "B.json"), sharedFlavor("SharedB"), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	x.createOrg(t, "other")
	otherAdmin := x.user(t, "other-admin", "other", roleOrgAdmin)

	// B is enabled before the base configuration is set, with a key of its own (the item is required).
	b := x.enable(t, "analyzer", "SharedB_1_0", map[string]any{"api_key": "own-key-B"})

	list := x.admin.Call(t, http.MethodGet, "/api/analyzerconfig", nil).Want(t, http.StatusOK).List(t)
	var shared map[string]any
	for _, b := range list {
		if b["name"] == "Shared" {
			shared = b
		}
	}
	if len(list) < 2 || list[0]["name"] != "global" || shared == nil ||
		mustJSONText(t, shared["workers"]) != `["SharedA","SharedB"]` || mustJSONText(t, shared["config"]) != `{}` {
		t.Fatalf("base configurations %v", list)
	}
	set := x.admin.Raw(t, http.MethodPatch, "/api/analyzerconfig/Shared", "application/json",
		`{"config":{"api_key":"KEY-7f3e9c1d","score":1.0,"region":null}}`).Want(t, http.StatusOK)
	if !strings.Contains(string(set.Body), `"config":{"api_key":"KEY-7f3e9c1d","score":1.0}`) {
		t.Errorf("PATCH: %s", set.Body)
	}
	x.admin.Call(t, http.MethodPatch, "/api/analyzerconfig/global", map[string]any{"config": map[string]any{
		"proxy_http": "http://u:Pr0xyPw@proxy.example:3128"}}).Want(t, http.StatusOK)
	if got := string(x.admin.Call(t, http.MethodGet, "/api/analyzerconfig/Shared", nil).Want(t, http.StatusOK).Body); !strings.Contains(got, `"config":{"api_key":"KEY-7f3e9c1d","score":1.0}`) {
		t.Errorf("GET: %s", got)
	}

	// A flavor enabled now takes the shared values for what it leaves out; a value it gives wins.
	aw := x.admin.Call(t, http.MethodPost, "/api/organization/analyzer/SharedA_1_0", map[string]any{"name": "SharedA", "jobCache": 0,
		"configuration": map[string]any{"region": "us"}}).Want(t, http.StatusCreated)
	if c := aw.Object(t)["configuration"].(map[string]any); c["api_key"] != "KEY-7f3e9c1d" || c["region"] != "us" {
		t.Errorf("enabled with %v", c)
	}
	a := aw.Object(t)["id"].(string)
	// At run time the global proxy fills B's unset proxy; B's own key wins over the shared one.
	for w, want := range map[string]string{a: `{"key":true,"proxy":true,"region":"us"}`, b: `{"key":false,"proxy":true,"region":"eu"}`} {
		id := x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"x"}`)
		j := x.waitRaw(t, id).Object(t)
		if got := mustJSONText(t, j["report"].(map[string]any)["full"]); got != want {
			t.Errorf("worker %s: full %s, want %s (job %v)", w, got, want, j)
		}
	}

	// Refusals: unknown base configuration or item, wrong type, no config, other roles and organizations.
	x.admin.Call(t, http.MethodGet, "/api/analyzerconfig/Nope", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	x.admin.Call(t, http.MethodPatch, "/api/analyzerconfig/Nope", map[string]any{"config": map[string]any{}}).WantError(t, http.StatusNotFound, "NotFoundError")
	for _, body := range []string{`{"config":{"bogus":1}}`, `{"config":{"score":"high"}}`, `{}`, `{"config":[1]}`} {
		r := x.admin.Raw(t, http.MethodPatch, "/api/analyzerconfig/Shared", "application/json", body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
		r.CheckErrorShape(t)
	}
	x.analyst.Call(t, http.MethodGet, "/api/analyzerconfig", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	x.analyst.Call(t, http.MethodPatch, "/api/analyzerconfig/Shared", map[string]any{"config": map[string]any{}}).WantError(t, http.StatusForbidden, "AuthorizationError")
	x.anon().Call(t, http.MethodGet, "/api/analyzerconfig", nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	if got := otherAdmin.Call(t, http.MethodGet, "/api/analyzerconfig/Shared", nil).Want(t, http.StatusOK).Object(t); mustJSONText(t, got["config"]) != `{}` {
		t.Errorf("another organization sees %v", got["config"])
	}
	// Unchanged after the refusals; responders have their own.
	if got := string(x.admin.Call(t, http.MethodGet, "/api/analyzerconfig/Shared", nil).Want(t, http.StatusOK).Body); !strings.Contains(got, `"config":{"api_key":"KEY-7f3e9c1d","score":1.0}`) {
		t.Errorf("after refusals: %s", got)
	}
	if r := x.admin.Call(t, http.MethodGet, "/api/responderconfig", nil).Want(t, http.StatusOK).List(t); len(r) == 0 || r[0]["name"] != "global" ||
		strings.Contains(mustJSONText(t, r), "KEY-7f3e9c1d") || strings.Contains(mustJSONText(t, r), "Shared") {
		t.Errorf("responder configurations %v", r)
	}
}
