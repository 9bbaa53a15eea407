package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/yeka/zip"

	"github.com/openir/platform/case-svc/internal/archive/archivetest"
)

// The analyst's day, end to end over HTTP: an alert arrives with observables, is read, becomes a case from a
// template; tasks move and get logs; a zip-packed sample is added; the waiting tasks are queried; a second
// alert sharing two observables finds the case as similar (counts checked); the case is closed.
func TestScenario_AnalystWorkflow(t *testing.T) {
	tm := newTeam(t)
	ana := tm.analyst

	// The org-admin prepares a template.
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing", "titlePrefix": "[Phishing]",
		"severity": 3, "tags": []string{"phishing"},
		"tasks": []map[string]any{{"order": 0, "title": "Triage", "group": "analysis"}, {"order": 1, "title": "Block sender"}}}).
		Want(t, 201)

	// 1. An alert comes in with observables.
	alert := ana.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "email", "source": "mail-gateway",
		"sourceRef": "MSG-1001", "title": "Credential phishing", "description": "A user reported a mail", "tags": []string{"reported"},
		"artifacts": []map[string]any{
			{"dataType": "mail", "data": "ceo@evil.example", "ioc": true},
			{"dataType": "domain", "data": "evil.example", "ioc": true},
			{"dataType": "url", "data": "https://evil.example/login"},
		}}).Want(t, 201).Object(t)
	alertID := alert.Str(t, "id")
	if alert.Str(t, "status") != "New" || len(alert["artifacts"].([]any)) != 3 {
		t.Fatalf("alert in %v", alert)
	}

	// 2. The analyst reads it.
	if a := ana.Call(t, http.MethodPost, "/api/alert/"+alertID+"/markAsRead", nil).Want(t, 200).Object(t); a.Str(t, "status") != "Ignored" {
		t.Fatalf("read alert %v", a)
	}

	// 3. A case from the template.
	cs := ana.Call(t, http.MethodPost, "/api/alert/"+alertID+"/createCase", map[string]any{"caseTemplate": "phishing"}).
		Want(t, 201).Object(t)
	caseID := cs.Str(t, "id")
	if cs.Str(t, "title") != "[Phishing] Credential phishing" || cs.Num(t, "severity") != 2 ||
		!slices.Contains(cs.Strs(t, "tags"), "phishing") || !slices.Contains(cs.Strs(t, "tags"), "reported") {
		t.Fatalf("case %v", cs) // the alert's severity (default 2) wins over the template's
	}
	if a := ana.Call(t, http.MethodGet, "/api/alert/"+alertID, nil).Want(t, 200).Object(t); a.Str(t, "status") != "Imported" ||
		a.Str(t, "case") != caseID {
		t.Fatalf("imported alert %v", a)
	}

	// 4. Tasks and logs.
	tasks := ana.Call(t, http.MethodGet, "/api/case/"+caseID+"/task?sort=order", nil).Want(t, 200).List(t)
	if len(tasks) != 2 || tasks[0].Str(t, "title") != "Triage" {
		t.Fatalf("tasks %v", tasks)
	}
	triage := tasks[0].Str(t, "id")
	ana.multipart(t, http.MethodPost, "/api/case/task/"+triage+"/log", map[string]any{"message": "Headers attached"}, nil,
		part{"attachment", "headers.txt", "text/plain", []byte("Received: from evil.example")}).Want(t, 201)
	if tk := ana.Call(t, http.MethodGet, "/api/case/task/"+triage, nil).Want(t, 200).Object(t); tk.Str(t, "status") != "InProgress" {
		t.Fatalf("a log starts the task: %v", tk)
	}
	ana.Call(t, http.MethodPost, "/api/case/"+caseID+"task", map[string]any{"title": "Notify users"}).Want(t, 201)

	// 5. More observables: a zip-packed sample (ZipCrypto, password "malware") and an IP.
	sample := []byte("MZ fake dropper")
	l := ana.multipart(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file", "isZip": true,
		"zipPassword": "malware", "ioc": true}, nil,
		part{"attachment", "sample.zip", "application/zip", archivetest.Encrypted(t, "malware", zip.StandardEncryption, archivetest.File("dropper.exe", sample))}).
		Want(t, 201).List(t)
	if len(l) != 1 || l[0].Obj(t, "attachment").Str(t, "name") != "dropper.exe" || l[0].Obj(t, "attachment").Str(t, "id") != hashes(sample)[0] {
		t.Fatalf("zip sample %v", l)
	}
	ana.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "203.0.113.7"})

	// 6. The waiting tasks, through the query API.
	r := ana.query(t, "/api/v0/query", q{"_name": "waitingTasks"}, q{"_name": "sort", "_fields": []any{q{"title": "desc"}}},
		q{"_name": "page", "from": 0, "to": 15}).Want(t, 200)
	var waiting []string
	for _, x := range r.List(t) {
		waiting = append(waiting, x.Str(t, "title"))
	}
	if !slices.Equal(waiting, []string{"Notify users", "Block sender"}) {
		t.Fatalf("waiting tasks %v", waiting)
	}

	// 7. A second alert shares two observables (the domain as a domain, the IP as "other": data matches
	// whatever the type).
	second := ana.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "ids", "source": "sensor", "sourceRef": "IDS-7",
		"title": "Beaconing", "description": "Outbound traffic",
		"artifacts": []map[string]any{{"dataType": "domain", "data": "evil.example"}, {"dataType": "other", "data": "203.0.113.7"},
			{"dataType": "hostname", "data": "ws-042"}}}).Want(t, 201).Object(t)
	sims := ana.query(t, "/api/v1/query?name=alert-similar-cases", q{"_name": "getAlert", "idOrName": second.Str(t, "id")},
		q{"_name": "similarCases", "caseFilter": q{"_field": "status", "_value": "Open"}}).Want(t, 200).List(t)
	if len(sims) != 1 {
		t.Fatalf("similar cases %v", sims)
	}
	s := sims[0]
	// The case has 5 observables (3 from the alert, the sample, the IP), 3 of them IOCs; the alert shares the
	// domain (an IOC) and the IP.
	if s.Obj(t, "case").Str(t, "id") != caseID || s.Num(t, "similarObservableCount") != 2 || s.Num(t, "similarIocCount") != 1 ||
		s.Num(t, "observableCount") != 5 || s.Num(t, "iocCount") != 3 || s.Obj(t, "observableTypes").Num(t, "domain") != 1 ||
		s.Obj(t, "observableTypes").Num(t, "ip") != 1 {
		t.Fatalf("similar case %v", s)
	}
	v0 := ana.Call(t, http.MethodGet, "/api/alert/"+second.Str(t, "id")+"?similarity=true", nil).Want(t, 200).Object(t)
	if sc := v0["similarCases"].([]any); len(sc) != 1 || obj(sc[0].(map[string]any)).Num(t, "similarArtifactCount") != 2 {
		t.Fatalf("v0 similar cases %v", v0["similarCases"])
	}

	// 8. Close the case: waiting tasks are cancelled, the one in progress completed.
	closed := ana.Call(t, http.MethodPatch, "/api/case/"+caseID, map[string]any{"status": "Resolved",
		"resolutionStatus": "TruePositive", "summary": "Phishing blocked"}).Want(t, 200).Object(t)
	if closed.Str(t, "status") != "Resolved" || closed["endDate"] == nil {
		t.Fatalf("closed case %v", closed)
	}
	if n := ana.count(t, q{"_name": "getCase", "idOrName": caseID}, q{"_name": "waitingTasks"}); n != 0 {
		t.Fatalf("%d waiting tasks after closing", n)
	}
	states := map[string]string{}
	for _, x := range ana.Call(t, http.MethodGet, "/api/case/"+caseID+"/task", nil).Want(t, 200).List(t) {
		states[x.Str(t, "title")] = x.Str(t, "status")
	}
	if states["Triage"] != "Completed" || states["Block sender"] != "Cancel" || states["Notify users"] != "Cancel" {
		t.Fatalf("task states after closing %v", states)
	}
	// A closed case is no longer similar under the Open filter.
	if n := ana.count(t, q{"_name": "getAlert", "idOrName": second.Str(t, "id")},
		q{"_name": "similarCases", "caseFilter": q{"_field": "status", "_value": "Open"}}); n != 0 {
		t.Fatalf("similar open cases after closing: %d", n)
	}
}
