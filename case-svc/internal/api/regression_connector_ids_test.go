package api_test

import (
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/webui/webuitest"
	"golang.org/x/net/html"
)

// Issue 28: with two analysis servers the connector listed one analyzer id for both (the first server's), and
// submitting it with the second server was a 404: each server has its own ids (they derive from the
// organization's name and the worker's, which differ between servers). The listing now gives each
// server's id (workerIds), the case page sends each server its own, and a job or action sent with another
// server's id (what clients of the reference system send: the listing's id with any of its cortexIds) or with
// the worker's name runs that server's worker.
func TestConnector_IDsAcrossServers(t *testing.T) {
	// The connector's organization has another name on the second server: its workers have other ids.
	as, as2 := startAnalysis(t, "127.0.0.1:0"), startAnalysisOrg(t, "127.0.0.1:0", "soc-eu")
	if as.Analyzers["Echo"] == as2.Analyzers["Echo"] || as.Responder["Tagger"] == as2.Responder["Tagger"] {
		t.Fatal("the two servers gave Echo or Tagger one id: the test needs each its own")
	}
	tm := newTeam(t, withServers(fastTracker, server("local", as, ""), server("second", as2, "")))
	cs := tm.analyst.newCase(t, map[string]any{"title": "two servers"})
	caseID := cs.Str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"203.0.113.9"}})[0]

	// The listing: one entry per name, each server's own id.
	var echo obj
	for _, w := range tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/analyzer", nil).Want(t, http.StatusOK).List(t) {
		if w.Str(t, "name") == "Echo" {
			echo = w
		}
	}
	if echo == nil {
		t.Fatal("Echo not listed")
	}
	ids := echo.Obj(t, "workerIds")
	if len(ids) != 2 || ids["local"] != as.Analyzers["Echo"] || ids["second"] != as2.Analyzers["Echo"] || echo.Str(t, "id") != as.Analyzers["Echo"] {
		t.Fatalf("Echo listed as %v; ids local %s, second %s", echo, as.Analyzers["Echo"], as2.Analyzers["Echo"])
	}
	// The second server's id finds the merged analyzer too.
	if got := tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/analyzer/"+as2.Analyzers["Echo"], nil).Want(t, http.StatusOK).Object(t); got.Str(t, "name") != "Echo" {
		t.Fatalf("analyzer by the second server's id: %v", got)
	}

	// A job sent to the second server with the listed id (the first server's), then with the name: each runs
	// the second server's Echo, and its record names that server's id.
	for _, sent := range []string{echo.Str(t, "id"), "Echo"} {
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/job",
			map[string]any{"cortexId": "second", "artifactId": ip.Str(t, "id"), "analyzerId": sent}).Want(t, http.StatusCreated).Object(t)
		if j.Str(t, "analysisId") != "second" || j.Str(t, "analyzerId") != as2.Analyzers["Echo"] || j.Str(t, "analysisJobId") == "" {
			t.Fatalf("job sent with %q: %v", sent, j)
		}
		done := eventually(t, "the second server's job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" || o["status"] == "Failure" })
		if done["status"] != "Success" || done.Str(t, "analyzerId") != as2.Analyzers["Echo"] {
			t.Fatalf("job sent with %q: %v", sent, done)
		}
	}
	// An id no server of the organisation lists stays a 404, and leaves no job behind.
	tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
		map[string]any{"analysisId": "second", "artifactId": ip.Str(t, "id"), "analyzerId": "no-such-analyzer"}).WantError(t, http.StatusNotFound, "NotFoundError")
	if jobs := tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
		map[string]any{"_name": "getObservable", "idOrName": ip.Str(t, "id")}, map[string]any{"_name": "jobs"}}}).Want(t, http.StatusOK).List(t); len(jobs) != 2 {
		t.Fatalf("%d jobs on the observable, want 2", len(jobs))
	}

	// A responder action sent to the second server with the first server's id.
	act := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{
		"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": caseID, "analysisId": "second"}).
		Want(t, http.StatusCreated).Object(t)
	if act.Str(t, "analysisId") != "second" || act.Str(t, "responderId") != as2.Responder["Tagger"] {
		t.Fatalf("action %v", act)
	}
	eventually(t, "the second server's responder", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+act.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" })

	// The case page offers each server's analyzer with that server's id.
	doc := tm.analyst.wantPage(t, "/ui/cases/"+caseID+"?tab=observables", http.StatusOK)
	for server, id := range map[string]string{"local": as.Analyzers["Echo"], "second": as2.Analyzers["Echo"]} {
		if n := webuitest.Find(doc, func(n *html.Node) bool {
			return webuitest.Attr(n, "name") == "analyzer" && webuitest.Attr(n, "value") == server+"|"+id
		}); len(n) != 1 {
			t.Errorf("the run form has no checkbox for Echo on %s with its id %s", server, id)
		}
	}
}
