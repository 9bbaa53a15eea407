package apitest

import (
	"bytes"
	"io"
	"testing"

	"github.com/yeka/zip"
)

// Unzip opens the one entry of a protected zip (/api/datastorezip) with password and returns its name and
// content.
func Unzip(t testing.TB, body []byte, password string) (string, []byte) {
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
