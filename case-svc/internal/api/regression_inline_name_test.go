package api_test

// Bug (minor): the name of a file observable given inline as data "name;contentType;base64" is stored as sent,
// directories and control characters included, while a multipart upload's file name is reduced to its base
// name (mime/multipart) and a zip entry's too (README "Observables": "named by its base name"). The name
// travels in answers, in Content-Disposition on download, and to analysis servers as the job's file name.

import (
	"encoding/base64"
	"net/http"
	"testing"
)

func TestRegression_InlineFileNameIsNotABaseName(t *testing.T) {
	tm := newTeam(t)
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	path := "/api/case/" + caseID + "/artifact"
	content := base64.StdEncoding.EncodeToString([]byte("hello"))
	// the multipart upload: a base name
	up := tm.analyst.multipart(t, http.MethodPost, path, map[string]any{"dataType": "file"}, nil,
		part{"attachment", "../../etc/multipart.txt", "text/plain", []byte("multipart")}).Want(t, 201).List(t)[0]
	if n := up.Obj(t, "attachment").Str(t, "name"); n != "multipart.txt" {
		t.Fatalf("multipart name %q", n)
	}
	for data, want := range map[string]string{
		"../../etc/passwd;text/plain;" + content:      "passwd",
		`..\..\windows\win.ini;text/plain;` + content: "win.ini",
	} {
		r := tm.analyst.Call(t, http.MethodPost, "/api/case/"+tm.analyst.newCase(t, nil).Str(t, "id")+"/artifact",
			map[string]any{"dataType": "file", "data": data})
		if r.Status != 201 {
			t.Errorf("%q: %d %s", data, r.Status, r.Body)
			continue
		}
		if n := r.List(t)[0].Obj(t, "attachment").Str(t, "name"); n != want {
			t.Errorf("inline file %q named %q, want %q", data, n, want)
		}
	}
	// a control character in the name: refused, like other invalid names, or dropped
	r := tm.analyst.Call(t, http.MethodPost, path, map[string]any{"dataType": "file", "data": "a\r\nX-Injected: 1;text/plain;" + content})
	if r.Status == 201 {
		if n := r.List(t)[0].Obj(t, "attachment").Str(t, "name"); n != "a" && n != "aX-Injected: 1" {
			t.Errorf("inline file name with CR LF stored as %q", n)
		}
	}
}
