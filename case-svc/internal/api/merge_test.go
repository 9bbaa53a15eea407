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
		tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": name, "type": "string"}).Want(t, http.StatusCreated)
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
	task := oa.Call(t, http.MethodGet, "/api/case/"+alpha.Str(t, "id")+"/task", nil).Want(t, http.StatusOK).List(t)[0]
	oa.Call(t, http.MethodPost, "/api/case/task/"+task.Str(t, "id")+"/log", map[string]any{"message": "alpha log"}).Want(t, http.StatusCreated)
	oa.observables(t, "/api/case/"+alpha.Str(t, "id")+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.7", "tags": []string{"seen-in-alpha"}})
	oa.observables(t, "/api/case/"+alpha.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": "alpha.example"})
	oa.multipart(t, http.MethodPost, "/api/case/"+alpha.Str(t, "id")+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "alpha.txt", "text/plain", []byte("a file of alpha")}).Want(t, http.StatusCreated)
	oa.observables(t, "/api/case/"+beta.Str(t, "id")+"/artifact", map[string]any{"dataType": "ip", "data": "192.0.2.7", "tags": []string{"seen-in-beta"}, "ioc": true})
	al := oa.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "merge-" + beta.Str(t, "id"),
		"title": "beta alert", "description": "d"}).Want(t, http.StatusCreated).Object(t)
	oa.Call(t, http.MethodPost, "/api/alert/"+al.Str(t, "id")+"/merge/"+beta.Str(t, "id"), nil).Want(t, http.StatusOK)
	// The case as merged: the alert's merge changed beta's description.
	beta = oa.Call(t, http.MethodGet, "/api/case/"+beta.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	return alpha, beta, al.Str(t, "id")
}

func TestCases_Merge(t *testing.T) {
	tm := newTeam(t)
	alpha, beta, alertID := mergePair(t, tm)
	a, b := alpha.Str(t, "id"), beta.Str(t, "id")

	alertUpdates := func() (n int) {
		for _, e := range tm.analyst.audits(t, alertID) {
			if e["operation"] == "Update" {
				n++
			}
		}
		return n
	}
	updatesBefore := alertUpdates()
	m := tm.analyst.Call(t, http.MethodPost, "/api/case/"+a+"/_merge/"+b, nil).Want(t, http.StatusCreated).Object(t)
	id := m.Str(t, "id")
	if id == a || id == b || m.Num(t, "caseId") <= beta.Num(t, "caseId") {
		t.Errorf("merged case %s #%v, want a new case with a new number", id, m["caseId"])
	}
	if got, want := m.Str(t, "title"), "alpha / beta"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got, want := m.Str(t, "description"), "about alpha\n\n"+beta.Str(t, "description"); got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	if m.Num(t, "severity") != 3 || m.Num(t, "tlp") != 2 || m.Num(t, "pap") != 3 {
		t.Errorf("severity/tlp/pap %v/%v/%v, want the highest 3/2/3", m["severity"], m["tlp"], m["pap"])
	}
	if m.Num(t, "startDate") != 1_000_000_000_000 || m["flag"] != true || m.Str(t, "status") != "Open" || m.Str(t, "owner") != "ana" {
		t.Errorf("startDate %v flag %v status %v owner %v, want the earliest, true, Open, the caller", m["startDate"], m["flag"], m["status"], m["owner"])
	}
	if m.Str(t, "summary") != "alpha summary" {
		t.Errorf("summary %v, want alpha's (beta has none)", m["summary"])
	}
	tags := m.Strs(t, "tags")
	slices.Sort(tags)
	if !slices.Equal(tags, []string{"alpha", "beta", "common"}) {
		t.Errorf("tags %v, want the union", tags)
	}
	cf := m.Obj(t, "customFields")
	if cf.Obj(t, "mergeA")["string"] != "from alpha" || cf.Obj(t, "mergeB")["string"] != "only beta" {
		t.Errorf("custom fields %v, want alpha's value of mergeA and beta's mergeB", cf)
	}

	// The merged cases are deleted (TheHive 4 deletes them), with their tasks and observables.
	for _, old := range []string{a, b} {
		tm.analyst.Call(t, http.MethodGet, "/api/case/"+old, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if l := tm.analyst.Call(t, http.MethodPost, "/api/case/task/_search?range=all", map[string]any{"query": map[string]any{"_parent": map[string]any{
			"_type": "case", "_query": map[string]any{"_id": old}}}}).Want(t, http.StatusOK).List(t); len(l) != 0 {
			t.Errorf("case %s still has tasks: %v", old, l)
		}
	}
	if l := tm.analyst.Call(t, http.MethodPost, "/api/case/artifact/_search?range=all", map[string]any{"query": map[string]any{}}).
		Want(t, http.StatusOK).List(t); len(l) != 3 {
		t.Errorf("%d observables in soc's cases, want the merged case's 3: %v", len(l), l)
	}

	// The new case holds the tasks (with their logs), the observables (one per value) and the alert.
	st := tm.analyst.Call(t, http.MethodGet, "/api/case/"+id+"?nstats=true", nil).Want(t, http.StatusOK).Object(t).Obj(t, "stats")
	if st.Obj(t, "tasks").Num(t, "total") != 2 || st.Obj(t, "artifacts").Num(t, "count") != 3 || len(st["alerts"].([]any)) != 1 {
		t.Errorf("stats %v, want 2 tasks, 3 observables (the ip once), 1 alert", st)
	}
	var logs int
	for _, task := range tm.analyst.Call(t, http.MethodGet, "/api/case/"+id+"/task", nil).Want(t, http.StatusOK).List(t) {
		for _, l := range tm.analyst.Call(t, http.MethodGet, "/api/case/task/"+task.Str(t, "id")+"/log", nil).Want(t, http.StatusOK).List(t) {
			logs++
			if task.Str(t, "title") != "alpha task" || l.Str(t, "message") != "alpha log" {
				t.Errorf("log %q on task %q, want alpha's log on alpha's task", l["message"], task["title"])
			}
		}
	}
	if logs != 1 {
		t.Errorf("%d logs in the merged case, want 1", logs)
	}
	for _, o := range tm.analyst.Call(t, http.MethodGet, "/api/case/"+id+"/artifact", nil).Want(t, http.StatusOK).List(t) {
		if o["dataType"] == "file" { // the file is still there to download
			if got := tm.analyst.Call(t, http.MethodGet, "/api/datastore/"+o.Obj(t, "attachment").Str(t, "id"), nil).
				Want(t, http.StatusOK).Body; string(got) != "a file of alpha" {
				t.Errorf("the merged file observable's content: %q", got)
			}
			continue
		}
		if o.Str(t, "data") != "192.0.2.7" {
			continue
		}
		ts := o.Strs(t, "tags")
		slices.Sort(ts)
		if !slices.Equal(ts, []string{"seen-in-alpha", "seen-in-beta"}) || o["ioc"] != true {
			t.Errorf("the shared ip: tags %v ioc %v, want both cases' tags and ioc", ts, o["ioc"])
		}
	}
	alerts := tm.analyst.Call(t, http.MethodPost, "/api/alert/_search", map[string]any{"query": map[string]any{"title": "beta alert"}}).
		Want(t, http.StatusOK).List(t)
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
	ida, idb, idt := a.Str(t, "id"), b.Str(t, "id"), theirs.Str(t, "id")
	num := func(o obj) string { return strconv.FormatInt(int64(o.Num(t, "caseId")), 10) }

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
			c.as.Call(t, http.MethodPost, c.path, nil).WantError(t, c.status, c.typ)
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
		got := c.as.Call(t, http.MethodGet, "/api/case/"+c.o.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		if got.Str(t, "title") != c.o.Str(t, "title") || got["updatedAt"] != c.o["updatedAt"] {
			t.Errorf("case %s changed by refused merges: %v", c.o.Str(t, "id"), got)
		}
	}
	if l := tm.analyst.Call(t, http.MethodGet, "/api/case?range=all", nil).Want(t, http.StatusOK).List(t); len(l) != 2 {
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
			ida, idb := a.Str(t, "id"), b.Str(t, "id")
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
					statuses[i] = tm.analyst.Send(t, http.MethodPost, p, "", nil, nil).Status
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
			all := tm.analyst.Call(t, http.MethodGet, "/api/case?range=all", nil).Want(t, http.StatusOK).List(t)
			tasks := tm.analyst.Call(t, http.MethodPost, "/api/case/task/_search?range=all", map[string]any{"query": map[string]any{}}).
				Want(t, http.StatusOK).List(t)
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
		ids = append(ids, c.Str(t, "id"))
		numbers = append(numbers, strconv.FormatInt(int64(c.Num(t, "caseId")), 10))
	}
	m := tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+strings.Join(numbers, ","), nil).Want(t, http.StatusCreated).Object(t)
	if m.Str(t, "title") != "one / two / three" || m.Num(t, "severity") != 3 || m.Num(t, "number") != m.Num(t, "caseId") || m["_createdAt"] == nil {
		t.Errorf("merged case %v, want the titles joined in order, the highest severity, number and _createdAt", m)
	}
	for _, id := range ids {
		tm.analyst.Call(t, http.MethodGet, "/api/case/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	}
	tm.analyst.Call(t, http.MethodGet, "/api/case/"+m.Str(t, "_id"), nil).Want(t, http.StatusOK)

	// Refusals: one case, too many, the same twice, an unknown one, read-only.
	other := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+other, nil).WantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+strings.Repeat(other+",", 101)+other, nil).
		WantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+other+","+other, nil).WantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+other+",~999999999", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.analyst.Call(t, http.MethodPost, "/api/v1/case/_merge/"+other+",", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.readOnly.Call(t, http.MethodPost, "/api/v1/case/_merge/"+other+","+m.Str(t, "_id"), nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/"+other, nil).Want(t, http.StatusOK)
}
