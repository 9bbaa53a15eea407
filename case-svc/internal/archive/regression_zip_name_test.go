package archive

// Bug (minor): an archive entry written with Windows separators, `dir\sub\file.txt` (some Windows tools do),
// becomes an observable named "dir\sub\file.txt", not by its base name "file.txt" as README "Observables"
// says: Unzip names files with path.Base, which only splits on "/", although checkEntryName treats "\" as a
// separator for "..". Uses seedZip/seedEntry of zip_fuzz_test.go.

import (
	"bytes"
	"context"
	"testing"

	"github.com/openir/platform/case-svc/internal/archive/archivetest"
)

func TestRegression_ZipBackslashEntryNamedByBaseName(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	archive := archivetest.Zip(t, archivetest.File(`dir\sub\file.txt`, []byte("1")))
	files, cleanup, err := Unzip(context.Background(), bytes.NewReader(archive), "", fuzzLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if len(files) != 1 || files[0].Name != "file.txt" {
		t.Fatalf("entry named %q, want file.txt", files[0].Name)
	}
}
