package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/yeka/zip"
)

// The analyst's day, end to end over HTTP: an alert arrives with observables, is read, becomes a case from a
// template; tasks move and get logs; a zip-packed sample is added; the waiting tasks are queried; a second
// alert sharing two observables finds the case as similar (counts checked); the case is closed.
func TestScenario_AnalystWorkflow(t *testing.T) {
	tm := newTeam(t)
	ana := tm.analyst

	// The org-admin prepares a template.
	tm.orgAdmin.call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing", "titlePrefix": "[Phishing]",
		"severity": 3, "tags": []string{"phishing"},
		"tasks": []map[string]any{{"order": 0, "title": "Triage", "group": "analysis"}, {"order": 1, "title": "Block sender"}}}).
		want(t, 201)

	// 1. An alert comes in with observables.
	alert := ana.call(t, http.MethodPost, "/api/alert", map[string]any{"type": "email", "source": "mail-gateway",
		"sourceRef": "MSG-1001", "title": "Credential phishing", "description": "A user reported a mail", "tags": []string{"reported"},
		"artifacts": []map[string]any{
			{"dataType": "mail", "data": "ceo@evil.example", "ioc": true},
			{"dataType": "domain", "data": "evil.example", "ioc": true},
			{"dataType": "url", "data": "https://evil.example/login"},
		}}).want(t, 201).object(t)
	alertID := alert.str(t, "id")
	if alert.str(t, "status") != "New" || len(alert["artifacts"].([]any)) != 3 {
		t.Fatalf("alert in %v", alert)
	}

	// 2. The analyst reads it.
	if a := ana.call(t, http.MethodPost, "/api/alert/"+alertID+"/markAsRead", nil).want(t, 200).object(t); a.str(t, "status") != "Ignored" {
		t.Fatalf("read alert %v", a)
	}

	// 3. A case from the template.
	cs := ana.call(t, http.MethodPost, "/api/alert/"+alertID+"/createCase", map[string]any{"caseTemplate": "phishing"}).
		want(t, 201).object(t)
	caseID := cs.str(t, "id")
	if cs.str(t, "title") != "[Phishing] Credential phishing" || cs.num(t, "severity") != 2 ||
		!slices.Contains(cs.strs(t, "tags"), "phishing") || !slices.Contains(cs.strs(t, "tags"), "reported") {
		t.Fatalf("case %v", cs) // the alert's severity (default 2) wins over the template's
	}
	if a := ana.call(t, http.MethodGet, "/api/alert/"+alertID, nil).want(t, 200).object(t); a.str(t, "status") != "Imported" ||
		a.str(t, "case") != caseID {
		t.Fatalf("imported alert %v", a)
	}

	// 4. Tasks and logs.
	tasks := ana.call(t, http.MethodGet, "/api/case/"+caseID+"/task?sort=order", nil).want(t, 200).list(t)
	if len(tasks) != 2 || tasks[0].str(t, "title") != "Triage" {
		t.Fatalf("tasks %v", tasks)
	}
	triage := tasks[0].str(t, "id")
	ana.multipart(t, http.MethodPost, "/api/case/task/"+triage+"/log", map[string]any{"message": "Headers attached"}, nil,
		part{"attachment", "headers.txt", "text/plain", []byte("Received: from evil.example")}).want(t, 201)
	if tk := ana.call(t, http.MethodGet, "/api/case/task/"+triage, nil).want(t, 200).object(t); tk.str(t, "status") != "InProgress" {
		t.Fatalf("a log starts the task: %v", tk)
	}
	ana.call(t, http.MethodPost, "/api/case/"+caseID+"task", map[string]any{"title": "Notify users"}).want(t, 201)

	// 5. More observables: a zip-packed sample (ZipCrypto, password "malware") and an IP.
	sample := []byte("MZ fake dropper")
	l := ana.multipart(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file", "isZip": true,
		"zipPassword": "malware", "ioc": true}, nil,
		part{"attachment", "sample.zip", "application/zip", makeEncryptedZip(t, "malware", zip.StandardEncryption, zipFile{"dropper.exe", sample})}).
		want(t, 201).list(t)
	if len(l) != 1 || l[0].obj(t, "attachment").str(t, "name") != "dropper.exe" || l[0].obj(t, "attachment").str(t, "id") != hashes(sample)[0] {
		t.Fatalf("zip sample %v", l)
	}
	ana.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "203.0.113.7"})

	// 6. The waiting tasks, through the query API.
	r := ana.query(t, "/api/v0/query", q{"_name": "waitingTasks"}, q{"_name": "sort", "_fields": []any{q{"title": "desc"}}},
		q{"_name": "page", "from": 0, "to": 15}).want(t, 200)
	var waiting []string
	for _, x := range r.list(t) {
		waiting = append(waiting, x.str(t, "title"))
	}
	if !slices.Equal(waiting, []string{"Notify users", "Block sender"}) {
		t.Fatalf("waiting tasks %v", waiting)
	}

	// 7. A second alert shares two observables (the domain as a domain, the IP as "other": data matches
	// whatever the type).
	second := ana.call(t, http.MethodPost, "/api/alert", map[string]any{"type": "ids", "source": "sensor", "sourceRef": "IDS-7",
		"title": "Beaconing", "description": "Outbound traffic",
		"artifacts": []map[string]any{{"dataType": "domain", "data": "evil.example"}, {"dataType": "other", "data": "203.0.113.7"},
			{"dataType": "hostname", "data": "ws-042"}}}).want(t, 201).object(t)
	sims := ana.query(t, "/api/v1/query?name=alert-similar-cases", q{"_name": "getAlert", "idOrName": second.str(t, "id")},
		q{"_name": "similarCases", "caseFilter": q{"_field": "status", "_value": "Open"}}).want(t, 200).list(t)
	if len(sims) != 1 {
		t.Fatalf("similar cases %v", sims)
	}
	s := sims[0]
	// The case has 5 observables (3 from the alert, the sample, the IP), 3 of them IOCs; the alert shares the
	// domain (an IOC) and the IP.
	if s.obj(t, "case").str(t, "id") != caseID || s.num(t, "similarObservableCount") != 2 || s.num(t, "similarIocCount") != 1 ||
		s.num(t, "observableCount") != 5 || s.num(t, "iocCount") != 3 || s.obj(t, "observableTypes").num(t, "domain") != 1 ||
		s.obj(t, "observableTypes").num(t, "ip") != 1 {
		t.Fatalf("similar case %v", s)
	}
	v0 := ana.call(t, http.MethodGet, "/api/alert/"+second.str(t, "id")+"?similarity=true", nil).want(t, 200).object(t)
	if sc := v0["similarCases"].([]any); len(sc) != 1 || obj(sc[0].(map[string]any)).num(t, "similarArtifactCount") != 2 {
		t.Fatalf("v0 similar cases %v", v0["similarCases"])
	}

	// 8. Close the case: waiting tasks are cancelled, the one in progress completed.
	closed := ana.call(t, http.MethodPatch, "/api/case/"+caseID, map[string]any{"status": "Resolved",
		"resolutionStatus": "TruePositive", "summary": "Phishing blocked"}).want(t, 200).object(t)
	if closed.str(t, "status") != "Resolved" || closed["endDate"] == nil {
		t.Fatalf("closed case %v", closed)
	}
	if n := ana.count(t, q{"_name": "getCase", "idOrName": caseID}, q{"_name": "waitingTasks"}); n != 0 {
		t.Fatalf("%d waiting tasks after closing", n)
	}
	states := map[string]string{}
	for _, x := range ana.call(t, http.MethodGet, "/api/case/"+caseID+"/task", nil).want(t, 200).list(t) {
		states[x.str(t, "title")] = x.str(t, "status")
	}
	if states["Triage"] != "Completed" || states["Block sender"] != "Cancel" || states["Notify users"] != "Cancel" {
		t.Fatalf("task states after closing %v", states)
	}
	// A closed case is no longer similar under the Open filter.
	if n := ana.count(t, q{"_name": "getAlert", "idOrName": second.str(t, "id")},
		q{"_name": "similarCases", "caseFilter": q{"_field": "status", "_value": "Open"}}); n != 0 {
		t.Fatalf("similar open cases after closing: %d", n)
	}
}
