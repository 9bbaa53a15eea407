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

// unzip opens the one entry of a protected zip with password and returns its name and content.
func unzip(t *testing.T, body []byte, password string) (string, []byte) {
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

// GET /api/datastorezip/{hash}: the stored file in a zip protected by datastore.password, with the access of
// /api/datastore.
func TestDatastoreZip(t *testing.T) {
	for _, tc := range []struct{ name, configured, password string }{{"default password", "", "malware"}, {"configured", "infected-2", "infected-2"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newJobFixture(t, withZipPassword(tc.configured))
			content := []byte("MZ\x90\x00 a sample that must not reach the disk in clear")
			j := multipartRun(t, f.analyst, "/api/analyzer/"+f.analyzer+"/run?force=1", "attachment", "sample.exe", content, `{"dataType":"file"}`).
				want(t, http.StatusOK).object(t)
			hash := j["attachment"].(map[string]any)["id"].(string)

			r := f.reads.call(t, http.MethodGet, "/api/datastorezip/"+hash+"?name=sample.exe", nil).want(t, http.StatusOK)
			if ct := r.header.Get("Content-Type"); ct != "application/zip" {
				t.Errorf("Content-Type %q", ct)
			}
			if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename=sample.exe.zip` {
				t.Errorf("Content-Disposition %q", cd)
			}
			if bytes.Contains(r.body, content[4:20]) {
				t.Fatal("the sample is readable in the answer")
			}
			name, got := unzip(t, r.body, tc.password)
			if name != "sample.exe" || !bytes.Equal(got, content) {
				t.Errorf("entry %q: %q", name, got)
			}
			// no name: the entry is the hash; a path is reduced to its base name
			if name, _ := unzip(t, f.reads.call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).want(t, 200).body, tc.password); name != hash {
				t.Errorf("entry without a name: %q", name)
			}
			r = f.reads.call(t, http.MethodGet, "/api/datastorezip/"+hash+"?name="+url.QueryEscape("../../etc/x.bin"), nil).want(t, 200)
			if name, _ := unzip(t, r.body, tc.password); name != "x.bin" {
				t.Errorf("entry of a path: %q", name)
			}
			if status := f.analyst.call(t, http.MethodGet, "/api/status", nil).want(t, 200).object(t); status["config"].(map[string]any)["protectDownloadsWith"] != tc.password {
				t.Errorf("status reports %v", status["config"])
			}

			f.other.call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).wantError(t, http.StatusNotFound, "NotFoundError")
			f.reads.call(t, http.MethodGet, "/api/datastorezip/"+strings.Repeat("0", 64), nil).wantError(t, http.StatusNotFound, "NotFoundError")
			f.e.anon().call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).wantError(t, http.StatusUnauthorized, "AuthenticationError")
		})
	}
}
