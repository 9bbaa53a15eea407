package jobdir

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

type entry struct {
	name, data string
	typ        byte
}

func tarStream(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Typeflag: typ, Name: e.name, Mode: 0o644, Size: int64(len(e.data))}
		if typ != tar.TypeReg {
			h.Size, h.Linkname = 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.data))
	}
	tw.Close()
	return &b
}

// The input side travels whole (input.json, the attachment, cacerts) and lands with an empty output/ any
// worker user can write.
func TestTransfer_InputRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "job")
	file := filepath.Join(t.TempDir(), "sample.bin")
	os.WriteFile(file, []byte("file content"), 0o600)
	job, err := Prepare(src, analysis.KindAnalyzer, analysis.RunInput{File: file, DataType: "file",
		Config: map[string]any{"cacerts": "CA", "key": "v"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PackInput(&b, job.Dir); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "pod")
	if err := UnpackInput(&b, dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{InputFile, CACertsFile} {
		want, _ := os.ReadFile(filepath.Join(job.Dir, InputDir, name))
		got, err := os.ReadFile(filepath.Join(dst, InputDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dst, InputDir))
	if len(entries) != 3 {
		t.Errorf("input/ has %d entries, want 3", len(entries))
	}
	st, err := os.Stat(filepath.Join(dst, OutputDir))
	if err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("output/: %v %v", st, err)
	}
}

func TestTransfer_UnpackInputRefusesOtherPaths(t *testing.T) {
	for _, e := range []entry{
		{name: "input/../x", data: "1"},
		{name: "output/x", data: "1"},
		{name: "input/sub/x", data: "1"},
		{name: "input/link", typ: tar.TypeSymlink},
		{name: "/etc/x", data: "1"},
	} {
		dst := filepath.Join(t.TempDir(), "pod")
		if err := UnpackInput(tarStream(t, e), dst); err == nil {
			t.Errorf("%q accepted", e.name)
		}
	}
}

func TestTransfer_OutputRoundTripSkipsNonFiles(t *testing.T) {
	src := t.TempDir()
	out := filepath.Join(src, OutputDir)
	os.Mkdir(out, 0o777)
	os.WriteFile(filepath.Join(out, OutputFile), []byte(`{"success":true,"full":{}}`), 0o644)
	os.WriteFile(filepath.Join(out, "report.txt"), []byte("r"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(out, "link"))
	os.Mkdir(filepath.Join(out, "sub"), 0o755)
	var b bytes.Buffer
	skipped, err := PackOutput(&b, src)
	if err != nil || len(skipped) != 2 {
		t.Fatalf("skipped %v, %v", skipped, err)
	}
	dst := t.TempDir()
	os.Mkdir(filepath.Join(dst, OutputDir), 0o700)
	if err := UnpackOutput(&b, dst, OutputLimits{}, FolderAccess{}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOutput(dst, ReadOptions{})
	if err != nil || !got.Success {
		t.Fatalf("ReadOutput: %+v %v", got, err)
	}
	st, _ := os.Stat(filepath.Join(dst, OutputDir, "report.txt"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestTransfer_UnpackOutputRefusals(t *testing.T) {
	cases := []struct {
		name    string
		lim     OutputLimits
		entries []entry
	}{
		{"path trick", OutputLimits{}, []entry{{name: "ok", data: "1"}, {name: "../x", data: "1"}}},
		{"subfolder", OutputLimits{}, []entry{{name: "a/b", data: "1"}}},
		{"symlink", OutputLimits{}, []entry{{name: "l", typ: tar.TypeSymlink}}},
		{"folder", OutputLimits{}, []entry{{name: "d", typ: tar.TypeDir}}},
		{"output.json too large", OutputLimits{MaxOutput: 3}, []entry{{name: OutputFile, data: "{  }"}}},
		{"file too large", OutputLimits{MaxFile: 3}, []entry{{name: "a", data: "1234"}}},
		{"total too large", OutputLimits{MaxTotal: 5}, []entry{{name: "a", data: "123"}, {name: "b", data: "123"}}},
		{"too many files", OutputLimits{MaxFiles: 1}, []entry{{name: "a", data: "1"}, {name: "b", data: "1"}}},
		{"twice", OutputLimits{}, []entry{{name: "a", data: "1"}, {name: "a", data: "2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			os.Mkdir(filepath.Join(dst, OutputDir), 0o700)
			err := UnpackOutput(tarStream(t, c.entries...), dst, c.lim, FolderAccess{})
			if !errors.Is(err, ErrUploadRefused) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if entries, _ := os.ReadDir(filepath.Join(dst, OutputDir)); len(entries) != 0 {
				t.Fatalf("a refused upload left %d files", len(entries))
			}
		})
	}
	// A stream cut in a header or in a file's data is refused too.
	full := tarStream(t, entry{name: "a", data: "1234567890"}, entry{name: "b", data: "1234567890"}).Bytes()
	for _, cut := range []int{1024 + 100, 1024 + 515} {
		dst := t.TempDir()
		os.Mkdir(filepath.Join(dst, OutputDir), 0o700)
		if err := UnpackOutput(bytes.NewReader(full[:cut]), dst, OutputLimits{}, FolderAccess{}); err == nil {
			t.Fatalf("a stream cut at %d was accepted", cut)
		}
		if entries, _ := os.ReadDir(filepath.Join(dst, OutputDir)); len(entries) != 0 {
			t.Fatalf("a cut stream left %d files", len(entries))
		}
	}
	// A broken connection (the reader's error) after the last file is refused.
	dst := t.TempDir()
	os.Mkdir(filepath.Join(dst, OutputDir), 0o700)
	one := tarStream(t, entry{name: "a", data: "1"}).Bytes()
	r := io.MultiReader(bytes.NewReader(one[:1024]), iotest.ErrReader(io.ErrUnexpectedEOF))
	if err := UnpackOutput(r, dst, OutputLimits{}, FolderAccess{}); err == nil {
		t.Fatal("a broken connection was accepted")
	}
}
