package jobdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadOutput writes random bytes as output/output.json of a job folder that also holds a regular file
// (report.bin), a sub-folder (sub) and a symlink (link → report.bin): ReadOutput never panics, its only error
// is ErrNoOutput (for a blank output), and what it returns is what the service can store and serve: a
// success has full, summary and operations, JSON-encodable; every artifact has a data type and either a
// non-empty value or a regular file directly inside output/.
func FuzzReadOutput(f *testing.F) {
	for _, s := range []string{
		``, ` `, `null`, `[]`, `"x"`, `{}`, `{"success":false}`, `{"success":false,"errorMessage":42,"input":{"a":1}}`,
		`{"success":true}`, `{"success":true,"full":[]}`, `{"success":"true","full":{}}`,
		`{"success":true,"full":{"x":NaN,"y":-Infinity},"summary":{"taxonomies":[]}}`,
		`{"success":true,"full":{},"summary":[],"operations":[{"type":"AddTagToCase","tag":"x"},1,null],"artifacts":{}}`,
		`{"success":true,"full":{},"artifacts":[{"dataType":"ip","data":"1.2.3.4"},{"dataType":"ip","data":5},{"dataType":"ip"},
			{"dataType":"file","file":"report.bin"},{"dataType":"file","file":"../output/report.bin"},{"dataType":"file","file":"link"},
			{"dataType":"file","file":"sub"},{"dataType":"file","file":"output.json"},{"dataType":"file","file":"nope"},
			{"dataType":" ","data":"x"},{"dataType":"file","file":".."},{"dataType":"file","file":"a\u0000b"},
			{"dataType":"domain","data":"x","tlp":2.5,"tags":["a",1],"message":7},"str",null]}`,
		"{\"success\":true,\"full\":{\"s\":\"\xff\xfe\"}}",
		`{"success":true,"full":{}} trailing`,
		`{"success":true,"full":{"a":"NaN","b":"\"NaN"},"c":NaNx}`,
	} {
		f.Add([]byte(s))
	}
	// One job folder per fuzzing process (ReadOutput only reads it): only output.json changes per input.
	dir := f.TempDir()
	out := filepath.Join(dir, OutputDir)
	if err := os.MkdirAll(filepath.Join(out, "sub"), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.bin"), []byte("r"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("report.bin", filepath.Join(out, "link")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(out, OutputFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := ReadOutput(dir, ReadOptions{MaxSize: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrNoOutput) {
				t.Fatalf("error %v is not ErrNoOutput", err)
			}
			if len(bytes.TrimSpace(data)) != 0 {
				t.Fatalf("ErrNoOutput for a non-blank output.json %q", data)
			}
			return
		}
		if len(bytes.TrimSpace(data)) == 0 {
			t.Fatalf("a blank output.json gave %+v, want ErrNoOutput", o)
		}
		for _, v := range []any{o.Full, o.Summary, o.Operations} {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("output not JSON-encodable: %v", err)
			}
		}
		if !o.Success {
			if o.Full != nil || len(o.Artifacts) != 0 {
				t.Fatalf("a failure with a report: %+v", o)
			}
			return
		}
		if o.Full == nil || o.Summary == nil || o.Operations == nil || o.ErrorMessage != "" {
			t.Fatalf("success without full/summary/operations: %+v", o)
		}
		for _, op := range o.Operations {
			if op == nil {
				t.Fatalf("nil operation in %+v", o.Operations)
			}
		}
		for _, a := range o.Artifacts {
			if strings.TrimSpace(a.DataType) == "" {
				t.Fatalf("artifact without a data type: %+v", a)
			}
			if a.DataType != "file" {
				if a.Data == "" || a.File != "" {
					t.Fatalf("value artifact %+v", a)
				}
				continue
			}
			if filepath.Dir(a.File) != out || a.Filename == "" || a.ContentType == "" {
				t.Fatalf("file artifact %+v is not a file directly inside %s", a, out)
			}
			st, err := os.Lstat(a.File)
			if err != nil || !st.Mode().IsRegular() {
				t.Fatalf("file artifact %+v: %v %v", a, st, err)
			}
		}
	})
}
