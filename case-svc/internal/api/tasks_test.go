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
	id := c.Str(t, "id")
	num := strings.TrimPrefix(id, "~")

	// The contract's spelling (no slash), the usual one, by id and by number, under both prefixes.
	for _, path := range []string{"/api/case/" + id + "task", "/api/case/" + id + "/task", "/api/v0/case/" + id + "task",
		"/api/case/" + num + "task", "/api/v0/case/" + num + "/task"} {
		tk := tm.analyst.Call(t, http.MethodPost, path, map[string]any{"title": "T " + path}).Want(t, 201).Object(t)
		if !strings.HasPrefix(tk.Str(t, "id"), "~") || tk.Str(t, "_id") != tk.Str(t, "id") || tk.Str(t, "_type") != "case_task" ||
			tk.Str(t, "title") != "T "+path || tk.Str(t, "status") != "Waiting" || tk.Str(t, "group") != "default" ||
			tk["flag"] != false || tk.Num(t, "order") != 0 || tk.Str(t, "case") != id || tk.Str(t, "createdBy") != "ana" {
			t.Fatalf("%s: task %v", path, tk)
		}
		for _, k := range []string{"startDate", "endDate", "dueDate", "owner", "updatedAt", "updatedBy"} {
			tk.Null(t, k)
		}
	}
	r := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+id+"/task", nil).Want(t, 200)
	if r.Total(t) != "5" {
		t.Fatalf("case tasks %s", r.Total(t))
	}

	t.Run("every field", func(t *testing.T) {
		tk := tm.analyst.Call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "Full", "group": "g",
			"description": "d", "owner": "reader", "status": "InProgress", "flag": true, "startDate": 1700000000000,
			"dueDate": 1800000000000, "order": 3}).Want(t, 201).Object(t)
		if tk.Str(t, "owner") != "reader" || tk.Str(t, "status") != "InProgress" || tk.Num(t, "startDate") != 1700000000000 ||
			tk.Num(t, "dueDate") != 1800000000000 || tk.Num(t, "order") != 3 || tk["flag"] != true || tk.Str(t, "group") != "g" {
			t.Fatalf("task %v", tk)
		}
		tk.Null(t, "endDate")
		got := tm.analyst.Call(t, http.MethodGet, "/api/case/task/"+tk.Str(t, "id"), nil).Want(t, 200).Object(t)
		if got.Str(t, "description") != "d" {
			t.Fatalf("read back %v", got)
		}
		// A task created InProgress without dates starts now and goes to its creator.
		before := time.Now().UnixMilli()
		tk = tm.analyst.Call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "Now", "status": "InProgress"}).
			Want(t, 201).Object(t)
		if tk.Num(t, "startDate") < float64(before) || tk.Str(t, "owner") != "ana" {
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
			r := tm.analyst.Call(t, http.MethodPost, "/api/case/"+id+"/task", tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Equal(got, []string{tc.field}) {
				t.Errorf("%v: fields %v", tc.body, got)
			}
		}
		msg := tm.readOnly.Call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).
			WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageTask") {
			t.Errorf("message %q", msg)
		}
		tm.other.Call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/case/~99999task", map[string]any{"title": "t"}).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/case/"+id, map[string]any{"title": "t"}).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/case/task", map[string]any{"title": "t"}).WantError(t, 404, "NotFoundError")
		tm.anon().Call(t, http.MethodPost, "/api/case/"+id+"task", map[string]any{"title": "t"}).WantError(t, 401, "AuthenticationError")
		if n := tm.analyst.Call(t, http.MethodGet, "/api/case/"+id+"/task", nil).Want(t, 200).Total(t); n != "7" {
			t.Fatalf("refused creates left tasks: %s", n)
		}
	})
}

func TestTask_ListSearchGet(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "a1"}, {"title": "a2"}}})
	b := tm.analyst.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "b1", "status": "Completed"}}})
	theirs := tm.other.newCase(t, map[string]any{"tasks": []map[string]any{{"title": "c1"}}})

	r := tm.readOnly.Call(t, http.MethodGet, "/api/case/task?sort=+title", nil).Want(t, 200)
	var titles []string
	for _, x := range r.List(t) {
		titles = append(titles, x.Str(t, "title"))
	}
	if !slices.Equal(titles, []string{"a1", "a2", "b1"}) || r.Total(t) != "3" {
		t.Fatalf("org tasks %v", titles)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"status": "Waiting"}}).Want(t, 200)
	if r.Total(t) != "2" {
		t.Fatalf("waiting tasks %s", r.Body)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"case": b.Str(t, "id")}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "title") != "b1" || l[0]["endDate"] == nil {
		t.Fatalf("tasks of b %s", r.Body)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/case/"+a.Str(t, "id")+"/task/_search", map[string]any{
		"query": map[string]any{"title": "a2"}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 {
		t.Fatalf("search in case %s", r.Body)
	}
	tm.readOnly.Call(t, http.MethodPost, "/api/case/task/_search", map[string]any{"query": map[string]any{"nope": 1}}).
		WantError(t, 400, "BadRequest")
	tm.readOnly.Call(t, http.MethodGet, "/api/case/"+theirs.Str(t, "id")+"/task", nil).WantError(t, 404, "NotFoundError")
	theirTask := tm.other.Call(t, http.MethodGet, "/api/case/task", nil).Want(t, 200).List(t)[0]
	tm.readOnly.Call(t, http.MethodGet, "/api/case/task/"+theirTask.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	tm.readOnly.Call(t, http.MethodGet, "/api/case/task/~nope", nil).WantError(t, 404, "NotFoundError")
}

func TestTask_Update(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, nil)
	tk := tm.analyst.Call(t, http.MethodPost, "/api/case/"+c.Str(t, "id")+"task", map[string]any{"title": "t"}).Want(t, 201).Object(t)
	path := "/api/case/task/" + tk.Str(t, "id")

	u := tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"title": "renamed", "group": "g", "flag": true,
		"dueDate": 1800000000000, "order": 2, "description": "d"}).Want(t, 200).Object(t)
	if u.Str(t, "title") != "renamed" || u.Str(t, "group") != "g" || u["flag"] != true || u.Num(t, "dueDate") != 1800000000000 ||
		u.Num(t, "order") != 2 || u.Str(t, "updatedBy") != "ana" || u.Str(t, "status") != "Waiting" {
		t.Fatalf("updated %v", u)
	}

	// Status transitions and their dates.
	before := float64(time.Now().UnixMilli())
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "InProgress"}).Want(t, 200).Object(t)
	if u.Num(t, "startDate") < before || u.Str(t, "owner") != "ana" {
		t.Fatalf("in progress %v", u)
	}
	u.Null(t, "endDate")
	start := u.Num(t, "startDate")
	u = tm.orgAdmin.Call(t, http.MethodPatch, path, map[string]any{"status": "Completed"}).Want(t, 200).Object(t)
	if u.Num(t, "endDate") < start || u.Num(t, "startDate") != start || u.Str(t, "owner") != "ana" {
		t.Fatalf("completed %v", u)
	}
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "InProgress"}).Want(t, 200).Object(t)
	u.Null(t, "endDate")
	if u.Num(t, "startDate") != start {
		t.Fatalf("reopened %v", u)
	}
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "Cancel"}).Want(t, 200).Object(t)
	if u["endDate"] == nil {
		t.Fatalf("cancelled %v", u)
	}
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "Waiting"}).Want(t, 200).Object(t)
	u.Null(t, "startDate")
	u.Null(t, "endDate")
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"status": "Completed", "endDate": 1700000000000}).Want(t, 200).Object(t)
	if u.Num(t, "endDate") != 1700000000000 || u["startDate"] == nil {
		t.Fatalf("explicit endDate %v", u)
	}
	got := tm.readOnly.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t)
	if got.Str(t, "status") != "Completed" || got.Num(t, "endDate") != 1700000000000 {
		t.Fatalf("read back %v", got)
	}
	u = tm.analyst.Call(t, http.MethodPatch, path, map[string]any{"owner": nil}).Want(t, 200).Object(t)
	u.Null(t, "owner")

	for _, body := range []map[string]any{{"status": "Done"}, {"status": nil}, {"title": nil}, {"owner": "bob"}, {"order": "x"}} {
		tm.analyst.Call(t, http.MethodPatch, path, body).WantError(t, 400, "AttributeCheckingError")
	}
	msg := tm.readOnly.Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageTask") {
		t.Errorf("message %q", msg)
	}
	tm.other.Call(t, http.MethodPatch, path, map[string]any{"title": "x"}).WantError(t, 404, "NotFoundError")
	if got := tm.readOnly.Call(t, http.MethodGet, path, nil).Want(t, 200).Object(t); got.Str(t, "title") != "renamed" {
		t.Fatalf("refused updates changed the task: %v", got)
	}
}

func TestTaskLogs(t *testing.T) {
	tm := newTeam(t)
	c := tm.analyst.newCase(t, nil)
	tk := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/"+c.Str(t, "id")+"task", map[string]any{"title": "t"}).Want(t, 201).Object(t)
	taskPath := "/api/case/task/" + tk.Str(t, "id")

	// A first log starts the Waiting task.
	before := float64(time.Now().UnixMilli())
	l := tm.analyst.Call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "Started looking"}).Want(t, 201).Object(t)
	if !strings.HasPrefix(l.Str(t, "id"), "~") || l.Str(t, "_type") != "case_task_log" || l.Str(t, "message") != "Started looking" ||
		l.Str(t, "owner") != "ana" || l.Num(t, "startDate") < before || l.Str(t, "status") != "Ok" || l.Str(t, "task") != tk.Str(t, "id") {
		t.Fatalf("log %v", l)
	}
	if _, ok := l["attachment"]; ok {
		t.Fatalf("log without a file has an attachment: %v", l)
	}
	started := tm.readOnly.Call(t, http.MethodGet, taskPath, nil).Want(t, 200).Object(t)
	if started.Str(t, "status") != "InProgress" || started.Num(t, "startDate") < before || started.Str(t, "owner") != "ana" {
		t.Fatalf("task after the first log %v", started)
	}

	// A file in multipart: `_json` with the message, the file in `attachment`.
	content := bytes.Repeat([]byte("evidence "), 40000) // 360 KB: two chunks
	l2 := tm.analyst.multipart(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "memory dump"}, nil,
		part{field: "attachment", filename: "dump.bin", contentType: "application/x-binary", content: content}).Want(t, 201).Object(t)
	a := l2.Obj(t, "attachment")
	s256, s1, m5 := sha256.Sum256(content), sha1.Sum(content), md5.Sum(content)
	if a.Str(t, "id") != hex.EncodeToString(s256[:]) || a.Str(t, "name") != "dump.bin" || a.Num(t, "size") != float64(len(content)) ||
		a.Str(t, "contentType") != "application/x-binary" ||
		!slices.Equal(a.Strs(t, "hashes"), []string{hex.EncodeToString(s256[:]), hex.EncodeToString(s1[:]), hex.EncodeToString(m5[:])}) {
		t.Fatalf("attachment %v", a)
	}
	// Plain multipart fields work too.
	tm.analyst.multipart(t, http.MethodPost, taskPath+"/log", nil, map[string]string{"message": "plain"},
		part{field: "attachment", filename: "a.txt", content: []byte("small")}).Want(t, 201)

	// The file comes back through the datastore, to the organisation only.
	r := tm.readOnly.Call(t, http.MethodGet, "/api/datastore/"+a.Str(t, "id"), nil).Want(t, 200)
	if !bytes.Equal(r.Body, content) || !strings.Contains(r.Header.Get("Content-Disposition"), "dump.bin") {
		t.Fatalf("download: %d bytes, disposition %q", len(r.Body), r.Header.Get("Content-Disposition"))
	}
	tm.other.Call(t, http.MethodGet, "/api/datastore/"+a.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	tm.readOnly.Call(t, http.MethodGet, "/api/datastore/nope", nil).WantError(t, 404, "NotFoundError")

	// List, search, get.
	r = tm.readOnly.Call(t, http.MethodGet, taskPath+"/log?sort=+startDate", nil).Want(t, 200)
	if l := r.List(t); len(l) != 3 || r.Total(t) != "3" || l[0].Str(t, "message") != "Started looking" {
		t.Fatalf("logs %s", r.Body)
	}
	r = tm.readOnly.Call(t, http.MethodPost, "/api/case/task/log/_search", map[string]any{
		"query": map[string]any{"_like": map[string]any{"_field": "message", "_value": "DUMP"}}}).Want(t, 200)
	if l := r.List(t); len(l) != 1 || l[0].Str(t, "id") != l2.Str(t, "id") {
		t.Fatalf("log search %s", r.Body)
	}
	got := tm.readOnly.Call(t, http.MethodGet, "/api/case/task/log/"+l2.Str(t, "id"), nil).Want(t, 200).Object(t)
	if got.Obj(t, "attachment").Str(t, "id") != a.Str(t, "id") {
		t.Fatalf("read back %v", got)
	}

	// Refusals.
	tm.analyst.Call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": ""}).WantError(t, 400, "AttributeCheckingError")
	tm.analyst.Call(t, http.MethodPost, taskPath+"/log", map[string]any{}).WantError(t, 400, "AttributeCheckingError")
	tm.analyst.Raw(t, http.MethodPost, taskPath+"/log", "multipart/form-data; boundary=x", "garbage").WantError(t, 400, "BadRequest")
	msg := tm.readOnly.Call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "x"}).WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageTask") {
		t.Errorf("message %q", msg)
	}
	tm.other.Call(t, http.MethodPost, taskPath+"/log", map[string]any{"message": "x"}).WantError(t, 404, "NotFoundError")
	tm.other.Call(t, http.MethodGet, taskPath+"/log", nil).WantError(t, 404, "NotFoundError")
	tm.other.Call(t, http.MethodGet, "/api/case/task/log/"+l2.Str(t, "id"), nil).WantError(t, 404, "NotFoundError")
	if n := tm.readOnly.Call(t, http.MethodGet, taskPath+"/log", nil).Want(t, 200).Total(t); n != "3" {
		t.Fatalf("refused logs were written: %s", n)
	}
}
