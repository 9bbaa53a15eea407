package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/yeka/zip"
)

// openZip opens the one entry of a protected zip with password and returns its name and content.
func openZip(t *testing.T, body []byte, password string) (string, []byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	if len(zr.File) != 1 || !zr.File[0].IsEncrypted() {
		t.Fatalf("entries %v", zr.File)
	}
	f := zr.File[0]
	f.SetPassword(password)
	rc, err := f.Open()
	if err != nil {
		t.Fatalf("open entry: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read entry with %q: %v", password, err)
	}
	return f.Name, b
}

// GET /api/datastorezip/{id}: an observable's or a task log's file in a zip protected by datastore.password.
func TestDatastoreZip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, configured, password string }{{"default password", "", "malware"}, {"configured", "infected-2", "infected-2"}} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTeam(t, withZipPassword(tc.configured))
			cs := tm.analyst.newCase(t, nil).str(t, "id")
			content := []byte("MZ\x90\x00 a sample that must not reach the disk in clear")
			obs := tm.analyst.multipart(t, http.MethodPost, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "file"}, nil,
				part{"attachment", "sample.exe", "application/octet-stream", content}).want(t, 201).list(t)[0]

			// thehive4py 1.8.2 download_observable_attachment: GET the observable, then
			// GET /api/datastorezip/{id}?name{name} (its format string lacks the "=", so no name arrives)
			att := tm.readOnly.call(t, http.MethodGet, "/api/case/artifact/"+obs.str(t, "id"), nil).want(t, 200).object(t).obj(t, "attachment")
			id := att.str(t, "id")
			r := tm.readOnly.call(t, http.MethodGet, "/api/datastorezip/"+id+"?name"+att.str(t, "name"), nil).want(t, 200)
			if ct := r.header.Get("Content-Type"); ct != "application/zip" {
				t.Errorf("Content-Type %q", ct)
			}
			if bytes.Contains(r.body, content[4:20]) {
				t.Fatal("the sample is readable in the answer")
			}
			if name, got := openZip(t, r.body, tc.password); name != id || !bytes.Equal(got, content) {
				t.Errorf("entry %q: %q", name, got)
			}
			// with a name
			r = tm.readOnly.call(t, http.MethodGet, "/api/datastorezip/"+id+"?name=sample.exe", nil).want(t, 200)
			if cd := r.header.Get("Content-Disposition"); cd != "attachment; filename=sample.exe.zip" {
				t.Errorf("Content-Disposition %q", cd)
			}
			if name, _ := openZip(t, r.body, tc.password); name != "sample.exe" {
				t.Errorf("entry %q", name)
			}
			if st := tm.anon().call(t, http.MethodGet, "/api/status", nil).want(t, 200).object(t); st.obj(t, "config").str(t, "protectDownloadsWith") != tc.password {
				t.Errorf("status config %v", st["config"])
			}

			// a task log's attachment (download_task_log_attachment with archive=True)
			task := tm.analyst.call(t, http.MethodPost, "/api/case/"+cs+"/task", map[string]any{"title": "t"}).want(t, 201).object(t).str(t, "id")
			logFile := []byte("log evidence")
			l := tm.analyst.multipart(t, http.MethodPost, "/api/case/task/"+task+"/log", map[string]any{"message": "m"}, nil,
				part{"attachment", "evidence.txt", "text/plain", logFile}).want(t, 201).object(t)
			lid := l.obj(t, "attachment").str(t, "id")
			if name, got := openZip(t, tm.readOnly.call(t, http.MethodGet, "/api/datastorezip/"+lid+"?name=evidence.txt", nil).want(t, 200).body,
				tc.password); name != "evidence.txt" || !bytes.Equal(got, logFile) {
				t.Errorf("log entry %q: %q", name, got)
			}

			tm.other.call(t, http.MethodGet, "/api/datastorezip/"+id, nil).wantError(t, 404, "NotFoundError")
			tm.admin.call(t, http.MethodGet, "/api/datastorezip/"+id, nil).wantError(t, 404, "NotFoundError")
			tm.analyst.call(t, http.MethodGet, "/api/datastorezip/"+strings.Repeat("0", 64), nil).wantError(t, 404, "NotFoundError")
			tm.anon().call(t, http.MethodGet, "/api/datastorezip/"+id, nil).wantError(t, 401, "AuthenticationError")
		})
	}
}

// Names sent to /api/datastorezip never reach a header or the archive as paths or quotes.
func TestHostile_DatastoreZipNames(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil).str(t, "id")
	id := tm.analyst.multipart(t, http.MethodPost, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{"attachment", "x.bin", "", []byte("x")}).want(t, 201).list(t)[0].obj(t, "attachment").str(t, "id")
	for _, n := range []string{"../../etc/passwd", "a\r\nSet-Cookie: x=1", `a"; filename="evil.exe`, "a\x00b", `..\..\x`, "\xff", strings.Repeat("n", 5000)} {
		r := hostile(t, tm.analyst, http.MethodGet, "/api/datastorezip/"+id+"?name="+url.QueryEscape(n), "", nil, 200)
		if cd := r.header.Get("Content-Disposition"); r.header.Get("Set-Cookie") != "" || strings.ContainsAny(cd, "\r\n\x00/\\") ||
			len(r.header.Values("Content-Disposition")) != 1 {
			t.Errorf("name %q: headers %v", n, r.header)
		}
		if entry, _ := openZip(t, r.body, "malware"); strings.ContainsAny(entry, "/\\\r\n\x00\"") {
			t.Errorf("name %q: entry %q", n, entry)
		}
	}
	failedRequests(t, tm.env)
}
