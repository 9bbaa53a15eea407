package api_test

import (
	"net/http"
	"slices"
	"testing"
)

// A request that makes several changes at once (a case with its tasks, a batch of observables) writes their
// events together: still exactly one event per change made, none for a value refused as a duplicate, all of
// the request.
func TestAudit_BatchedChangesOneEventEach(t *testing.T) {
	tm := newTeam(t)
	ana := tm.analyst
	events := func(t *testing.T, root, objectType string) []obj {
		t.Helper()
		return ana.Call(t, http.MethodPost, "/api/audit/_search", map[string]any{"query": map[string]any{"_and": []any{
			map[string]any{"rootId": root}, map[string]any{"objectType": objectType}}}, "range": "all"}).Want(t, http.StatusOK).List(t)
	}
	sameRequest := func(t *testing.T, evs []obj) {
		t.Helper()
		for _, e := range evs {
			if e.Str(t, "requestId") == "" || e.Str(t, "requestId") != evs[0].Str(t, "requestId") {
				t.Fatalf("events of one request with request ids %v and %v", e["requestId"], evs[0]["requestId"])
			}
		}
	}

	cs := ana.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "batched", "description": "d",
		"tasks": []map[string]any{{"title": "t1"}, {"title": "t2"}}}).Want(t, http.StatusCreated).Object(t)
	caseID := cs.Str(t, "id")
	wantOne(t, ana, caseID, "case", "Creation", "title")
	tasks := ana.Call(t, http.MethodGet, "/api/case/"+caseID+"/task?range=all", nil).Want(t, http.StatusOK).List(t)
	taskEvents := events(t, caseID, "case_task")
	if len(tasks) != 2 || len(taskEvents) != 2 {
		t.Fatalf("%d tasks, %d task events; want 2 and 2", len(tasks), len(taskEvents))
	}
	for _, task := range tasks {
		wantOne(t, ana, task.Str(t, "id"), "case_task", "Creation", "title")
	}
	sameRequest(t, append(taskEvents, ana.audits(t, caseID)...))

	ana.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.1"})
	r := ana.Call(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip",
		"data": []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.3"}}).Want(t, http.StatusMultiStatus).Object(t)
	success, _ := r["success"].([]any)
	failure, _ := r["failure"].([]any)
	if len(success) != 2 || len(failure) != 2 {
		t.Fatalf("207 body %v, want 2 created and 2 refused", r)
	}
	var created []string
	for _, s := range success {
		created = append(created, obj(s.(map[string]any)).Str(t, "id"))
	}
	obsEvents := events(t, caseID, "case_artifact")
	if len(obsEvents) != 3 { // the first request's, and the batch's two
		t.Fatalf("%d observable events, want 3", len(obsEvents))
	}
	var batch []obj
	for _, e := range obsEvents {
		if e.Str(t, "operation") != "Creation" {
			t.Fatalf("observable event %v", e)
		}
		if slices.Contains(created, e.Str(t, "objectId")) {
			batch = append(batch, e)
		}
	}
	if len(batch) != 2 {
		t.Fatalf("events of the batch %v, want one for each of %v", batch, created)
	}
	sameRequest(t, batch)
	for _, id := range created {
		wantOne(t, ana, id, "case_artifact", "Creation", "data")
	}
}
