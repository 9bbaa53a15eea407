package api_test

import (
	"bytes"
	"github.com/openir/platform/pkg/apitest"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// GET /api/datastorezip/{hash}: the stored file in a zip protected by datastore.password, with the access of
// /api/datastore.
func TestDatastoreZip(t *testing.T) {
	for _, tc := range []struct{ name, configured, password string }{{"default password", "", "malware"}, {"configured", "infected-2", "infected-2"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newJobFixture(t, withZipPassword(tc.configured))
			content := []byte("MZ\x90\x00 a sample that must not reach the disk in clear")
			j := multipartRun(t, f.analyst, "/api/analyzer/"+f.analyzer+"/run?force=1", "attachment", "sample.exe", content, `{"dataType":"file"}`).
				Want(t, http.StatusOK).Object(t)
			hash := j["attachment"].(map[string]any)["id"].(string)

			r := f.reads.Call(t, http.MethodGet, "/api/datastorezip/"+hash+"?name=sample.exe", nil).Want(t, http.StatusOK)
			if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
				t.Errorf("Content-Type %q", ct)
			}
			if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename=sample.exe.zip` {
				t.Errorf("Content-Disposition %q", cd)
			}
			if bytes.Contains(r.Body, content[4:20]) {
				t.Fatal("the sample is readable in the answer")
			}
			name, got := apitest.Unzip(t, r.Body, tc.password)
			if name != "sample.exe" || !bytes.Equal(got, content) {
				t.Errorf("entry %q: %q", name, got)
			}
			// no name: the entry is the hash; a path is reduced to its base name
			if name, _ := apitest.Unzip(t, f.reads.Call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).Want(t, 200).Body, tc.password); name != hash {
				t.Errorf("entry without a name: %q", name)
			}
			r = f.reads.Call(t, http.MethodGet, "/api/datastorezip/"+hash+"?name="+url.QueryEscape("../../etc/x.bin"), nil).Want(t, 200)
			if name, _ := apitest.Unzip(t, r.Body, tc.password); name != "x.bin" {
				t.Errorf("entry of a path: %q", name)
			}
			if status := f.analyst.Call(t, http.MethodGet, "/api/status", nil).Want(t, 200).Object(t); status["config"].(map[string]any)["protectDownloadsWith"] != tc.password {
				t.Errorf("status reports %v", status["config"])
			}

			f.other.Call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).WantError(t, http.StatusNotFound, "NotFoundError")
			f.reads.Call(t, http.MethodGet, "/api/datastorezip/"+strings.Repeat("0", 64), nil).WantError(t, http.StatusNotFound, "NotFoundError")
			f.e.anon().Call(t, http.MethodGet, "/api/datastorezip/"+hash, nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
		})
	}
}
