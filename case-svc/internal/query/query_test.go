package query_test

// Unit tests of the query language, step by step, on the real domain and stores over a fresh SQLite database:
// where a query starts (Start), each step after the first (Next: traversals, filter, sort, page, count,
// similarCases, linkedCases), how it ends (Answer: count…, limitedCount, aggregation) and the _stats
// aggregations (Stats). The HTTP shapes of the same queries are the api suite's (query_test.go there).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// fixture is the domain on a fresh database with, in soc: case A (severity 3, tasks "triage" Waiting,
// "contain" InProgress and so owned by the analyst who created it, with a log; observables ip 10.0.0.1 and domain
// example.com), case B (severity 1, observable ip 10.0.0.1: linked to A) and an alert whose artifact is ip
// 10.0.0.1 (similar to A and B); in other: case C.
type fixture struct {
	e                   *query.Engine
	analyst, other      identity.Caller
	caseA, caseB, caseC cases.Case
	triage, contain     task.Task
	alert               cases.Alert
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	db := docstoretest.New(t)
	idStore, err := store.NewIdentityStore(ctx, db)
	must(err)
	keys, err := auth.NewKeyring("test-secret-0123456789")
	must(err)
	cred, err := auth.NewCredentials(keys)
	must(err)
	ids := identity.New(idStore, cred, time.Now)
	const rootKey = "root-key-0123456789-abcdefghijklmnop"
	_, err = ids.Bootstrap(ctx, "root", "", rootKey)
	must(err)
	rootUser, err := ids.ByKey(ctx, rootKey)
	must(err)
	admin, err := ids.CallerOf(rootUser, identity.AdminOrg)
	must(err)
	user := func(login, org string) identity.Caller {
		t.Helper()
		_, err := ids.CreateUser(ctx, admin, identity.NewUser{Login: login, Name: login, Org: org, Profile: identity.ProfileAnalyst})
		must(err)
		u, err := ids.User(ctx, admin, login)
		must(err)
		c, err := ids.CallerOf(u, org)
		must(err)
		return c
	}
	for _, org := range []string{"soc", "other"} {
		_, err = ids.CreateOrg(ctx, admin, identity.NewOrg{Name: org, Description: org})
		must(err)
	}
	f := &fixture{analyst: user("soc-analyst", "soc"), other: user("other-analyst", "other")}

	st := cases.Stores{Members: ids}
	st.Cases, err = store.NewCaseStore(ctx, db)
	must(err)
	st.Tasks, err = store.NewTaskStore(ctx, db)
	must(err)
	st.Templates, err = store.NewTemplateStore(ctx, db)
	must(err)
	st.Fields, err = store.NewCustomFieldStore(ctx, db)
	must(err)
	st.Files, err = store.NewFiles(ctx, db)
	must(err)
	st.Observables, err = store.NewObservableStore(ctx, db)
	must(err)
	st.Alerts, err = store.NewAlertStore(ctx, db)
	must(err)
	jobs, err := store.NewJobStore(ctx, db)
	must(err)
	counts, err := store.NewTally(ctx, db)
	must(err)
	analyses, err := store.NewAnalysisStore(ctx, db)
	must(err)
	svc := cases.NewService(st, time.Now)
	taskSvc := task.NewService(svc, task.Stores{Tasks: st.Tasks, Files: st.Files, Members: st.Members}, time.Now)
	an := connector.NewAnalyses(svc, taskSvc, nil, connector.Stores{Jobs: jobs, Actions: analyses, Pending: analyses, Cases: st.Cases,
		Observables: st.Observables, Alerts: st.Alerts, Files: st.Files},
		connector.AnalysisConfig{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, time.Now)
	f.e = query.New(svc, taskSvc, an, tally.New(counts), 50)

	sev := func(n int) *int { return &n }
	var tasks []task.Task
	f.caseA, tasks, err = svc.CreateCase(ctx, f.analyst, cases.NewCase{Title: "phishing", Description: "d", Severity: sev(3),
		Tasks: []task.Input{{Title: "triage"}, {Title: "contain", Status: task.InProgress}}})
	must(err)
	for _, tk := range tasks {
		switch tk.Title {
		case "triage":
			f.triage = tk
		case "contain":
			f.contain = tk
		}
	}
	f.caseB, _, err = svc.CreateCase(ctx, f.analyst, cases.NewCase{Title: "malware", Description: "d", Severity: sev(1)})
	must(err)
	f.caseC, _, err = svc.CreateCase(ctx, f.other, cases.NewCase{Title: "elsewhere", Description: "d"})
	must(err)
	_, err = taskSvc.CreateLog(ctx, f.analyst, f.contain.ID, "looked at the headers", nil)
	must(err)
	_, _, err = svc.CreateObservables(ctx, f.analyst, cases.Parent{Case: f.caseA.ID},
		cases.NewObservable{DataType: "ip", Data: []string{"10.0.0.1"}, Message: "m"})
	must(err)
	_, _, err = svc.CreateObservables(ctx, f.analyst, cases.Parent{Case: f.caseA.ID},
		cases.NewObservable{DataType: "domain", Data: []string{"example.com"}, Message: "m", IOC: true})
	must(err)
	_, _, err = svc.CreateObservables(ctx, f.analyst, cases.Parent{Case: f.caseB.ID},
		cases.NewObservable{DataType: "ip", Data: []string{"10.0.0.1"}, Message: "m"})
	must(err)
	f.alert, _, err = svc.CreateAlert(ctx, f.analyst, cases.NewAlert{Type: "mail", Source: "gateway", SourceRef: "r1",
		Title: "suspicious mail", Description: "d", Artifacts: []cases.NewObservable{{DataType: "ip", Data: []string{"10.0.0.1"}}}})
	must(err)
	return f
}

// steps decodes a query's steps as the API does (numbers as json.Number).
func steps(t *testing.T, js string) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(js)))
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return raw
}

// result is what a query answers: its records (their ids), its total, or its count or aggregation.
type result struct {
	kind   query.Kind
	ids    []string
	total  int64
	answer any // count or aggregation
}

func run(t *testing.T, e *query.Engine, cl identity.Caller, js string) (result, error) {
	t.Helper()
	ctx := t.Context()
	p, out, err := e.Build(ctx, cl, steps(t, js))
	if err != nil {
		return result{}, err
	}
	r := result{kind: p.Kind}
	if out.Count || out.Agg != nil {
		r.answer, err = e.Answer(ctx, cl, p, out)
		return r, err
	}
	from, limit := 0, 50
	if out.Page {
		from, limit = out.From, out.To-out.From
	}
	items, total, err := e.Run(ctx, cl, p, from, limit)
	if err != nil {
		return result{}, err
	}
	r.total = total
	for _, it := range items {
		id := query.RecordID(it)
		switch x := it.(type) {
		case cases.SimilarCase:
			id = x.Case.ID
		case cases.LinkedCase:
			id = x.Case.ID
		}
		r.ids = append(r.ids, id)
	}
	return r, nil
}

// check runs each case: want are the record ids in order (nil: any order, compared sorted; use count for a
// number), or wantErr the error kind.
type queryCase struct {
	name    string
	caller  func(f *fixture) identity.Caller // nil: the soc analyst
	query   string
	kind    query.Kind
	want    func(f *fixture) []string // the records, sorted unless ordered
	ordered bool
	count   any         // the answer of a counting query
	wantErr apperr.Kind // an error of this kind; Internal (the zero value): none
}

func check(t *testing.T, f *fixture, tcs []queryCase) {
	t.Helper()
	for _, tc := range tcs {
		t.Run(tc.name, func(t *testing.T) {
			cl := f.analyst
			if tc.caller != nil {
				cl = tc.caller(f)
			}
			r, err := run(t, f.e, cl, tc.query)
			if tc.wantErr != apperr.Internal {
				if !apperr.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want kind %d", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind != "" && r.kind != tc.kind {
				t.Fatalf("kind %s, want %s", r.kind, tc.kind)
			}
			if tc.count != nil {
				if fmt.Sprint(r.answer) != fmt.Sprint(tc.count) {
					t.Fatalf("answer %v, want %v", r.answer, tc.count)
				}
				return
			}
			want := tc.want(f)
			got := slices.Clone(r.ids)
			if !tc.ordered {
				slices.Sort(got)
				slices.Sort(want)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("records %v, want %v", got, want)
			}
		})
	}
}

func ids(l ...string) func(*fixture) []string {
	return func(*fixture) []string { return l }
}

func TestStart(t *testing.T) {
	f := newFixture(t)
	check(t, f, []queryCase{
		{name: "listCase", query: `[{"_name":"listCase"}]`, kind: query.KindCase,
			want: func(f *fixture) []string { return []string{f.caseA.ID, f.caseB.ID} }},
		{name: "listCase of another organisation", caller: func(f *fixture) identity.Caller { return f.other },
			query: `[{"_name":"listCase"}]`, want: func(f *fixture) []string { return []string{f.caseC.ID} }},
		{name: "listTask", query: `[{"_name":"listTask"}]`, kind: query.KindTask,
			want: func(f *fixture) []string { return []string{f.triage.ID, f.contain.ID} }},
		{name: "waitingTasks", query: `[{"_name":"waitingTasks"}]`,
			want: func(f *fixture) []string { return []string{f.triage.ID} }},
		{name: "myTasks", query: `[{"_name":"myTasks"}]`, kind: query.KindTask,
			want: func(f *fixture) []string { return []string{f.contain.ID} }},
		{name: "listAlert", query: `[{"_name":"listAlert"}]`, kind: query.KindAlert,
			want: func(f *fixture) []string { return []string{f.alert.ID} }},
		{name: "listAction (none)", query: `[{"_name":"listAction"}]`, kind: query.KindAction, want: ids()},
		{name: "getCase by number", query: fmt.Sprintf(`[{"_name":"getCase","idOrName":"%d"}]`, f.caseA.Number),
			want: func(f *fixture) []string { return []string{f.caseA.ID} }},
		{name: "getTask", query: fmt.Sprintf(`[{"_name":"getTask","idOrName":%q}]`, f.contain.ID),
			want: func(f *fixture) []string { return []string{f.contain.ID} }},
		{name: "getCase of another organisation", query: fmt.Sprintf(`[{"_name":"getCase","idOrName":%q}]`, f.caseC.ID),
			wantErr: apperr.NotFound},
		{name: "getCase without idOrName", query: `[{"_name":"getCase"}]`, wantErr: apperr.BadRequest},
		{name: "an unknown field", query: `[{"_name":"listCase","nope":1}]`, wantErr: apperr.BadRequest},
		{name: "a step that cannot start", query: `[{"_name":"tasks"}]`, wantErr: apperr.BadRequest},
		{name: "an unknown step", query: `[{"_name":"nope"}]`, wantErr: apperr.BadRequest},
		{name: "a step that is not an object", query: `[1]`, wantErr: apperr.BadRequest},
		{name: "a step without _name", query: `[{}]`, wantErr: apperr.BadRequest},
	})
}

func TestNext_Traversals(t *testing.T) {
	f := newFixture(t)
	getA := fmt.Sprintf(`{"_name":"getCase","idOrName":%q}`, f.caseA.ID)
	check(t, f, []queryCase{
		{name: "case → tasks", query: `[` + getA + `,{"_name":"tasks"}]`, kind: query.KindTask,
			want: func(f *fixture) []string { return []string{f.triage.ID, f.contain.ID} }},
		{name: "case → waitingTasks", query: `[` + getA + `,{"_name":"waitingTasks"}]`,
			want: func(f *fixture) []string { return []string{f.triage.ID} }},
		{name: "case → tasks → logs", query: `[` + getA + `,{"_name":"tasks"},{"_name":"logs"},{"_name":"count"}]`,
			kind: query.KindLog, count: 1},
		{name: "case → observables", query: `[` + getA + `,{"_name":"observables"},{"_name":"count"}]`,
			kind: query.KindObservable, count: 2},
		{name: "alert → observables", query: fmt.Sprintf(`[{"_name":"getAlert","idOrName":%q},{"_name":"observables"},{"_name":"count"}]`, f.alert.ID),
			count: 1},
		{name: "tasks → case (distinct)", query: `[{"_name":"listTask"},{"_name":"case"}]`, kind: query.KindCase,
			want: func(f *fixture) []string { return []string{f.caseA.ID} }},
		{name: "observables → case", query: `[{"_name":"listObservable"},{"_name":"case"}]`,
			want: func(f *fixture) []string { return []string{f.caseA.ID, f.caseB.ID} }},
		{name: "case → actions (none)", query: `[` + getA + `,{"_name":"actions"}]`, kind: query.KindAction, want: ids()},
		{name: "observables → jobs (none)", query: `[{"_name":"listObservable"},{"_name":"jobs"}]`, kind: query.KindJob, want: ids()},
		{name: "a traversal from the wrong kind", query: `[{"_name":"listTask"},{"_name":"observables"}]`, wantErr: apperr.BadRequest},
		{name: "a start step after the first", query: `[{"_name":"listTask"},{"_name":"listCase"}]`, wantErr: apperr.BadRequest},
		{name: "a traversal with a field", query: `[` + getA + `,{"_name":"tasks","x":1}]`, wantErr: apperr.BadRequest},
	})
}

func TestNext_FilterSortPage(t *testing.T) {
	f := newFixture(t)
	check(t, f, []queryCase{
		{name: "filter", query: `[{"_name":"listCase"},{"_name":"filter","_gte":{"severity":2}}]`,
			want: func(f *fixture) []string { return []string{f.caseA.ID} }},
		{name: "two filters narrow", query: `[{"_name":"listCase"},{"_name":"filter","_gte":{"severity":1}},{"_name":"filter","title":"malware"}]`,
			want: func(f *fixture) []string { return []string{f.caseB.ID} }},
		{name: "_ne", query: `[{"_name":"listTask"},{"_name":"filter","_ne":{"status":"Waiting"}}]`,
			want: func(f *fixture) []string { return []string{f.contain.ID} }},
		{name: "_parent", query: fmt.Sprintf(`[{"_name":"listObservable"},{"_name":"filter","_parent":{"_type":"case","_query":{"_id":%q}}},{"_name":"count"}]`, f.caseB.ID),
			count: 1},
		{name: "filter on an unknown field", query: `[{"_name":"listCase"},{"_name":"filter","nope":1}]`, wantErr: apperr.BadRequest},
		{name: "sort descending", query: `[{"_name":"listCase"},{"_name":"sort","_fields":[{"severity":"desc"}]}]`, ordered: true,
			want: func(f *fixture) []string { return []string{f.caseA.ID, f.caseB.ID} }},
		{name: "sort ascending", query: `[{"_name":"listCase"},{"_name":"sort","_fields":["+severity"]}]`, ordered: true,
			want: func(f *fixture) []string { return []string{f.caseB.ID, f.caseA.ID} }},
		{name: "sort on an unknown field", query: `[{"_name":"listCase"},{"_name":"sort","_fields":[{"nope":"asc"}]}]`, wantErr: apperr.BadRequest},
		{name: "sort with a bad order", query: `[{"_name":"listCase"},{"_name":"sort","_fields":[{"severity":"up"}]}]`, wantErr: apperr.BadRequest},
		{name: "page", query: `[{"_name":"listCase"},{"_name":"sort","_fields":["-severity"]},{"_name":"page","from":1,"to":2}]`, ordered: true,
			want: func(f *fixture) []string { return []string{f.caseB.ID} }},
		{name: "page to below from", query: `[{"_name":"listCase"},{"_name":"page","from":2,"to":1}]`, wantErr: apperr.BadRequest},
		{name: "page from negative", query: `[{"_name":"listCase"},{"_name":"page","from":-1,"to":1}]`, wantErr: apperr.BadRequest},
		{name: "nothing follows page", query: `[{"_name":"listCase"},{"_name":"page","from":0,"to":1},{"_name":"count"}]`, wantErr: apperr.BadRequest},
		{name: "count", query: `[{"_name":"listCase"},{"_name":"count"}]`, count: 2},
	})
	t.Run("a page is cut to the engine's max", func(t *testing.T) {
		_, out, err := f.e.Build(t.Context(), f.analyst, steps(t, `[{"_name":"listCase"},{"_name":"page","from":10,"to":1000}]`))
		if err != nil {
			t.Fatal(err)
		}
		if !out.Page || out.From != 10 || out.To != 60 {
			t.Fatalf("page %+v, want 10-60", out)
		}
	})
}

func TestNext_SimilarAndLinkedCases(t *testing.T) {
	f := newFixture(t)
	getAlert := fmt.Sprintf(`{"_name":"getAlert","idOrName":%q}`, f.alert.ID)
	getA := fmt.Sprintf(`{"_name":"getCase","idOrName":%q}`, f.caseA.ID)
	check(t, f, []queryCase{
		{name: "similarCases", query: `[` + getAlert + `,{"_name":"similarCases"}]`, kind: query.KindSimilar,
			want: func(f *fixture) []string { return []string{f.caseA.ID, f.caseB.ID} }},
		{name: "similarCases with a caseFilter", query: `[` + getAlert + `,{"_name":"similarCases","caseFilter":{"title":"malware"}}]`,
			want: func(f *fixture) []string { return []string{f.caseB.ID} }},
		{name: "similarCases sorted", query: `[` + getAlert + `,{"_name":"similarCases"},{"_name":"sort","_fields":[{"severity":"asc"}]}]`, ordered: true,
			want: func(f *fixture) []string { return []string{f.caseB.ID, f.caseA.ID} }},
		{name: "similarCases sorted on an unknown field", query: `[` + getAlert + `,{"_name":"similarCases"},{"_name":"sort","_fields":["nope"]}]`,
			wantErr: apperr.BadRequest},
		{name: "similarCases of cases", query: `[{"_name":"listCase"},{"_name":"similarCases"}]`, wantErr: apperr.BadRequest},
		{name: "similarCases of several alerts", query: `[{"_name":"listAlert"},{"_name":"filter","_not":{"_id":"x"}},{"_name":"similarCases"}]`,
			kind: query.KindSimilar, want: func(f *fixture) []string { return []string{f.caseA.ID, f.caseB.ID} }},
		{name: "linkedCases", query: `[` + getA + `,{"_name":"linkedCases"}]`, kind: query.KindLinked,
			want: func(f *fixture) []string { return []string{f.caseB.ID} }},
		{name: "linkedCases of several cases", query: `[{"_name":"listCase"},{"_name":"linkedCases"}]`, wantErr: apperr.BadRequest},
		{name: "linkedCases take no sort", query: `[` + getA + `,{"_name":"linkedCases"},{"_name":"sort","_fields":["-severity"]}]`,
			wantErr: apperr.BadRequest},
		{name: "linkedCases counted", query: `[` + getA + `,{"_name":"linkedCases"},{"_name":"count"}]`, count: 1},
	})
}

func TestAnswer_Counting(t *testing.T) {
	f := newFixture(t)
	check(t, f, []queryCase{
		{name: "countCase", query: `[{"_name":"countCase"}]`, count: 2},
		{name: "countCase of another organisation", caller: func(f *fixture) identity.Caller { return f.other },
			query: `[{"_name":"countCase"}]`, count: 1},
		{name: "countTask", query: `[{"_name":"countTask"}]`, count: 2},
		{name: "countAlert", query: `[{"_name":"countAlert"}]`, count: 1},
		{name: "countUnreadAlert", query: `[{"_name":"countUnreadAlert"}]`, count: 1},
		{name: "countCaseObservable", query: `[{"_name":"countCaseObservable"}]`, count: 3},
		{name: "countAlertObservable", query: `[{"_name":"countAlertObservable"}]`, count: 1},
		{name: "nothing follows count…", query: `[{"_name":"countCase"},{"_name":"filter","severity":1}]`, wantErr: apperr.BadRequest},
		{name: "limitedCount", query: `[{"_name":"listCase"},{"_name":"limitedCount","threshold":1}]`, count: 1},
		{name: "limitedCount over the total", query: `[{"_name":"listCase"},{"_name":"limitedCount"}]`, count: 2},
		{name: "limitedCount with a bad threshold", query: `[{"_name":"listCase"},{"_name":"limitedCount","threshold":0}]`, wantErr: apperr.BadRequest},
		{name: "aggregation count", query: `[{"_name":"listCase"},{"_name":"aggregation","_agg":"count"}]`, count: map[string]any{"count": int64(2)}},
		{name: "aggregation by field", query: `[{"_name":"listTask"},{"_name":"aggregation","_agg":"field","_field":"status"}]`,
			count: map[string]any{"InProgress": map[string]any{"count": int64(1)}, "Waiting": map[string]any{"count": int64(1)}}},
		{name: "aggregation sum", query: `[{"_name":"listCase"},{"_name":"aggregation","_agg":"sum","_field":"severity"}]`,
			count: map[string]any{"sum_severity": float64(4)}},
		{name: "aggregation of an unknown field", query: `[{"_name":"listCase"},{"_name":"aggregation","_agg":"field","_field":"nope"}]`,
			wantErr: apperr.Invalid},
		{name: "aggregation of similar cases", query: fmt.Sprintf(`[{"_name":"getAlert","idOrName":%q},{"_name":"similarCases"},{"_name":"aggregation","_agg":"count"}]`, f.alert.ID),
			wantErr: apperr.BadRequest},
	})
}

func TestStats(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, model  string
		query, stats any
		want         string
		wantErr      apperr.Kind
	}{
		{"count by default", "case", nil, nil, "map[count:2]", apperr.Internal},
		{"by field, v0 shape", "case_task", nil, map[string]any{"_agg": "field", "_field": "status"},
			"map[status:map[InProgress:map[count:1] Waiting:map[count:1]]]", apperr.Internal},
		{"narrowed by query", "case", map[string]any{"_field": "severity", "_value": json.Number("3")}, nil, "map[count:1]", apperr.Internal},
		{"query as a string", "case", `{"title":"malware"}`, []any{map[string]any{"_agg": "count"}}, "map[count:1]", apperr.Internal},
		{"case observables only", "case_artifact", nil, nil, "map[count:3]", apperr.Internal},
		{"several merged", "case", nil, []any{map[string]any{"_agg": "count"}, map[string]any{"_agg": "max", "_field": "severity"}},
			"map[count:2 max_severity:3]", apperr.Internal},
		{"an unknown aggregation", "case", nil, map[string]any{"_agg": "median"}, "", apperr.Invalid},
		{"stats not objects", "case", nil, "count", "", apperr.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := query.MaxQueries
			got, err := f.e.Stats(t.Context(), f.analyst, tc.model, tc.query, tc.stats, &left)
			if tc.wantErr != apperr.Internal {
				if !apperr.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want kind %d", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	if !query.IsStatsModel("case_task_log") || query.IsStatsModel("nope") {
		t.Fatal("IsStatsModel")
	}
}

func TestRewriteFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
		err  bool
	}{
		{"_is", map[string]any{"_is": map[string]any{"ioc": true}}, "map[ioc:true]", false},
		{"_ne", map[string]any{"_ne": map[string]any{"status": "Open"}}, "map[_not:map[status:Open]]", false},
		{"_parent case", map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{"_id": "~1"}}}, "map[case:~1]", false},
		{"_parent case_task by _field", map[string]any{"_parent": map[string]any{"_type": "case_task",
			"_query": map[string]any{"_field": "_id", "_value": "~2"}}}, "map[task:~2]", false},
		{"nested in _and", map[string]any{"_and": []any{map[string]any{"_is": map[string]any{"a": 1}}}}, "map[_and:[map[a:1]]]", false},
		{"_parent of an unknown type", map[string]any{"_parent": map[string]any{"_type": "user", "_query": map[string]any{"_id": "x"}}}, "", true},
		{"_parent without an id", map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{}}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := query.RewriteFilter(tc.in)
			if tc.err {
				if !apperr.Is(err, apperr.BadRequest) {
					t.Fatalf("err %v, want a BadRequest", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	deep := any(map[string]any{"a": 1})
	for range 70 {
		deep = []any{deep}
	}
	if _, err := query.RewriteFilter(deep); !apperr.Is(err, apperr.BadRequest) {
		t.Fatalf("70 levels deep: %v, want a BadRequest", err)
	}
}
