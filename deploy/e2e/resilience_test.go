//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// slowMs is how long the Slow analyzer works on a job: long enough to stop its server while it runs.
const slowMs = 8000

// recoverWait bounds a job that must complete after its server came back: the connector's tracker retries
// an unreachable server with a backoff doubling up to a minute, and the job may run again from the start.
const recoverWait = 3 * time.Minute

// TestFaults stops, kills and replaces containers under running and waiting jobs. a1 has one job worker and
// the Slow analyzer (an external program built from testdata), so a job can be caught running and others
// caught waiting behind it; every service keeps its data on a named volume.
func TestFaults(t *testing.T) {
	s := newStack(t)
	a1 := s.newAnalysis("a1", "analysis-a", s.volume(t, "a1-data"), map[string]string{
		"ANALYSIS_JOB_WORKERS":    "1",
		"ANALYSIS_JOB_LEASE":      "6s", // a killed server's running job is taken again 6 s after its restart
		"ANALYSIS_ANALYZER_PATHS": "/analyzers",
	}, slowAnalyzerFiles(t))
	a2 := s.newAnalysis("a2", "analysis-b", s.volume(t, "a2-data"), nil, nil)
	s.startNodes(t, a1.node, a2.node)
	a1.provision(t, "soc", append(builtins("a1"),
		worker{def: "Slow_1_0", name: "Slow", conf: map[string]any{"sleep_ms": slowMs}})...)
	a2.provision(t, "soc", builtins("a2")...)
	cs := s.newCaseSvc(s.volume(t, "case-data"), a1, a2)
	s.startNodes(t, cs.node)
	tm := cs.provision(t)

	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow() // the steps share the containers: stop at the first broken one
		}
	}
	caseID := tm.analyst.newCase(t, map[string]any{"title": "Faults", "description": "servers come and go",
		"tasks": []any{map[string]any{"title": "Triage"}}}).str(t, "id")
	domain := func(t *testing.T, name string) string {
		return tm.analyst.observables(t, caseID, "domain", name)[0].str(t, "id")
	}
	// running waits until a1 runs the job (its own API, as the connector's orgadmin).
	running := func(t *testing.T, remoteID string) {
		eventually(t, "job "+remoteID+" running on a1", 60*time.Second, func() (bool, string) {
			st := a1.remoteJob(t, remoteID)["status"]
			return st == "InProgress", fmt.Sprint(st)
		})
	}
	unfinished := func(t *testing.T, jobID string) {
		if st := tm.analyst.job(t, jobID)["status"]; st != "Waiting" && st != "InProgress" {
			t.Fatalf("job %s is %v while its server is down", jobID, st)
		}
	}

	step("analysis server stopped mid-job and started again: the job completes", func(t *testing.T) {
		j := tm.analyst.runJob(t, a1, "Slow", domain(t, "slow-1.example.org"))
		remoteID := j.str(t, "analysisJobId")
		running(t, remoteID)
		s.logf("Slow job %s running on a1 (job %s); stopping a1", j.str(t, "id"), remoteID)
		a1.stop(t, 2*time.Second) // SIGTERM, SIGKILL after 2 s: the job cannot finish meanwhile
		unfinished(t, j.str(t, "id"))
		// The other server keeps working.
		other := tm.analyst.runJob(t, a2, "Echo", domain(t, "while-a1-down.example.org"))
		tm.analyst.waitJob(t, "Echo via a2 while a1 is down", other.str(t, "id"), jobWait)
		unfinished(t, j.str(t, "id"))
		a1.restart(t)
		done := tm.analyst.waitJob(t, "Slow job after a1 came back", j.str(t, "id"), recoverWait)
		if done.str(t, "analysisJobId") != remoteID {
			t.Fatalf("the job was submitted again: %s, first %s", done["analysisJobId"], remoteID)
		}
		if full := done.obj(t, "report").obj(t, "full"); full["data"] != "slow-1.example.org" {
			t.Fatalf("report %v", full)
		}
		if st := a1.remoteJob(t, remoteID)["status"]; st != "Success" {
			t.Fatalf("job on a1: %v", st)
		}
		s.logf("the job completed after a1's restart, same job id on a1")
	})

	step("analysis server replaced on its volume: its Waiting jobs run after the restart", func(t *testing.T) {
		slow := tm.analyst.runJob(t, a1, "Slow", domain(t, "slow-2.example.org"))
		running(t, slow.str(t, "analysisJobId"))
		var waiting []obj
		for _, name := range []string{"wait-1.example.org", "wait-2.example.org"} {
			j := tm.analyst.runJob(t, a1, "Echo", domain(t, name))
			if st := a1.remoteJob(t, j.str(t, "analysisJobId"))["status"]; st != "Waiting" {
				t.Fatalf("job behind the running one is %v on a1, want Waiting", st)
			}
			waiting = append(waiting, j)
		}
		s.logf("a1 runs 1 job, 2 wait; replacing the a1 container (volume kept)")
		a1.replace(t, 2*time.Second)
		// The volume kept a1's users and keys: the connector's key still works.
		a1.as(a1.orgKey).call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK)
		for i, j := range append([]obj{slow}, waiting...) {
			done := tm.analyst.waitJob(t, fmt.Sprintf("job %d of a1 after its replacement", i+1), j.str(t, "id"), recoverWait)
			if done.str(t, "analysisJobId") != j.str(t, "analysisJobId") {
				t.Fatalf("job %d submitted again: %s, first %s", i+1, done["analysisJobId"], j["analysisJobId"])
			}
		}
		s.logf("the running and the 2 waiting jobs completed on the new a1 container")
	})

	step("case-svc replaced on its volume: nothing lost, the pending job completes", func(t *testing.T) {
		slowObs := domain(t, "slow-3.example.org")
		pending := tm.analyst.runJob(t, a1, "Slow", slowObs)
		running(t, pending.str(t, "analysisJobId"))
		task := tm.analyst.tasks(t, caseID)["Triage"]
		tm.analyst.call(t, http.MethodPost, "/api/case/task/"+task.str(t, "id")+"/log", map[string]any{"message": "before the restart"}).
			want(t, http.StatusCreated)
		tm.analyst.call(t, http.MethodPatch, "/api/case/"+caseID, map[string]any{"tags": []string{"kept"}}).want(t, http.StatusOK)
		before := snapshot(t, tm, caseID)
		unfinished(t, pending.str(t, "id"))

		s.logf("case-svc: job %s pending on a1; replacing the case-svc container (volume kept)", pending.str(t, "id"))
		cs.replace(t, 10*time.Second)

		// Keys still authenticate (users, keys and the auth secret are on the volume) and nothing changed.
		tm.admin.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK)
		tm.orgAdmin.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK)
		tm.reader.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK)
		after := snapshot(t, tm, caseID)
		for k, v := range before {
			if k == "job "+pending.str(t, "id") || k == "observable slow-3.example.org" {
				continue // the pending job may have finished meanwhile
			}
			if after[k] != v {
				t.Fatalf("after the restart %s = %s, before %s", k, after[k], v)
			}
		}
		if len(after) != len(before) {
			t.Fatalf("after the restart %d records, before %d: %v", len(after), len(before), keys(after))
		}
		// The new container's tracker picks the pending job up from the database and imports its result.
		tm.analyst.waitJob(t, "pending job after case-svc's replacement", pending.str(t, "id"), recoverWait)
		o := tm.analyst.call(t, http.MethodGet, "/api/case/artifact/"+slowObs, nil).want(t, http.StatusOK).object(t)
		if _, ok := o.obj(t, "reports")["Slow"]; !ok {
			t.Fatalf("observable reports %v", o["reports"])
		}
		s.logf("case-svc: users, keys, case, tasks, logs, observables and jobs kept; the pending job completed")
	})

	step("analysis server stopped for good: case-svc says so, holds what is asked of it, the other server keeps working", func(t *testing.T) {
		a2.stop(t, 10*time.Second)
		r := tm.analyst.call(t, http.MethodGet, "/api/connector/analysis/analyzer", nil).want(t, http.StatusOK)
		warn := r.header.Get("X-Analysis-Warnings")
		if !strings.Contains(warn, "a2") {
			t.Fatalf("X-Analysis-Warnings %q does not name a2", warn)
		}
		for _, w := range r.list(t) {
			if ids := w.strs(t, "analysisIds"); !slices.Equal(ids, []string{"a1"}) {
				t.Fatalf("analyzer %s listed on %v with a2 down", w["name"], ids)
			}
		}
		s.logf("analyzer list: a1's only, warning %q", warn)

		// A job or an action asked of a server that does not answer is accepted Waiting, with a message naming
		// the server; it is submitted when the server answers (README "connector"), so nothing is lost.
		obsID := domain(t, "after-a2-died.example.org")
		job := tm.analyst.call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "a2", "artifactId": obsID, "analyzerId": a2.analyzers["Echo"]}).want(t, http.StatusCreated).object(t)
		if st, msg := job.str(t, "status"), job.str(t, "message"); st != "Waiting" || !strings.Contains(msg, "a2") {
			t.Fatalf("job on the dead server: status %q message %q, want Waiting naming a2", st, msg)
		}
		s.logf("job on a2 accepted Waiting: %q", job.str(t, "message"))
		act := tm.analyst.call(t, http.MethodPost, "/api/connector/analysis/action",
			map[string]any{"analysisId": "a2", "responderId": a2.responders["Tagger"], "objectType": "case", "objectId": caseID}).
			want(t, http.StatusCreated).object(t)
		if st, msg := act.str(t, "status"), act.str(t, "message"); st != "Waiting" || !strings.Contains(msg, "a2") {
			t.Fatalf("responder on the dead server: status %q message %q, want Waiting naming a2", st, msg)
		}

		j := tm.analyst.runJob(t, a1, "Echo", obsID)
		tm.analyst.waitJob(t, "Echo via a1 with a2 down", j.str(t, "id"), jobWait)
		a := tm.analyst.runAction(t, a1, "Tagger", "case", caseID)
		tm.analyst.waitAction(t, "Tagger via a1 with a2 down", a.str(t, "id"), jobWait)
		s.logf("a1 keeps working: analyzer job and responder done")
	})
}

// snapshot renders what the team can read of a case as comparable strings: the case, its tasks and their
// logs, its observables with their reports, every job of every observable, and the users.
func snapshot(t *testing.T, tm team, caseID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := tm.analyst.call(t, http.MethodGet, "/api/case/"+caseID, nil).want(t, http.StatusOK).object(t)
	out["case"] = mustJSON(map[string]any{"title": c["title"], "tags": c["tags"], "status": c["status"], "caseId": c["caseId"]})
	for title, task := range tm.analyst.tasks(t, caseID) {
		logs := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+task.str(t, "id")+"/log?range=all", nil).want(t, http.StatusOK).list(t)
		var msgs []string
		for _, l := range logs {
			msgs = append(msgs, l.str(t, "message"))
		}
		slices.Sort(msgs)
		out["task "+title] = mustJSON(map[string]any{"id": task["id"], "status": task["status"], "logs": msgs})
	}
	for key, o := range tm.analyst.caseObservables(t, caseID) {
		out["observable "+key] = mustJSON(map[string]any{"id": o["id"], "tags": o["tags"], "reports": o["reports"]})
		jobs := tm.analyst.call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
			map[string]any{"_name": "getObservable", "idOrName": o.str(t, "id")}, map[string]any{"_name": "jobs"}}}).
			want(t, http.StatusOK).list(t)
		for _, j := range jobs {
			out["job "+j.str(t, "id")] = mustJSON(map[string]any{"status": j["status"], "analysisId": j["analysisId"],
				"analysisJobId": j["analysisJobId"], "report": j["report"]})
		}
	}
	for _, u := range tm.admin.call(t, http.MethodGet, "/api/user?range=all", nil).want(t, http.StatusOK).list(t) {
		out["user "+u.str(t, "login")] = mustJSON(map[string]any{"hasKey": u["hasKey"], "status": u["status"]})
	}
	return out
}
