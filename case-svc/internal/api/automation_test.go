package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/connector"
)

// offlineServer is an analysis server configured for every organisation that nobody listens on: enough for
// the routes that only check the configuration (analyzer sets).
func offlineServer(name string) connector.AnalysisServer {
	return analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: name, URL: "http://127.0.0.1:1", Key: "k", Timeout: time.Second},
		analysissvc.Options{RetryMax: 0}, nil)}
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

// runAutomation posts a bulk run with an optional Idempotency-Key.
func (c *client) runAutomation(t testing.TB, key string, body map[string]any) *resp {
	t.Helper()
	b, _ := json.Marshal(body)
	var hdr http.Header
	if key != "" {
		hdr = http.Header{"Idempotency-Key": {key}}
	}
	return c.Send(t, http.MethodPost, "/api/automation/run", "application/json", bytes.NewReader(b), hdr)
}

// reasons counts the skipped pairs of a run's answer by reason.
func reasons(t testing.TB, run obj) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range run["skipped"].([]any) {
		out[s.(map[string]any)["reason"].(string)]++
	}
	return out
}

// A set run on a case's 50 observables with a real analysis-svc: the expected jobs once, even when the
// request is sent three times (the same Idempotency-Key, then none) or three times at once; the skipped pairs
// say why; the jobs run to Success. A list of analyzers on an alert's observables; the refusals.
func TestAutomation_BulkRun(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "triage", "analyzers": map[string]any{
		"ip":     []any{map[string]any{"analysisId": "local", "name": "Echo", "parameters": map[string]any{"depth": 1}}},
		"domain": []any{map[string]any{"analysisId": "local", "name": "Echo"}, map[string]any{"analysisId": "local", "name": "Nope"}},
	}}).Want(t, http.StatusCreated)
	cs := tm.analyst.newCase(t, nil)
	caseID := cs.Str(t, "id")
	var ips, domains, mails []string
	for i := range 30 {
		ips = append(ips, fmt.Sprintf("198.51.100.%d", i+1))
	}
	for i := range 15 {
		domains = append(domains, fmt.Sprintf("d%d.example.org", i))
	}
	for i := range 5 {
		mails = append(mails, fmt.Sprintf("m%d@example.org", i))
	}
	for dt, data := range map[string][]string{"ip": ips, "domain": domains, "mail": mails} {
		tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": dt, "data": data})
	}
	remote0 := as.jobCount(t)

	t.Run("three times, one set of jobs", func(t *testing.T) {
		first := tm.analyst.runAutomation(t, "run-1", map[string]any{"caseId": caseID, "setId": "triage"}).Want(t, http.StatusOK).Object(t)
		created := first["created"].([]any)
		if len(created) != 45 {
			t.Fatalf("created %d jobs, want 45 (30 ip + 15 domain): %s", len(created), jsonOf(first["skipped"]))
		}
		if r := reasons(t, first); r["noAnalyzer"] != 20 || len(r) != 1 {
			t.Fatalf("skipped %v, want 20 noAnalyzer (15 Nope on domains, 5 mails)", r)
		}
		for _, c := range created {
			j := c.(map[string]any)
			if j["status"] != "Waiting" || j["analysisId"] != "local" || j["analyzerName"] != "Echo" || j["caseId"] != caseID {
				t.Fatalf("created job %v", j)
			}
		}
		again := tm.analyst.runAutomation(t, "run-1", map[string]any{"caseId": caseID, "setId": "triage"}).Want(t, http.StatusOK).Object(t)
		if n := len(again["created"].([]any)); n != 0 || reasons(t, again)["sameRequest"] != 45 {
			t.Fatalf("retry with the key: %d created, skipped %v", n, reasons(t, again))
		}
		third := tm.analyst.runAutomation(t, "", map[string]any{"caseId": caseID, "setId": "triage"}).Want(t, http.StatusOK).Object(t)
		if n := len(third["created"].([]any)); n != 0 || reasons(t, third)["recentJob"] != 45 {
			t.Fatalf("without a key: %d created, skipped %v", n, reasons(t, third))
		}
		for _, c := range created {
			id := c.(map[string]any)["id"].(string)
			eventually(t, "job "+id, func() obj {
				return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+id, nil).Want(t, http.StatusOK).Object(t)
			}, func(o obj) bool { return o["status"] == "Success" })
		}
		if n := as.jobCount(t) - remote0; n != 45 {
			t.Fatalf("the analysis server has %d new jobs, want 45", n)
		}
		total := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job/_search", map[string]any{"query": map[string]any{"case": caseID}}).
			Want(t, http.StatusOK).Total(t)
		if total != "45" {
			t.Fatalf("case-svc has %s jobs for the case, want 45", total)
		}
	})

	t.Run("three at once with one key", func(t *testing.T) {
		c2 := tm.analyst.newCase(t, nil).Str(t, "id")
		var data []string
		for i := range 10 {
			data = append(data, fmt.Sprintf("203.0.113.%d", i+1))
		}
		tm.analyst.observables(t, "/api/case/"+c2+"/artifact", map[string]any{"dataType": "ip", "data": data})
		before := as.jobCount(t)
		var wg sync.WaitGroup
		counts := make([]int, 3)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := tm.analyst.runAutomation(t, "burst", map[string]any{"caseId": c2, "analyzers": []any{map[string]any{"analysisId": "local", "name": "Echo"}}, "force": true})
				if r.Status == http.StatusOK {
					var o struct{ Created []any }
					_ = json.Unmarshal(r.Body, &o)
					counts[i] = len(o.Created)
				}
			}()
		}
		wg.Wait()
		if counts[0]+counts[1]+counts[2] != 10 {
			t.Fatalf("created %v, want 10 in all", counts)
		}
		waitFor(t, "10 jobs on the server", func() bool { return as.jobCount(t)-before >= 10 })
		total := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job/_search", map[string]any{"query": map[string]any{"case": c2}}).
			Want(t, http.StatusOK).Total(t)
		if total != "10" || as.jobCount(t)-before != 10 {
			t.Fatalf("jobs: case-svc %s, server %d; want 10", total, as.jobCount(t)-before)
		}
	})

	t.Run("a list of analyzers on an alert's observables", func(t *testing.T) {
		al := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "bulk", "title": "a",
			"description": "d", "pap": 1, "artifacts": []any{map[string]any{"dataType": "ip", "data": "192.0.2.44"}, map[string]any{"dataType": "domain", "data": "alert.example.net"}}}).
			Want(t, http.StatusCreated).Object(t)
		aobs := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+al.Str(t, "id")+"/artifact", nil).Want(t, http.StatusOK).List(t)
		one := aobs[0].Str(t, "id")
		r := tm.analyst.runAutomation(t, "", map[string]any{"alertId": al.Str(t, "id"), "observableIds": []string{one},
			"analyzers": []any{map[string]any{"analysisId": "local", "name": "Echo"}}}).Want(t, http.StatusOK).Object(t)
		created := r["created"].([]any)
		if len(created) != 1 || created[0].(map[string]any)["observableId"] != one || created[0].(map[string]any)["alertId"] != al.Str(t, "id") {
			t.Fatalf("alert run %v", r)
		}
		id := created[0].(map[string]any)["id"].(string)
		eventually(t, "alert job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+id, nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		got := tm.analyst.Call(t, http.MethodGet, "/api/alert/artifact/"+one, nil).Want(t, http.StatusOK).Object(t)
		if _, ok := got.Obj(t, "reports")["Echo"]; !ok {
			t.Fatalf("the alert observable has no Echo report: %v", got["reports"])
		}
	})

	t.Run("refusals", func(t *testing.T) {
		before := as.jobCount(t)
		body := map[string]any{"caseId": caseID, "setId": "triage", "force": true}
		tm.readOnly.runAutomation(t, "", body).WantError(t, http.StatusForbidden, "AuthorizationError")
		tm.other.runAutomation(t, "", body).WantError(t, http.StatusNotFound, "NotFoundError")
		certAdmin := tm.user(t, "certadmin", "cert", "org-admin")
		certCase := certAdmin.newCase(t, nil).Str(t, "id")
		certAdmin.runAutomation(t, "", map[string]any{"caseId": certCase, "setId": "triage"}).WantError(t, http.StatusNotFound, "NotFoundError")
		for name, b := range map[string]map[string]any{
			"case and alert":       {"caseId": caseID, "alertId": "~1", "setId": "triage"},
			"no parent":            {"setId": "triage"},
			"set and analyzers":    {"caseId": caseID, "setId": "triage", "analyzers": []any{map[string]any{"analysisId": "local", "name": "Echo"}}},
			"neither":              {"caseId": caseID},
			"unknown server":       {"caseId": caseID, "analyzers": []any{map[string]any{"analysisId": "nope", "name": "Echo"}}},
			"foreign observable":   {"caseId": caseID, "setId": "triage", "observableIds": []string{"~nope"}},
			"observableIds a word": {"caseId": caseID, "setId": "triage", "observableIds": "x"},
		} {
			t.Run(name, func(t *testing.T) {
				r := tm.analyst.runAutomation(t, "", b)
				if r.Status != http.StatusBadRequest {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				r.CheckErrorShape(t)
			})
		}
		tm.analyst.runAutomation(t, "", map[string]any{"caseId": caseID, "setId": "nope"}).WantError(t, http.StatusNotFound, "NotFoundError")
		tm.analyst.runAutomation(t, strings.Repeat("k", 300), body).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		if after := as.jobCount(t); after != before {
			t.Fatalf("refused runs made %d jobs", after-before)
		}
	})
}

// jsonOf is v as a JSON string (for messages).
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A bulk run while its analysis server is down: the jobs are made by analyzer name (the server cannot say the
// analyzer's id), stay Waiting, and are submitted once, by name, when the server is back.
func TestAutomation_BulkRunServerDown(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	p := newFaultProxy(t, as.URL)
	flaky := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "flaky", URL: p.srv.URL, Key: as.Key, Timeout: 10 * time.Second},
		analysissvc.Options{RetryMax: 1, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond}, nil)}
	tm := newTeam(t, withServers(fastTracker, flaky))
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "domain", "data": []string{"a.example", "b.example", "c.example"}})
	before := as.jobCount(t)
	p.set(func(p *faultProxy) { p.down = true })
	r := tm.analyst.runAutomation(t, "outage", map[string]any{"caseId": caseID, "analyzers": []any{map[string]any{"analysisId": "flaky", "name": "Echo"}}}).
		Want(t, http.StatusOK).Object(t)
	created := r["created"].([]any)
	if len(created) != 3 {
		t.Fatalf("created %v", r)
	}
	for _, c := range created {
		if j := c.(map[string]any); j["status"] != "Waiting" || j["analyzerId"] != "" || j["analyzerName"] != "Echo" {
			t.Fatalf("job made while the server is down: %v", j)
		}
	}
	waitFor(t, "the tracker's attempts", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.refused >= 3
	})
	if n := as.jobCount(t) - before; n != 0 {
		t.Fatalf("%d jobs reached the server while it was down", n)
	}
	p.set(func(p *faultProxy) { p.down = false })
	for _, c := range created {
		id := c.(map[string]any)["id"].(string)
		done := eventually(t, "job "+id, func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+id, nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if done.Str(t, "analyzerId") != as.Analyzers["Echo"] {
			t.Fatalf("the job's analyzer id %v, want %s", done["analyzerId"], as.Analyzers["Echo"])
		}
	}
	if n := as.jobCount(t) - before; n != 3 {
		t.Fatalf("the server has %d new jobs, want 3", n)
	}
}

// Changes of analyzer sets and rules are in the audit trail as every other change: one event per creation,
// update (with the changed fields) and deletion, by the user who made it, in the organisation's trail, its
// flow and the query API's audit steps; another organisation sees none of them.
func TestAutomation_AuditOfSetsAndRules(t *testing.T) {
	tm := newTeam(t, withServers(fastTracker, offlineServer("local")))
	oa := tm.orgAdmin
	set := oa.Call(t, http.MethodPost, "/api/automation/set", map[string]any{"name": "audited", "analyzers": map[string]any{
		"ip": []any{map[string]any{"analysisId": "local", "name": "Echo"}}}}).Want(t, http.StatusCreated).Object(t).Str(t, "id")
	if a := wantOne(t, oa, set, "analyzerSet", "Creation", "name", "analyzers"); a.Str(t, "createdBy") != "socadmin" ||
		a.Str(t, "organisation") != "soc" || a.Str(t, "rootId") != set || a.Obj(t, "object").Str(t, "name") != "audited" {
		t.Fatalf("set creation event %v", a)
	}
	oa.Call(t, http.MethodPatch, "/api/automation/set/"+set, map[string]any{"description": "changed"}).Want(t, http.StatusOK)
	if d := wantOne(t, oa, set, "analyzerSet", "Update", "description").Obj(t, "details"); len(d) != 1 || d["description"] != "changed" {
		t.Fatalf("set update details %v, want only description", d)
	}
	rule := oa.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "audited", "event": "caseCreated",
		"conditions": map[string]any{"tags": "x"}, "actions": []any{map[string]any{"type": "runSet", "set": "audited"}}}).
		Want(t, http.StatusCreated).Object(t).Str(t, "id")
	wantOne(t, oa, rule, "rule", "Creation", "name", "event", "conditions", "actions", "owner")
	oa.Call(t, http.MethodPatch, "/api/automation/rule/"+rule, map[string]any{"dryRun": true, "maxDepth": 2}).Want(t, http.StatusOK)
	if d := wantOne(t, oa, rule, "rule", "Update", "dryRun", "maxDepth").Obj(t, "details"); len(d) != 2 {
		t.Fatalf("rule update details %v, want dryRun and maxDepth", d)
	}
	// Refused changes record nothing.
	tm.analyst.Call(t, http.MethodPatch, "/api/automation/rule/"+rule, map[string]any{"enabled": false}).WantError(t, http.StatusForbidden, "AuthorizationError")
	oa.Call(t, http.MethodPatch, "/api/automation/set/"+set, map[string]any{"name": ""}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	oa.Call(t, http.MethodDelete, "/api/automation/rule/"+rule, nil).Want(t, http.StatusNoContent)
	wantOne(t, oa, rule, "rule", "Delete")
	oa.Call(t, http.MethodDelete, "/api/automation/set/"+set, nil).Want(t, http.StatusNoContent)
	wantOne(t, oa, set, "analyzerSet", "Delete")
	for id, n := range map[string]int{set: 3, rule: 3} {
		if l := oa.audits(t, id); len(l) != n {
			t.Fatalf("%s: %d events, want %d: %v", id, len(l), n, l)
		}
	}

	// The activity views: the organisation's flow and the query API.
	flow := tm.analyst.Call(t, http.MethodGet, "/api/flow?count=20", nil).Want(t, http.StatusOK).List(t)
	if !strings.Contains(fmt.Sprint(flow), set) || !strings.Contains(fmt.Sprint(flow), rule) {
		t.Fatalf("the flow lacks the set's or the rule's events: %v", flow)
	}
	n := tm.analyst.Call(t, http.MethodPost, "/api/v0/query", map[string]any{"query": []any{
		map[string]any{"_name": "listAuditFromObject", "objectId": rule}, map[string]any{"_name": "count"}}}).Want(t, http.StatusOK)
	if strings.TrimSpace(string(n.Body)) != "3" {
		t.Fatalf("listAuditFromObject count = %s, want 3", n.Body)
	}
	// Another organisation sees none of it.
	for _, id := range []string{set, rule} {
		if l := tm.other.audits(t, id); len(l) != 0 {
			t.Fatalf("cert sees %d events of soc's %s", len(l), id)
		}
	}
	if flow := tm.other.Call(t, http.MethodGet, "/api/flow?count=50", nil).Want(t, http.StatusOK).List(t); strings.Contains(fmt.Sprint(flow), rule) {
		t.Fatalf("cert's flow shows soc's rule: %v", flow)
	}
}
