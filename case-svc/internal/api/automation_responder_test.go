package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/store"
)

// limitedServer is an analysis server whose listing gives each worker TLP and PAP limits, as Cortex lists its
// workers (maxTlp, maxPap); analysis-svc does not list them (it refuses the job itself, on the server).
type limitedServer struct {
	connector.AnalysisServer
	maxTLP, maxPAP int
}

func (l limitedServer) Workers(ctx context.Context, responder bool, dataType string) ([]connector.RemoteWorker, error) {
	ws, err := l.AnalysisServer.Workers(ctx, responder, dataType)
	for i := range ws {
		ws[i].MaxTLP, ws[i].MaxPAP = &l.maxTLP, &l.maxPAP
	}
	return ws, err
}

// configure replaces the configuration of an enabled worker (kind analyzer or responder) on the analysis
// server, as its organisation's administrator.
func (a *analysisServer) configure(t *testing.T, kind, id string, conf map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"configuration": conf})
	req, _ := http.NewRequest(http.MethodPatch, a.URL+"/api/"+kind+"/"+id, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("configure %s %s: %d %s", kind, id, resp.StatusCode, body)
	}
}

// caseActions lists the responder actions run on a case.
func (tm *team) caseActions(t *testing.T, caseID string) []obj {
	t.Helper()
	return tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/action/case/"+caseID, nil).Want(t, http.StatusOK).List(t)
}

// waitAction waits for a responder action to finish and returns it.
func (tm *team) waitAction(t *testing.T, id string) obj {
	t.Helper()
	return eventually(t, "action "+id, func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+id, nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" || o["status"] == "Failure" })
}

// A rule's runResponder action runs the responder, by name, on the event's object as the rule's owner,
// through the connector as a responder run asked for through the API; its firing lists the action. Refused:
// a responder no server offers, an object whose TLP or PAP is above the limits the server lists (nothing is
// sent) or checks (the server fails the job). A server that does not answer makes the firing wait, and it
// runs when the server is back.
func TestAutomation_RuleResponder(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	proxy := newFaultProxy(t, as.URL)
	tm := newTeam(t, withServers(fastTracker, server("local", as, ""), limitedServer{server("strict", as, ""), 1, 1},
		server("flaky", as, proxy.srv.URL)), withRules(0))
	rule := func(name, tag string, action map[string]any) string {
		t.Helper()
		action["type"] = "runResponder"
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": name, "event": "caseCreated",
			"conditions": map[string]any{"tags": tag}, "actions": []any{action}}).Want(t, http.StatusCreated).Object(t).Str(t, "id")
	}
	tagged := func(tag string, tlp, pap int) string {
		t.Helper()
		return tm.analyst.newCase(t, map[string]any{"tags": []string{tag}, "tlp": tlp, "pap": pap}).Str(t, "id")
	}
	caseTags := func(caseID string) []string {
		return tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID, nil).Want(t, http.StatusOK).Object(t).Strs(t, "tags")
	}
	respond := rule("respond", "respond", map[string]any{"responder": "Tagger"})

	t.Run("runs the responder as the rule's owner", func(t *testing.T) {
		caseID := tagged("respond", 2, 2)
		other := tagged("quiet", 2, 2)
		f := tm.waitFiring(t, respond, caseID)
		acts := f["actions"].([]any)
		if f["status"] != automation.FiringFired || len(acts) != 1 || f["objectType"] != "case" {
			t.Fatalf("firing %v", f)
		}
		act := tm.waitAction(t, acts[0].(string))
		if act["status"] != "Success" || act.Str(t, "createdBy") != "socadmin" || act.Str(t, "responderName") != "Tagger" ||
			act.Str(t, "analysisId") != "local" || act.Str(t, "objectId") != caseID {
			t.Fatalf("action %v", act)
		}
		if !contains(caseTags(caseID), "seen-by-responder") {
			t.Fatalf("case tags %v", caseTags(caseID))
		}
		audit := tm.orgAdmin.Call(t, http.MethodPost, "/api/audit/_search", map[string]any{"query": map[string]any{"requestId": "rule:" + respond}}).
			Want(t, http.StatusOK).List(t)
		found := false
		for _, e := range audit {
			found = found || (e["objectId"] == act.Str(t, "id") && e["operation"] == "Creation")
		}
		if !found {
			t.Fatalf("no audit record of the action naming the rule: %v", audit)
		}
		if f := tm.waitFiring(t, respond, other); f["status"] != automation.FiringCondition || len(tm.caseActions(t, other)) != 0 {
			t.Fatalf("untagged case: firing %v, actions %v", f, tm.caseActions(t, other))
		}
	})

	t.Run("a responder no server offers", func(t *testing.T) {
		missing := rule("missing", "missing", map[string]any{"responder": "No_Such_Responder"})
		caseID := tagged("missing", 2, 2)
		f := tm.waitFiring(t, missing, caseID)
		if f["status"] != automation.FiringFailed || !strings.Contains(f.Str(t, "message"), "no analysis server offers the responder No_Such_Responder") ||
			len(f["actions"].([]any)) != 0 || len(tm.caseActions(t, caseID)) != 0 {
			t.Fatalf("firing %v", f)
		}
	})

	t.Run("TLP or PAP above the limits the server lists", func(t *testing.T) {
		strict := rule("strict", "strict", map[string]any{"responder": "Tagger", "analysisId": "strict"})
		for _, tc := range []struct {
			tlp, pap int
			want     string
		}{{2, 1, "the Case's TLP 2 is above the limit 1 of the responder Tagger"}, {1, 2, "the Case's PAP 2 is above the limit 1 of the responder Tagger"}} {
			caseID := tagged("strict", tc.tlp, tc.pap)
			f := tm.waitFiring(t, strict, caseID)
			if f["status"] != automation.FiringFailed || f.Str(t, "message") != tc.want || len(tm.caseActions(t, caseID)) != 0 {
				t.Fatalf("firing %v, want Failed %q and no action", f, tc.want)
			}
		}
		caseID := tagged("strict", 1, 1)
		f := tm.waitFiring(t, strict, caseID)
		if f["status"] != automation.FiringFired || len(f["actions"].([]any)) != 1 {
			t.Fatalf("firing within the limits %v", f)
		}
		if act := tm.waitAction(t, f["actions"].([]any)[0].(string)); act["status"] != "Success" || act.Str(t, "analysisId") != "strict" {
			t.Fatalf("action %v", act)
		}
	})

	t.Run("a server that does not answer: the firing waits, and runs when it is back", func(t *testing.T) {
		flaky := rule("flaky", "flaky", map[string]any{"responder": "Tagger", "analysisId": "flaky"})
		proxy.set(func(p *faultProxy) { p.down = true })
		caseID := tagged("flaky", 2, 2)
		var f obj
		waitFor(t, "the firing waiting for the server", func() bool {
			f = tm.history(t, flaky)[caseID]
			return f != nil && f["status"] == automation.FiringPending && strings.Contains(f.Str(t, "message"), "analysis server flaky is unavailable")
		})
		proxy.set(func(p *faultProxy) { p.down = false })
		f = tm.waitFiring(t, flaky, caseID)
		if f["status"] != automation.FiringFired || len(f["actions"].([]any)) != 1 {
			t.Fatalf("firing %v", f)
		}
		if act := tm.waitAction(t, f["actions"].([]any)[0].(string)); act["status"] != "Success" || len(tm.caseActions(t, caseID)) != 1 {
			t.Fatalf("action %v", act)
		}
	})

	t.Run("TLP above the limit the server checks", func(t *testing.T) {
		as.configure(t, "responder", as.Responder["Tagger"], map[string]any{"tag": "seen-by-responder", "check_tlp": true, "max_tlp": 1})
		caseID := tagged("respond", 3, 2)
		f := tm.waitFiring(t, respond, caseID)
		if f["status"] != automation.FiringFired || len(f["actions"].([]any)) != 1 {
			t.Fatalf("firing %v", f)
		}
		act := tm.waitAction(t, f["actions"].([]any)[0].(string))
		if act["status"] != "Failure" || !strings.Contains(act.Str(t, "report"), "TLP is higher than allowed") || contains(caseTags(caseID), "seen-by-responder") {
			t.Fatalf("action %v, case tags %v", act, caseTags(caseID))
		}
	})
}

// A rule's responder runs at most once per (rule, object, event) across a restart: a case created while the
// engine is down gets its action after the restart; a firing interrupted after its action was made (the run
// written, the action's id not yet) takes that action instead of running the responder again; one
// interrupted before the action was made runs it once; the events read again after the restart act on
// nothing.
func TestAutomation_RuleResponderRestart(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	stop := tm.startRules()
	ruleID := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "respond", "event": "caseCreated",
		"actions": []any{map[string]any{"type": "runResponder", "responder": "Tagger"}}}).Want(t, http.StatusCreated).Object(t).Str(t, "id")
	made := tm.analyst.newCase(t, nil).Str(t, "id") // fired before the crash; its firing is then set back as interrupted
	f := tm.waitFiring(t, ruleID, made)
	if f["status"] != automation.FiringFired || len(f["actions"].([]any)) != 1 {
		t.Fatalf("firing %v", f)
	}
	action := f["actions"].([]any)[0].(string)
	stop()

	ctx := context.Background()
	st, err := store.NewAutomationStore(ctx, tm.db)
	if err != nil {
		t.Fatal(err)
	}
	interrupted, err := st.Firing(ctx, f.Str(t, "id"))
	if err != nil || len(interrupted.Responders) != 1 || interrupted.Responders[0].ActionID != action {
		t.Fatalf("stored firing %+v %v", interrupted, err)
	}
	interrupted.Status, interrupted.Message, interrupted.Responders[0].ActionID = automation.FiringPending, "", ""
	if err := st.UpdateFiring(ctx, interrupted); err != nil {
		t.Fatal(err)
	}
	down := tm.analyst.newCase(t, nil).Str(t, "id") // created while the engine is down
	// Interrupted after writing its run, before the connector made the action.
	early := tm.analyst.newCase(t, nil).Str(t, "id")
	if err := st.CreateFiring(ctx, automation.Firing{ID: automation.FiringID(ruleID, early, automation.EventCaseCreated), Org: "soc",
		Rule: ruleID, RuleName: "respond", Event: automation.EventCaseCreated, ObjectType: "case", ObjectID: early, Status: automation.FiringPending,
		Date: time.Now(), Updated: time.Now(), Responders: []automation.ResponderRun{{Action: 0, Responder: "Tagger", AnalysisID: "local",
			ResponderID: as.Responder["Tagger"], Since: time.Now()}}}); err != nil {
		t.Fatal(err)
	}

	tm.startRules()
	for _, c := range []struct{ name, caseID, action string }{{"interrupted after its action", made, action},
		{"created while down", down, ""}, {"interrupted before its action", early, ""}} {
		f := tm.waitFiring(t, ruleID, c.caseID)
		acts := f["actions"].([]any)
		if f["status"] != automation.FiringFired || len(acts) != 1 || (c.action != "" && acts[0] != c.action) {
			t.Fatalf("%s: firing %v (want the action %q)", c.name, f, c.action)
		}
		tm.waitAction(t, acts[0].(string))
		if l := tm.caseActions(t, c.caseID); len(l) != 1 || l[0].Str(t, "id") != acts[0] {
			t.Fatalf("%s: actions on the case %v, want only %s", c.name, l, acts[0])
		}
	}
	if h := tm.history(t, ruleID); len(h) != 3 {
		t.Fatalf("history %d entries, want 3", len(h))
	}
}
