//go:build e2e

package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// builtins are the workers enabled on both analysis servers of the flow; a server's name goes into its
// Tagger's tag, so the case shows which server tagged it.
func builtins(server string) []worker {
	return []worker{
		{def: "Echo_1_0", name: "Echo", conf: map[string]any{"level": "suspicious"}},
		{def: "File_Info_1_0", name: "File_Info", conf: map[string]any{"auto_extract_artifacts": true}},
		{def: "Observable_Validator_1_0", name: "Observable_Validator"},
		{responder: true, def: "Tagger_1_0", name: "Tagger", conf: map[string]any{"tag": "tagged-by-" + server}},
		{responder: true, def: "Task_Helper_1_0", name: "Task_Helper",
			conf: map[string]any{"taskTitle": "Follow-up", "logMessage": "checked by " + server, "closeTask": true}},
	}
}

// jobWait bounds a job of a built-in analyzer, from submission to the result imported into the case.
const jobWait = 90 * time.Second

// TestFlow: one case-svc and two analysis-svc containers on the test's network; the connector is configured
// by env with both servers' network aliases. The whole flow goes over HTTP, from the superadmin bootstrap to
// responder operations applied in the case, with jobs on both servers. A webhook receiver container gets the
// organisation's events from case-svc's outbox (case, tasks, log, observables, jobs, actions), checked at
// the end against the audit trail, and each analysis server's JobFinished events.
func TestFlow(t *testing.T) {
	s := newStack(t)
	// The receiver is on the test network, a private address: the SSRF guard refuses it unless allowed.
	hooksEnv := map[string]string{"ANALYSIS_WEBHOOK_ALLOW_PRIVATE": "true"}
	a1 := s.newAnalysis("a1", "analysis-a", "", hooksEnv, nil)
	a2 := s.newAnalysis("a2", "analysis-b", "", hooksEnv, nil)
	recv := s.newReceiver(t)
	s.startNodes(t, a1.node, a2.node, recv)

	var tm team
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow() // every step builds on the ones before
		}
	}
	var cs *caseServer
	step("bootstrap, organization and analyzers on both analysis servers", func(t *testing.T) {
		a1.provision(t, "soc", builtins("a1")...)
		a2.provision(t, "soc", builtins("a2")...)
		cs = s.newCaseSvc("", a1, a2)
		cs.env["CASE_WEBHOOK_ALLOW_PRIVATE"] = "true"
		s.startNodes(t, cs.node)
	})
	step("case-svc superadmin bootstrap, organisation and users", func(t *testing.T) {
		tm = cs.provision(t)
		// Profiles hold: the read-only user cannot create a case.
		tm.reader.call(t, http.MethodPost, "/api/case", map[string]any{"title": "x", "description": "y"}).want(t, http.StatusForbidden)
	})

	var hooks []*webhookEndpoint
	var jobHooks map[*analysisServer]*webhookEndpoint
	var auditBefore map[string]obj // the organisation's events before the webhooks: not delivered
	step("webhooks to the receiver container", func(t *testing.T) {
		hooks = configureWebhooks(t, tm.orgAdmin)
		jobHooks = map[*analysisServer]*webhookEndpoint{a1: jobFinishedWebhook(t, a1), a2: jobFinishedWebhook(t, a2)}
		// The analyst may not manage webhooks (manageConfig).
		tm.analyst.call(t, http.MethodGet, "/api/webhook", nil).want(t, http.StatusForbidden)
		auditBefore = auditEvents(t, tm.orgAdmin)
		s.logf("webhooks: every event signed, job and action events signed with a bearer token, at %s", receiverAlias)
	})

	step("analyzers and responders of both servers listed through the connector", func(t *testing.T) {
		for _, kind := range []string{"analyzer", "responder"} {
			r := tm.analyst.call(t, http.MethodGet, "/api/connector/analysis/"+kind, nil).want(t, http.StatusOK)
			if w := r.header.Get("X-Analysis-Warnings"); w != "" {
				t.Fatalf("%s list warns %q with both servers up", kind, w)
			}
			got := map[string][]string{}
			for _, w := range r.list(t) {
				got[w.str(t, "name")] = w.strs(t, "analysisIds")
			}
			want := []string{"Echo", "File_Info", "Observable_Validator"}
			if kind == "responder" {
				want = []string{"Tagger", "Task_Helper"}
			}
			for _, name := range want {
				if ids := got[name]; !slices.Equal(ids, []string{"a1", "a2"}) {
					t.Fatalf("%s %s is on servers %v, want [a1 a2]; list %v", kind, name, ids, got)
				}
			}
		}
		s.logf("connector lists the analyzers and responders of a1 and a2")
	})

	var caseID string
	var ip, domain, file obj
	const notes = "Seen: contact http://bad.example.net/x from 198.51.100.77 and mail to x@evil.example.com\n"
	step("case with observables", func(t *testing.T) {
		c := tm.analyst.newCase(t, map[string]any{"title": "Phishing wave", "description": "reported by users", "tlp": 2, "pap": 2,
			"tasks": []any{map[string]any{"title": "Investigate"}}})
		caseID = c.str(t, "id")
		ip = tm.analyst.observables(t, caseID, "ip", "203.0.113.5")[0]
		domain = tm.analyst.observables(t, caseID, "domain", "example.org")[0]
		file = tm.analyst.upload(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file", "message": "user notes"},
			"notes.txt", "text/plain", []byte(notes)).want(t, http.StatusCreated).list(t)[0]
		s.logf("case %s with observables ip, domain and file", caseID)
	})

	type run struct {
		server      *analysisServer
		analyzer    string
		observable  obj
		label       string
		job, remote obj
	}
	runs := []*run{
		{server: a1, analyzer: "Observable_Validator", observable: ip, label: "ip"},
		{server: a1, analyzer: "File_Info", observable: file, label: "file"},
		{server: a2, analyzer: "Echo", observable: domain, label: "domain"},
		{server: a2, analyzer: "Echo", observable: file, label: "file"},
		{server: a2, analyzer: "Observable_Validator", observable: domain, label: "domain"},
	}
	step("jobs on both servers", func(t *testing.T) {
		for _, r := range runs {
			r.job = tm.analyst.runJob(t, r.server, r.analyzer, r.observable.str(t, "id"))
		}
		for _, r := range runs {
			what := r.analyzer + " on " + r.label + " via " + r.server.name
			r.job = tm.analyst.waitJob(t, what, r.job.str(t, "id"), jobWait)
			remoteID := r.job.str(t, "analysisJobId")
			if r.job.str(t, "analyzerName") != r.analyzer || remoteID == "" {
				t.Fatalf("%s: job %v", what, r.job)
			}
			// The job ran on the server it names, and only there.
			r.remote = r.server.remoteJob(t, remoteID)
			if r.remote.str(t, "status") != "Success" || r.remote.str(t, "analyzerName") != r.analyzer {
				t.Fatalf("%s: job on the server %v", what, r.remote)
			}
			other := a1
			if r.server == a1 {
				other = a2
			}
			other.as(other.orgKey).call(t, http.MethodGet, "/api/job/"+remoteID, nil).want(t, http.StatusNotFound)
		}
		s.logf("%d jobs done: 2 on a1, 3 on a2", len(runs))
	})

	step("reports and artifacts back in the case", func(t *testing.T) {
		obs := tm.analyst.caseObservables(t, caseID)
		for _, want := range []struct{ key, analyzer string }{
			{"203.0.113.5", "Observable_Validator"}, {"example.org", "Echo"}, {"example.org", "Observable_Validator"},
			{"notes.txt", "File_Info"}, {"notes.txt", "Echo"},
		} {
			o, ok := obs[want.key]
			if !ok {
				t.Fatalf("observable %s missing; have %v", want.key, keys(obs))
			}
			rep, ok := o.obj(t, "reports")[want.analyzer].(map[string]any)
			if !ok {
				t.Fatalf("observable %s has no %s report: %v", want.key, want.analyzer, o["reports"])
			}
			if tax, _ := rep["taxonomies"].([]any); len(tax) == 0 {
				t.Fatalf("observable %s: %s report without taxonomies: %v", want.key, want.analyzer, rep)
			}
		}
		// Echo ran with level "suspicious" on a2: its summary says so.
		if !strings.Contains(mustJSON(obs["example.org"].obj(t, "reports")["Echo"]), "suspicious") {
			t.Fatalf("Echo summary %v", obs["example.org"]["reports"])
		}
		// File_Info's report carries the IOCs of the file, imported as observables of the case.
		for _, ioc := range []string{"198.51.100.77", "http://bad.example.net/x"} {
			o, ok := obs[ioc]
			if !ok {
				t.Fatalf("artifact %s of File_Info not imported; observables %v", ioc, keys(obs))
			}
			if !slices.Contains(o.strs(t, "tags"), "src:File_Info") {
				t.Fatalf("imported artifact %s tags %v", ioc, o["tags"])
			}
		}
		for _, r := range runs {
			if r.label == "file" && r.analyzer == "File_Info" {
				arts, _ := r.job.obj(t, "report")["artifacts"].([]any)
				if len(arts) == 0 {
					t.Fatalf("File_Info job report without artifacts: %v", r.job["report"])
				}
			}
		}
		// The query API finds the file's jobs, one per server.
		jobs := tm.analyst.call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
			map[string]any{"_name": "getObservable", "idOrName": file.str(t, "id")}, map[string]any{"_name": "jobs"},
			map[string]any{"_name": "sort", "_fields": []any{map[string]any{"startDate": "desc"}}},
			map[string]any{"_name": "page", "from": 0, "to": 10}}}).want(t, http.StatusOK).list(t)
		var servers []string
		for _, j := range jobs {
			servers = append(servers, j.str(t, "analysisId"))
		}
		slices.Sort(servers)
		if !slices.Equal(servers, []string{"a1", "a2"}) {
			t.Fatalf("jobs of the file: servers %v", servers)
		}
		s.logf("reports in the observables; File_Info's IOCs imported as observables")
	})

	var actions []obj
	step("responder operations applied", func(t *testing.T) {
		tasks := tm.analyst.tasks(t, caseID)
		investigate, ok := tasks["Investigate"]
		if !ok {
			t.Fatalf("tasks %v", keys(tasks))
		}
		taskID := investigate.str(t, "id")
		helper := tm.analyst.runAction(t, a1, "Task_Helper", "case_task", taskID)
		if helper.str(t, "objectType") != "Task" {
			t.Fatalf("action %v", helper)
		}
		caseTag := tm.analyst.runAction(t, a2, "Tagger", "case", caseID)
		obsTag := tm.analyst.runAction(t, a1, "Tagger", "case_artifact", ip.str(t, "id"))
		tm.analyst.waitAction(t, "Task_Helper via a1", helper.str(t, "id"), jobWait)
		tm.analyst.waitAction(t, "Tagger on the case via a2", caseTag.str(t, "id"), jobWait)
		tm.analyst.waitAction(t, "Tagger on the ip via a1", obsTag.str(t, "id"), jobWait)

		tasks = tm.analyst.tasks(t, caseID)
		if _, ok := tasks["Follow-up"]; !ok || tasks["Investigate"].str(t, "status") != "Completed" {
			t.Fatalf("tasks after Task_Helper: %v", tasks)
		}
		logs := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+taskID+"/log?range=all", nil).want(t, http.StatusOK).list(t)
		if len(logs) != 1 || logs[0].str(t, "message") != "checked by a1" {
			t.Fatalf("logs of the task: %v", logs)
		}
		c := tm.analyst.call(t, http.MethodGet, "/api/case/"+caseID, nil).want(t, http.StatusOK).object(t)
		if !slices.Contains(c.strs(t, "tags"), "tagged-by-a2") {
			t.Fatalf("case tags %v", c["tags"])
		}
		o := tm.analyst.call(t, http.MethodGet, "/api/case/artifact/"+ip.str(t, "id"), nil).want(t, http.StatusOK).object(t)
		if !slices.Contains(o.strs(t, "tags"), "tagged-by-a1") {
			t.Fatalf("observable tags %v", o["tags"])
		}
		// The read-only user may not run responders.
		tm.reader.call(t, http.MethodPost, "/api/connector/analysis/action",
			map[string]any{"analysisId": "a1", "responderId": a1.responders["Tagger"], "objectType": "case", "objectId": caseID}).
			want(t, http.StatusForbidden)
		actions = []obj{helper, caseTag, obsTag}
		s.logf("responders: task closed, follow-up task and log created (a1), case tagged (a2), observable tagged (a1)")
	})

	step("webhook deliveries: the case and job events of the flow", func(t *testing.T) {
		got := checkDeliveries(t, recv, tm.orgAdmin, hooks, auditBefore)
		all, jobs := eventLog(got["/hooks/all"]), eventLog(got["/hooks/jobs"])
		for _, h := range all {
			if h.event["rootId"] != caseID {
				t.Fatalf("event %v %v %v: rootId %v, want the case %s", h.event["operation"], h.event["objectType"],
					h.event["objectId"], h.event["rootId"], caseID)
			}
		}
		// Events of the test's own requests, made one after the other, arrive in that order.
		var order []int
		order = append(order, all.want(t, "all", "case", caseID, "Creation", nil))
		tasks := tm.analyst.tasks(t, caseID)
		order = append(order, all.want(t, "all", "case_task", tasks["Investigate"].str(t, "id"), "Creation", nil))
		for _, o := range []obj{ip, domain, file} {
			order = append(order, all.want(t, "all", "case_artifact", o.str(t, "id"), "Creation", nil))
		}
		for _, r := range runs {
			order = append(order, all.want(t, "all", "case_artifact_job", r.job.str(t, "id"), "Creation", nil))
		}
		for _, a := range actions {
			order = append(order, all.want(t, "all", "action", a.str(t, "id"), "Creation", nil))
		}
		if !slices.IsSorted(order) {
			t.Fatalf("events of successive requests arrived in the order %v", order)
		}
		// Every job and action: created, then finished with Success, on both endpoints.
		for _, l := range []struct {
			name string
			log  eventLog
		}{{"all", all}, {"jobs", jobs}} {
			for _, r := range runs {
				id := r.job.str(t, "id")
				if c, f := l.log.want(t, l.name, "case_artifact_job", id, "Creation", nil),
					l.log.want(t, l.name, "case_artifact_job", id, "Update", status("Success")); c > f {
					t.Fatalf("%s: job %s finished (delivery %d) before its creation (delivery %d)", l.name, id, f, c)
				}
			}
			for _, a := range actions {
				id := a.str(t, "id")
				if c, f := l.log.want(t, l.name, "action", id, "Creation", nil),
					l.log.want(t, l.name, "action", id, "Update", status("Success")); c > f {
					t.Fatalf("%s: action %s finished (delivery %d) before its creation (delivery %d)", l.name, id, f, c)
				}
			}
			for _, h := range l.log {
				if l.name == "jobs" && h.event["objectType"] != "case_artifact_job" && h.event["objectType"] != "action" {
					t.Fatalf("jobs endpoint got a %v event", h.event["objectType"])
				}
			}
		}
		// What the jobs and responders changed: imported observables, reports, the task closed, the follow-up
		// task and its log, the tags.
		for _, o := range tm.analyst.caseObservables(t, caseID) {
			all.want(t, "all", "case_artifact", o.str(t, "id"), "Creation", nil)
		}
		all.want(t, "all", "case_artifact", file.str(t, "id"), "Update", nil)
		all.want(t, "all", "case_task", tasks["Investigate"].str(t, "id"), "Update", status("Completed"))
		all.want(t, "all", "case_task", tasks["Follow-up"].str(t, "id"), "Creation", nil)
		logs := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+tasks["Investigate"].str(t, "id")+"/log?range=all", nil).
			want(t, http.StatusOK).list(t)
		all.want(t, "all", "case_task_log", logs[0].str(t, "id"), "Creation", nil)
		all.want(t, "all", "case", caseID, "Update", hasTag("tagged-by-a2"))
		all.want(t, "all", "case_artifact", ip.str(t, "id"), "Update", hasTag("tagged-by-a1"))
		s.logf("receiver: %d events on the endpoint of every event, %d on the job and action endpoint; signed, in order, none twice",
			len(all), len(jobs))

		// Each analysis server sent one JobFinished per job it ran, to its organisation's endpoint.
		for _, a := range []*analysisServer{a1, a2} {
			var ids []string
			for _, r := range runs {
				if r.server == a {
					ids = append(ids, r.job.str(t, "analysisJobId"))
				}
			}
			n := checkJobFinished(t, recv, a, jobHooks[a], ids)
			s.logf("receiver: %d JobFinished from %s, signed, none twice", n, a.name)
		}
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
