package api_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yeka/zip"

	"github.com/openir/platform/case-svc/internal/archive/archivetest"
	"github.com/openir/platform/case-svc/internal/store"
)

// checkRecord fails unless r carries the bookkeeping fields of every record (spec §1): _id = id starting
// with "~", the _type, createdBy, createdAt, and updatedBy/updatedAt (null until changed).
func checkRecord(t testing.TB, r obj, typ, createdBy string) {
	t.Helper()
	id := r.Str(t, "_id")
	if !strings.HasPrefix(id, "~") || r.Str(t, "id") != id || r.Str(t, "_type") != typ || r.Str(t, "createdBy") != createdBy ||
		r.Num(t, "createdAt") < float64(time.Now().Add(-time.Hour).UnixMilli()) {
		t.Fatalf("record %v: want _id = id, _type %s, createdBy %s, createdAt", r, typ, createdBy)
	}
	for _, k := range []string{"updatedBy", "updatedAt"} {
		if _, ok := r[k]; !ok {
			t.Fatalf("record %v has no %s", r, k)
		}
	}
}

// observables posts a create request and returns the created observables (status 201).
func (c *client) observables(t testing.TB, path string, body map[string]any) []obj {
	t.Helper()
	return c.Call(t, http.MethodPost, path, body).Want(t, http.StatusCreated).List(t)
}

func TestObservable_Create(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil)
	caseID := cs.Str(t, "id")

	t.Run("data array, both prefixes", func(t *testing.T) {
		before := time.Now().UnixMilli()
		l := tm.analyst.observables(t, "/api/v0/case/"+caseID+"/artifact", map[string]any{"dataType": "ip",
			"data": []string{"10.0.0.1", " ", "10.0.0.2"}, "message": "from the mail", "tags": []string{"a", "b"}})
		if len(l) != 2 {
			t.Fatalf("created %d, want 2 (a blank value is skipped)", len(l))
		}
		for i, o := range l {
			checkRecord(t, o, "case_artifact", "ana")
			o.Null(t, "updatedAt")
			o.Null(t, "updatedBy")
			if o.Str(t, "dataType") != "ip" || o.Str(t, "data") != []string{"10.0.0.1", "10.0.0.2"}[i] ||
				o.Num(t, "tlp") != 2 || o["ioc"] != false || o["sighted"] != false || o["ignoreSimilarity"] != false ||
				o.Str(t, "message") != "from the mail" || !slices.Equal(o.Strs(t, "tags"), []string{"a", "b"}) ||
				o.Num(t, "startDate") < float64(before) || o.Str(t, "case") != caseID || len(o.Obj(t, "reports")) != 0 ||
				len(o.Obj(t, "stats")) != 0 {
				t.Fatalf("observable %v", o)
			}
			o.Null(t, "alert")
		}
		// A single string is one value; every optional field.
		l = tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "domain",
			"data": "evil.example", "tlp": 3, "ioc": true, "sighted": true, "ignoreSimilarity": true,
			"startDate": 1700000000000})
		if len(l) != 1 || l[0].Num(t, "tlp") != 3 || l[0]["ioc"] != true || l[0]["sighted"] != true ||
			l[0]["ignoreSimilarity"] != true || l[0].Num(t, "startDate") != 1700000000000 {
			t.Fatalf("observable %v", l)
		}
	})

	t.Run("duplicates in a batch are 207", func(t *testing.T) {
		r := tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip",
			"data": []string{"10.0.0.1", "10.0.0.3", "10.0.0.3"}}).Want(t, http.StatusMultiStatus)
		b := r.Object(t)
		success, _ := b["success"].([]any)
		failure, _ := b["failure"].([]any)
		if len(success) != 1 || len(failure) != 2 {
			t.Fatalf("207 body %s", r.Body)
		}
		f := obj(failure[0].(map[string]any))
		if f.Str(t, "type") != "CreateError" || f.Str(t, "message") == "" || f.Obj(t, "object").Str(t, "data") != "10.0.0.1" {
			t.Fatalf("failure %v", f)
		}
		// The same value with another type is another observable.
		tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "other", "data": "10.0.0.1"})
		// Only duplicates: still 207, nothing created.
		r = tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip",
			"data": "10.0.0.2"}).Want(t, http.StatusMultiStatus)
		if b := r.Object(t); len(b["success"].([]any)) != 0 || len(b["failure"].([]any)) != 1 {
			t.Fatalf("207 body %s", r.Body)
		}
		n := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?range=all", nil).Want(t, 200).Total(t)
		if n != "5" {
			t.Fatalf("case has %s observables, want 5", n)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		path := "/api/case/" + caseID + "/artifact"
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"data": "x"}, "dataType"},
			{map[string]any{"dataType": "nope", "data": "x"}, "dataType"},
			{map[string]any{"dataType": "ip"}, "data"},
			{map[string]any{"dataType": "ip", "data": []string{" "}}, "data"},
			{map[string]any{"dataType": "ip", "data": "x", "tlp": 4}, "tlp"},
			{map[string]any{"dataType": "file", "data": "not inline"}, "data"},
		} {
			r := tm.analyst.Call(t, http.MethodPost, path, tc.body)
			r.WantError(t, 400, "AttributeCheckingError")
			if got := r.FieldErrors(t); !slices.Contains(got, tc.field) {
				t.Errorf("%v: fields %v, want %s", tc.body, got, tc.field)
			}
		}
		for _, body := range []map[string]any{{"dataType": "ip", "data": map[string]any{"$gt": ""}},
			{"dataType": "ip", "data": []any{1, 2}}, {"dataType": []string{"ip"}, "data": "x"}} {
			if r := tm.analyst.Call(t, http.MethodPost, path, body); r.Status != 400 {
				t.Errorf("%v: %d %s", body, r.Status, r.Body)
			} else {
				r.CheckErrorShape(t)
			}
		}
		body := map[string]any{"dataType": "ip", "data": "10.9.9.9"}
		msg := tm.readOnly.Call(t, http.MethodPost, path, body).WantError(t, 403, "AuthorizationError")
		if !strings.Contains(msg, "manageObservable") {
			t.Errorf("403 message %q", msg)
		}
		tm.other.Call(t, http.MethodPost, path, body).WantError(t, 404, "NotFoundError")
		tm.anon().Call(t, http.MethodPost, path, body).WantError(t, 401, "AuthenticationError")
		tm.analyst.Call(t, http.MethodPost, "/api/case/~999999/artifact", body).WantError(t, 404, "NotFoundError")
		tm.analyst.Call(t, http.MethodPost, "/api/alert/~nope/artifact", body).WantError(t, 404, "NotFoundError")
	})

	t.Run("on an alert", func(t *testing.T) {
		a := tm.analyst.newAlert(t, "obs-on-alert", nil)
		id := a.Str(t, "id")
		l := tm.analyst.observables(t, "/api/v0/alert/"+id+"/artifact", map[string]any{"dataType": "url",
			"data": []string{"http://a.example/x", "http://b.example/y"}})
		if len(l) != 2 || l[0].Str(t, "alert") != id || l[0]["case"] != nil || l[0].Str(t, "_type") != "case_artifact" {
			t.Fatalf("alert observables %v", l)
		}
		got := tm.readOnly.Call(t, http.MethodGet, "/api/alert/"+id, nil).Want(t, 200).Object(t)
		if arts := got["artifacts"].([]any); len(arts) != 2 {
			t.Fatalf("alert artifacts %v", got["artifacts"])
		}
		r := tm.readOnly.Call(t, http.MethodGet, "/api/alert/"+id+"/artifact", nil).Want(t, 200)
		if r.Total(t) != "2" {
			t.Fatalf("alert observable list %s", r.Body)
		}
		tm.readOnly.Call(t, http.MethodPost, "/api/alert/"+id+"/artifact", map[string]any{"dataType": "ip", "data": "1.1.1.1"}).
			WantError(t, 403, "AuthorizationError")
		tm.other.Call(t, http.MethodGet, "/api/alert/"+id+"/artifact", nil).WantError(t, 404, "NotFoundError")
	})
}

func hashes(b []byte) []string {
	s256, s1, m5 := sha256.Sum256(b), sha1.Sum(b), md5.Sum(b)
	return []string{hex.EncodeToString(s256[:]), hex.EncodeToString(s1[:]), hex.EncodeToString(m5[:])}
}

func TestObservable_Files(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	path := "/api/case/" + caseID + "/artifact"
	content := []byte("MZ\x90\x00 not really a program")

	l := tm.analyst.multipart(t, http.MethodPost, path, map[string]any{"dataType": "file", "message": "sample",
		"tags": []string{"malware"}}, nil, part{"attachment", "sample.exe", "application/x-msdownload", content}).
		Want(t, http.StatusCreated).List(t)
	if len(l) != 1 {
		t.Fatalf("created %v", l)
	}
	o := l[0]
	checkRecord(t, o, "case_artifact", "ana")
	att := o.Obj(t, "attachment")
	want := hashes(content)
	if att.Str(t, "name") != "sample.exe" || att.Str(t, "contentType") != "application/x-msdownload" ||
		att.Num(t, "size") != float64(len(content)) || att.Str(t, "id") != want[0] || !slices.Equal(att.Strs(t, "hashes"), want) {
		t.Fatalf("attachment %v, want hashes %v", att, want)
	}
	o.Null(t, "data")
	if o.Str(t, "dataType") != "file" || o.Str(t, "message") != "sample" {
		t.Fatalf("file observable %v", o)
	}

	// Download it, as a member of the organisation only.
	r := tm.readOnly.Call(t, http.MethodGet, "/api/datastore/"+want[0], nil).Want(t, 200)
	if !bytes.Equal(r.Body, content) || !strings.Contains(r.Header.Get("Content-Disposition"), "sample.exe") {
		t.Fatalf("download %q %v", r.Body, r.Header)
	}
	tm.other.Call(t, http.MethodGet, "/api/datastore/"+want[0], nil).WantError(t, 404, "NotFoundError")

	// The same content again in the case is a duplicate; in another case it is not.
	tm.analyst.multipart(t, http.MethodPost, path, map[string]any{"dataType": "file"}, nil,
		part{"attachment", "other-name.bin", "", content}).Want(t, http.StatusMultiStatus)
	other := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.multipart(t, http.MethodPost, "/api/case/"+other+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "x.bin", "", content}).Want(t, http.StatusCreated)

	// A file with a text type, or with data too, is refused.
	tm.analyst.multipart(t, http.MethodPost, path, map[string]any{"dataType": "ip"}, nil, part{"attachment", "a", "", []byte("a")}).
		WantError(t, 400, "AttributeCheckingError")
	tm.analyst.multipart(t, http.MethodPost, path, map[string]any{"dataType": "file", "data": "x"}, nil,
		part{"attachment", "a", "", []byte("a")}).WantError(t, 400, "AttributeCheckingError")

	// The reference system's inline form "name;contentType;base64" in data.
	inline := []byte("inline file")
	l = tm.analyst.observables(t, path, map[string]any{"dataType": "file",
		"data": "note.txt;text/plain;" + base64.StdEncoding.EncodeToString(inline)})
	if a := l[0].Obj(t, "attachment"); a.Str(t, "name") != "note.txt" || !slices.Equal(a.Strs(t, "hashes"), hashes(inline)) {
		t.Fatalf("inline file %v", a)
	}
	if r := tm.readOnly.Call(t, http.MethodGet, "/api/datastore/"+hashes(inline)[0], nil).Want(t, 200); !bytes.Equal(r.Body, inline) {
		t.Fatalf("inline download %q", r.Body)
	}
}

func TestObservable_Zip(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	path := "/api/case/" + caseID + "/artifact"
	upload := func(archive []byte, js map[string]any) *resp {
		if js == nil {
			js = map[string]any{}
		}
		js["dataType"], js["isZip"] = "file", true
		return tm.analyst.multipart(t, http.MethodPost, path, js, nil, part{"attachment", "samples.zip", "application/zip", archive})
	}
	one, two := []byte("first sample"), []byte("second sample")

	t.Run("plain", func(t *testing.T) {
		l := upload(archivetest.Zip(t, archivetest.File("dir/", nil), archivetest.File("dir/one.exe", one), archivetest.File("two.dll", two)),
			map[string]any{"tags": []string{"zipped"}}).Want(t, http.StatusCreated).List(t)
		if len(l) != 2 {
			t.Fatalf("unpacked %d observables, want 2", len(l))
		}
		names := []string{l[0].Obj(t, "attachment").Str(t, "name"), l[1].Obj(t, "attachment").Str(t, "name")}
		if !slices.Equal(names, []string{"one.exe", "two.dll"}) || l[0].Obj(t, "attachment").Str(t, "id") != hashes(one)[0] ||
			!slices.Equal(l[1].Strs(t, "tags"), []string{"zipped"}) {
			t.Fatalf("unpacked %v", l)
		}
		if r := tm.analyst.Call(t, http.MethodGet, "/api/datastore/"+hashes(two)[0], nil).Want(t, 200); !bytes.Equal(r.Body, two) {
			t.Fatalf("unpacked content %q", r.Body)
		}
	})

	t.Run("encrypted", func(t *testing.T) {
		for name, enc := range map[string]zip.EncryptionMethod{"zipcrypto": zip.StandardEncryption, "aes": zip.AES256Encryption} {
			content := []byte("encrypted sample " + name)
			archive := archivetest.Encrypted(t, "malware", enc, archivetest.File("s-"+name+".bin", content))
			upload(archive, nil).WantError(t, 400, "BadRequest")                                       // no password
			upload(archive, map[string]any{"zipPassword": "infected"}).WantError(t, 400, "BadRequest") // wrong one
			l := upload(archive, map[string]any{"zipPassword": "malware"}).Want(t, http.StatusCreated).List(t)
			if len(l) != 1 || l[0].Obj(t, "attachment").Str(t, "id") != hashes(content)[0] {
				t.Fatalf("%s: %v", name, l)
			}
		}
	})

	t.Run("hostile archives are 400", func(t *testing.T) {
		tooMany := make([]archivetest.Entry, 1001)
		for i := range tooMany {
			tooMany[i] = archivetest.File(fmt.Sprintf("f%d", i), []byte{byte(i)})
		}
		for name, archive := range map[string][]byte{
			"parent":        archivetest.Zip(t, archivetest.File("ok.txt", one), archivetest.File("../evil.txt", two)),
			"nested parent": archivetest.Zip(t, archivetest.File("a/../../evil.txt", two)),
			"backslashes":   archivetest.Zip(t, archivetest.File(`a\..\..\evil.txt`, two)),
			"absolute":      archivetest.Zip(t, archivetest.File("/etc/cron.d/evil", two)),
			"drive":         archivetest.Zip(t, archivetest.File(`C:\evil.txt`, two)),
			"bomb":          archivetest.Bomb(t, 30, 10<<20, 0),  // 300 MiB from a few hundred KB
			"lying header":  archivetest.Bomb(t, 1, 10<<20, 100), // declares 100 bytes, holds 10 MiB
			"too many":      archivetest.Zip(t, tooMany...),
			"not a zip":     []byte("this is not an archive"),
			"empty":         archivetest.Zip(t),
		} {
			r := upload(archive, nil)
			if r.Status != 400 {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
				continue
			}
			r.CheckErrorShape(t)
		}
		if n := tm.analyst.Call(t, http.MethodGet, path, nil).Want(t, 200).Total(t); n != "4" {
			t.Fatalf("hostile archives left observables: %s", n)
		}
		if strings.Contains(tm.logs.String(), "request failed") {
			t.Errorf("server errors logged:\n%s", tm.logs.String())
		}
	})
}

func TestObservable_GetUpdateDelete(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	o := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "hostname", "data": "pc-1"})[0]
	id := o.Str(t, "id")

	for _, p := range []string{"/api/case/artifact/", "/api/v0/case/artifact/", "/api/alert/artifact/"} {
		got := tm.readOnly.Call(t, http.MethodGet, p+id, nil).Want(t, 200).Object(t)
		if got.Str(t, "data") != "pc-1" {
			t.Fatalf("%s: %v", p, got)
		}
	}
	tm.other.Call(t, http.MethodGet, "/api/case/artifact/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/~nope", nil).WantError(t, 404, "NotFoundError")

	u := tm.analyst.Call(t, http.MethodPatch, "/api/v0/case/artifact/"+id, map[string]any{"ioc": true, "sighted": true,
		"ignoreSimilarity": true, "tags": []string{"x"}, "message": "seen on pc-1", "tlp": 1,
		"dataType": "hostname", "data": "pc-1"}).Want(t, 200).Object(t)
	if u["ioc"] != true || u["sighted"] != true || u["ignoreSimilarity"] != true || u.Str(t, "message") != "seen on pc-1" ||
		u.Num(t, "tlp") != 1 || !slices.Equal(u.Strs(t, "tags"), []string{"x"}) || u.Str(t, "updatedBy") != "ana" ||
		u.Num(t, "updatedAt") < u.Num(t, "createdAt") {
		t.Fatalf("updated %v", u)
	}
	for _, body := range []map[string]any{{"dataType": "ip"}, {"data": "pc-2"}, {"tlp": 9}, {"tlp": nil}, {"ioc": nil}} {
		tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/"+id, body).WantError(t, 400, "AttributeCheckingError")
	}
	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/"+id, map[string]any{"ioc": "maybe"}).CheckErrorShape(t)
	msg := tm.readOnly.Call(t, http.MethodPatch, "/api/case/artifact/"+id, map[string]any{"ioc": false}).WantError(t, 403, "AuthorizationError")
	if !strings.Contains(msg, "manageObservable") {
		t.Errorf("403 %q", msg)
	}
	tm.other.Call(t, http.MethodPatch, "/api/case/artifact/"+id, map[string]any{"ioc": false}).WantError(t, 404, "NotFoundError")

	// An alert observable is updated and deleted at /api/alert/artifact/{id}; its alert stops listing it.
	a := tm.analyst.newAlert(t, "del", []map[string]any{{"dataType": "ip", "data": "2.2.2.2"}, {"dataType": "ip", "data": "3.3.3.3"}})
	arts := a["artifacts"].([]any)
	aid := obj(arts[0].(map[string]any)).Str(t, "id")
	tm.analyst.Call(t, http.MethodPatch, "/api/v0/alert/artifact/"+aid, map[string]any{"ioc": true}).Want(t, 200)
	tm.readOnly.Call(t, http.MethodDelete, "/api/alert/artifact/"+aid, nil).WantError(t, 403, "AuthorizationError")
	tm.analyst.Call(t, http.MethodDelete, "/api/alert/artifact/"+aid, nil).Want(t, http.StatusNoContent)
	tm.analyst.Call(t, http.MethodGet, "/api/alert/artifact/"+aid, nil).WantError(t, 404, "NotFoundError")
	if got := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+a.Str(t, "id"), nil).Want(t, 200).Object(t); len(got["artifacts"].([]any)) != 1 {
		t.Fatalf("alert still lists the deleted observable: %v", got["artifacts"])
	}

	tm.other.Call(t, http.MethodDelete, "/api/case/artifact/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodDelete, "/api/case/artifact/"+id, nil).Want(t, http.StatusNoContent)
	tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+id, nil).WantError(t, 404, "NotFoundError")
	tm.anon().Call(t, http.MethodDelete, "/api/case/artifact/"+id, nil).WantError(t, 401, "AuthenticationError")
	// Deleted, the value can be added again.
	tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "hostname", "data": "pc-1"})
}

func TestObservable_ListSearch(t *testing.T) {
	tm := newTeam(t)
	a := tm.analyst.newCase(t, nil).Str(t, "id")
	b := tm.analyst.newCase(t, nil).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+a+"/artifact", map[string]any{"dataType": "ip", "data": []string{"1.1.1.1", "1.1.1.2"}})
	tm.analyst.observables(t, "/api/case/"+a+"/artifact", map[string]any{"dataType": "domain", "data": "x.example", "ioc": true})
	tm.analyst.observables(t, "/api/case/"+b+"/artifact", map[string]any{"dataType": "ip", "data": "1.1.1.1"})
	theirs := tm.other.newCase(t, nil).Str(t, "id")
	tm.other.observables(t, "/api/case/"+theirs+"/artifact", map[string]any{"dataType": "ip", "data": "1.1.1.1"})

	r := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+a+"/artifact?sort=-data", nil).Want(t, 200)
	var data []string
	for _, o := range r.List(t) {
		data = append(data, o.Str(t, "data"))
	}
	if r.Total(t) != "3" || !slices.Equal(data, []string{"x.example", "1.1.1.2", "1.1.1.1"}) {
		t.Fatalf("case list %v", data)
	}
	for _, tc := range []struct {
		path  string
		query any
		want  string
	}{
		{"/api/case/artifact/_search", map[string]any{"dataType": "ip"}, "3"},
		{"/api/v0/case/artifact/_search", map[string]any{"_and": []any{map[string]any{"data": "1.1.1.1"},
			map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{"_id": b}}}}}, "1"},
		{"/api/case/artifact/_search", map[string]any{"_parent": map[string]any{"_type": "case",
			"_query": map[string]any{"_field": "_id", "_value": a}}}, "3"},
		{"/api/case/" + a + "/artifact/_search", map[string]any{"ioc": true}, "1"},
		{"/api/case/artifact/_search", map[string]any{"_like": map[string]any{"_field": "data", "_value": "1.1."}}, "3"},
		{"/api/case/artifact/_search", map[string]any{"_is": map[string]any{"_field": "dataType", "_value": "domain"}}, "1"},
		{"/api/case/artifact/_search", map[string]any{"_ne": map[string]any{"_field": "dataType", "_value": "domain"}}, "3"},
	} {
		r := tm.readOnly.Call(t, http.MethodPost, tc.path, map[string]any{"query": tc.query}).Want(t, 200)
		if r.Total(t) != tc.want {
			t.Errorf("%s %v: total %s, want %s", tc.path, tc.query, r.Total(t), tc.want)
		}
	}
	for _, q := range []any{map[string]any{"data": map[string]any{"$ne": nil}}, map[string]any{"$where": "1"},
		map[string]any{"_field": "$where", "_value": 1}, map[string]any{"nope": 1},
		map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{"title": "x"}}}} {
		tm.readOnly.Call(t, http.MethodPost, "/api/case/artifact/_search", map[string]any{"query": q}).WantError(t, 400, "BadRequest")
	}
	tm.other.Call(t, http.MethodGet, "/api/case/"+a+"/artifact", nil).WantError(t, 404, "NotFoundError")

	// The case search holds case observables, the alert search alert observables.
	tm.analyst.newAlert(t, "ls", []map[string]any{{"dataType": "ip", "data": "1.1.1.1"}})
	for path, want := range map[string]string{"/api/case/artifact/_search": "2", "/api/alert/artifact/_search": "1"} {
		r := tm.readOnly.Call(t, http.MethodPost, path, map[string]any{"query": map[string]any{"data": "1.1.1.1"}}).Want(t, 200)
		if r.Total(t) != want {
			t.Errorf("%s: %s observables of 1.1.1.1, want %s", path, r.Total(t), want)
		}
	}
}

// Parallel creations of one value in one case: exactly one is created.
func TestObservable_ParallelSameValue(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/artifact",
				map[string]any{"dataType": "ip", "data": "6.6.6.6"}).Status
		}()
	}
	wg.Wait()
	created, multi := 0, 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 207:
			multi++
		}
	}
	if created != 1 || multi != 19 {
		t.Fatalf("statuses %v: %d created, %d 207", statuses, created, multi)
	}
	if n := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact", nil).Want(t, 200).Total(t); n != "1" {
		t.Fatalf("%s observables", n)
	}
}

// The connector merges report summaries into an observable's reports through the store.
func TestObservable_Reports(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	id := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "8.8.8.8"})[0].Str(t, "id")
	st, err := store.NewObservableStore(context.Background(), tm.db)
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]any{"taxonomies": []any{map[string]any{"level": "safe", "namespace": "DNS", "predicate": "a.b", "value": 1}}}
	if err := st.MergeReport(context.Background(), id, "DNS_Lookup_1.0", summary); err != nil {
		t.Fatal(err)
	}
	if err := st.MergeReport(context.Background(), id, "Other", map[string]any{"$odd.key": true}); err != nil {
		t.Fatal(err)
	}
	got := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+id, nil).Want(t, 200).Object(t)
	reports := got.Obj(t, "reports")
	tax := reports.Obj(t, "DNS_Lookup_1_0")["taxonomies"].([]any)
	if len(tax) != 1 || obj(tax[0].(map[string]any)).Str(t, "predicate") != "a.b" || reports.Obj(t, "Other")["$odd.key"] != true {
		t.Fatalf("reports %v", reports)
	}
	if err := st.MergeReport(context.Background(), "~nope", "x", summary); err == nil {
		t.Fatal("merge into an unknown observable succeeded")
	}
}
