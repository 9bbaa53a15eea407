package api_test

// Bugs: work per request that grows without bound with the size of an array in the body. Each test sends a
// body well under the tests' 2M limit (the service's default is 100M); the first two want a refusal,
// the last counts the store reads the request makes.

import (
	"fmt"
	"net/http"
	"testing"
)

// POST /api/customField (and PATCH /api/customField/{id}) with 60000 distinct options: the options are
// deduplicated with slices.Contains before the "at most 1000 options" check (internal/cases/customfield.go
// checkOptions), so the refusal costs O(n²): 10-15 s for 60k on 2 cores, over 30 s for 100k.
func TestRegression_CustomFieldOptionsQuadratic(t *testing.T) {
	tm := newTeam(t)
	options := make([]string, 60000)
	for i := range options {
		options[i] = fmt.Sprint("option-", i)
	}
	// The refusal comes before any per-option work (checked by status, not by time: no test asserts a duration).
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "many", "type": "string", "options": options}).
		WantError(t, 400, "AttributeCheckingError")
}

// POST /api/alert with 20000 artifacts of one value each: nothing caps the artifacts of an alert (the
// observable route caps a request at 10000 values), each one costs an insert, so the request takes ~13 s and
// creates 20000 observables; a 2M body holds ~60k of them, the default 100M ~3M, all written through the
// embedded database's one connection.
func TestRegression_AlertArtifactsUnbounded(t *testing.T) {
	tm := newTeam(t)
	arts := make([]map[string]any, 20000)
	for i := range arts {
		arts[i] = map[string]any{"dataType": "other", "data": fmt.Sprint("v", i)}
	}
	r := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r",
		"title": "t", "description": "d", "artifacts": arts})
	if r.Status != 400 {
		t.Errorf("20000 artifacts: %d, want a 400 (at most 10000 values, as on POST …/artifact)", r.Status)
	}
}

// POST /api/case with 30000 tasks naming the same owner: each task's owner was looked up on its own
// (internal/cases/case.go createCase, checkOwner per task), 30000 reads of the same user (~18 s on the
// embedded database of the time). The test counts the identity store's user reads instead of timing the
// request: a distinct owner is read once.
func TestRegression_CaseTaskOwnersLookedUpOneByOne(t *testing.T) {
	tm := newTeam(t)
	tasks := make([]map[string]any, 30000)
	for i := range tasks {
		tasks[i] = map[string]any{"title": "t", "owner": "ana"}
	}
	before := tm.userReads.Load()
	id := tm.analyst.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d", "tasks": tasks}).
		Want(t, 201).Object(t).Str(t, "id")
	if n := tm.userReads.Load() - before; n > 2 {
		t.Errorf("30000 tasks with one owner: %d reads of a user, want at most 2 (the case's owner and the tasks' one)", n)
	}
	if n := tm.analyst.Call(t, http.MethodPost, "/api/case/"+id+"/task/_search?range=0-1", nil).Want(t, 200).Total(t); n != "30000" {
		t.Errorf("the case has %s tasks, want 30000", n)
	}
}
