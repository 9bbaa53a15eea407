package api_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/apitest"
)

// GET /api/datastorezip/{id}: an observable's or a task log's file in a zip protected by datastore.password.
func TestDatastoreZip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, configured, password string }{{"default password", "", "malware"}, {"configured", "infected-2", "infected-2"}} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTeam(t, withZipPassword(tc.configured))
			cs := tm.analyst.newCase(t, nil).Str(t, "id")
			content := []byte("MZ\x90\x00 a sample that must not reach the disk in clear")
			obs := tm.analyst.multipart(t, http.MethodPost, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "file"}, nil,
				part{"attachment", "sample.exe", "application/octet-stream", content}).Want(t, 201).List(t)[0]

			// thehive4py 1.8.2 download_observable_attachment: GET the observable, then
			// GET /api/datastorezip/{id}?name{name} (its format string lacks the "=", so no name arrives)
			att := tm.readOnly.Call(t, http.MethodGet, "/api/case/artifact/"+obs.Str(t, "id"), nil).Want(t, 200).Object(t).Obj(t, "attachment")
			id := att.Str(t, "id")
			r := tm.readOnly.Call(t, http.MethodGet, "/api/datastorezip/"+id+"?name"+att.Str(t, "name"), nil).Want(t, 200)
			if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
				t.Errorf("Content-Type %q", ct)
			}
			if bytes.Contains(r.Body, content[4:20]) {
				t.Fatal("the sample is readable in the answer")
			}
			if name, got := apitest.Unzip(t, r.Body, tc.password); name != id || !bytes.Equal(got, content) {
				t.Errorf("entry %q: %q", name, got)
			}
			// with a name
			r = tm.readOnly.Call(t, http.MethodGet, "/api/datastorezip/"+id+"?name=sample.exe", nil).Want(t, 200)
			if cd := r.Header.Get("Content-Disposition"); cd != "attachment; filename=sample.exe.zip" {
				t.Errorf("Content-Disposition %q", cd)
			}
			if name, _ := apitest.Unzip(t, r.Body, tc.password); name != "sample.exe" {
				t.Errorf("entry %q", name)
			}
			if st := tm.anon().Call(t, http.MethodGet, "/api/status", nil).Want(t, 200).Object(t); st.Obj(t, "config").Str(t, "protectDownloadsWith") != tc.password {
				t.Errorf("status config %v", st["config"])
			}

			// a task log's attachment (download_task_log_attachment with archive=True)
			task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+cs+"/task", map[string]any{"title": "t"}).Want(t, 201).Object(t).Str(t, "id")
			logFile := []byte("log evidence")
			l := tm.analyst.multipart(t, http.MethodPost, "/api/case/task/"+task+"/log", map[string]any{"message": "m"}, nil,
				part{"attachment", "evidence.txt", "text/plain", logFile}).Want(t, 201).Object(t)
			lid := l.Obj(t, "attachment").Str(t, "id")
			if name, got := apitest.Unzip(t, tm.readOnly.Call(t, http.MethodGet, "/api/datastorezip/"+lid+"?name=evidence.txt", nil).Want(t, 200).Body,
				tc.password); name != "evidence.txt" || !bytes.Equal(got, logFile) {
				t.Errorf("log entry %q: %q", name, got)
			}

			tm.other.Call(t, http.MethodGet, "/api/datastorezip/"+id, nil).WantError(t, 404, "NotFoundError")
			tm.admin.Call(t, http.MethodGet, "/api/datastorezip/"+id, nil).WantError(t, 404, "NotFoundError")
			tm.analyst.Call(t, http.MethodGet, "/api/datastorezip/"+strings.Repeat("0", 64), nil).WantError(t, 404, "NotFoundError")
			tm.anon().Call(t, http.MethodGet, "/api/datastorezip/"+id, nil).WantError(t, 401, "AuthenticationError")
		})
	}
}

// Names sent to /api/datastorezip never reach a header or the archive as paths or quotes.
func TestHostile_DatastoreZipNames(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil).Str(t, "id")
	id := tm.analyst.multipart(t, http.MethodPost, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "x.bin", "", []byte("x")}).Want(t, 201).List(t)[0].Obj(t, "attachment").Str(t, "id")
	for _, n := range []string{"../../etc/passwd", "a\r\nSet-Cookie: x=1", `a"; filename="evil.exe`, "a\x00b", `..\..\x`, "\xff", strings.Repeat("n", 5000)} {
		r := hostile(t, tm.analyst, http.MethodGet, "/api/datastorezip/"+id+"?name="+url.QueryEscape(n), "", nil, 200)
		if cd := r.Header.Get("Content-Disposition"); r.Header.Get("Set-Cookie") != "" || strings.ContainsAny(cd, "\r\n\x00/\\") ||
			len(r.Header.Values("Content-Disposition")) != 1 {
			t.Errorf("name %q: headers %v", n, r.Header)
		}
		if entry, _ := apitest.Unzip(t, r.Body, "malware"); strings.ContainsAny(entry, "/\\\r\n\x00\"") {
			t.Errorf("name %q: entry %q", n, entry)
		}
	}
	failedRequests(t, tm.env)
}
