package jobdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func TestPrepare(t *testing.T) {
	t.Run("responder data and group readable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		job, err := Prepare(dir, analysis.KindResponder, analysis.RunInput{Data: map[string]any{"title": "x"},
			DataType: "thehive:case", Config: map[string]any{"cacerts": "  ", "proxy_http": "http://p:1"}},
			Options{GroupReadable: true})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, "input", "input.json"))
		want := `{"data":{"title":"x"},"dataType":"thehive:case","tlp":0,"pap":0,"message":"","parameters":{},"config":{"cacerts":"  ","proxy_http":"http://p:1"}}`
		if string(raw) != want {
			t.Errorf("input.json = %s", raw)
		}
		if job.CACerts || job.HTTPProxy != "http://p:1" || job.HTTPSProxy != "" {
			t.Errorf("job = %+v (blank cacerts must not be written)", job)
		}
		for path, mode := range map[string]os.FileMode{".": 0o750, "input": 0o750, "output": 0o750, "input/input.json": 0o640} {
			if st, err := os.Stat(filepath.Join(dir, path)); err != nil || st.Mode().Perm() != mode {
				t.Errorf("mode of %s = %v, %v", path, st.Mode(), err)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		for name, in := range map[string]analysis.RunInput{
			"file without file":     {DataType: "file"},
			"object data":           {Data: map[string]any{}, DataType: "ip"},
			"missing observable":    {DataType: "file", File: filepath.Join(t.TempDir(), "nope")},
			"observable not a file": {DataType: "file", File: t.TempDir()},
		} {
			if _, err := Prepare(filepath.Join(t.TempDir(), "run"), analysis.KindAnalyzer, in, Options{}); err == nil {
				t.Errorf("%s: prepared", name)
			}
		}
		src := filepath.Join(t.TempDir(), "f")
		os.WriteFile(src, []byte("x"), 0o600)
		if _, err := Prepare(filepath.Join(t.TempDir(), "run"), analysis.KindResponder, analysis.RunInput{File: src}, Options{}); err == nil {
			t.Error("a responder got a file")
		}
	})
}

func TestReadOutput_missing(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadOutput(dir, ReadOptions{}); !errors.Is(err, ErrNoOutput) {
		t.Errorf("no output folder: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, "output", "output.json"), 0o700)
	if _, err := ReadOutput(dir, ReadOptions{}); !errors.Is(err, ErrNoOutput) {
		t.Errorf("output.json a folder: %v", err)
	}
	os.Remove(filepath.Join(dir, "output", "output.json"))
	os.WriteFile(filepath.Join(dir, "output", "output.json"), []byte(" \n"), 0o600)
	if _, err := ReadOutput(dir, ReadOptions{}); !errors.Is(err, ErrNoOutput) {
		t.Errorf("blank output.json: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "output", "output.json"), []byte(`[1]`), 0o600)
	if out, err := ReadOutput(dir, ReadOptions{}); err != nil || out.Success || !strings.HasPrefix(out.ErrorMessage, "invalid output.json") {
		t.Errorf("array output.json: %+v, %v", out, err)
	}
	os.WriteFile(filepath.Join(dir, "output", "output.json"), []byte(`{"success": "yes", "full": {}}`), 0o600)
	if out, err := ReadOutput(dir, ReadOptions{}); err != nil || out.Success || out.ErrorMessage != "no error message" {
		t.Errorf("success not true: %+v, %v", out, err)
	}
}

func TestTail(t *testing.T) {
	tl := NewTail(8)
	tl.Write([]byte("abc"))
	if got := tl.String(); got != "abc" {
		t.Errorf("short = %q", got)
	}
	for range 10 {
		tl.Write([]byte("0123456789"))
	}
	tl.Write([]byte("é!")) // 3 bytes
	if got := tl.String(); got != "…(truncated)\n56789é!" {
		t.Errorf("long = %q", got)
	}
	tl = NewTail(2)
	tl.Write([]byte("éb")) // the kept bytes start inside é
	if got := tl.String(); !utf8.ValidString(got) || got != "…(truncated)\nb" {
		t.Errorf("cut rune = %q", got)
	}
}

func TestNonFiniteToNull(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity], "s": "NaN \"Infinity\" -Infinity"}`
	want := `{"a": null, "b": [null, null], "s": "NaN \"Infinity\" -Infinity"}`
	if got := string(nonFiniteToNull([]byte(in))); got != want {
		t.Errorf("got %s", got)
	}
}

func TestInterrupted(t *testing.T) {
	if m := Interrupted(context.DeadlineExceeded, 90*time.Second+300*time.Millisecond, "out\n").ErrorMessage; m !=
		"The job timed out after 1m30s and its worker was killed. Worker output:\nout\n" {
		t.Errorf("timeout = %q", m)
	}
	if m := Interrupted(context.Canceled, 1500*time.Millisecond, "").ErrorMessage; m !=
		"The job was cancelled after 1.5s and its worker was killed." {
		t.Errorf("cancel = %q", m)
	}
}
