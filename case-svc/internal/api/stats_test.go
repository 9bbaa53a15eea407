package api_test

// The statistics of TheHive 4.1's v0 API (stats.go): the _stats route of every model, POST /api/_stats, and
// the aggregations (count, field with _select/_order/_size, time, sum/avg/min/max), over HTTP on a real
// store. Every number is the caller's organisation's only.

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// statsFixture gives soc three cases (severities 1, 3, 3; one Resolved), a task per case (one assigned to
// ana, so InProgress), a log, case and alert observables, two alerts (one read, one imported), a template; cert a case, an
// alert and a task, which soc's numbers never include.
func statsFixture(t *testing.T) (*team, []obj) {
	t.Helper()
	tm := newTeam(t)
	var cs []obj
	for _, sev := range []int{1, 3, 3} {
		cs = append(cs, tm.analyst.newCase(t, map[string]any{"title": "case", "severity": sev, "tags": []string{"t1"}}))
	}
	tm.analyst.Call(t, http.MethodPatch, "/api/case/"+cs[2].Str(t, "id"), map[string]any{"status": "Resolved",
		"resolutionStatus": "TruePositive", "impactStatus": "NoImpact", "summary": "done"}).Want(t, 200)
	for i, c := range cs {
		body := map[string]any{"title": "task"}
		if i == 0 {
			body["owner"] = "ana"
		}
		task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+c.Str(t, "id")+"/task", body).Want(t, 201).Object(t)
		if i == 0 {
			tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+task.Str(t, "id")+"/log", map[string]any{"message": "m"}).Want(t, 201)
		}
	}
	tm.analyst.Call(t, http.MethodPost, "/api/case/"+cs[0].Str(t, "id")+"/artifact",
		map[string]any{"dataType": "ip", "data": []string{"10.0.0.1", "10.0.0.2"}}).Want(t, 201)
	tm.analyst.Call(t, http.MethodPost, "/api/case/"+cs[1].Str(t, "id")+"/artifact",
		map[string]any{"dataType": "domain", "data": "example.org"}).Want(t, 201)
	read := tm.analyst.newAlert(t, "r1", []map[string]any{{"dataType": "ip", "data": "10.9.9.9"}})
	tm.analyst.Call(t, http.MethodPost, "/api/alert/"+read.Str(t, "id")+"/markAsRead", nil).Want(t, 200)
	imported := tm.analyst.newAlert(t, "r2", nil)
	tm.analyst.Call(t, http.MethodPost, "/api/alert/"+imported.Str(t, "id")+"/createCase", map[string]any{}).Want(t, 201)
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "tpl"}).Want(t, 201)

	theirs := tm.other.newCase(t, map[string]any{"title": "theirs", "severity": 4})
	tm.other.Call(t, http.MethodPost, "/api/case/"+theirs.Str(t, "id")+"/task", map[string]any{"title": "x", "owner": "bob"}).Want(t, 201)
	tm.other.newAlert(t, "theirs", []map[string]any{{"dataType": "ip", "data": "10.0.0.1"}})
	return tm, cs
}

func stats(t *testing.T, c *client, path string, body map[string]any) obj {
	t.Helper()
	return c.Call(t, http.MethodPost, path, body).Want(t, 200).Object(t)
}

func count(t *testing.T, o obj) int {
	t.Helper()
	return int(o.Num(t, "count"))
}

func TestStats_EveryModel(t *testing.T) {
	t.Parallel()
	tm, _ := statsFixture(t)
	countOnly := map[string]any{"query": map[string]any{}, "stats": []any{map[string]any{"_agg": "count"}}}
	// 4 cases in soc: three, and the one created from an alert
	for path, want := range map[string]int{"/api/case/_stats": 4, "/api/alert/_stats": 2, "/api/case/task/_stats": 3,
		"/api/case/task/log/_stats": 1, "/api/case/artifact/_stats": 3, "/api/case/template/_stats": 1,
		"/api/v0/case/artifact/_stats": 3} {
		if got := count(t, stats(t, tm.readOnly, path, countOnly)); got != want {
			t.Errorf("%s: count %d, want %d", path, got, want)
		}
	}
	// cert sees its own: one case, one alert, one task, one (alert) observable, so no case observable
	for path, want := range map[string]int{"/api/case/_stats": 1, "/api/alert/_stats": 1, "/api/case/task/_stats": 1,
		"/api/case/artifact/_stats": 0, "/api/case/template/_stats": 0} {
		if got := count(t, stats(t, tm.other, path, countOnly)); got != want {
			t.Errorf("cert %s: count %d, want %d", path, got, want)
		}
	}
	// users: soc's four (socadmin, ana, reader; cert's bob is not one); organisations: the caller's own
	if got := count(t, stats(t, tm.analyst, "/api/user/_stats", countOnly)); got != 3 {
		t.Errorf("users of soc: %d", got)
	}
	if got := count(t, stats(t, tm.analyst, "/api/organisation/_stats", countOnly)); got != 1 {
		t.Errorf("organisations of ana: %d", got)
	}
	if got := count(t, stats(t, tm.env.admin, "/api/organisation/_stats", countOnly)); got != 3 {
		t.Errorf("organisations of the platform administrator: %d", got)
	}
	tm.env.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "cf1", "type": "string"}).Want(t, 201)
	if got := count(t, stats(t, tm.readOnly, "/api/customField/_stats", countOnly)); got != 1 {
		t.Errorf("custom fields: %d", got)
	}

	// field terms in the v0 shape {field: {value: {count}}}, narrowed by the query (the search DSL, _parent too)
	got := stats(t, tm.analyst, "/api/alert/_stats", map[string]any{"query": map[string]any{},
		"stats": []any{map[string]any{"_agg": "field", "_field": "status"}}})
	if st := got.Obj(t, "status"); count(t, st.Obj(t, "Ignored")) != 1 || count(t, st.Obj(t, "Imported")) != 1 || len(st) != 2 {
		t.Errorf("alert status %v", got)
	}
	got = stats(t, tm.analyst, "/api/case/task/_stats", map[string]any{"query": map[string]any{"owner": "ana"},
		"stats": []any{map[string]any{"_agg": "field", "_field": "status"}, map[string]any{"_agg": "count"}}})
	if count(t, got) != 1 || count(t, got.Obj(t, "status").Obj(t, "InProgress")) != 1 {
		t.Errorf("ana's tasks %v", got)
	}
	got = stats(t, tm.analyst, "/api/case/artifact/_stats", map[string]any{"query": map[string]any{"dataType": "ip"},
		"stats": []any{map[string]any{"_agg": "count"}}})
	if count(t, got) != 2 {
		t.Errorf("case ip observables %v", got)
	}
	// the query given as a JSON string, as some clients send it
	got = stats(t, tm.analyst, "/api/case/_stats", map[string]any{"query": `{"severity": 3}`})
	if count(t, got) != 2 {
		t.Errorf("query as a string %v", got)
	}
}

func TestStats_Aggregations(t *testing.T) {
	t.Parallel()
	tm, _ := statsFixture(t)
	got := stats(t, tm.analyst, "/api/case/_stats", map[string]any{"stats": []any{
		map[string]any{"_agg": "sum", "_field": "severity"}, map[string]any{"_agg": "avg", "_field": "severity"},
		map[string]any{"_agg": "min", "_field": "severity"}, map[string]any{"_agg": "max", "_field": "severity", "_name": "worst"},
	}})
	// severities 1, 3, 3 and the alert's case (2)
	if got.Num(t, "sum_severity") != 9 || got.Num(t, "avg_severity") != 2.25 || got.Num(t, "min_severity") != 1 || got.Num(t, "worst") != 3 {
		t.Errorf("functions %v", got)
	}
	// _select, _order and _size: the most frequent severity first, with the sum of tlp in each
	got = stats(t, tm.analyst, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "field", "_field": "severity",
		"_order": []string{"-count"}, "_size": 1, "_select": []any{map[string]any{"_agg": "count"}, map[string]any{"_agg": "sum", "_field": "tlp"}}}}})
	sev := got.Obj(t, "severity")
	if len(sev) != 1 || count(t, sev.Obj(t, "3")) != 2 || sev.Obj(t, "3").Num(t, "sum_tlp") != 4 {
		t.Errorf("field with _select %v", got)
	}
	// tags are counted element by element
	got = stats(t, tm.analyst, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "field", "_field": "tags"}}})
	if count(t, got.Obj(t, "tags").Obj(t, "t1")) != 3 {
		t.Errorf("tags %v", got)
	}
	// a time histogram by day: every case was created today (UTC), in one bucket keyed by its start
	day := time.Now().UTC().Truncate(24 * time.Hour).UnixMilli()
	for _, iv := range []map[string]any{{"_interval": "1d"}, {"_interval": 1, "_unit": "DAYS"}} {
		a := map[string]any{"_agg": "time", "_fields": []string{"createdAt"}}
		for k, v := range iv {
			a[k] = v
		}
		got = stats(t, tm.analyst, "/api/case/_stats", map[string]any{"stats": []any{a}})
		if len(got) > 2 { // the day of the run, and the next if it turned midnight while the fixture was made
			t.Fatalf("histogram %v", got)
		}
		if b, ok := got[strconv.FormatInt(day, 10)].(map[string]any); !ok || obj(b).Obj(t, "createdAt").Num(t, "count") < 1 {
			t.Errorf("histogram %v: no bucket at %d", got, day)
		}
	}
	// a month bucket starts on the 1st
	got = stats(t, tm.analyst, "/api/case/_stats", map[string]any{"stats": []any{map[string]any{"_agg": "time",
		"_fields": []string{"createdAt"}, "_interval": "1M"}}})
	for k := range got {
		ms, _ := strconv.ParseInt(k, 10, 64)
		if d := time.UnixMilli(ms).UTC(); d.Day() != 1 || d.Hour() != 0 {
			t.Errorf("month bucket %s = %v", k, d)
		}
	}

	// POST /api/_stats: several models, deep-merged
	got = stats(t, tm.analyst, "/api/_stats", map[string]any{"stats": []any{
		map[string]any{"model": "case", "query": map[string]any{"status": "Open"}, "stats": []any{map[string]any{"_agg": "field", "_field": "status"}}},
		map[string]any{"model": "case", "stats": []any{map[string]any{"_agg": "field", "_field": "status"}}},
		map[string]any{"model": "case_task", "stats": []any{map[string]any{"_agg": "count", "_name": "tasks"}}},
	}})
	if count(t, got.Obj(t, "status").Obj(t, "Open")) != 3 || count(t, got.Obj(t, "status").Obj(t, "Resolved")) != 1 || got.Num(t, "tasks") != 3 {
		t.Errorf("_stats %v", got)
	}
}

func TestStats_Refusals(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	for _, body := range []string{
		`{"stats": [{"_agg": "median", "_field": "severity"}]}`,
		`{"stats": [{"_agg": "field", "_field": "nope"}]}`,
		`{"stats": [{"_agg": "avg", "_field": "title"}]}`,
		`{"stats": [{"_agg": "field", "_field": "status", "_order": ["title"]}]}`,
		`{"stats": [{"_agg": "field", "_field": "status", "_size": -1}]}`,
		`{"stats": [{"_agg": "time", "_fields": ["title"], "_interval": "1d"}]}`,
		`{"stats": [{"_agg": "time", "_fields": ["createdAt"], "_interval": "1x"}]}`,
		`{"stats": [{"_agg": "time", "_fields": ["createdAt"], "_interval": 1, "_unit": "FORTNIGHTS"}]}`,
		`{"stats": [{"_agg": "count", "_select": [{"_agg": "count"}]}]}`,
		`{"stats": "count"}`,
		`{"stats": [1]}`,
	} {
		tm.analyst.Raw(t, http.MethodPost, "/api/case/_stats", "application/json", body).WantError(t, 400, "AttributeCheckingError")
	}
	tm.analyst.Raw(t, http.MethodPost, "/api/case/_stats", "application/json", `{"query": {"nope": 1}}`).WantError(t, 400, "BadRequest")
	tm.analyst.Raw(t, http.MethodPost, "/api/_stats", "application/json", `{"stats": [{"model": "dashboard"}]}`).
		WantError(t, 400, "AttributeCheckingError")
	tm.analyst.Raw(t, http.MethodPost, "/api/_stats", "application/json", `{}`).WantError(t, 400, "AttributeCheckingError")
	tm.anon().Call(t, http.MethodPost, "/api/alert/_stats", map[string]any{}).WantError(t, 401, "AuthenticationError")
}
