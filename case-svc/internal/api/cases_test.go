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
	return c.call(t, http.MethodGet, "/api/case", nil).want(t, 200).total(t)
}

func TestCase_Create(t *testing.T) {
	tm := newTeam(t)

	t.Run("defaults", func(t *testing.T) {
		before := time.Now().UnixMilli()
		c := tm.analyst.call(t, http.MethodPost, "/api/case", map[string]any{"title": "Phishing", "description": "A mail"}).
			want(t, 201).object(t)
		id := c.str(t, "_id")
		if !strings.HasPrefix(id, "~") || c.str(t, "id") != id || c.str(t, "_type") != "case" {
			t.Fatalf("ids %v", c)
		}
		if c.num(t, "caseId") < 1 || c.str(t, "title") != "Phishing" || c.str(t, "description") != "A mail" ||
			c.num(t, "severity") != 2 || c.num(t, "tlp") != 2 || c.num(t, "pap") != 2 || c["flag"] != false ||
			c.str(t, "status") != "Open" || c.str(t, "owner") != "ana" || c.str(t, "createdBy") != "ana" {
			t.Fatalf("defaults %v", c)
		}
		if s := c.num(t, "startDate"); s < float64(before) || c.num(t, "createdAt") < float64(before) {
			t.Fatalf("startDate %v createdAt %v before %d", s, c["createdAt"], before)
		}
		for _, k := range []string{"endDate", "impactStatus", "resolutionStatus", "summary", "updatedAt", "updatedBy"} {
			c.null(t, k)
		}
		if len(c.strs(t, "tags")) != 0 || len(c.obj(t, "customFields")) != 0 || len(c.obj(t, "stats")) != 0 {
			t.Fatalf("empty collections %v", c)
		}
		if p := c.strs(t, "permissions"); !slices.Contains(p, "manageCase") || !slices.Contains(p, "manageTask") {
			t.Fatalf("permissions %v", p)
		}
		got := tm.analyst.call(t, http.MethodGet, "/api/case/"+id, nil).want(t, 200).object(t)
		if got.str(t, "title") != "Phishing" || got.num(t, "caseId") != c.num(t, "caseId") {
			t.Fatalf("read back %v", got)
		}
		// The read-only user sees the case, with no permission on it.
		ro := tm.readOnly.call(t, http.MethodGet, "/api/case/"+id, nil).want(t, 200).object(t)
		if len(ro.strs(t, "permissions")) != 0 {
			t.Fatalf("read-only permissions %v", ro["permissions"])
		}
	})

	t.Run("every field", func(t *testing.T) {
		c := tm.analyst.call(t, http.MethodPost, "/api/v0/case", map[string]any{
			"title": "Full", "description": "d", "Severity": 3, "tlp": 1, "pap": 3, "startDate": 1700000000000,
			"tags": []string{"a", "b", "a", " "}, "flag": true, "owner": "reader",
			"tasks": []map[string]any{{"title": "Triage", "description": "look"}, {"title": "Contain"}},
		}).want(t, 201).object(t)
		if c.num(t, "severity") != 3 || c.num(t, "tlp") != 1 || c.num(t, "pap") != 3 || c.num(t, "startDate") != 1700000000000 ||
			c["flag"] != true || c.str(t, "owner") != "reader" || !slices.Equal(c.strs(t, "tags"), []string{"a", "b"}) {
			t.Fatalf("fields %v", c)
		}
		tasks := tm.analyst.call(t, http.MethodGet, "/api/case/"+c.str(t, "id")+"/task?sort=+order", nil).want(t, 200)
		l := tasks.list(t)
		if len(l) != 2 || l[0].str(t, "title") != "Triage" || l[0].str(t, "description") != "look" ||
			l[1].str(t, "title") != "Contain" || l[0].str(t, "status") != "Waiting" || tasks.total(t) != "2" {
			t.Fatalf("tasks %s", tasks.body)
		}
		// "severity" wins over the alias when both are sent.
		c = tm.analyst.newCase(t, map[string]any{"severity": 1, "Severity": 4})
		if c.num(t, "severity") != 1 {
			t.Fatalf("severity %v", c["severity"])
		}
	})

	t.Run("other formats", func(t *testing.T) {
		c := tm.analyst.multipart(t, http.MethodPost, "/api/case", map[string]any{"title": "From multipart", "description": "d", "tlp": 3}, nil).
			want(t, 201).object(t)
		if c.str(t, "title") != "From multipart" || c.num(t, "tlp") != 3 {
			t.Fatalf("multipart %v", c)
		}
		c = tm.analyst.raw(t, http.MethodPost, "/api/case", "application/x-www-form-urlencoded", "title=Form&description=d&severity=4&tags=x&tags=y").
			want(t, 201).object(t)
		if c.num(t, "severity") != 4 || !slices.Equal(c.strs(t, "tags"), []string{"x", "y"}) {
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
			r := tm.analyst.call(t, http.MethodPost, "/api/case", tc.body)
			r.wantError(t, 400, "AttributeCheckingError")
			if got := r.fieldErrors(t); !slices.Equal(got, tc.fields) {
				t.Errorf("%v: fields %v, want %v", tc.body, got, tc.fields)
			}
		}
		for _, body := range []string{`{"title":`, `[1,2]`, `"x"`, `{"title":"t"} {}`} {
			tm.analyst.raw(t, http.MethodPost, "/api/case", "application/json", body).wantError(t, 400, "BadRequest")
		}
		if after := tm.analyst.countCases(t); after != before {
			t.Fatalf("refused creates left cases: %s then %s", before, after)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		msg := tm.readOnly.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
			wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCase") {
			t.Errorf("message %q", msg)
		}
		msg = tm.admin.call(t, http.MethodPost, "/api/case", map[string]any{"title": "t", "description": "d"}).
			wantError(t, 403, "AuthorizationError")
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
			r := c.call(t, http.MethodPost, "/api/case", map[string]any{"title": fmt.Sprint("case ", i), "description": "d"})
			if r.status != 201 {
				errs <- string(r.body)
				return
			}
			o := r.object(t)
			nums[i], ids[i] = o.num(t, "caseId"), o.str(t, "id")
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
		num := strconv.Itoa(int(a.num(t, "caseId")))
		for _, p := range []string{a.str(t, "id"), num, "/../case/" + num} {
			got := tm.readOnly.call(t, http.MethodGet, "/api/case/"+strings.TrimPrefix(p, "/../case/"), nil).want(t, 200).object(t)
			if got.str(t, "id") != a.str(t, "id") {
				t.Fatalf("%s: %v", p, got)
			}
		}
		for _, p := range []string{"~999999", "999999", "abc", "0", "-1", "~", "%00"} {
			tm.analyst.call(t, http.MethodGet, "/api/case/"+p, nil).wantError(t, 404, "NotFoundError")
		}
		msg := tm.analyst.call(t, http.MethodGet, "/api/case/"+theirs.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
		if msg != "Case not found" {
			t.Errorf("message %q", msg)
		}
	})

	t.Run("stats on request", func(t *testing.T) {
		got := tm.analyst.call(t, http.MethodGet, "/api/case/"+c.str(t, "id")+"?nstats=true", nil).want(t, 200).object(t)
		tasks := got.obj(t, "stats").obj(t, "tasks")
		if tasks.num(t, "Waiting") != 2 || tasks.num(t, "total") != 2 {
			t.Fatalf("stats %v", got["stats"])
		}
	})

	t.Run("list and search", func(t *testing.T) {
		r := tm.readOnly.call(t, http.MethodGet, "/api/case?sort=-caseId", nil).want(t, 200)
		var titles []string
		for _, x := range r.list(t) {
			titles = append(titles, x.str(t, "title"))
		}
		if !slices.Equal(titles, []string{"Phishing again", "Phishing wave", "Ransomware on host"}) || r.total(t) != "3" {
			t.Fatalf("list %v total %s", titles, r.total(t))
		}
		r = tm.analyst.call(t, http.MethodPost, "/api/case/_search?range=0-1", map[string]any{
			"query": map[string]any{"_like": map[string]any{"_field": "title", "_value": "phishing"}},
			"sort":  []string{"-severity"}}).want(t, 200)
		if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != c.str(t, "id") || r.total(t) != "2" {
			t.Fatalf("search %s total %s", r.body, r.total(t))
		}
		r = tm.analyst.call(t, http.MethodPost, "/api/case/_search", map[string]any{
			"query": map[string]any{"_and": []any{map[string]any{"status": "Open"}, map[string]any{"tags": "phish"}}}}).want(t, 200)
		if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != b.str(t, "id") {
			t.Fatalf("search by tag %s", r.body)
		}
		r = tm.analyst.call(t, http.MethodPost, "/api/case/_search?nstats=true", map[string]any{
			"query": map[string]any{"caseId": c.num(t, "caseId")}}).want(t, 200)
		if l := r.list(t); len(l) != 1 || l[0].obj(t, "stats").obj(t, "tasks").num(t, "total") != 2 {
			t.Fatalf("search with stats %s", r.body)
		}
		for _, bad := range []map[string]any{
			{"query": map[string]any{"nope": 1}},
			{"query": map[string]any{"severity": "high"}},
			{"query": "x"},
			{"range": "5-2"},
			{"sort": []string{"-nope"}},
		} {
			tm.analyst.call(t, http.MethodPost, "/api/case/_search", bad).wantError(t, 400, "BadRequest")
		}
		tm.analyst.call(t, http.MethodGet, "/api/case?range=x", nil).wantError(t, 400, "BadRequest")
	})
}

func TestCase_Update(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"title": "Before"})
	path := "/api/case/" + c.str(t, "id")

	t.Run("fields", func(t *testing.T) {
		u := tm.analyst.call(t, http.MethodPatch, path, map[string]any{"title": "After", "Severity": 3, "tlp": 0,
			"pap": 1, "tags": []string{"x"}, "flag": true, "owner": "socadmin", "summary": "so far",
			"description": "new"}).want(t, 200).object(t)
		if u.str(t, "title") != "After" || u.num(t, "severity") != 3 || u.num(t, "tlp") != 0 || u.num(t, "pap") != 1 ||
			!slices.Equal(u.strs(t, "tags"), []string{"x"}) || u["flag"] != true || u.str(t, "owner") != "socadmin" ||
			u.str(t, "summary") != "so far" || u.str(t, "description") != "new" || u.str(t, "updatedBy") != "ana" ||
			u.num(t, "updatedAt") < u.num(t, "createdAt") || u.num(t, "caseId") != c.num(t, "caseId") {
			t.Fatalf("updated %v", u)
		}
		got := tm.readOnly.call(t, http.MethodGet, path, nil).want(t, 200).object(t)
		if got.str(t, "title") != "After" || got.str(t, "summary") != "so far" || got.str(t, "status") != "Open" {
			t.Fatalf("read back %v", got)
		}
		u = tm.analyst.call(t, http.MethodPatch, "/api/v0/case/"+c.str(t, "id"), map[string]any{"summary": nil, "owner": nil}).want(t, 200).object(t)
		u.null(t, "summary")
		u.null(t, "owner")
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
			r := tm.analyst.call(t, http.MethodPatch, path, tc.body)
			r.wantError(t, 400, "AttributeCheckingError")
			if got := r.fieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
		if got := tm.analyst.call(t, http.MethodGet, path, nil).want(t, 200).object(t); got.str(t, "title") != "After" {
			t.Fatalf("a refused update changed the case: %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		msg := tm.readOnly.call(t, http.MethodPatch, path, map[string]any{"title": "x"}).wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageCase") {
			t.Errorf("message %q", msg)
		}
		tm.other.call(t, http.MethodPatch, path, map[string]any{"title": "x"}).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodPatch, "/api/case/~424242", map[string]any{"title": "x"}).wantError(t, 404, "NotFoundError")
		tm.anon().call(t, http.MethodPatch, path, map[string]any{"title": "x"}).wantError(t, 401, "AuthenticationError")
	})
}

func TestCase_CloseAndReopen(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "waiting"}, {"title": "started"}, {"title": "done"}}})
	path := "/api/case/" + c.str(t, "id")
	tasks := tm.analyst.call(t, http.MethodGet, path+"/task?sort=+order", nil).want(t, 200).list(t)
	tm.analyst.call(t, http.MethodPatch, "/api/case/task/"+tasks[1].str(t, "id"), map[string]any{"status": "InProgress"}).want(t, 200)
	tm.analyst.call(t, http.MethodPatch, "/api/case/task/"+tasks[2].str(t, "id"), map[string]any{"status": "Completed"}).want(t, 200)
	doneEnd := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+tasks[2].str(t, "id"), nil).want(t, 200).object(t).num(t, "endDate")

	before := time.Now().UnixMilli()
	u := tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "Resolved", "resolutionStatus": "TruePositive",
		"impactStatus": "WithImpact", "summary": "Contained"}).want(t, 200).object(t)
	if u.str(t, "status") != "Resolved" || u.str(t, "resolutionStatus") != "TruePositive" ||
		u.str(t, "impactStatus") != "WithImpact" || u.str(t, "summary") != "Contained" || u.num(t, "endDate") < float64(before) {
		t.Fatalf("closed %v", u)
	}
	want := map[string]string{"waiting": "Cancel", "started": "Completed", "done": "Completed"}
	for _, tk := range tm.analyst.call(t, http.MethodGet, path+"/task", nil).want(t, 200).list(t) {
		if tk.str(t, "status") != want[tk.str(t, "title")] {
			t.Errorf("task %s: status %s, want %s", tk.str(t, "title"), tk.str(t, "status"), want[tk.str(t, "title")])
		}
		if tk["endDate"] == nil {
			t.Errorf("task %s has no endDate", tk.str(t, "title"))
		}
		if tk.str(t, "title") == "done" && tk.num(t, "endDate") != doneEnd {
			t.Errorf("a completed task's endDate changed")
		}
	}
	// Duplicated also closes; an explicit endDate wins.
	d := tm.analyst.newCase(t, nil)
	u = tm.analyst.call(t, http.MethodPatch, "/api/case/"+d.str(t, "id"), map[string]any{"status": "Duplicated",
		"resolutionStatus": "Duplicated", "endDate": 1700000000000}).want(t, 200).object(t)
	if u.num(t, "endDate") != 1700000000000 {
		t.Fatalf("explicit endDate %v", u["endDate"])
	}
	// Reopening clears endDate.
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "Open"}).want(t, 200).object(t)
	u.null(t, "endDate")
	if u.str(t, "status") != "Open" {
		t.Fatalf("reopened %v", u)
	}
}

func TestCase_Delete(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	path := "/api/case/" + c.str(t, "id")
	task := tm.analyst.call(t, http.MethodGet, path+"/task", nil).want(t, 200).list(t)[0]
	tm.analyst.call(t, http.MethodPost, "/api/case/task/"+task.str(t, "id")+"/log", map[string]any{"message": "m"}).want(t, 201)

	msg := tm.readOnly.call(t, http.MethodDelete, path, nil).wantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageCase") {
		t.Errorf("message %q", msg)
	}
	tm.other.call(t, http.MethodDelete, path, nil).wantError(t, 404, "NotFoundError")
	tm.analyst.call(t, http.MethodDelete, path, nil).want(t, 204)
	tm.analyst.call(t, http.MethodGet, path, nil).wantError(t, 404, "NotFoundError")
	tm.analyst.call(t, http.MethodGet, "/api/case/task/"+task.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	if n := tm.analyst.call(t, http.MethodPost, "/api/case/task/log/_search", nil).want(t, 200).total(t); n != "0" {
		t.Fatalf("logs left: %s", n)
	}
	tm.analyst.call(t, http.MethodDelete, path, nil).wantError(t, 404, "NotFoundError")
	d := tm.analyst.newCase(t, nil)
	tm.analyst.call(t, http.MethodDelete, "/api/case/"+d.str(t, "id")+"/force", nil).want(t, 204)
}
