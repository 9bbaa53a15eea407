package api_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/case-svc/internal/archive/archivetest"
)

// Issue 15 (5b): a zip of 256 KB unpacked to 250 MiB with no quota. Uploaded archives have a total-size
// and an entry quota per request (observable.zip.max_unpacked, observable.zip.max_entries); over either, the
// request is a 400 in the contract's shape and nothing of the archive is stored: no observable, no file.
func TestRegressionZipQuotaPerRequest(t *testing.T) {
	tm := newTeam(t, withZipLimits(archive.Limits{MaxEntries: 5, MaxTotal: 1 << 20}))
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	path := "/api/case/" + caseID + "/artifact"
	upload := func(archive []byte) *resp {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_json", `{"dataType":"file","isZip":true}`)
		fw, _ := mw.CreateFormFile("attachment", "samples.zip")
		_, _ = fw.Write(archive)
		_ = mw.Close()
		return tm.analyst.Send(t, http.MethodPost, path, mw.FormDataContentType(), &buf, nil)
	}
	part := func(c byte) []byte { return bytes.Repeat([]byte{c}, 400<<10) }
	over := [][]byte{part('a'), part('b'), part('c')} // 1.2 MiB unpacked, a few KB packed
	tooMany := make([]archivetest.Entry, 6)
	for i := range tooMany {
		tooMany[i] = archivetest.File(string(rune('a'+i))+".txt", []byte{byte(i)})
	}
	for name, c := range map[string]struct {
		archive []byte
		want    string
	}{
		"over the unpacked total":  {archivetest.Zip(t, archivetest.File("a.bin", over[0]), archivetest.File("b.bin", over[1]), archivetest.File("c.bin", over[2])), "unpacks to more than 1048576 bytes"},
		"one entry over the total": {archivetest.Bomb(t, 1, 2<<20, 0), "unpacks to more than"},
		"a header that lies":       {archivetest.Bomb(t, 1, 2<<20, 100), "zeros-0.bin"},
		"over the entry quota":     {archivetest.Zip(t, tooMany...), "more than 5 entries"},
	} {
		msg := upload(c.archive).WantError(t, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q, want it to say %q", name, msg, c.want)
		}
	}
	// Nothing half-stored: no observable, and not even the first file of the refused archive.
	if n := tm.analyst.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK).Total(t); n != "0" {
		t.Fatalf("refused archives left %s observables", n)
	}
	tm.analyst.Call(t, http.MethodGet, "/api/datastore/"+hashes(over[0])[0], nil).WantError(t, http.StatusNotFound, "NotFoundError")
	// Within the quotas the archive is unpacked.
	l := upload(archivetest.Zip(t, archivetest.File("a.bin", over[0]), archivetest.File("b.bin", over[1]))).Want(t, http.StatusCreated).List(t)
	if len(l) != 2 {
		t.Fatalf("an archive within the quota gave %v", l)
	}
}
