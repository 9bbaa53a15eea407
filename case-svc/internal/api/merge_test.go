package api_test

// Case merge, POST /api/case/{caseId}/_merge/{mergedCaseId}, as TheHive 4.1.24's CaseSrv.merge does it and its
// UI (CaseSrv.merge, "Merge case") sends it: a new case, the two cases deleted. What a failure in the middle
// leaves is tested in internal/cases/merge_test.go (failures of the real stores).

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// mergePair makes two cases of soc to merge: alpha (severity 1, tlp 1, pap 3, a task with a log, three
// observables with a file, a custom field) and beta (severity 3, tlp 2, pap 1, flagged, started earlier, a task, the same
// ip with another tag and ioc, an alert merged in, another custom field); and returns the alert's id.
func mergePair(t *testing.T, tm *team) (alpha, beta obj, alertID string) {
	t.Helper()
	for _, name := range []string{"mergeA", "mergeB"} {
		tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": name, "type": "string"}).want(t, http.StatusCreated)
	}
	oa := tm.orgAdmin
	alpha = oa.newCase(t, map[string]any{"title": "alpha", "description": "about alpha", "severity": 1, "tlp": 1, "pap": 3,
		"tags": []string{"alpha", "common"}, "summary": "alpha summary", "startDate": 2_000_000_000_000,
		"tasks":        []map[string]any{{"title": "alpha task"}},
		"customFields": map[string]any{"mergeA": map[string]any{"string": "from alpha"}}})
	beta = oa.newCase(t, map[string]any{"title": "beta", "description": "about beta", "severity": 3, "tlp": 2, "pap": 1,
		"tags": []string{"beta", "common"}, "flag": true, "startDate": 1_000_000_000_000,
		"tasks":        []map[string]any{{"title": "beta task"}},
		"customFields": map[string]any{"mergeA": map[string]any{"string": "from beta"}, "mergeB": map[string]any{"string": "only beta"}}})
	task := oa.call(t, http.MethodGet, "/api/case/"+alpha.str(t, "id")+"/task", nil).want(t, http.StatusOK).list(t)[0]
	oa.call(t, http.MethodPost, "/api/case/task/"+task.str(t, "id")+"/log", map[string]any{"message": "alpha log"}).want(t, http.StatusCreated)
	oa.observables(t, "/api/case/"+alpha.str(t, "id")+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.7", "tags": []string{"seen-in-alpha"}})
	oa.observables(t, "/api/case/"+alpha.str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "alpha.example"})
	oa.multipart(t, http.MethodPost, "/api/case/"+alpha.str(t, "id")+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "alpha.txt", "text/plain", []byte("a file of alpha")}).want(t, http.StatusCreated)
	oa.observables(t, "/api/case/"+beta.str(t, "id")+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.7", "tags": []string{"seen-in-beta"}, "ioc": true})
	al := oa.call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "merge-" + beta.str(t, "id"),
		"title": "beta alert", "description": "d"}).want(t, http.StatusCreated).object(t)
	oa.call(t, http.MethodPost, "/api/alert/"+al.str(t, "id")+"/merge/"+beta.str(t, "id"), nil).want(t, http.StatusOK)
	// The case as merged: the alert's merge changed beta's description.
	beta = oa.call(t, http.MethodGet, "/api/case/"+beta.str(t, "id"), nil).want(t, http.StatusOK).object(t)
	return alpha, beta, al.str(t, "id")
}

func TestCases_Merge(t *testing.T) {
	tm := newTeam(t)
	alpha, beta, alertID := mergePair(t, tm)
	a, b := alpha.str(t, "id"), beta.str(t, "id")

	alertUpdates := func() (n int) {
		for _, e := range tm.analyst.audits(t, alertID) {
			if e["operation"] == "Update" {
				n++
			}
		}
		return n
	}
	updatesBefore := alertUpdates()
	m := tm.analyst.call(t, http.MethodPost, "/api/case/"+a+"/_merge/"+b, nil).want(t, http.StatusCreated).object(t)
	id := m.str(t, "id")
	if id == a || id == b || m.num(t, "caseId") <= beta.num(t, "caseId") {
		t.Errorf("merged case %s #%v, want a new case with a new number", id, m["caseId"])
	}
	if got, want := m.str(t, "title"), "alpha / beta"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got, want := m.str(t, "description"), "about alpha\n\n"+beta.str(t, "description"); got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	if m.num(t, "severity") != 3 || m.num(t, "tlp") != 2 || m.num(t, "pap") != 3 {
		t.Errorf("severity/tlp/pap %v/%v/%v, want the highest 3/2/3", m["severity"], m["tlp"], m["pap"])
	}
	if m.num(t, "startDate") != 1_000_000_000_000 || m["flag"] != true || m.str(t, "status") != "Open" || m.str(t, "owner") != "ana" {
		t.Errorf("startDate %v flag %v status %v owner %v, want the earliest, true, Open, the caller", m["startDate"], m["flag"], m["status"], m["owner"])
	}
	if m.str(t, "summary") != "alpha summary" {
		t.Errorf("summary %v, want alpha's (beta has none)", m["summary"])
	}
	tags := m.strs(t, "tags")
	slices.Sort(tags)
	if !slices.Equal(tags, []string{"alpha", "beta", "common"}) {
		t.Errorf("tags %v, want the union", tags)
	}
	cf := m.obj(t, "customFields")
	if cf.obj(t, "mergeA")["string"] != "from alpha" || cf.obj(t, "mergeB")["string"] != "only beta" {
		t.Errorf("custom fields %v, want alpha's value of mergeA and beta's mergeB", cf)
	}

	// The merged cases are deleted (TheHive 4 deletes them), with their tasks and observables.
	for _, old := range []string{a, b} {
		tm.analyst.call(t, http.MethodGet, "/api/case/"+old, nil).wantError(t, http.StatusNotFound, "NotFoundError")
		if l := tm.analyst.call(t, http.MethodPost, "/api/case/task/_search?range=all", map[string]any{"query": map[string]any{"_parent": map[string]any{
			"_type": "case", "_query": map[string]any{"_id": old}}}}).want(t, http.StatusOK).list(t); len(l) != 0 {
			t.Errorf("case %s still has tasks: %v", old, l)
		}
	}
	if l := tm.analyst.call(t, http.MethodPost, "/api/case/artifact/_search?range=all", map[string]any{"query": map[string]any{}}).
		want(t, http.StatusOK).list(t); len(l) != 3 {
		t.Errorf("%d observables in soc's cases, want the merged case's 3: %v", len(l), l)
	}

	// The new case holds the tasks (with their logs), the observables (one per value) and the alert.
	st := tm.analyst.call(t, http.MethodGet, "/api/case/"+id+"?nstats=true", nil).want(t, http.StatusOK).object(t).obj(t, "stats")
	if st.obj(t, "tasks").num(t, "total") != 2 || st.obj(t, "artifacts").num(t, "count") != 3 || len(st["alerts"].([]any)) != 1 {
		t.Errorf("stats %v, want 2 tasks, 3 observables (the ip once), 1 alert", st)
	}
	var logs int
	for _, task := range tm.analyst.call(t, http.MethodGet, "/api/case/"+id+"/task", nil).want(t, http.StatusOK).list(t) {
		for _, l := range tm.analyst.call(t, http.MethodGet, "/api/case/task/"+task.str(t, "id")+"/log", nil).want(t, http.StatusOK).list(t) {
			logs++
			if task.str(t, "title") != "alpha task" || l.str(t, "message") != "alpha log" {
				t.Errorf("log %q on task %q, want alpha's log on alpha's task", l["message"], task["title"])
			}
		}
	}
	if logs != 1 {
		t.Errorf("%d logs in the merged case, want 1", logs)
	}
	for _, o := range tm.analyst.call(t, http.MethodGet, "/api/case/"+id+"/artifact", nil).want(t, http.StatusOK).list(t) {
		if o["dataType"] == "file" { // the file is still there to download
			if got := tm.analyst.call(t, http.MethodGet, "/api/datastore/"+o.obj(t, "attachment").str(t, "id"), nil).
				want(t, http.StatusOK).body; string(got) != "a file of alpha" {
				t.Errorf("the merged file observable's content: %q", got)
			}
			continue
		}
		if o.str(t, "data") != "192.0.2.7" {
			continue
		}
		ts := o.strs(t, "tags")
		slices.Sort(ts)
		if !slices.Equal(ts, []string{"seen-in-alpha", "seen-in-beta"}) || o["ioc"] != true {
			t.Errorf("the shared ip: tags %v ioc %v, want both cases' tags and ioc", ts, o["ioc"])
		}
	}
	alerts := tm.analyst.call(t, http.MethodPost, "/api/alert/_search", map[string]any{"query": map[string]any{"title": "beta alert"}}).
		want(t, http.StatusOK).list(t)
	if len(alerts) != 1 || alerts[0]["case"] != id || alerts[0]["status"] != "Imported" {
		t.Errorf("beta's alert %v, want it in the merged case, Imported", alerts)
	}

	// The audit trail: the new case and its records created, the alert moved, the merged cases deleted.
	wantOne(t, tm.analyst, id, "case", "Creation")
	for _, old := range []string{a, b} {
		wantOne(t, tm.analyst, old, "case", "Delete")
	}
	if n := alertUpdates(); n != updatesBefore+1 {
		t.Errorf("%d update events of the alert for the merge, want 1", n-updatesBefore)
	}
}

func TestCases_MergeRefusals(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "a"})
	b := tm.analyst.newCase(t, map[string]any{"title": "b"})
	theirs := tm.other.newCase(t, map[string]any{"title": "theirs"})
	ida, idb, idt := a.str(t, "id"), b.str(t, "id"), theirs.str(t, "id")
	num := func(o obj) string { return strconv.FormatInt(int64(o.num(t, "caseId")), 10) }

	cases := []struct {
		name   string
		as     *client
		path   string
		status int
		typ    string
	}{
		{"read-only", tm.readOnly, "/api/case/" + ida + "/_merge/" + idb, http.StatusForbidden, "AuthorizationError"},
		{"the same case twice", tm.analyst, "/api/case/" + ida + "/_merge/" + ida, http.StatusBadRequest, "BadRequest"},
		{"the same case by id and number", tm.analyst, "/api/case/" + ida + "/_merge/" + num(a), http.StatusBadRequest, "BadRequest"},
		{"another organisation's case", tm.analyst, "/api/case/" + ida + "/_merge/" + idt, http.StatusNotFound, "NotFoundError"},
		{"another organisation's case first", tm.analyst, "/api/case/" + idt + "/_merge/" + ida, http.StatusNotFound, "NotFoundError"},
		{"seen from the other organisation", tm.other, "/api/case/" + ida + "/_merge/" + idb, http.StatusNotFound, "NotFoundError"},
		{"an unknown case", tm.analyst, "/api/case/" + ida + "/_merge/~999999999", http.StatusNotFound, "NotFoundError"},
		{"through /api/v0, read-only", tm.readOnly, "/api/v0/case/" + ida + "/_merge/" + idb, http.StatusForbidden, "AuthorizationError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.as.call(t, http.MethodPost, c.path, nil).wantError(t, c.status, c.typ)
		})
	}
	// Hostile ids: never 5xx, never a merge.
	for _, bad := range []string{"0", "-1", "abc", "~", "~0", "~-1", "99999999999999999999999", "~abc", "%00", "%2e%2e", "a%2Fb",
		url.PathEscape(strings.Repeat("9", 5000)), url.PathEscape(`{"$ne":null}`), url.PathEscape("' OR 1=1 --")} {
		hostile(t, tm.analyst, http.MethodPost, "/api/case/"+ida+"/_merge/"+bad, "", nil, http.StatusNotFound)
		hostile(t, tm.analyst, http.MethodPost, "/api/case/"+bad+"/_merge/"+ida, "", nil, http.StatusNotFound)
	}
	hostileJSON(t, tm.analyst, http.MethodPost, "/api/case/"+ida+"/_merge/"+idb+"x", `{"title": {"$gt": ""}}`, http.StatusNotFound)

	// Nothing changed: the three cases are as they were.
	for _, c := range []struct {
		as *client
		o  obj
	}{{tm.analyst, a}, {tm.analyst, b}, {tm.other, theirs}} {
		got := c.as.call(t, http.MethodGet, "/api/case/"+c.o.str(t, "id"), nil).want(t, http.StatusOK).object(t)
		if got.str(t, "title") != c.o.str(t, "title") || got["updatedAt"] != c.o["updatedAt"] {
			t.Errorf("case %s changed by refused merges: %v", c.o.str(t, "id"), got)
		}
	}
	if l := tm.analyst.call(t, http.MethodGet, "/api/case?range=all", nil).want(t, http.StatusOK).list(t); len(l) != 2 {
		t.Errorf("%d cases in soc after refused merges, want 2", len(l))
	}
}

// Two merges of the same cases at once: at most one succeeds, and what remains is either the merged case
// holding each record once, or the two cases as they were. Same order and reversed order.
func TestCases_MergeConcurrent(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		t.Run(fmt.Sprintf("reversed=%v", reversed), func(t *testing.T) {
			tm := newTeam(t)
			a := tm.analyst.newCase(t, map[string]any{"title": "a", "tasks": []map[string]any{{"title": "task of a"}}})
			b := tm.analyst.newCase(t, map[string]any{"title": "b", "tasks": []map[string]any{{"title": "task of b"}}})
			ida, idb := a.str(t, "id"), b.str(t, "id")
			paths := []string{"/api/case/" + ida + "/_merge/" + idb, "/api/case/" + ida + "/_merge/" + idb}
			if reversed {
				paths[1] = "/api/case/" + idb + "/_merge/" + ida
			}
			statuses := make([]int, len(paths))
			var wg sync.WaitGroup
			for i, p := range paths {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = tm.analyst.send(t, http.MethodPost, p, "", nil).status
				}()
			}
			wg.Wait()
			won := 0
			for _, s := range statuses {
				switch s {
				case http.StatusCreated:
					won++
				case http.StatusBadRequest, http.StatusNotFound: // changed meanwhile (CreateError), or already gone
				default:
					t.Errorf("status %d", s)
				}
			}
			if won > 1 {
				t.Fatalf("statuses %v: both merges succeeded", statuses)
			}
			all := tm.analyst.call(t, http.MethodGet, "/api/case?range=all", nil).want(t, http.StatusOK).list(t)
			tasks := tm.analyst.call(t, http.MethodPost, "/api/case/task/_search?range=all", map[string]any{"query": map[string]any{}}).
				want(t, http.StatusOK).list(t)
			switch {
			case won == 1 && len(all) == 1 && all[0]["id"] != ida && all[0]["id"] != idb && len(tasks) == 2:
			case won == 0 && len(all) == 2 && len(tasks) == 2:
			default:
				t.Errorf("statuses %v: %d cases %v and %d tasks left", statuses, len(all), all, len(tasks))
			}
		})
	}
}

// POST /api/v1/case/_merge/{ids}, as TheHive 4.1's later UI and thehive4py 2 send it (ids or numbers joined
// with commas, as the reference's CaseCtrlTest merges "21,22,23"): 201 with the new case in v1 names too.
func TestCases_MergeV1(t *testing.T) {
	tm := newTeam(t)
	var ids, numbers []string
	for i, title := range []string{"one", "two", "three"} {
		c := tm.analyst.newCase(t, map[string]any{"title": title, "severity": []int{1, 3, 2}[i]})
		ids = append(ids, c.str(t, "id"))
		numbers = append(numbers, strconv.FormatInt(int64(c.num(t, "caseId")), 10))
	}
	m := tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+strings.Join(numbers, ","), nil).want(t, http.StatusCreated).object(t)
	if m.str(t, "title") != "one / two / three" || m.num(t, "severity") != 3 || m.num(t, "number") != m.num(t, "caseId") || m["_createdAt"] == nil {
		t.Errorf("merged case %v, want the titles joined in order, the highest severity, number and _createdAt", m)
	}
	for _, id := range ids {
		tm.analyst.call(t, http.MethodGet, "/api/case/"+id, nil).wantError(t, http.StatusNotFound, "NotFoundError")
	}
	tm.analyst.call(t, http.MethodGet, "/api/case/"+m.str(t, "_id"), nil).want(t, http.StatusOK)

	// Refusals: one case, too many, the same twice, an unknown one, read-only.
	other := tm.analyst.newCase(t, nil).str(t, "id")
	tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+other, nil).wantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+strings.Repeat(other+",", 101)+other, nil).
		wantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+other+","+other, nil).wantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+other+",~999999999", nil).wantError(t, http.StatusNotFound, "NotFoundError")
	tm.analyst.call(t, http.MethodPost, "/api/v1/case/_merge/"+other+",", nil).wantError(t, http.StatusNotFound, "NotFoundError")
	tm.readOnly.call(t, http.MethodPost, "/api/v1/case/_merge/"+other+","+m.str(t, "_id"), nil).wantError(t, http.StatusForbidden, "AuthorizationError")
	tm.analyst.call(t, http.MethodGet, "/api/case/"+other, nil).want(t, http.StatusOK)
}
