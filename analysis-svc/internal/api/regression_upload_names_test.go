package api_test

// Regression: the stored name of an uploaded observable file (analysis.Jobs.store1 in internal/analysis/jobs.go,
// filepath.Base of the multipart file name) keeps
//   - Windows paths: filename="..\..\windows\win.ini" is stored as `..\..\windows\win.ini` and
//     filename="C:\temp\a.exe" as `C:\temp\a.exe` (filepath.Base only splits on "/" on Linux; old browsers send
//     full Windows paths). Expected: the last component, "win.ini" / "a.exe".
//   - "..": filename=".." is stored as ".." (only ".", "/" and "" fall back to the file's id). Expected: the id,
//     as for ".".
//   - NUL: filename*=UTF-8''..%2F..%2Fetc%2Fpasswd%00.txt (RFC 2231, decoded by mime) is stored as
//     "passwd\x00.txt". Expected: no control characters (400, or the name without them).
// The same store1 stores file artifacts of workers (executor.go: Upload{Name: a.Filename}), so an output.json
// artifact {"dataType":"file","file":"x","filename":"..\\..\\evil.exe"} or "filename":".." is kept the same way.
// The name is returned in attachment.name, written into the worker's input.json `filename`, and shown to case
// management; GET /api/datastore/{hash}?name=<that name> then falls back to the hash because the name holds "\".
//
// Request: POST /api/analyzer/{id}/run?force=1, multipart: _json={"dataType":"file"} and a part
//   Content-Disposition: form-data; name="attachment"; filename="..\\..\\windows\\win.ini"
// Got: 200, attachment.name `..\..\windows\win.ini`. Expected: attachment.name "win.ini".
//
// Save as internal/api/bugs_upload_names_test.go once fixed (uses hostile_test.go's helpers).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestRegression_UploadFileNamesHoldNoPath(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t)
	run := "/api/analyzer/" + f.analyzer + "/run?force=1"
	for i, tc := range []struct{ disposition, want string }{
		{`form-data; name="attachment"; filename="..\\..\\windows\\win.ini"`, "win.ini"},
		{`form-data; name="attachment"; filename="C:\\temp\\a.exe"`, "a.exe"},
		{`form-data; name="attachment"; filename=".."`, ""}, // "" = the file's id
		{`form-data; name="attachment"; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd%00.txt`, ""},
	} {
		t.Run(tc.disposition, func(t *testing.T) {
			content := []byte(fmt.Sprintf("bug file %d", i))
			ct, body := multipartRaw(t, `{"dataType":"file"}`, tc.disposition, "", content)
			r := hostile(t, f.analyst, http.MethodPost, run, ct, body, nil, http.StatusOK, http.StatusBadRequest)
			if r.Status != http.StatusOK {
				return // refusing the name is fine too
			}
			j := r.Object(t)
			checkUploadedName(t, f, j, content)
			att := j["attachment"].(map[string]any)
			if tc.want != "" && att["name"] != tc.want {
				t.Errorf("stored name %q, want %q", att["name"], tc.want)
			}
			if tc.want == "" && strings.Contains(fmt.Sprint(att["name"]), "passwd") && strings.ContainsRune(fmt.Sprint(att["name"]), 0) {
				t.Errorf("stored name %q holds NUL", att["name"])
			}
		})
	}
}
