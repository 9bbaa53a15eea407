package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// countCases returns X-Total of the caller's case list.
func (c *client) countCases(t testing.TB) string {
	t.Helper()
	return c.Call(t, http.MethodGet, "/api/case", nil).Want(t, 200).Total(t)
}

func TestCase_Create(t *testing.T) {
	tm := newTeam(t)

	t.Run("defaults", func(t *testing.T) {
		before := time.Now().UnixMilli()
		c := tm.analyst.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "Phishing", "description": "A mail"}).
			Want(t, 201).Object(t)
		id := c.Str(t, "_id")
		if !strings.HasPrefix(id, "~") || c.Str(t, "id") != id || c.Str(t, "_type") != "case" {
			t.Fatalf("ids %v", c)
		}
		if c.Num(t, "caseId") < 1 || c.Str(t, "title") != "Phishing" || c.Str(t, "description") != "A mail" ||
			c.Num(t, "severity") != 2 || c.Num(t, "tlp") != 2 || c.Num(t, "pap") != 2 || c["flag"] != false ||
			c.Str(t, "status") != "Open" || c.Str(t, "owner") != "ana" || c.Str(t, "createdBy") != "ana" {
			t.Fatalf("defaults %v", c)
		}
		if s := c.Num(t, "startDate"); s < float64(before) || c.Num(t, "createdAt") < float64(before) {
			t.Fatalf("startDate %v createdAt %v before %d", s, c["createdAt"], before)
		}
		for _, k := range []string{"endDate", "impactStatus", "resolutionStatus", "summary", "updatedAt", "updatedBy"} {
			c.Null(t, k)
		}
		if len(c.Strs(t, "tags")) != 0 || len(c.Obj(t, "customFields")) != 0 || len(c.Obj(t, "stats")) != 0 {
			t.Fatalf("empty collections %v", c)
		}
		if p := c.Strs(t, "permissions"); !slices.Contains(p, "manageCase") || !slices.Contains(p, "manageTask") {
			t.Fatalf("permissions %v", p)
		}
		got := tm.analyst.Call(t, http.MethodGet, "/api/case/"+id, nil).Want(t, 200).Object(t)
		if got.Str(t, "title") != "Phishing" || got.Num(t, "caseId") != c.Num(t, "caseId") {
			t.Fatalf("read back %v", got)
		}
		// The read-only user sees the case, with no permission on it.
		ro := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+id, nil).Want(t, 200).Object(t)
		if len(ro.Strs(t, "permissions")) != 0 {
			t.Fatalf("read-only permissions %v", ro["permissions"])
		}
	})

	t.Run("every field", func(t *testing.T) {
		c := tm.analyst.Call(t, http.MethodPost, "/api/v0/case", map[string]any{
			"title": "Full", "description": "d", "Severity": 3, "tlp": 1, "pap": 3, "startDate": 1700000000000,
			"tags": []string{"a", "b", "a", " "}, "flag": true, "owner": "reader",
			"tasks": []map[string]any{{"title": "Triage", "description": "look"}, {"title": "Contain"}},
		}).Want(t, 201).Object(t)
		if c.Num(t, "severity") != 3 || c.Num(t, "tlp") != 1 || c.Num(t, "pap") != 3 || c.Num(t, "startDate") != 1700000000000 ||
			c["flag"] != true || c.Str(t, "owner") != "reader" || !slices.Equal(c.Strs(t, "tags"), []string{"a", "b"}) {
			t.Fatalf("fields %v", c)
		}
		tasks := tm.analyst.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id")+"/task?sort=+order", nil).Want(t, 200)
		l := tasks.List(t)
		if len(l) != 2 || l[0].Str(t, "title") != "Triage" || l[0].Str(t, "description") != "look" ||
			l[1].Str(t, "title") != "Contain" || l[0].Str(t, "status") != "Waiting" || tasks.Total(t) != "2" {
			t.Fatalf("tasks %s", tasks.Body)
		}
		// "severity" wins over the alias when both are sent.
		c = tm.analyst.newCase(t, map[string]any{"severity": 1, "Severity": 4})
		if c.Num(t, "severity") != 1 {
			t.Fatalf("severity %v", c["severity"])
		}
	})

	t.Run("other formats", func(t *testing.T) {
		c := tm.analyst.multipart(t, http.MethodPost, "/api/case", map[string]any{"title": "From multipart", "description": "d", "tlp": 3}, nil).
			Want(t, 201).Object(t)
		if c.Str(t, "title") != "From multipart" || c.Num(t, "tlp") != 3 {
			t.Fatalf("multipart %v", c)
		}
		c = tm.analyst.Raw(t, http.MethodPost, "/api/case", "application/x-www-form-urlencoded", "title=Form&description=d&severity=4&tags=x&tags=y").
			Want(t, 201).Object(t)
		if c.Num(t, "severity") != 4 || !slices.Equal(c.Strs(t, "tags"), []string{"x", "y"}) {
			t.Fatalf("form %v", c)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		before := tm.analyst.countCases(t)
		for _, tc := range []struct {
			body   any
			fields []string
		}{
			{map[string]any{"description": "d"}, []string{"title"}},
			{map[string]any{"title": "t"}, []string{"description"}},
			{map[string]any{"title": " ", "description": " "}, []string{"title", "description"}},
			{map[string]any{"title": "t", "description": "d", "severity": 7}, []string{"severity"}},
			{map[string]any{"title": "t", "description": "d", "Severity": 0}, []string{"severity"}},
			{map[string]any{"title": "t", "description": "d", "tlp": -1, "pap": 4}, []string{"tlp", "pap"}},
			{map[string]any{"title": "t", "description": "d", "severity": "high"}, []string{"severity"}},
			{map[string]any{"title": "t", "description": "d", "severity": 2.5}, []string{"severity"}},
			{map[string]any{"title": "t", "description": "d", "tags": "x", "flag": 5}, []string{"flag"}},
			{map[string]any{"title": "t", "description": "d", "owner": "bob"}, []string{"owner"}},
			{map[string]any{"title": "t", "description": "d", "owner": "nobody"}, []string{"owner"}},
			{map[string]any{"title": "t", "description": "d", "tasks": []map[string]any{{"description": "no title"}}}, []string{"tasks.title"}},
			{map[string]any{"title": "t", "description": "d", "tasks": []map[string]any{{"title": "x", "status": "Done"}}}, []string{"tasks.status"}},
			{map[string]any{"title": "t", "description": "d", "tasks": "x"}, []string{"tasks"}},
			{map[string]any{"title": "t", "description": "d", "template": "nope"}, []string{"template"}},
		} {
			r := tm.analyst.Call(t, http.MethodPost, "/api/case", tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Equal(got, tc.fields) {
				t.Errorf("%v: fields %v, want %v", tc.body, got, tc.fields)
			}
		}
		for _, body := range []string{`{"title":`, `[1,2]`, `"x"`, `{"title":"t"} {}`} {
			tm.analyst.Raw(t, http.MethodPost, "/api/case", "application/json", body).WantError(t, 400, "BadRequest")
		}
		if after := tm.analyst.countCases(t); after != before {
			t.Fatalf("refused creates left cases: %s then %s", before, after)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		msg := tm.readOnly.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
			WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCase") {
			t.Errorf("message %q", msg)
		}
		msg = tm.admin.Call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
			WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCase") {
			t.Errorf("message %q", msg)
		}
	})
}

// Case numbers come from one atomic sequence per organisation: parallel creates in two organisations never
// share a number within one, each organisation's numbers are 1..25, and case ids are unique across both.
func TestCase_NumbersAreUnique(t *testing.T) {
	tm := newTeam(t)
	const n = 50
	var wg sync.WaitGroup
	nums := make([]float64, n)
	ids := make([]string, n)
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tm.analyst
			if i%2 == 1 {
				c = tm.other // another organisation, its own sequence
			}
			r := c.Call(t, http.MethodPost, "/api/case", map[string]any{"title": fmt.Sprint("case ", i), "description": "d"})
			if r.Status != 201 {
				errs <- string(r.Body)
				return
			}
			o := r.Object(t)
			nums[i], ids[i] = o.Num(t, "caseId"), o.Str(t, "id")
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("create failed: %s", e)
	}
	for org := range 2 {
		var mine []float64
		for i := org; i < n; i += 2 {
			mine = append(mine, nums[i])
		}
		slices.Sort(mine)
		if len(slices.Compact(slices.Clone(mine))) != n/2 || mine[0] != 1 || mine[n/2-1] != n/2 {
			t.Fatalf("numbers of organisation %d: %v, want 1..%d each once", org, mine, n/2)
		}
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != n {
		t.Fatalf("duplicate case ids: %v", ids)
	}
}

func TestCase_GetListSearch(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "Ransomware on host", "severity": 4, "tags": []string{"ransom"}})
	b := tm.analyst.newCase(t, map[string]any{"title": "Phishing wave", "severity": 2, "tags": []string{"phish"}})
	c := tm.orgAdmin.newCase(t, map[string]any{"title": "Phishing again", "severity": 3, "tasks": []map[string]any{{"title": "t1"}, {"title": "t2"}}})
	theirs := tm.other.newCase(t, map[string]any{"title": "Phishing elsewhere"})

	t.Run("get by id and number", func(t *testing.T) {
		num := strconv.Itoa(int(a.Num(t, "caseId")))
		for _, p := range []string{a.Str(t, "id"), num, "/../case/" + num} {
			got := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+strings.TrimPrefix(p, "/../case/"), nil).Want(t, 200).Object(t)
			if got.Str(t, "id") != a.Str(t, "id") {
				t.Fatalf("%s: %v", p, got)
			}
		}
		for _, p := range []string{"~999999", "999999", "abc", "0", "-1", "~", "%00"} {
			tm.analyst.Call(t, http.MethodGet, "/api/case/"+p, nil).WantError(t, 404, "NotFoundError")
		}
		msg := tm.analyst.Call(t, http.MethodGet, "/api/case/"+theirs.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
		if msg != "Case not found" {
			t.Errorf("message %q", msg)
		}
	})

	t.Run("stats on request", func(t *testing.T) {
		got := tm.analyst.Call(t, http.MethodGet, "/api/case/"+c.Str(t, "id")+"?nstats=true", nil).Want(t, 200).Object(t)
		tasks := got.Obj(t, "stats").Obj(t, "tasks")
		if tasks.Num(t, "Waiting") != 2 || tasks.Num(t, "total") != 2 {
			t.Fatalf("stats %v", got["stats"])
		}
	})

	t.Run("list and search", func(t *testing.T) {
		r := tm.readOnly.Call(t, http.MethodGet, "/api/case?sort=-caseId", nil).Want(t, 200)
		var titles []string
		for _, x := range r.List(t) {
			titles = append(titles, x.Str(t, "title"))
		}
		if !slices.Equal(titles, []string{"Phishing again", "Phishing wave", "Ransomware on host"}) || r.Total(t) != "3" {
			t.Fatalf("list %v total %s", titles, r.Total(t))
		}
		r = tm.analyst.Call(t, http.MethodPost, "/api/case/_search?range=0-1", map[string]any{
			"query": map[string]any{"_like": map[string]any{"_field": "title", "_value": "phishing"}},
			"sort":  []string{"-severity"}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != c.Str(t, "id") || r.Total(t) != "2" {
			t.Fatalf("search %s total %s", r.Body, r.Total(t))
		}
		r = tm.analyst.Call(t, http.MethodPost, "/api/case/_search", map[string]any{
			"query": map[string]any{"_and": []any{map[string]any{"status": "Open"}, map[string]any{"tags": "phish"}}}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != b.Str(t, "id") {
			t.Fatalf("search by tag %s", r.Body)
		}
		r = tm.analyst.Call(t, http.MethodPost, "/api/case/_search?nstats=true", map[string]any{
			"query": map[string]any{"caseId": c.Num(t, "caseId")}}).Want(t, 200)
		if l := r.List(t); len(l) != 1 || l[0].Obj(t, "stats").Obj(t, "tasks").Num(t, "total") != 2 {
			t.Fatalf("search with stats %s", r.Body)
		}
		for _, bad := range []map[string]any{
			{"query": map[string]any{"nope": 1}},
			{"query": map[string]any{"severity": "high"}},
			{"query": "x"},
			{"range": "5-2"},
			{"sort": []string{"-nope"}},
		} {
			tm.analyst.Call(t, http.MethodPost, "/api/case/_search", bad).WantError(t, 400, "BadRequest")
		}
		tm.analyst.Call(t, http.MethodGet, "/api/case?range=x", nil).WantError(t, 400, "BadRequest")
	})
}

func TestCase_Update(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"title": "Before"})
	path := "/api/case/" + c.Str(t, "id")

	t.Run("fields", func(t *testing.T) {
		u := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"title": "After", "Severity": 3, "tlp": 0,
			"pap": 1, "tags": []string{"x"}, "flag": true, "owner": "socadmin", "summary": "so far",
			"description": "new"}).Want(t, 200).Object(t)
		if u.Str(t, "title") != "After" || u.Num(t, "severity") != 3 || u.Num(t, "tlp") != 0 || u.Num(t, "pap") != 1 ||
			!slices.Equal(u.Strs(t, "tags"), []string{"x"}) || u["flag"] != true || u.Str(t, "owner") != "socadmin" ||
			u.Str(t, "summary") != "so far" || u.Str(t, "description") != "new" || u.Str(t, "updatedBy") != "ana" ||
			u.Num(t, "updatedAt") < u.Num(t, "createdAt") || u.Num(t, "caseId") != c.Num(t, "caseId") {
			t.Fatalf("updated %v", u)
		}
		got := tm.readOnly.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t)
		if got.Str(t, "title") != "After" || got.Str(t, "summary") != "so far" || got.Str(t, "status") != "Open" {
			t.Fatalf("read back %v", got)
		}
		u = tm.analyst.Call(t, http.MethodPatch, "/api/v0/case/"+c.Str(t, "id"), map[string]any{"summary": nil, "owner": nil}).Want(t, 200).Object(t)
		u.Null(t, "summary")
		u.Null(t, "owner")
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"title": nil}, "title"},
			{map[string]any{"title": ""}, "title"},
			{map[string]any{"severity": nil}, "severity"},
			{map[string]any{"severity": 5}, "severity"},
			{map[string]any{"status": "Closed"}, "status"},
			{map[string]any{"status": nil}, "status"},
			{map[string]any{"resolutionStatus": "Maybe"}, "resolutionStatus"},
			{map[string]any{"impactStatus": "Huge"}, "impactStatus"},
			{map[string]any{"owner": "bob"}, "owner"},
			{map[string]any{"startDate": "yesterday"}, "startDate"},
		} {
			r := tm.analyst.Call(t, http.MethodPatch, path, tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
		if got := tm.analyst.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t); got.Str(t, "title") != "After" {
			t.Fatalf("a refused update changed the case: %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		msg := tm.readOnly.Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCase") {
			t.Errorf("message %q", msg)
		}
		tm.other.Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPatch, "/api/case/~424242", map[string]any{"title": "x"}).WantError(t, 404, "NotFoundError")
		tm.anon().Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).WantError(t, 401, "AuthenticationError")
	})
}

func TestCase_CloseAndReopen(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "waiting"}, {"title": "started"}, {"title": "done"}}})
	path := "/api/case/" + c.Str(t, "id")
	tasks := tm.analyst.Call(t, http.MethodGet, path+"/task?sort=+order", nil).Want(t, 200).List(t)
	tm.analyst.Call(t, http.MethodPatch, "/api/case/task/"+tasks[1].Str(t, "id"), map[string]any{"status": "InProgress"}).Want(t, 200)
	tm.analyst.Call(t, http.MethodPatch, "/api/case/task/"+tasks[2].Str(t, "id"), map[string]any{"status": "Completed"}).Want(t, 200)
	doneEnd := tm.analyst.Call(t, http.MethodGet, "/api/case/task/"+tasks[2].Str(t, "id"), nil).Want(t, 200).Object(t).Num(t, "endDate")

	before := time.Now().UnixMilli()
	u := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "Resolved", "resolutionStatus": "TruePositive",
		"impactStatus": "WithImpact", "summary": "Contained"}).Want(t, 200).Object(t)
	if u.Str(t, "status") != "Resolved" || u.Str(t, "resolutionStatus") != "TruePositive" ||
		u.Str(t, "impactStatus") != "WithImpact" || u.Str(t, "summary") != "Contained" || u.Num(t, "endDate") < float64(before) {
		t.Fatalf("closed %v", u)
	}
	want := map[string]string{"waiting": "Cancel", "started": "Completed", "done": "Completed"}
	for _, tk := range tm.analyst.Call(t, http.MethodGet, path+"/task", nil).Want(t, 200).List(t) {
		if tk.Str(t, "status") != want[tk.Str(t, "title")] {
			t.Errorf("task %s: status %s, want %s", tk.Str(t, "title"), tk.Str(t, "status"), want[tk.Str(t, "title")])
		}
		if tk["endDate"] == nil {
			t.Errorf("task %s has no endDate", tk.Str(t, "title"))
		}
		if tk.Str(t, "title") == "done" && tk.Num(t, "endDate") != doneEnd {
			t.Errorf("a completed task's endDate changed")
		}
	}
	// Duplicated also closes; an explicit endDate wins.
	d := tm.analyst.newCase(t, nil)
	u = tm.analyst.Call(t, http.MethodPatch, "/api/case/"+d.Str(t, "id"), map[string]any{"status": "Duplicated",
		"resolutionStatus": "Duplicated", "endDate": 1700000000000}).Want(t, 200).Object(t)
	if u.Num(t, "endDate") != 1700000000000 {
		t.Fatalf("explicit endDate %v", u["endDate"])
	}
	// Reopening clears endDate.
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "Open"}).Want(t, 200).Object(t)
	u.Null(t, "endDate")
	if u.Str(t, "status") != "Open" {
		t.Fatalf("reopened %v", u)
	}
}

func TestCase_Delete(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	path := "/api/case/" + c.Str(t, "id")
	task := tm.analyst.Call(t, http.MethodGet, path+"/task", nil).Want(t, 200).List(t)[0]
	tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+task.Str(t, "id")+"/log", map[string]any{"message": "m"}).Want(t, 201)

	msg := tm.readOnly.Call(t, http.MethodDelete, path, nil).WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageCase") {
		t.Errorf("message %q", msg)
	}
	tm.other.Call(t, http.MethodDelete, path, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodDelete, path, nil).Want(t, 204)
	tm.analyst.Call(t, http.MethodGet, path, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/task/"+task.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	if n := tm.analyst.Call(t, http.MethodPost, "/api/case/task/log/_search", nil).Want(t, 200).Total(t); n != "0" {
		t.Fatalf("logs left: %s", n)
	}
	tm.analyst.Call(t, http.MethodDelete, path, nil).WantError(t, 404, "NotFoundError")
	d := tm.analyst.newCase(t, nil)
	tm.analyst.Call(t, http.MethodDelete, "/api/case/"+d.Str(t, "id")+"/force", nil).Want(t, 204)
}
