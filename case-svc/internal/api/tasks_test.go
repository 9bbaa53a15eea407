package api_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTask_Create(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, nil)
	id := c.str(t, "id")
	num := strings.TrimPrefix(id, "~")

	// The contract's spelling (no slash), the usual one, by id and by number, under both prefixes.
	for _, path := range []string{"/api/case/" + id + "task", "/api/case/" + id + "/task", "/api/v0/case/" + id + "task",
		"/api/case/" + num + "task", "/api/v0/case/" + num + "/task"} {
		tk := tm.analyst.call(t, http.MethodPost, path, map[string]any{"title": "T " + path}).want(t, 201).object(t)
		if !strings.HasPrefix(tk.str(t, "id"), "~") || tk.str(t, "_id") != tk.str(t, "id") || tk.str(t, "_type") != "case_task" ||
			tk.str(t, "title") != "T "+path || tk.str(t, "status") != "Waiting" || tk.str(t, "group") != "default" ||
			tk["flag"] != false || tk.num(t, "order") != 0 || tk.str(t, "case") != id || tk.str(t, "createdBy") != "ana" {
			t.Fatalf("%s: task %v", path, tk)
		}
		for _, k := range []string{"startDate", "endDate", "dueDate", "owner", "updatedAt", "updatedBy"} {
			tk.null(t, k)
		}
	}
	r := tm.readOnly.call(t, http.MethodGet, "/api/case/"+id+"/task", nil).want(t, 200)
	if r.total(t) != "5" {
		t.Fatalf("case tasks %s", r.total(t))
	}

	t.Run("every field", func(t *testing.T) {
		tk := tm.analyst.call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "Full", "group": "g",
			"description": "d", "owner": "reader", "status": "InProgress", "flag": true, "startDate": 1700000000000,
			"dueDate": 1800000000000, "order": 3}).want(t, 201).object(t)
		if tk.str(t, "owner") != "reader" || tk.str(t, "status") != "InProgress" || tk.num(t, "startDate") != 1700000000000 ||
			tk.num(t, "dueDate") != 1800000000000 || tk.num(t, "order") != 3 || tk["flag"] != true || tk.str(t, "group") != "g" {
			t.Fatalf("task %v", tk)
		}
		tk.null(t, "endDate")
		got := tm.analyst.call(t, http.MethodGet, "/api/case/task/"+tk.str(t, "id"), nil).want(t, 200).object(t)
		if got.str(t, "description") != "d" {
			t.Fatalf("read back %v", got)
		}
		// A task created InProgress without dates starts now and goes to its creator.
		before := time.Now().UnixMilli()
		tk = tm.analyst.call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "Now", "status": "InProgress"}).
			want(t, 201).object(t)
		if tk.num(t, "startDate") < float64(before) || tk.str(t, "owner") != "ana" {
			t.Fatalf("started task %v", tk)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{}, "title"},
			{map[string]any{"title": " "}, "title"},
			{map[string]any{"title": "t", "status": "Done"}, "status"},
			{map[string]any{"title": "t", "owner": "bob"}, "owner"},
			{map[string]any{"title": "t", "order": "first"}, "order"},
		} {
			r := tm.analyst.call(t, http.MethodPost, "/api/case/"+id+"/task", tc.body)
			r.wantError(t, 400, "AttributeCheckingError")
			if got := r.fieldErrors(t); !slices.Equal(got, []string{tc.field}) {
				t.Errorf("%v: fields %v", tc.body, got)
			}
		}
		msg := tm.readOnly.call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).
			wantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageTask") {
			t.Errorf("message %q", msg)
		}
		tm.other.call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodPost, "/api/case/~99999task", map[string]any{"title": "t"}).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodPost, "/api/case/"+id, map[string]any{"title": "t"}).wantError(t, 404, "NotFoundError")
		tm.analyst.call(t, http.MethodPost, "/api/case/task", map[string]any{"title": "t"}).wantError(t, 404, "NotFoundError")
		tm.anon().call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).wantError(t, 401, "AuthenticationError")
		if n := tm.analyst.call(t, http.MethodGet, "/api/case/"+id+"/task", nil).want(t, 200).total(t); n != "7" {
			t.Fatalf("refused creates left tasks: %s", n)
		}
	})
}

func TestTask_ListSearchGet(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "a1"}, {"title": "a2"}}})
	b := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "b1", "status": "Completed"}}})
	theirs := tm.other.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "c1"}}})

	r := tm.readOnly.call(t, http.MethodGet, "/api/case/task?sort=+title", nil).want(t, 200)
	var titles []string
	for _, x := range r.list(t) {
		titles = append(titles, x.str(t, "title"))
	}
	if !slices.Equal(titles, []string{"a1", "a2", "b1"}) || r.total(t) != "3" {
		t.Fatalf("org tasks %v", titles)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"status": "Waiting"}}).want(t, 200)
	if r.total(t) != "2" {
		t.Fatalf("waiting tasks %s", r.body)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"case": b.str(t, "id")}}).want(t, 200)
	if l := r.list(t); len(l) != 1 || l[0].str(t, "title") != "b1" || l[0]["endDate"] == nil {
		t.Fatalf("tasks of b %s", r.body)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/case/"+a.str(t, "id")+"/task/_search", map[string]any{
		"query": map[string]any{"title": "a2"}}).want(t, 200)
	if l := r.list(t); len(l) != 1 {
		t.Fatalf("search in case %s", r.body)
	}
	tm.readOnly.call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"nope": 1}}).
		wantError(t, 400, "BadRequest")
	tm.readOnly.call(t, http.MethodGet, "/api/case/"+theirs.str(t, "id")+"/task", nil).wantError(t, 404, "NotFoundError")
	theirTask := tm.other.call(t, http.MethodGet, "/api/case/task", nil).want(t, 200).list(t)[0]
	tm.readOnly.call(t, http.MethodGet, "/api/case/task/"+theirTask.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	tm.readOnly.call(t, http.MethodGet, "/api/case/task/~nope", nil).wantError(t, 404, "NotFoundError")
}

func TestTask_Update(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, nil)
	tk := tm.analyst.call(t, http.MethodPost, "/api/case/"+c.str(t, "id")+"task", map[string]any{"title": "t"}).want(t, 201).object(t)
	path := "/api/case/task/" + tk.str(t, "id")

	u := tm.analyst.call(t, http.MethodPatch, path, map[string]any{"title": "renamed", "group": "g", "flag": true,
		"dueDate": 1800000000000, "order": 2, "description": "d"}).want(t, 200).object(t)
	if u.str(t, "title") != "renamed" || u.str(t, "group") != "g" || u["flag"] != true || u.num(t, "dueDate") != 1800000000000 ||
		u.num(t, "order") != 2 || u.str(t, "updatedBy") != "ana" || u.str(t, "status") != "Waiting" {
		t.Fatalf("updated %v", u)
	}

	// Status transitions and their dates.
	before := float64(time.Now().UnixMilli())
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "InProgress"}).want(t, 200).object(t)
	if u.num(t, "startDate") < before || u.str(t, "owner") != "ana" {
		t.Fatalf("in progress %v", u)
	}
	u.null(t, "endDate")
	start := u.num(t, "startDate")
	u = tm.orgAdmin.call(t, http.MethodPatch, path, map[string]any{"status": "Completed"}).want(t, 200).object(t)
	if u.num(t, "endDate") < start || u.num(t, "startDate") != start || u.str(t, "owner") != "ana" {
		t.Fatalf("completed %v", u)
	}
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "InProgress"}).want(t, 200).object(t)
	u.null(t, "endDate")
	if u.num(t, "startDate") != start {
		t.Fatalf("reopened %v", u)
	}
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "Cancel"}).want(t, 200).object(t)
	if u["endDate"] == nil {
		t.Fatalf("cancelled %v", u)
	}
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "Waiting"}).want(t, 200).object(t)
	u.null(t, "startDate")
	u.null(t, "endDate")
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"status": "Completed", "endDate": 1700000000000}).want(t, 200).object(t)
	if u.num(t, "endDate") != 1700000000000 || u["startDate"] == nil {
		t.Fatalf("explicit endDate %v", u)
	}
	got := tm.readOnly.call(t, http.MethodGet, path, nil).want(t, 200).object(t)
	if got.str(t, "status") != "Completed" || got.num(t, "endDate") != 1700000000000 {
		t.Fatalf("read back %v", got)
	}
	u = tm.analyst.call(t, http.MethodPatch, path, map[string]any{"owner": nil}).want(t, 200).object(t)
	u.null(t, "owner")

	for _, body := range []map[string]any{{"status": "Done"}, {"status": nil}, {"title": nil}, {"owner": "bob"}, {"order": "x"}} {
		tm.analyst.call(t, http.MethodPatch, path, body).wantError(t, 400, "AttributeCheckingError")
	}
	msg := tm.readOnly.call(t, http.MethodPatch, path, map[string]any{"title": "x"}).wantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageTask") {
		t.Errorf("message %q", msg)
	}
	tm.other.call(t, http.MethodPatch, path, map[string]any{"title": "x"}).wantError(t, 404, "NotFoundError")
	if got := tm.readOnly.call(t, http.MethodGet, path, nil).want(t, 200).object(t); got.str(t, "title") != "renamed" {
		t.Fatalf("refused updates changed the task: %v", got)
	}
}

func TestTaskLogs(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, nil)
	tk := tm.orgAdmin.call(t, http.MethodPost, "/api/case/"+c.str(t, "id")+"task", map[string]any{"title": "t"}).want(t, 201).object(t)
	taskPath := "/api/case/task/" + tk.str(t, "id")

	// A first log starts the Waiting task.
	before := float64(time.Now().UnixMilli())
	l := tm.analyst.call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "Started looking"}).want(t, 201).object(t)
	if !strings.HasPrefix(l.str(t, "id"), "~") || l.str(t, "_type") != "case_task_log" || l.str(t, "message") != "Started looking" ||
		l.str(t, "owner") != "ana" || l.num(t, "startDate") < before || l.str(t, "status") != "Ok" || l.str(t, "task") != tk.str(t, "id") {
		t.Fatalf("log %v", l)
	}
	if _, ok := l["attachment"]; ok {
		t.Fatalf("log without a file has an attachment: %v", l)
	}
	started := tm.readOnly.call(t, http.MethodGet, taskPath, nil).want(t, 200).object(t)
	if started.str(t, "status") != "InProgress" || started.num(t, "startDate") < before || started.str(t, "owner") != "ana" {
		t.Fatalf("task after the first log %v", started)
	}

	// A file in multipart: `_json` with the message, the file in `attachment`.
	content := bytes.Repeat([]byte("evidence "), 40000) // 360 KB: two chunks
	l2 := tm.analyst.multipart(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "memory dump"}, nil,
		part{field: "attachment", filename: "dump.bin", contentType: "application/x-binary", content: content}).want(t, 201).object(t)
	a := l2.obj(t, "attachment")
	s256, s1, m5 := sha256.Sum256(content), sha1.Sum(content), md5.Sum(content)
	if a.str(t, "id") != hex.EncodeToString(s256[:]) || a.str(t, "name") != "dump.bin" || a.num(t, "size") != float64(len(content)) ||
		a.str(t, "contentType") != "application/x-binary" ||
		!slices.Equal(a.strs(t, "hashes"), []string{hex.EncodeToString(s256[:]), hex.EncodeToString(s1[:]), hex.EncodeToString(m5[:])}) {
		t.Fatalf("attachment %v", a)
	}
	// Plain multipart fields work too.
	tm.analyst.multipart(t, http.MethodPost, taskPath+"/log", nil, map[string]string{"message": "plain"},
		part{field: "attachment", filename: "a.txt", content: []byte("small")}).want(t, 201)

	// The file comes back through the datastore, to the organisation only.
	r := tm.readOnly.call(t, http.MethodGet, "/api/datastore/"+a.str(t, "id"), nil).want(t, 200)
	if !bytes.Equal(r.body, content) || !strings.Contains(r.header.Get("Content-Disposition"), "dump.bin") {
		t.Fatalf("download: %d bytes, disposition %q", len(r.body), r.header.Get("Content-Disposition"))
	}
	tm.other.call(t, http.MethodGet, "/api/datastore/"+a.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	tm.readOnly.call(t, http.MethodGet, "/api/datastore/nope", nil).wantError(t, 404, "NotFoundError")

	// List, search, get.
	r = tm.readOnly.call(t, http.MethodGet, taskPath+"/log?sort=+startDate", nil).want(t, 200)
	if l := r.list(t); len(l) != 3 || r.total(t) != "3" || l[0].str(t, "message") != "Started looking" {
		t.Fatalf("logs %s", r.body)
	}
	r = tm.readOnly.call(t, http.MethodPost, "/api/case/task/log/_search", map[string]any{
		"query": map[string]any{"_like": map[string]any{"_field": "message", "_value": "DUMP"}}}).want(t, 200)
	if l := r.list(t); len(l) != 1 || l[0].str(t, "id") != l2.str(t, "id") {
		t.Fatalf("log search %s", r.body)
	}
	got := tm.readOnly.call(t, http.MethodGet, "/api/case/task/log/"+l2.str(t, "id"), nil).want(t, 200).object(t)
	if got.obj(t, "attachment").str(t, "id") != a.str(t, "id") {
		t.Fatalf("read back %v", got)
	}

	// Refusals.
	tm.analyst.call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": ""}).wantError(t, 400, "AttributeCheckingError")
	tm.analyst.call(t, http.MethodPost, taskPath+"/log", map[string]any{}).wantError(t, 400, "AttributeCheckingError")
	tm.analyst.raw(t, http.MethodPost, taskPath+"/log", "multipart/form-data; boundary=x", "garbage").wantError(t, 400, "BadRequest")
	msg := tm.readOnly.call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "x"}).wantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageTask") {
		t.Errorf("message %q", msg)
	}
	tm.other.call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "x"}).wantError(t, 404, "NotFoundError")
	tm.other.call(t, http.MethodGet, taskPath+"/log", nil).wantError(t, 404, "NotFoundError")
	tm.other.call(t, http.MethodGet, "/api/case/task/log/"+l2.str(t, "id"), nil).wantError(t, 404, "NotFoundError")
	if n := tm.readOnly.call(t, http.MethodGet, taskPath+"/log", nil).want(t, 200).total(t); n != "3" {
		t.Fatalf("refused logs were written: %s", n)
	}
}
