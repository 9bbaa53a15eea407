package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/search"
)

// chainAnalyzer answers every observable with one artifact tagged auto: the domain c-<data>.example. Its
// artifacts are what a rule on "observable created with tag auto" sees again, one level deeper each time.
const chainAnalyzer = `#!/usr/bin/env python3
import json, os, re, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json")))
d = re.sub(r"[^a-z0-9]+", "-", str(inp.get("data", "")).lower()).strip("-")
out = {"success": True, "summary": {"taxonomies": []}, "full": {"seen": d},
       "artifacts": [{"dataType": "domain", "data": "c-" + d + ".example", "tags": ["auto"]}]}
open(os.path.join(job, "output", "output.json"), "w").write(json.dumps(out))
`

// startChain starts analysis-svc with the Chain analyzer (and the built-in ones) enabled.
func startChain(t *testing.T) *analysisServer {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3 (the workers' default PATH)")
	}
	root := t.TempDir()
	writeWorker(t, filepath.Join(root, "Chain", "chain.py"), chainAnalyzer, 0o755)
	writeWorker(t, filepath.Join(root, "Chain", "Chain.json"), numbersFlavor("Chain", "Chain/chain.py", "ip", "domain"), 0o644)
	as := startAnalysis(t, "127.0.0.1:0", "ANALYSIS_ANALYZER_PATHS="+root)
	as.Analyzers["Chain"] = as.Enable("analyzer", "Chain_1_0", map[string]any{})
	return as
}

// history returns a rule's history as the org-admin reads it, by object id.
func (tm *team) history(t *testing.T, ruleID string) map[string]obj {
	t.Helper()
	out := map[string]obj{}
	for _, f := range tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/rule/"+ruleID+"/history?range=all", nil).Want(t, http.StatusOK).List(t) {
		out[f.Str(t, "objectId")] = f
	}
	return out
}

// observableID returns the id of the observable of a case with this data (waiting until it exists).
func (tm *team) observableID(t *testing.T, caseID, data string) string {
	t.Helper()
	var id string
	waitFor(t, "observable "+data, func() bool {
		for _, o := range tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?range=all", nil).Want(t, http.StatusOK).List(t) {
			if o["data"] == data {
				id = o.Str(t, "id")
				return true
			}
		}
		return false
	})
	return id
}

// waitFiring waits for a rule's firing about an object to reach a final status, and returns it.
func (tm *team) waitFiring(t *testing.T, ruleID, objectID string) obj {
	t.Helper()
	var f obj
	waitFor(t, "firing on "+objectID, func() bool {
		var ok bool
		f, ok = tm.history(t, ruleID)[objectID]
		return ok && f["status"] != automation.FiringPending
	})
	return f
}

// A rule on "observable created with tag auto" runs its set on observables added by a user, by an alert's
// import into a case and by an analyzer's artifacts (depth 1), and not on others: an untagged observable
// (skipped by condition) and the artifacts of its own depth-1 jobs (depth 2, skipped by depth). Its jobs and
// their audit records name it; another organisation sees none of it.
func TestAutomation_RuleChain(t *testing.T) {
	as := startChain(t)
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")), withRules(0))
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "chain", "analyzers": map[string]any{
		"ip": []any{map[string]any{"analysisId": "local", "name": "Chain"}}, "domain": []any{map[string]any{"analysisId": "local", "name": "Chain"}},
	}}).Want(t, http.StatusCreated)
	rule := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "auto", "event": "observableCreated",
		"conditions": map[string]any{"tags": "auto"}, "actions": []any{map[string]any{"type": "runSet", "set": "chain"}}}).
		Want(t, http.StatusCreated).Object(t)
	ruleID := rule.Str(t, "id")
	if rule.Str(t, "owner") != "socadmin" || rule["maxDepth"] != float64(1) || rule["enabled"] != true {
		t.Fatalf("rule %v", rule)
	}
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	tagged := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"192.0.2.1"}, "tags": []string{"auto"}})[0].Str(t, "id")
	plain := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"192.0.2.2"}})[0].Str(t, "id")

	t.Run("a user's observable", func(t *testing.T) {
		f := tm.waitFiring(t, ruleID, tagged)
		jobs := f["jobs"].([]any)
		if f["status"] != automation.FiringFired || f["depth"] != float64(0) || len(jobs) != 1 || f["event"] != "observableCreated" {
			t.Fatalf("firing %v", f)
		}
		j := eventually(t, "the rule's job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+jobs[0].(string), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if j.Str(t, "rule") != ruleID || j.Str(t, "analyzerName") != "Chain" || j.Str(t, "createdBy") != "socadmin" {
			t.Fatalf("job %v", j)
		}
		audit := tm.orgAdmin.Call(t, http.MethodPost, "/api/audit/_search", map[string]any{"query": map[string]any{"requestId": "rule:" + ruleID}}).
			Want(t, http.StatusOK).List(t)
		found := false
		for _, e := range audit {
			found = found || (e["objectId"] == j.Str(t, "id") && e["operation"] == "Creation")
		}
		if !found {
			t.Fatalf("no audit record of the job naming the rule: %v", audit)
		}
	})

	t.Run("an analyzer's artifact at depth 1, not at depth 2", func(t *testing.T) {
		d1 := tm.observableID(t, caseID, "c-192-0-2-1.example")
		f := tm.waitFiring(t, ruleID, d1)
		if f["status"] != automation.FiringFired || f["depth"] != float64(1) || len(f["jobs"].([]any)) != 1 {
			t.Fatalf("depth 1 firing %v", f)
		}
		d2 := tm.observableID(t, caseID, "c-c-192-0-2-1-example.example")
		f = tm.waitFiring(t, ruleID, d2)
		if f["status"] != automation.FiringDepth || f["depth"] != float64(2) || len(f["jobs"].([]any)) != 0 {
			t.Fatalf("depth 2 firing %v", f)
		}
	})

	t.Run("not on an untagged observable", func(t *testing.T) {
		f := tm.waitFiring(t, ruleID, plain)
		if f["status"] != automation.FiringCondition || len(f["jobs"].([]any)) != 0 {
			t.Fatalf("untagged firing %v", f)
		}
		if jobs := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job/_search", map[string]any{"query": map[string]any{"observable": plain}}).
			Want(t, http.StatusOK).Total(t); jobs != "0" {
			t.Fatalf("%s jobs on the untagged observable", jobs)
		}
	})

	t.Run("an alert's observable imported into a case", func(t *testing.T) {
		al := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "chain", "title": "a",
			"description": "d", "artifacts": []any{map[string]any{"dataType": "ip", "data": "192.0.2.9", "tags": []string{"auto"}}}}).
			Want(t, http.StatusCreated).Object(t)
		cs := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+al.Str(t, "id")+"/createCase", map[string]any{}).Want(t, http.StatusCreated).Object(t)
		imported := tm.observableID(t, cs.Str(t, "id"), "192.0.2.9")
		f := tm.waitFiring(t, ruleID, imported)
		if f["status"] != automation.FiringFired || f["depth"] != float64(0) || len(f["jobs"].([]any)) != 1 {
			t.Fatalf("imported observable's firing %v", f)
		}
	})

	t.Run("another organisation sees none of it", func(t *testing.T) {
		tm.other.Call(t, http.MethodGet, "/api/automation/rule/"+ruleID, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		tm.other.Call(t, http.MethodGet, "/api/automation/rule/"+ruleID+"/history", nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if r := tm.other.Call(t, http.MethodGet, "/api/automation/rule", nil).Want(t, http.StatusOK); r.Total(t) != "0" {
			t.Fatalf("other organisation's rules %s", r.Body)
		}
		certAdmin := tm.user(t, "certadmin", "cert", "org-admin")
		certAdmin.Call(t, http.MethodPatch, "/api/automation/rule/"+ruleID, map[string]any{"enabled": false}).WantError(t, http.StatusNotFound, "NotFoundError")
		certAdmin.Call(t, http.MethodDelete, "/api/automation/rule/"+ruleID, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		// A rule of cert is not fired by soc's observables, nor can it name soc's set.
		certAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "x", "event": "observableCreated",
			"actions": []any{map[string]any{"type": "runSet", "set": "chain"}}}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	})
}

// Rules' refusals: only manageAutomation writes; bad input names the field and stores nothing.
func TestAutomation_RuleRefusals(t *testing.T) {
	tm := newTeam(t, withServers(fastTracker, offlineServer("local")))
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "s"}).Want(t, http.StatusCreated)
	good := map[string]any{"name": "r", "event": "caseCreated", "conditions": map[string]any{"_gte": map[string]any{"severity": 3}},
		"actions": []any{map[string]any{"type": "addTags", "tags": []string{"x"}}, map[string]any{"type": "assign", "owner": "ana"}}}
	for _, who := range []*client{tm.analyst, tm.readOnly} {
		msg := who.Call(t, http.MethodPost, "/api/automation/rule", good).WantError(t, http.StatusForbidden, "AuthorizationError")
		if !strings.Contains(msg, "manageAutomation") {
			t.Fatalf("message %q", msg)
		}
	}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"unknown event":            {with("event", "caseOpened"), "event"},
		"condition on a bad field": {with("conditions", map[string]any{"secret": "x"}), "conditions"},
		"no actions":               {with("actions", []any{}), "actions"},
		"unknown action":           {with("actions", []any{map[string]any{"type": "delete"}}), "actions"},
		"unknown set":              {with("actions", []any{map[string]any{"type": "runSet", "set": "nope"}}), "actions"},
		"responder without a name": {with("actions", []any{map[string]any{"type": "runResponder"}}), "actions"},
		"responder on an unknown server": {with("actions", []any{map[string]any{"type": "runResponder", "responder": "Tagger",
			"analysisId": "nope"}}), "actions"},
		"tags on a task":  {with("event", "taskClosed"), "actions"},
		"depth too deep":  {with("maxDepth", 9), "maxDepth"},
		"negative budget": {with("jobsPerHour", -1), "jobsPerHour"},
		"no name":         {with("name", ""), "name"},
	} {
		t.Run(name, func(t *testing.T) {
			r := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", tc.body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			r.CheckErrorShape(t)
			if !strings.Contains(string(r.Body), `"name":"`+tc.field+`"`) {
				t.Fatalf("no problem named %s: %s", tc.field, r.Body)
			}
		})
	}
	if r := tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/rule", nil).Want(t, http.StatusOK); r.Total(t) != "0" {
		t.Fatalf("refused rules were stored: %s", r.Body)
	}
	r := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", good).Want(t, http.StatusCreated).Object(t)
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", good).WantError(t, http.StatusBadRequest, "CreateError")
	for _, who := range []*client{tm.analyst, tm.readOnly} {
		who.Call(t, http.MethodGet, "/api/automation/rule/"+r.Str(t, "id"), nil).Want(t, http.StatusOK)
		who.Call(t, http.MethodPatch, "/api/automation/rule/"+r.Str(t, "id"), map[string]any{"enabled": false}).WantError(t, http.StatusForbidden, "AuthorizationError")
		who.Call(t, http.MethodDelete, "/api/automation/rule/"+r.Str(t, "id"), nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	}
	up := tm.orgAdmin.Call(t, http.MethodPatch, "/api/automation/rule/"+r.Str(t, "id"), map[string]any{"dryRun": true, "conditions": nil}).
		Want(t, http.StatusOK).Object(t)
	if up["dryRun"] != true || up["conditions"] != nil || up.Str(t, "name") != "r" {
		t.Fatalf("updated %v", up)
	}
	tm.orgAdmin.Call(t, http.MethodDelete, "/api/automation/rule/"+r.Str(t, "id"), nil).Want(t, http.StatusNoContent)
	tm.orgAdmin.Call(t, http.MethodGet, "/api/automation/rule/"+r.Str(t, "id"), nil).WantError(t, http.StatusNotFound, "NotFoundError")
}

// Budgets and dry-run: with 10 jobs per hour, the 11th observable's firing is held and says so (its job is
// not made, nor dropped: the firing stays Held to run when the hour allows); a dry-run rule records what it
// would do and does nothing; a rule whose owner lost a permission stops, saying why.
func TestAutomation_RuleBudgetDryRunOwner(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")), withRules(0))
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "echo", "analyzers": map[string]any{
		"ip": []any{map[string]any{"analysisId": "local", "name": "Echo"}}}}).Want(t, http.StatusCreated)
	budget := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "budget", "event": "observableCreated",
		"conditions": map[string]any{"tags": "b"}, "jobsPerHour": 10, "actions": []any{map[string]any{"type": "runSet", "set": "echo"}}}).
		Want(t, http.StatusCreated).Object(t).Str(t, "id")
	dry := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "dry", "event": "observableCreated", "dryRun": true,
		"conditions": map[string]any{"tags": "d"}, "actions": []any{map[string]any{"type": "runSet", "set": "echo"}, map[string]any{"type": "addTags", "tags": []string{"seen"}}}}).
		Want(t, http.StatusCreated).Object(t).Str(t, "id")
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	before := as.jobCount(t)
	stream := tm.analyst.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)
	theirs := tm.other.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)

	t.Run("the 11th is held", func(t *testing.T) {
		var data []string
		for i := range 11 {
			data = append(data, fmt.Sprintf("198.18.0.%d", i+1))
		}
		obs := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": data, "tags": []string{"b"}})
		statuses := map[string]int{}
		for _, o := range obs {
			f := tm.waitFiring(t, budget, o.Str(t, "id"))
			statuses[f.Str(t, "status")]++
			if f["status"] == automation.FiringHeld && !strings.Contains(f.Str(t, "message"), "10 per hour") {
				t.Fatalf("held firing's message %q", f["message"])
			}
		}
		if statuses[automation.FiringFired] != 10 || statuses[automation.FiringHeld] != 1 {
			t.Fatalf("firings %v, want 10 Fired and 1 Held", statuses)
		}
		waitFor(t, "10 jobs on the server", func() bool { return as.jobCount(t)-before >= 10 })
		held := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule/"+budget+"/history/_search", map[string]any{"query": map[string]any{"status": "Held"}}).
			Want(t, http.StatusOK)
		if held.Total(t) != "1" {
			t.Fatalf("held in the history: %s", held.Body)
		}
		// The live stream reports it (the organisation's only), and so does the audit trail.
		heldID := held.List(t)[0].Str(t, "id")
		ev := streamUntil(t, tm.analyst, stream, func(e obj) bool { return e["objectId"] == heldID })
		d := ev.Obj(t, "details")
		if ev["objectType"] != "ruleFiring" || ev["operation"] != "Update" || ev["requestId"] != "rule:"+budget || ev["createdBy"] != "system" ||
			d["status"] != "Held" || !strings.Contains(fmt.Sprint(d["message"]), "10 per hour") || ev.Obj(t, "object")["rule"] != budget {
			t.Fatalf("stream event of the held firing %v", ev)
		}
		wantOne(t, tm.analyst, heldID, "ruleFiring", "Update", "status", "message")
		for _, e := range tm.other.Call(t, http.MethodGet, "/api/stream/"+theirs, nil).Want(t, http.StatusOK).List(t) {
			if e["organisation"] != "cert" {
				t.Fatalf("cert's stream got %v", e)
			}
		}
	})

	t.Run("dry-run records and does nothing", func(t *testing.T) {
		jobs := as.jobCount(t)
		o := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"198.19.0.1"}, "tags": []string{"d"}})[0]
		f := tm.waitFiring(t, dry, o.Str(t, "id"))
		if f["status"] != automation.FiringDryRun || f["planned"] != float64(1) || len(f["jobs"].([]any)) != 0 ||
			!strings.Contains(f.Str(t, "message"), "would create 1 jobs") || !strings.Contains(f.Str(t, "message"), "would add tags [seen]") {
			t.Fatalf("dry-run firing %v", f)
		}
		got := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+o.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		if contains(got.Strs(t, "tags"), "seen") || as.jobCount(t) != jobs {
			t.Fatalf("a dry-run acted: tags %v, jobs %d -> %d", got["tags"], jobs, as.jobCount(t))
		}
	})

	t.Run("an owner who lost a permission stops the rule", func(t *testing.T) {
		tm.admin.Call(t, http.MethodPatch, "/api/user/socadmin", map[string]any{"profile": "read-only", "organisation": "soc"}).Want(t, http.StatusOK)
		o := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"198.20.0.1"}, "tags": []string{"b"}})[0]
		f := tm.waitFiring(t, budget, o.Str(t, "id"))
		if f["status"] != automation.FiringFailed || !strings.Contains(f.Str(t, "message"), "lost the permission manageAnalyse") {
			t.Fatalf("firing %v", f)
		}
		r := tm.analyst.Call(t, http.MethodGet, "/api/automation/rule/"+budget, nil).Want(t, http.StatusOK).Object(t)
		if r["enabled"] != false || !strings.Contains(fmt.Sprint(r["stopped"]), "manageAnalyse") {
			t.Fatalf("rule %v", r)
		}
		// The stop is in the audit trail, by the system, naming the rule.
		if a := wantOne(t, tm.analyst, budget, "rule", "Update", "enabled", "stopped"); a.Str(t, "createdBy") != "system" ||
			a.Str(t, "requestId") != "rule:"+budget {
			t.Fatalf("audit of the stop %v", a)
		}
	})
}

// A restart: the engine reads the events from its stored cursor, so the observables created while it was
// down fire once after the restart, and the earlier ones not again; a firing a crash interrupted (left
// Pending after its jobs were made) is resumed without making its jobs twice.
func TestAutomation_RuleRestart(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	stop := tm.startRules()
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "echo", "analyzers": map[string]any{
		"ip": []any{map[string]any{"analysisId": "local", "name": "Echo"}}}}).Want(t, http.StatusCreated)
	ruleID := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "all", "event": "observableCreated",
		"actions": []any{map[string]any{"type": "runSet", "set": "echo"}}}).Want(t, http.StatusCreated).Object(t).Str(t, "id")
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	first := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"198.51.100.1", "198.51.100.2"}})
	for _, o := range first {
		tm.waitFiring(t, ruleID, o.Str(t, "id"))
	}
	stop()
	down := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"198.51.100.3", "198.51.100.4", "198.51.100.5"}})
	// What a crash between a firing's jobs and its outcome leaves: the firing Pending.
	ctx := context.Background()
	st, err := store.NewAutomationStore(ctx, tm.db)
	if err != nil {
		t.Fatal(err)
	}
	fs, _, err := st.Firings(ctx, search.Node{Op: search.OpEq, Path: "objectId", Value: first[0].Str(t, "id")}, search.Page{Limit: 1})
	if err != nil || len(fs) != 1 || len(fs[0].Jobs) != 1 {
		t.Fatalf("firing of the first observable: %v %v", fs, err)
	}
	interrupted := fs[0]
	interrupted.Status, interrupted.Jobs = automation.FiringPending, nil
	if err := st.UpdateFiring(ctx, interrupted); err != nil {
		t.Fatal(err)
	}
	tm.startRules()
	for _, o := range down {
		if f := tm.waitFiring(t, ruleID, o.Str(t, "id")); f["status"] != automation.FiringFired || len(f["jobs"].([]any)) != 1 {
			t.Fatalf("firing after the restart %v", f)
		}
	}
	f := tm.waitFiring(t, ruleID, first[0].Str(t, "id"))
	if f["status"] != automation.FiringFired || f["jobs"].([]any)[0] != fs[0].Jobs[0] {
		t.Fatalf("resumed firing %v, want its job %s", f, fs[0].Jobs[0])
	}
	waitFor(t, "the jobs on the server", func() bool { return as.jobCount(t) >= 5 })
	if h := tm.history(t, ruleID); len(h) != 5 {
		t.Fatalf("history %d entries, want 5", len(h))
	}
	total := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job/_search", map[string]any{"query": map[string]any{"case": caseID}}).
		Want(t, http.StatusOK).Total(t)
	if total != "5" || as.jobCount(t) != 5 {
		t.Fatalf("jobs: case-svc %s, server %d; want 5 (one per observable)", total, as.jobCount(t))
	}
}

// streamUntil polls a stream until it delivers an event for which ok holds, and returns it (deadline 15 s).
func streamUntil(t *testing.T, c *client, streamID string, ok func(obj) bool) obj {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range c.Call(t, http.MethodGet, "/api/stream/"+streamID, nil).Want(t, http.StatusOK).List(t) {
			if ok(e) {
				return e
			}
		}
	}
	t.Fatal("the stream did not deliver the event within 15 s")
	return nil
}

// An event written after the engine read past its date (a request's events are dated when its changes are
// made and written when it is done) still fires its rules, at once: the audit trail tells the engine the dates
// of the events it writes. Here a request's observable is dated, then another observable is created and
// fired on, and only then is the first one's event written.
func TestAutomation_RuleLateEvent(t *testing.T) {
	tm := newTeam(t, withRules(0))
	ruleID := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "seen", "event": "observableCreated",
		"actions": []any{map[string]any{"type": "addTags", "tags": []string{"seen"}}}}).Want(t, http.StatusCreated).Object(t).Str(t, "id")
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	a := tm.app
	ctx := context.Background()
	u, _, err := a.Identity.BySession(ctx, "ana")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Identity.CallerOf(u, "soc")
	if err != nil {
		t.Fatal(err)
	}
	// The request's changes are made; their events wait for it to be done (audit.Service.Batch).
	bctx, write := a.Events.Batch(audit.WithActor(ctx, audit.Actor{User: "ana", Org: "soc", RequestID: "late-request"}))
	late, _, err := a.Cases.CreateObservables(bctx, c, cases.Parent{Case: caseID}, cases.NewObservable{DataType: "ip", Data: []string{"198.18.7.1"}})
	if err != nil || len(late) != 1 {
		t.Fatalf("create the late observable: %v %v", late, err)
	}
	// Another request, in a later millisecond, fires: the engine has read past the first one's date. (The
	// late event is dated at the latest now; the loop waits for the clock's next millisecond, at most one.)
	for dated := time.Now().UnixMilli(); time.Now().UnixMilli() <= dated; {
		runtime.Gosched()
	}
	next := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"198.18.7.2"}})[0]
	fn := tm.waitFiring(t, ruleID, next.Str(t, "id"))
	if fn["status"] != automation.FiringFired {
		t.Fatalf("firing of the second observable %v", fn)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	f := tm.waitFiring(t, ruleID, late[0].ID)
	if f["status"] != automation.FiringFired || f.Str(t, "eventId") == "" {
		t.Fatalf("firing of the observable whose event was written late %v", f)
	}
	// The events' dates (the firings'): the late one is dated before the one the engine had read.
	if !(f["date"].(float64) < fn["date"].(float64)) {
		t.Fatalf("event dates %v and %v: the first is not dated before the second", f["date"], fn["date"])
	}
	got := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+late[0].ID, nil).Want(t, http.StatusOK).Object(t)
	if !contains(got.Strs(t, "tags"), "seen") {
		t.Fatalf("the late observable's tags %v", got["tags"])
	}
}
