package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// newAlert creates an alert of type "external", source "siem" and the given sourceRef as the client.
func (c *client) newAlert(t testing.TB, sourceRef string, artifacts []map[string]any) obj {
	t.Helper()
	body := map[string]any{"type": "external", "source": "siem", "sourceRef": sourceRef, "title": "Alert " + sourceRef,
		"description": "Seen by the SIEM"}
	if artifacts != nil {
		body["artifacts"] = artifacts
	}
	return c.Call(t, http.MethodPost, "/api/alert", body).Want(t, http.StatusCreated).Object(t)
}

func TestAlert_Create(t *testing.T) {
	tm := newTeam(t)
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing", "titlePrefix": "[PH]"}).Want(t, 201)
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "score", "type": "integer"}).Want(t, 201)

	t.Run("defaults and every field", func(t *testing.T) {
		before := time.Now().UnixMilli()
		a := tm.analyst.newAlert(t, "r1", nil)
		checkRecord(t, a, "alert", "ana")
		a.Null(t, "updatedAt")
		if a.Str(t, "type") != "external" || a.Str(t, "source") != "siem" || a.Str(t, "sourceRef") != "r1" ||
			a.Str(t, "title") != "Alert r1" || a.Str(t, "description") != "Seen by the SIEM" || a.Num(t, "severity") != 2 ||
			a.Num(t, "tlp") != 2 || a.Num(t, "pap") != 2 || a.Str(t, "status") != "New" || a["read"] != false ||
			a["follow"] != true || a.Num(t, "date") < float64(before) || len(a.Strs(t, "tags")) != 0 ||
			len(a.Obj(t, "customFields")) != 0 || len(a["artifacts"].([]any)) != 0 || len(a["similarCases"].([]any)) != 0 {
			t.Fatalf("alert %v", a)
		}
		for _, k := range []string{"case", "externalLink", "caseTemplate"} {
			a.Null(t, k)
		}
		full := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "mail", "source": "gateway",
			"sourceRef": "m-1", "title": "t", "description": "d", "severity": 3, "tlp": 1, "pap": 0, "date": 1700000000000,
			"tags": []string{"x", "y"}, "follow": false, "externalLink": "https://siem/1", "caseTemplate": "phishing",
			"customFields": map[string]any{"score": map[string]any{"integer": 7}},
			"artifacts": []map[string]any{{"dataType": "mail", "data": "a@b.example", "ioc": true},
				{"dataType": "mail", "data": "a@b.example"}, {"dataType": "domain", "data": []string{"b.example", "c.example"}}},
		}).Want(t, 201).Object(t)
		if full.Num(t, "severity") != 3 || full.Num(t, "tlp") != 1 || full.Num(t, "pap") != 0 || full.Num(t, "date") != 1700000000000 ||
			full["follow"] != false || full.Str(t, "externalLink") != "https://siem/1" || full.Str(t, "caseTemplate") != "phishing" ||
			full.Obj(t, "customFields").Obj(t, "score").Num(t, "integer") != 7 {
			t.Fatalf("alert %v", full)
		}
		arts := full["artifacts"].([]any)
		if len(arts) != 3 { // the repeated mail is dropped
			t.Fatalf("artifacts %v", arts)
		}
		for _, x := range arts {
			o := obj(x.(map[string]any))
			checkRecord(t, o, "case_artifact", "ana")
			if o.Str(t, "alert") != full.Str(t, "id") {
				t.Fatalf("artifact %v", o)
			}
		}
	})

	t.Run("duplicate is a CreateError", func(t *testing.T) {
		tm.analyst.newAlert(t, "dup", nil)
		msg := tm.orgAdmin.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "external", "source": "siem",
			"sourceRef": "dup", "title": "again", "description": "d"}).WantError(t, 400, "CreateError")
		if !strings.Contains(msg, "dup") {
			t.Errorf("message %q", msg)
		}
		// Unique per organisation: cert may have the same one; another sourceRef is another alert.
		tm.other.newAlert(t, "dup", nil)
		tm.analyst.newAlert(t, "dup2", nil)
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"source": "s", "sourceRef": "x", "title": "t", "description": "d"}, "type"},
			{map[string]any{"type": "t", "sourceRef": "x", "title": "t", "description": "d"}, "source"},
			{map[string]any{"type": "t", "source": "s", "title": "t", "description": "d"}, "sourceRef"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "description": "d"}, "title"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t"}, "description"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d", "severity": 0}, "severity"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d", "tlp": 4}, "tlp"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d", "caseTemplate": "nope"}, "caseTemplate"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d",
				"customFields": map[string]any{"$where": map[string]any{"string": "1"}}}, "customFields.$where"},
			{map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d",
				"artifacts": []map[string]any{{"dataType": "nope", "data": "x"}}}, "artifacts[0].dataType"},
		} {
			r := tm.analyst.Call(t, http.MethodPost, "/api/alert", tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
		tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": map[string]any{"$gt": ""}, "source": "s",
			"sourceRef": "x", "title": "t", "description": "d"}).WantError(t, 400, "AttributeCheckingError")
		body := map[string]any{"type": "t", "source": "s", "sourceRef": "x", "title": "t", "description": "d"}
		msg := tm.readOnly.Call(t, http.MethodPost, "/api/alert", body).WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageAlert") {
			t.Errorf("403 %q", msg)
		}
		tm.admin.Call(t, http.MethodPost, "/api/alert", body).WantError(t, 403, "AuthorizationError")
		tm.anon().Call(t, http.MethodPost, "/api/alert", body).WantError(t, 401, "AuthenticationError")
	})
}

func TestAlert_GetListSearch(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newAlert(t, "g1", []map[string]any{{"dataType": "ip", "data": "9.9.9.9"}})
	id := a.Str(t, "id")
	tm.analyst.newAlert(t, "g2", nil)
	tm.other.newAlert(t, "theirs", nil)

	for _, p := range []string{"/api/alert/" + id, "/api/v0/alert/" + id, "/api/alert/" + url.PathEscape("external;siem;g1")} {
		got := tm.readOnly.Call(t, http.MethodGet, p, nil).Want(t, 200).Object(t)
		if got.Str(t, "id") != id || len(got["artifacts"].([]any)) != 1 {
			t.Fatalf("%s: %v", p, got)
		}
	}
	tm.other.Call(t, http.MethodGet, "/api/alert/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/alert/~nope", nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/alert/no-such-name", nil).WantError(t, 404, "NotFoundError")
	tm.anon().Call(t, http.MethodGet, "/api/alert/"+id, nil).WantError(t, 401, "AuthenticationError")

	tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/markAsRead", nil).Want(t, 200)
	r := tm.readOnly.Call(t, http.MethodGet, "/api/alert?sort=-sourceRef", nil).Want(t, 200)
	if l := r.List(t); r.Total(t) != "2" || l[0].Str(t, "sourceRef") != "g2" {
		t.Fatalf("alerts %s", r.Body)
	}
	for q, want := range map[string]string{`{"status":"Ignored"}`: "1", `{"status":"New"}`: "1", `{"read":true}`: "1",
		`{"_in":{"_field":"sourceRef","_values":["g1","g2","theirs"]}}`: "2", `{"_is":{"source":"siem"}}`: "2"} {
		r := tm.readOnly.Raw(t, http.MethodPost, "/api/alert/_search", "application/json", `{"query":`+q+`}`).Want(t, 200)
		if r.Total(t) != want {
			t.Errorf("%s: %s, want %s", q, r.Total(t), want)
		}
	}
	tm.readOnly.Raw(t, http.MethodPost, "/api/alert/_search", "application/json", `{"query":{"status":{"$ne":"x"}}}`).
		WantError(t, 400, "BadRequest")
	tm.readOnly.Call(t, http.MethodGet, "/api/alert?sort=nope", nil).WantError(t, 400, "BadRequest")
}

func TestAlert_Update(t *testing.T) {
	tm := newTeam(t)
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "tpl"}).Want(t, 201)
	id := tm.analyst.newAlert(t, "u1", nil).Str(t, "id")
	u := tm.analyst.Call(t, http.MethodPatch, "/api/alert/"+id, map[string]any{"description": "better", "title": "T",
		"severity": 4, "tlp": 3, "pap": 1, "tags": []string{"t"}, "externalLink": "https://x", "caseTemplate": "tpl",
		"date": 1700000000000, "follow": false, "type": "external", "sourceRef": "u1"}).Want(t, 200).Object(t)
	if u.Str(t, "description") != "better" || u.Str(t, "title") != "T" || u.Num(t, "severity") != 4 || u.Num(t, "tlp") != 3 ||
		u.Num(t, "pap") != 1 || u.Str(t, "caseTemplate") != "tpl" || u["follow"] != false || u.Str(t, "updatedBy") != "ana" ||
		u.Num(t, "date") != 1700000000000 || u.Str(t, "status") != "New" {
		t.Fatalf("updated %v", u)
	}
	for _, body := range []map[string]any{{"type": "other"}, {"source": "x"}, {"sourceRef": "u2"}, {"title": ""},
		{"severity": 5}, {"caseTemplate": "nope"}, {"customFields": map[string]any{"nope": 1}}} {
		tm.analyst.Call(t, http.MethodPatch, "/api/alert/"+id, body).WantError(t, 400, "AttributeCheckingError")
	}
	msg := tm.readOnly.Call(t, http.MethodPatch, "/api/alert/"+id, map[string]any{"title": "x"}).WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageAlert") {
		t.Errorf("403 %q", msg)
	}
	tm.other.Call(t, http.MethodPatch, "/api/alert/"+id, map[string]any{"title": "x"}).WantError(t, 404, "NotFoundError")

	f := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/follow", nil).Want(t, 200).Object(t)
	uf := tm.analyst.Call(t, http.MethodPost, "/api/v0/alert/"+id+"/unfollow", nil).Want(t, 200).Object(t)
	if f["follow"] != true || uf["follow"] != false {
		t.Fatalf("follow %v unfollow %v", f["follow"], uf["follow"])
	}
	tm.readOnly.Call(t, http.MethodPost, "/api/alert/"+id+"/follow", nil).WantError(t, 403, "AuthorizationError")
}

func TestAlert_ReadUnreadAndStatus(t *testing.T) {
	tm := newTeam(t)
	id := tm.analyst.newAlert(t, "s1", nil).Str(t, "id")
	step := func(path, status string, read bool) obj {
		t.Helper()
		a := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+path, nil).Want(t, 200).Object(t)
		checkRecord(t, a, "alert", "ana")
		if a.Str(t, "status") != status || a["read"] != read {
			t.Fatalf("%s: status %v read %v, want %s %v", path, a["status"], a["read"], status, read)
		}
		return a
	}
	a := step("/markAsRead", "Ignored", true)
	if a.Str(t, "updatedBy") != "ana" {
		t.Fatalf("markAsRead did not stamp: %v", a)
	}
	step("/markAsUnead", "New", false) // the contract's spelling
	step("/markAsRead", "Ignored", true)
	step("/markAsUnread", "New", false)
	tm.readOnly.Call(t, http.MethodPost, "/api/alert/"+id+"/markAsRead", nil).WantError(t, 403, "AuthorizationError")
	tm.other.Call(t, http.MethodPost, "/api/alert/"+id+"/markAsRead", nil).WantError(t, 404, "NotFoundError")
	tm.anon().Call(t, http.MethodPost, "/api/alert/"+id+"/markAsUnead", nil).WantError(t, 401, "AuthenticationError")

	// With a case: Imported when read, Updated when not; deleting the case brings New/Ignored back.
	cs := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", map[string]any{}).Want(t, 201).Object(t)
	step("/markAsRead", "Imported", true)
	step("/markAsUnread", "Updated", false)
	tm.analyst.Call(t, http.MethodDelete, "/api/case/"+cs.Str(t, "id"), nil).Want(t, 204)
	got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t)
	if got.Str(t, "status") != "New" || got["case"] != nil {
		t.Fatalf("after the case's delete: %v", got)
	}
}

// 20 parallel markAsRead/markAsUnread on one alert leave it consistent: read is a boolean, the status matches
// read and case, and nothing else was lost.
func TestAlert_ParallelReadUnread(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newAlert(t, "p1", []map[string]any{{"dataType": "ip", "data": "4.4.4.4"}})
	id := a.Str(t, "id")
	cs := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", nil).Want(t, 201).Object(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/markAsRead"
			if i%2 == 1 {
				path = "/markAsUnread"
			}
			r := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+path, nil)
			if r.Status != 200 {
				t.Errorf("%s: %d %s", path, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t)
	read, ok := got["read"].(bool)
	want := map[bool]string{true: "Imported", false: "Updated"}[read]
	if !ok || got.Str(t, "status") != want || got.Str(t, "case") != cs.Str(t, "id") || got.Str(t, "title") != "Alert p1" ||
		len(got["artifacts"].([]any)) != 1 || got.Str(t, "sourceRef") != "p1" {
		t.Fatalf("after parallel read/unread: %v", got)
	}
	// The stored status agrees too: a search by status finds it.
	r := tm.analyst.Call(t, http.MethodPost, "/api/alert/_search", map[string]any{"query": map[string]any{"status": want}}).Want(t, 200)
	if r.Total(t) != "1" {
		t.Fatalf("search by status %s: %s", want, r.Body)
	}
}

func TestAlert_CreateCase(t *testing.T) {
	tm := newTeam(t)
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "score", "type": "integer"}).Want(t, 201)
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "phishing", "titlePrefix": "[PH]",
		"tags": []string{"tpl"}, "tasks": []map[string]any{{"title": "Analyse"}, {"title": "Contain"}}}).Want(t, 201)

	t.Run("with a template", func(t *testing.T) {
		a := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "mail", "source": "gw", "sourceRef": "c1",
			"title": "Phish", "description": "A phish", "severity": 3, "tags": []string{"mail"},
			"customFields": map[string]any{"score": map[string]any{"integer": 5}},
			"artifacts": []map[string]any{{"dataType": "mail", "data": "x@evil.example", "tags": []string{"sender"}},
				{"dataType": "domain", "data": "evil.example", "ioc": true}}}).Want(t, 201).Object(t)
		id := a.Str(t, "id")
		cs := tm.analyst.Call(t, http.MethodPost, "/api/v0/alert/"+id+"/createCase", map[string]any{"caseTemplate": "phishing"}).
			Want(t, 201).Object(t)
		checkRecord(t, cs, "case", "ana")
		if cs.Str(t, "title") != "[PH] Phish" || cs.Str(t, "description") != "A phish" || cs.Num(t, "severity") != 3 ||
			!slices.Contains(cs.Strs(t, "tags"), "mail") || !slices.Contains(cs.Strs(t, "tags"), "tpl") ||
			cs.Obj(t, "customFields").Obj(t, "score").Num(t, "integer") != 5 || cs.Str(t, "status") != "Open" {
			t.Fatalf("case %v", cs)
		}
		caseID := cs.Str(t, "id")
		obs := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?sort=dataType", nil).Want(t, 200).List(t)
		if len(obs) != 2 || obs[0].Str(t, "data") != "evil.example" || obs[0]["ioc"] != true || obs[0].Str(t, "case") != caseID ||
			!slices.Equal(obs[1].Strs(t, "tags"), []string{"sender"}) {
			t.Fatalf("copied observables %v", obs)
		}
		if n := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/task", nil).Want(t, 200).Total(t); n != "2" {
			t.Fatalf("template tasks %s", n)
		}
		got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t)
		if got.Str(t, "case") != caseID || got.Str(t, "status") != "Imported" || got["read"] != true {
			t.Fatalf("alert after createCase %v", got)
		}
		// Again: the same case, 200.
		again := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", nil).Want(t, 200).Object(t)
		if again.Str(t, "id") != caseID {
			t.Fatalf("second createCase %v", again)
		}
		st := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"?nstats=true", nil).Want(t, 200).Object(t).Obj(t, "stats")
		if st.Obj(t, "artifacts").Num(t, "count") != 2 || len(st["alerts"].([]any)) != 1 {
			t.Fatalf("stats %v", st)
		}
	})

	t.Run("without a template, and the alert's own", func(t *testing.T) {
		id := tm.analyst.newAlert(t, "c2", nil).Str(t, "id")
		cs := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", nil).Want(t, 201).Object(t)
		if cs.Str(t, "title") != "Alert c2" || cs.Str(t, "owner") != "ana" {
			t.Fatalf("case %v", cs)
		}
		tm.analyst.Call(t, http.MethodPatch, "/api/alert/"+tm.analyst.newAlert(t, "c3", nil).Str(t, "id"),
			map[string]any{"caseTemplate": "phishing"}).Want(t, 200)
		cs = tm.analyst.Call(t, http.MethodPost, "/api/alert/external;siem;c3/createCase", nil).Want(t, 201).Object(t)
		if cs.Str(t, "title") != "[PH] Alert c3" {
			t.Fatalf("case from the alert's template %v", cs)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		id := tm.analyst.newAlert(t, "c4", nil).Str(t, "id")
		msg := tm.readOnly.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", nil).WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageAlert") {
			t.Errorf("403 %q", msg)
		}
		tm.other.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", nil).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/createCase", map[string]any{"caseTemplate": "nope"}).
			WantError(t, 400, "AttributeCheckingError")
		if got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Object(t); got["case"] != nil {
			t.Fatalf("a refused createCase linked the alert: %v", got)
		}
	})
}

func TestAlert_Merge(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, map[string]any{"description": "Original", "tags": []string{"c"}})
	caseID := cs.Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "5.5.5.5", "tags": []string{"old"}})
	a := tm.analyst.newAlert(t, "m1", []map[string]any{{"dataType": "ip", "data": "5.5.5.5", "tags": []string{"new"}},
		{"dataType": "hostname", "data": "host-m1"}})
	id := a.Str(t, "id")
	tm.readOnly.Call(t, http.MethodPost, "/api/alert/"+id+"/merge/"+caseID, nil).WantError(t, 403, "AuthorizationError")
	tm.other.Call(t, http.MethodPost, "/api/alert/"+id+"/merge/"+caseID, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/merge/~99999", nil).WantError(t, 404, "NotFoundError")

	merged := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/merge/"+caseID, nil).Want(t, 200).Object(t)
	want := "Original\n  \n#### Merged with alert #m1 Alert m1\n\nSeen by the SIEM"
	if merged.Str(t, "id") != caseID || merged.Str(t, "description") != want {
		t.Fatalf("merged case description %q", merged["description"])
	}
	obs := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?sort=data", nil).Want(t, 200).List(t)
	if len(obs) != 2 || obs[0].Str(t, "data") != "5.5.5.5" || !slices.Equal(obs[0].Strs(t, "tags"), []string{"old", "new"}) {
		t.Fatalf("observables after merge %v", obs)
	}
	got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t)
	if got.Str(t, "case") != caseID || got.Str(t, "status") != "Imported" {
		t.Fatalf("merged alert %v", got)
	}
	msg := tm.analyst.Call(t, http.MethodPost, "/api/alert/"+id+"/merge/"+caseID, nil).WantError(t, 400, "BadRequest")
	if !strings.Contains(msg, "already imported") {
		t.Errorf("second merge %q", msg)
	}

	// Bulk: several alerts into one case.
	b1 := tm.analyst.newAlert(t, "m2", nil).Str(t, "id")
	b2 := tm.analyst.newAlert(t, "m3", nil).Str(t, "id")
	out := tm.analyst.Call(t, http.MethodPost, "/api/alert/merge/_bulk", map[string]any{"caseId": caseID,
		"alertIds": []string{b1, b2}}).Want(t, 200).Object(t)
	if !strings.Contains(out.Str(t, "description"), "#m3") {
		t.Fatalf("bulk merge %v", out["description"])
	}
	tm.readOnly.Call(t, http.MethodPost, "/api/alert/merge/_bulk", map[string]any{"caseId": caseID, "alertIds": []string{b1}}).
		WantError(t, 403, "AuthorizationError")
}

func TestAlert_Delete(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newAlert(t, "d1", []map[string]any{{"dataType": "ip", "data": "7.7.7.7"}})
	id := a.Str(t, "id")
	obsID := obj(a["artifacts"].([]any)[0].(map[string]any)).Str(t, "id")
	tm.readOnly.Call(t, http.MethodDelete, "/api/alert/"+id, nil).WantError(t, 403, "AuthorizationError")
	tm.other.Call(t, http.MethodDelete, "/api/alert/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodDelete, "/api/alert/"+id, nil).Want(t, 204)
	tm.analyst.Call(t, http.MethodGet, "/api/alert/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/alert/artifact/"+obsID, nil).WantError(t, 404, "NotFoundError")
	// The key is free again.
	tm.analyst.newAlert(t, "d1", nil)
}

func TestAlert_SimilarCases(t *testing.T) {
	tm := newTeam(t)
	c1 := tm.analyst.newCase(t, map[string]any{"title": "one"}).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+c1+"/artifact", map[string]any{"dataType": "ip", "data": []string{"1.2.3.4", "5.6.7.8"}})
	tm.analyst.observables(t, "/api/case/"+c1+"/artifact", map[string]any{"dataType": "domain", "data": "bad.example", "ioc": true})
	tm.analyst.observables(t, "/api/case/"+c1+"/artifact", map[string]any{"dataType": "other", "data": "ignored", "ignoreSimilarity": true})
	c2 := tm.analyst.newCase(t, map[string]any{"title": "two"}).Str(t, "id")
	// The same data under another type counts too.
	tm.analyst.observables(t, "/api/case/"+c2+"/artifact", map[string]any{"dataType": "other", "data": "1.2.3.4"})
	theirs := tm.other.newCase(t, nil).Str(t, "id")
	tm.other.observables(t, "/api/case/"+theirs+"/artifact", map[string]any{"dataType": "ip", "data": "1.2.3.4"})

	a := tm.analyst.newAlert(t, "sim", []map[string]any{{"dataType": "ip", "data": "1.2.3.4"},
		{"dataType": "domain", "data": "bad.example"}, {"dataType": "other", "data": "ignored"}, {"dataType": "ip", "data": "0.0.0.0"}})
	got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+a.Str(t, "id")+"?similarity=1", nil).Want(t, 200).Object(t)
	sims := got["similarCases"].([]any)
	if len(sims) != 2 {
		t.Fatalf("similar cases %v", sims)
	}
	first, second := obj(sims[0].(map[string]any)), obj(sims[1].(map[string]any))
	if first.Obj(t, "case").Str(t, "id") != c2 || second.Obj(t, "case").Str(t, "id") != c1 {
		t.Fatalf("order (newest case first) %v", sims)
	}
	if second.Num(t, "similarObservableCount") != 2 || second.Num(t, "similarIocCount") != 1 ||
		second.Num(t, "observableCount") != 3 || second.Num(t, "iocCount") != 1 ||
		second.Obj(t, "observableTypes").Num(t, "ip") != 1 || second.Obj(t, "observableTypes").Num(t, "domain") != 1 ||
		second.Num(t, "similarArtifactCount") != 2 || second.Num(t, "artifactCount") != 3 || second.Str(t, "title") != "one" {
		t.Fatalf("similar case %v", second)
	}
	cs := second.Obj(t, "case")
	if cs.Num(t, "number") != cs.Num(t, "caseId") || cs.Str(t, "_createdBy") != "ana" || cs["extraData"] == nil {
		t.Fatalf("similar case's case %v", cs)
	}
	if first.Num(t, "similarObservableCount") != 1 || first.Obj(t, "observableTypes").Num(t, "other") != 1 {
		t.Fatalf("similar case %v", first)
	}
	// Without ?similarity the list is empty.
	if plain := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+a.Str(t, "id"), nil).Want(t, 200).Object(t); len(plain["similarCases"].([]any)) != 0 {
		t.Fatalf("similarCases without similarity %v", plain["similarCases"])
	}
}
