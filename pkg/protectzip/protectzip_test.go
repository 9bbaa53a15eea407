package protectzip

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/yeka/zip"
)

// A written archive opens with the password and gives the content back; the wrong password does not.
func TestWrite_RoundTrip(t *testing.T) {
	content := bytes.Repeat([]byte("X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR"), 20000) // ~700 KB: more than one deflate window
	var buf bytes.Buffer
	if err := Write(&buf, "sample.exe", "malware", bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), content[:64]) {
		t.Fatal("the content is readable in the archive")
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "sample.exe" || !zr.File[0].IsEncrypted() {
		t.Fatalf("entries %v", zr.File)
	}
	f := zr.File[0]
	f.SetPassword("wrong")
	if rc, err := f.Open(); err == nil {
		if _, err := io.ReadAll(rc); err == nil {
			t.Error("the wrong password opened the entry")
		}
	}
	f.SetPassword("malware")
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("content back: %d bytes, %v", len(got), err)
	}
}

func TestNames(t *testing.T) {
	if Password("") != "malware" || Password("s3cret") != "s3cret" {
		t.Error("Password")
	}
	if got := EntryName("../../x\r\n.exe", "h"); got != "x.exe" {
		t.Errorf("EntryName %q", got)
	}
	if got := EntryName(`a"; filename="evil.exe`, "h"); got != "a__ filename=_evil.exe" {
		t.Errorf("EntryName of quotes %q", got)
	}
	if got := EntryName("", "abc"); got != "abc" {
		t.Errorf("EntryName fallback %q", got)
	}
	if cd := ContentDisposition(`a"b;.exe`); !strings.HasPrefix(cd, "attachment;") || strings.ContainsAny(cd, "\r\n") {
		t.Errorf("ContentDisposition %q", cd)
	}
	if err := Write(io.Discard, "x", " ", strings.NewReader("x")); err == nil {
		t.Error("an empty password was accepted")
	}
}
