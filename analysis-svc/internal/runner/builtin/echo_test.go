package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func TestRunEcho(t *testing.T) {
	file := writeFile(t, "attachment7", []byte("hello"))
	tests := []struct {
		name      string
		in        analysis.RunInput
		wantFull  map[string]any
		wantLevel string
		wantArts  []analysis.OutputArtifact
		wantOps   []map[string]any
	}{
		{name: "value, defaults",
			in: analysis.RunInput{Data: "8.8.8.8", DataType: "ip", TLP: 1, PAP: 3, Message: "hi",
				Parameters: map[string]any{"x": "y"}, Config: map[string]any{"level": "info", "artifacts": false}},
			wantFull:  map[string]any{"data": "8.8.8.8", "dataType": "ip", "tlp": 1, "pap": 3, "message": "hi"},
			wantLevel: "info"},
		{name: "level and artifact",
			in: analysis.RunInput{Data: "evil.com", DataType: "domain",
				Config: map[string]any{"level": "malicious", "artifacts": true}},
			wantLevel: "malicious",
			wantArts:  []analysis.OutputArtifact{{DataType: "domain", Data: "evil.com", Tags: []string{"echo"}}}},
		{name: "unknown level is info",
			in:        analysis.RunInput{Data: "x", DataType: "other", Config: map[string]any{"level": "critical"}},
			wantLevel: "info"},
		{name: "tag operation",
			in:        analysis.RunInput{Data: "x", DataType: "other", Config: map[string]any{"tag": "seen"}},
			wantLevel: "info", wantOps: []map[string]any{{"type": "AddTagToArtifact", "tag": "seen"}}},
		{name: "file",
			in: analysis.RunInput{DataType: "file", File: file, Filename: "hello.txt", ContentType: "text/plain",
				Config: map[string]any{"artifacts": true}},
			wantFull:  map[string]any{"filename": "hello.txt", "contentType": "text/plain", "size": int64(5)},
			wantLevel: "info",
			wantArts: []analysis.OutputArtifact{{DataType: "file", File: file, Filename: "hello.txt",
				ContentType: "text/plain", Tags: []string{"echo"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runEcho(context.Background(), tt.in)
			if err != nil || !out.Success {
				t.Fatalf("run: %+v, %v", out, err)
			}
			for k, want := range tt.wantFull {
				if got := out.Full[k]; got != want {
					t.Errorf("full.%s = %#v, want %#v", k, got, want)
				}
			}
			if tt.in.DataType == "file" {
				if _, ok := out.Full["data"]; ok {
					t.Error("full.data set for a file")
				}
			}
			for _, tx := range taxonomiesOf(t, out) {
				if tx.Level != tt.wantLevel || tx.Namespace != "Echo" {
					t.Errorf("taxonomy %+v, want level %s", tx, tt.wantLevel)
				}
			}
			if got, want := mustJSON(t, out.Artifacts), mustJSON(t, orEmpty(tt.wantArts)); got != want {
				t.Errorf("artifacts = %s, want %s", got, want)
			}
			if got, want := mustJSON(t, out.Operations), mustJSON(t, orEmptyOps(tt.wantOps)); got != want {
				t.Errorf("operations = %s, want %s", got, want)
			}
		})
	}
}

func orEmpty(a []analysis.OutputArtifact) []analysis.OutputArtifact {
	if a == nil {
		return []analysis.OutputArtifact{}
	}
	return a
}

func orEmptyOps(o []map[string]any) []map[string]any {
	if o == nil {
		return []map[string]any{}
	}
	return o
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunEcho_secretsRemoved(t *testing.T) {
	in := analysis.RunInput{Data: "x", DataType: "other", Config: map[string]any{
		"api_key": "k1", "Password": "p1", "client_secret": "s1", "keep": "visible", "KEYRING": "k2",
		"proxy": map[string]any{"http": "http://proxy:3128", "password": "p2"},
	}}
	for _, run := range []struct {
		name string
		out  func() string
	}{
		{"report", func() string {
			out, _ := runEcho(context.Background(), in)
			return mustJSON(t, out.Full)
		}},
		{"failure input", func() string {
			in := in
			in.Parameters = map[string]any{"fail": "boom"}
			out, _ := runEcho(context.Background(), in)
			if out.Success || out.ErrorMessage != "boom" {
				t.Fatalf("got %+v", out)
			}
			return out.Input
		}},
	} {
		t.Run(run.name, func(t *testing.T) {
			s := run.out()
			for _, secret := range []string{"k1", "p1", "s1", "k2", "p2"} {
				if strings.Contains(s, `"`+secret+`"`) {
					t.Errorf("%s leaks %s", s, secret)
				}
			}
			if !strings.Contains(s, `"keep":"visible"`) || !strings.Contains(s, `"http":"http://proxy:3128"`) ||
				strings.Count(s, `"REMOVED"`) != 5 {
				t.Errorf("%s", s)
			}
		})
	}
	if in.Config["api_key"] != "k1" {
		t.Error("the input's config was changed")
	}
}

func TestRunEcho_fail(t *testing.T) {
	for _, tt := range []struct {
		fail any
		want string
	}{
		{"boom", "boom"}, {true, "failure requested by parameters.fail"}, {42.0, "42"},
	} {
		out, err := runEcho(context.Background(), analysis.RunInput{Data: "x", DataType: "other",
			Parameters: map[string]any{"fail": tt.fail}})
		if err != nil || out.Success || out.ErrorMessage != tt.want || !strings.Contains(out.Input, `"dataType":"other"`) {
			t.Errorf("fail %v: %+v, %v", tt.fail, out, err)
		}
	}
	for _, notFail := range []any{false, "", nil} {
		out, _ := runEcho(context.Background(), analysis.RunInput{Data: "x", DataType: "other",
			Parameters: map[string]any{"fail": notFail}})
		if !out.Success {
			t.Errorf("fail %v: %+v", notFail, out)
		}
	}
}

func TestRunEcho_sleep(t *testing.T) {
	start := time.Now()
	out, err := runEcho(context.Background(), analysis.RunInput{Data: "x", DataType: "other",
		Parameters: map[string]any{"sleep": 60.0}})
	if err != nil || !out.Success {
		t.Fatalf("%+v %v", out, err)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("slept %v, want 60ms", d)
	}

	// A cancelled job stops sleeping at once.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = runEcho(ctx, analysis.RunInput{Data: "x", DataType: "other", Parameters: map[string]any{"sleep": "600000"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Minute { // a hang detector: the sleep asked for is 10 minutes
		t.Errorf("returned after %v", d)
	}

	// So does a job cancelled while it waits, and one cancelled before it starts.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := runEcho(ctx, analysis.RunInput{DataType: "other", Parameters: map[string]any{"sleep": 1e12}}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if _, err := runEcho(ctx, analysis.RunInput{DataType: "other"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
