package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
)

// q is one query step.
type q = map[string]any

// query posts a pipeline to path and returns the response.
func (c *client) query(t testing.TB, path string, steps ...q) *resp {
	t.Helper()
	return c.Call(t, http.MethodPost, path, map[string]any{"query": steps})
}

// count runs a pipeline ending with count and returns the number.
func (c *client) count(t testing.TB, steps ...q) int {
	t.Helper()
	r := c.query(t, "/api/v1/query", append(steps, q{"_name": "count"})...).Want(t, 200)
	var n int
	if err := json.Unmarshal(r.Body, &n); err != nil {
		t.Fatalf("count body %s: %v", r.Body, err)
	}
	return n
}

func TestQuery_ContractPipelines(t *testing.T) {
	tm := newTeam(t)
	ctx := context.Background()
	caseA := tm.analyst.newCase(t, map[string]any{"title": "A", "tasks": []map[string]any{{"title": "a1"}, {"title": "a2"},
		{"title": "a3", "status": "Completed"}}}).Str(t, "id")
	caseB := tm.analyst.newCase(t, map[string]any{"title": "B", "tasks": []map[string]any{{"title": "b1"}}}).Str(t, "id")
	tm.other.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "theirs"}}})
	obs := tm.analyst.observables(t, "/api/case/"+caseA+"/artifact", map[string]any{"dataType": "domain",
		"data": []string{"shared.example", "other.example"}})
	obsID := obs[0].Str(t, "id")

	// Jobs as the connector stores them.
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, name := range []string{"File_Info", "Whois", "DNS"} {
		j := connector.Job{ID: record.NewID(now), Org: "soc", ObservableID: obsID, CaseID: caseA, AnalyzerID: "an" + name,
			AnalyzerName: name, AnalyzerDefinition: name + "_1_0", Status: connector.JobSuccess,
			StartDate: now.Add(time.Duration(i) * time.Minute), EndDate: now.Add(time.Duration(i)*time.Minute + time.Second),
			AnalysisID: "local", AnalysisJobID: "job-" + name,
			Report: map[string]any{"success": true, "full": map[string]any{"a.b": 1, "$x": "y"}, "artifacts": []any{}},
			Meta:   record.Meta{CreatedAt: now, CreatedBy: "ana"}}
		if err := tm.jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	other := connector.Job{ID: record.NewID(now), Org: "cert", ObservableID: obsID, Status: connector.JobWaiting, Meta: record.Meta{CreatedAt: now}}
	if err := tm.jobs.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	t.Run("getObservable, jobs, sort, page", func(t *testing.T) {
		r := tm.readOnly.query(t, "/api/v1/query", q{"_name": "getObservable", "idOrName": obsID}, q{"_name": "jobs"},
			q{"_name": "sort", "_fields": []any{q{"startDate": "desc"}}}, q{"_name": "page", "from": 0, "to": 2}).Want(t, 200)
		l := r.List(t)
		if len(l) != 2 || l[0].Str(t, "analyzerName") != "DNS" || l[1].Str(t, "analyzerName") != "Whois" {
			t.Fatalf("jobs %s", r.Body)
		}
		j := l[0]
		checkRecord(t, j, "case_artifact_job", "ana")
		if j.Str(t, "analyzerId") != "anDNS" || j.Str(t, "analyzerDefinition") != "DNS_1_0" || j.Str(t, "status") != "Success" ||
			j.Str(t, "analysisId") != "local" || j.Str(t, "analysisJobId") != "job-DNS" || j.Num(t, "endDate") <= j.Num(t, "startDate") ||
			j.Obj(t, "report")["success"] != true || j.Obj(t, "report").Obj(t, "full").Num(t, "a.b") != 1 ||
			j.Str(t, "observableId") != obsID || j.Str(t, "caseId") != caseA || j.Str(t, "_createdBy") != "ana" {
			t.Fatalf("job %v", j)
		}
		if r.Header.Get("X-Total") != "" {
			t.Errorf("v1 page without extraData total sets X-Total")
		}
		r = tm.readOnly.query(t, "/api/v1/query", q{"_name": "getObservable", "idOrName": obsID}, q{"_name": "jobs"},
			q{"_name": "page", "from": 0, "to": 10, "extraData": []string{"total"}}).Want(t, 200)
		if r.Total(t) != "3" {
			t.Fatalf("X-Total %s", r.Total(t))
		}
	})

	t.Run("waitingTasks, sort, page", func(t *testing.T) {
		r := tm.readOnly.query(t, "/api/v0/query", q{"_name": "waitingTasks"}, q{"_name": "sort", "_fields": []any{q{"title": "desc"}}},
			q{"_name": "page", "from": 0, "to": 10}).Want(t, 200)
		var titles []string
		for _, x := range r.List(t) {
			checkRecord(t, x, "case_task", "ana")
			titles = append(titles, x.Str(t, "title"))
		}
		if !slices.Equal(titles, []string{"b1", "a2", "a1"}) || r.Total(t) != "3" {
			t.Fatalf("waiting tasks %v", titles)
		}
		// From a case: its waiting tasks only.
		r = tm.readOnly.query(t, "/api/v0/query", q{"_name": "getCase", "idOrName": caseA}, q{"_name": "waitingTasks"}).Want(t, 200)
		if l := r.List(t); len(l) != 2 {
			t.Fatalf("waiting tasks of A %s", r.Body)
		}
	})

	t.Run("getCase, alerts, sort, page", func(t *testing.T) {
		a1 := tm.analyst.newAlert(t, "qa1", nil).Str(t, "id")
		a2 := tm.analyst.newAlert(t, "qa2", nil).Str(t, "id")
		tm.analyst.newAlert(t, "qa3", nil)
		tm.analyst.Call(t, http.MethodPost, "/api/alert/merge/_bulk", map[string]any{"caseId": caseB, "alertIds": []string{a1, a2}}).Want(t, 200)
		r := tm.readOnly.query(t, "/api/v0/query", q{"_name": "getCase", "idOrName": caseB}, q{"_name": "alerts"},
			q{"_name": "sort", "_fields": []any{q{"sourceRef": "desc"}}}, q{"_name": "page", "from": 0, "to": 15}).Want(t, 200)
		l := r.List(t)
		if len(l) != 2 || l[0].Str(t, "sourceRef") != "qa2" || l[0].Str(t, "_type") != "alert" || l[0].Str(t, "status") != "Imported" ||
			r.Total(t) != "2" {
			t.Fatalf("alerts of B %s", r.Body)
		}
		// By number too.
		if n := tm.readOnly.count(t, q{"_name": "getCase", "idOrName": strings.TrimPrefix(caseB, "~")}, q{"_name": "alerts"}); n != 2 {
			t.Fatalf("alerts of B by number: %d", n)
		}
	})

	t.Run("getAlert, similarCases with caseFilter", func(t *testing.T) {
		tm.analyst.observables(t, "/api/case/"+caseB+"/artifact", map[string]any{"dataType": "domain", "data": "shared.example", "ioc": true})
		al := tm.analyst.newAlert(t, "qsim", []map[string]any{{"dataType": "domain", "data": "shared.example"},
			{"dataType": "url", "data": "other.example"}})
		r := tm.readOnly.query(t, "/api/v1/query?name=alert-similar-cases", q{"_name": "getAlert", "idOrName": al.Str(t, "id")},
			q{"_name": "similarCases", "caseFilter": q{"_field": "title", "_value": "A"}}).Want(t, 200)
		l := r.List(t)
		if len(l) != 1 {
			t.Fatalf("similar %s", r.Body)
		}
		s := l[0]
		cs := s.Obj(t, "case")
		if cs.Str(t, "id") != caseA || cs.Num(t, "number") != cs.Num(t, "caseId") || cs.Str(t, "_createdBy") != "ana" ||
			cs["extraData"] == nil || s.Num(t, "similarObservableCount") != 2 || s.Num(t, "observableCount") != 2 ||
			s.Num(t, "similarIocCount") != 0 || s.Num(t, "iocCount") != 0 || s.Obj(t, "observableTypes").Num(t, "domain") != 2 {
			t.Fatalf("similar case %v", s)
		}
		if _, v0 := s["similarArtifactCount"]; v0 {
			t.Errorf("the query's similar-case result carries v0 fields: %v", s)
		}
		// Without the filter: both cases, sorted as asked.
		r = tm.readOnly.query(t, "/api/v1/query", q{"_name": "getAlert", "idOrName": al.Str(t, "id")}, q{"_name": "similarCases"},
			q{"_name": "sort", "_fields": []any{q{"similarIocCount": "desc"}}}, q{"_name": "page", "from": 0, "to": 5}).Want(t, 200)
		if l := r.List(t); len(l) != 2 || l[0].Obj(t, "case").Str(t, "id") != caseB || l[0].Num(t, "similarIocCount") != 1 {
			t.Fatalf("similar cases by ioc %s", r.Body)
		}
		if n := tm.readOnly.count(t, q{"_name": "getAlert", "idOrName": al.Str(t, "id")}, q{"_name": "similarCases"},
			q{"_name": "filter", "_field": "title", "_value": "B"}); n != 1 {
			t.Fatalf("similar cases filtered: %d", n)
		}
	})

	t.Run("traversals", func(t *testing.T) {
		taskID := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseA+"/task?sort=title", nil).Want(t, 200).List(t)[0].Str(t, "id")
		tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+taskID+"/log", map[string]any{"message": "m1"}).Want(t, 201)
		tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+taskID+"/log", map[string]any{"message": "m2"}).Want(t, 201)
		for _, tc := range []struct {
			steps []q
			want  int
		}{
			{[]q{{"_name": "getTask", "idOrName": taskID}, {"_name": "logs"}}, 2},
			{[]q{{"_name": "getCase", "idOrName": caseA}, {"_name": "tasks"}}, 3},
			{[]q{{"_name": "getCase", "idOrName": caseA}, {"_name": "tasks"}, {"_name": "filter", "status": "Completed"}}, 1},
			{[]q{{"_name": "getCase", "idOrName": caseA}, {"_name": "observables"}}, 2},
			{[]q{{"_name": "getObservable", "idOrName": obsID}, {"_name": "case"}}, 1},
			{[]q{{"_name": "getTask", "idOrName": taskID}, {"_name": "case"}, {"_name": "observables"}, {"_name": "jobs"}}, 3},
			{[]q{{"_name": "listCase"}, {"_name": "tasks"}, {"_name": "logs"}}, 2},
			{[]q{{"_name": "listCase"}}, 2},
			{[]q{{"_name": "listAlert"}, {"_name": "case"}}, 1},
			{[]q{{"_name": "listAlert"}, {"_name": "observables"}}, 2},
			{[]q{{"_name": "listTask"}}, 4},
			{[]q{{"_name": "listLog"}}, 2},
			{[]q{{"_name": "listObservable"}, {"_name": "filter", "_contains": "case"}}, 3},
			{[]q{{"_name": "listJob"}}, 3},
		} {
			if n := tm.readOnly.count(t, tc.steps...); n != tc.want {
				t.Errorf("%v: %d, want %d", tc.steps, n, tc.want)
			}
		}
		r := tm.readOnly.query(t, "/api/v1/query", q{"_name": "getTask", "idOrName": taskID}, q{"_name": "logs"},
			q{"_name": "page", "from": 0, "to": 1, "extraData": []string{"task", "taskId"}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Obj(t, "extraData").Str(t, "taskId") != taskID ||
			l[0].Obj(t, "extraData").Obj(t, "task").Str(t, "id") != taskID {
			t.Fatalf("log extraData %s", r.Body)
		}
	})

	t.Run("page extraData", func(t *testing.T) {
		r := tm.readOnly.query(t, "/api/v1/query", q{"_name": "getCase", "idOrName": caseA},
			q{"_name": "page", "from": 0, "to": 1, "extraData": []string{"total", "taskStats", "observableStats", "permissions"}}).Want(t, 200)
		c := r.List(t)[0]
		ed := c.Obj(t, "extraData")
		if r.Total(t) != "1" || ed.Obj(t, "taskStats").Num(t, "total") != 3 || ed.Obj(t, "taskStats").Num(t, "Waiting") != 1 ||
			ed.Obj(t, "observableStats").Num(t, "total") != 2 || len(ed.Strs(t, "permissions")) != 0 || c.Num(t, "_createdAt") == 0 {
			t.Fatalf("extraData %v", c)
		}
		r = tm.readOnly.query(t, "/api/v0/query", q{"_name": "waitingTasks"}, q{"_name": "page", "from": 0, "to": 10,
			"extraData": []string{"caseId", "case"}}).Want(t, 200)
		for _, x := range r.List(t) {
			if x.Obj(t, "extraData").Num(t, "caseId") < 1 || x.Obj(t, "extraData").Obj(t, "case").Str(t, "_type") != "case" {
				t.Fatalf("task extraData %v", x)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			steps []q
			name  string // the message names it
		}{
			{[]q{{"_name": "nope"}}, "nope"},
			{[]q{{"_name": "listCase"}, {"_name": "frobnicate"}}, "frobnicate"},
			{[]q{{"_name": "listCase"}, {"_name": "filter", "nope": 1}}, "nope"},
			{[]q{{"_name": "listCase"}, {"_name": "filter", "_field": "$where", "_value": 1}}, "$where"},
			{[]q{{"_name": "listCase"}, {"_name": "filter", "title": q{"$ne": ""}}}, "title"},
			{[]q{{"_name": "listCase"}, {"_name": "filter", "$where": "1"}}, "$where"},
			{[]q{{"_name": "listCase"}, {"_name": "sort", "_fields": []any{q{"nope": "desc"}}}}, "nope"},
			{[]q{{"_name": "listCase"}, {"_name": "sort", "_fields": []any{q{"title": "sideways"}}}}, "title"},
			{[]q{{"_name": "listCase", "bogus": 1}}, "bogus"},
			{[]q{{"_name": "getCase"}}, "idOrName"},
			{[]q{{"_name": "getCase", "idOrName": caseA, "extra": true}}, "extra"},
			{[]q{{"_name": "listCase"}, {"_name": "page", "from": "x"}}, "from"},
			{[]q{{"_name": "listCase"}, {"_name": "page", "from": 5, "to": 1}}, "to"},
			{[]q{{"_name": "listCase"}, {"_name": "page", "extraData": []string{"nope"}}}, "nope"},
			{[]q{{"_name": "listCase"}, {"_name": "page"}, {"_name": "count"}}, "count"},
			{[]q{{"_name": "listCase"}, {"_name": "jobs"}}, "jobs"},
			{[]q{{"_name": "listCase"}, {"_name": "similarCases"}}, "similarCases"},
			{[]q{{"_name": "listAlert"}, {"_name": "similarCases"}}, "similarCases"},
			{[]q{{"_name": "filter"}}, "filter"},
			{[]q{{"_name": "listCase"}, {"_name": "getCase", "idOrName": caseA}}, "getCase"},
			{[]q{{"_name": "listCase"}, {"_name": "count", "x": 1}}, "x"},
		} {
			r := tm.readOnly.query(t, "/api/v1/query", tc.steps...)
			msg := r.WantError(t, 400, "BadRequest")
			if !strings.Contains(msg, tc.name) {
				t.Errorf("%v: message %q does not name %q", tc.steps, msg, tc.name)
			}
		}
		for _, body := range []string{`{}`, `{"query": {}}`, `{"query": []}`, `{"query": [1]}`, `{"query": [{"name": "x"}]}`, `[]`} {
			tm.readOnly.Raw(t, http.MethodPost, "/api/v0/query", "application/json", body).WantError(t, 400, "BadRequest")
		}
		tm.other.query(t, "/api/v1/query", q{"_name": "getCase", "idOrName": caseA}).WantError(t, 404, "NotFoundError")
		tm.other.query(t, "/api/v1/query", q{"_name": "getObservable", "idOrName": obsID}, q{"_name": "jobs"}).WantError(t, 404, "NotFoundError")
		tm.anon().query(t, "/api/v1/query", q{"_name": "listCase"}).WantError(t, 401, "AuthenticationError")
		// Another organisation's records never show up in lists.
		if n := tm.other.count(t, q{"_name": "listJob"}); n != 1 {
			t.Fatalf("cert sees %d jobs", n)
		}
		if n := tm.other.count(t, q{"_name": "waitingTasks"}); n != 1 {
			t.Fatalf("cert sees %d waiting tasks", n)
		}
	})
}

func TestQuery_FilterOperators(t *testing.T) {
	tm := newTeam(t)
	for i, title := range []string{"alpha one", "Beta two", "gamma three"} {
		tm.analyst.newCase(t, map[string]any{"title": title, "severity": i + 1, "tags": []string{"t" + title[:1]},
			"startDate": 1700000000000 + int64(i)*1000})
	}
	list := q{"_name": "listCase"}
	for _, tc := range []struct {
		filter q
		want   int
	}{
		{q{}, 3},
		{q{"title": "alpha one"}, 1},
		{q{"_field": "severity", "_value": 2}, 1},
		{q{"_is": q{"_field": "severity", "_value": 2}}, 1},
		{q{"_is": q{"severity": 3}}, 1},
		{q{"_ne": q{"_field": "severity", "_value": 2}}, 2},
		{q{"_and": []any{q{"_gt": q{"severity": 1}}, q{"_lt": q{"severity": 3}}}}, 1},
		{q{"_gte": q{"severity": 2}}, 2},
		{q{"_lte": q{"_field": "severity", "_value": 2}}, 2},
		{q{"_or": []any{q{"title": "alpha one"}, q{"title": "gamma three"}}}, 2},
		{q{"_not": q{"title": "alpha one"}}, 2},
		{q{"_between": q{"_field": "startDate", "_from": 1700000000000, "_to": 1700000002000}}, 2},
		{q{"_in": q{"_field": "severity", "_values": []int{1, 3}}}, 2},
		{q{"_like": q{"_field": "title", "_value": "ETA"}}, 1},
		{q{"_startsWith": q{"_field": "title", "_value": "gam"}}, 1},
		{q{"_endsWith": q{"_field": "title", "_value": "one"}}, 1},
		{q{"_wildcard": q{"_field": "title", "_value": "*a tw*"}}, 1},
		{q{"_contains": "title"}, 3},
		{q{"tags": "tB"}, 1},
		{q{"_string": "severity:1 OR severity:2"}, 2},
	} {
		f := q{"_name": "filter"}
		for k, v := range tc.filter {
			f[k] = v
		}
		if n := tm.analyst.count(t, list, f); n != tc.want {
			t.Errorf("filter %v: %d, want %d", tc.filter, n, tc.want)
		}
	}
	// Two filters narrow each other; sort then page windows.
	r := tm.analyst.query(t, "/api/v1/query", list, q{"_name": "filter", "_gte": q{"severity": 1}},
		q{"_name": "filter", "_not": q{"severity": 3}}, q{"_name": "sort", "_fields": []any{"-severity"}},
		q{"_name": "page", "from": 1, "to": 2}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "title") != "alpha one" {
		t.Fatalf("page %s", r.Body)
	}
	// No output step: everything.
	if l := tm.analyst.query(t, "/api/v0/query", list).Want(t, 200).List(t); len(l) != 3 {
		t.Fatalf("no page: %d", len(l))
	}
}

// The job store the connector uses: create, get, update, list by observable.
func TestJobStore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	j := connector.Job{ID: record.NewID(now), Org: "soc", ObservableID: "~o1", CaseID: "~1", AnalyzerID: "a", AnalyzerName: "A",
		AnalyzerDefinition: "A_1", Status: connector.JobWaiting, StartDate: now, AnalysisID: "local",
		Meta: record.Meta{CreatedAt: now, CreatedBy: "ana"}}
	if err := e.jobs.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	got, err := e.jobs.Job(ctx, j.ID)
	if err != nil || got.Status != connector.JobWaiting || got.Report != nil || !got.StartDate.Equal(now) || !got.EndDate.IsZero() {
		t.Fatalf("job %+v err %v", got, err)
	}
	j.Status, j.EndDate, j.AnalysisJobID = connector.JobSuccess, now.Add(time.Second), "remote-1"
	j.Report = map[string]any{"success": true, "full": map[string]any{"k.with.dots": []any{1, "x"}}, "artifacts": []any{}}
	up, err := e.jobs.Update(ctx, j, []string{"status", "endDate", "report", "analysisJobId"}, "system", now)
	if err != nil || up.Status != connector.JobSuccess || up.AnalysisJobID != "remote-1" || up.Report["success"] != true ||
		up.UpdatedBy != "system" || !up.EndDate.Equal(now.Add(time.Second)) {
		t.Fatalf("updated %+v err %v", up, err)
	}
	if _, err := e.jobs.Update(ctx, j, []string{"organisation"}, "x", now); err == nil {
		t.Fatal("update of an unknown field succeeded")
	}
	l, total, err := e.jobs.ListByObservable(ctx, "~o1", search.Node{}, search.Page{Limit: 10})
	if err != nil || total != 1 || len(l) != 1 || l[0].ID != j.ID {
		t.Fatalf("list %v %d %v", l, total, err)
	}
	if _, err := e.jobs.Job(ctx, "~nope"); !errors.Is(err, connector.ErrJobNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}
