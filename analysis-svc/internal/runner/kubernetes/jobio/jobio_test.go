package jobio

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// The command line: a command is required, help is help, anything unexpected is an error with the usage.
func TestMain_Arguments(t *testing.T) {
	t.Setenv(EnvURL, "")
	for _, c := range []struct {
		args []string
		err  string
	}{
		{nil, "a command is needed"},
		{[]string{"serve"}, "a command is needed"},
		{[]string{"--help"}, flag.ErrHelp.Error()},
		{[]string{"fetch", "extra"}, `unexpected argument "extra"`},
		{[]string{"fetch", "--nope"}, "flag provided but not defined"},
		{[]string{"fetch"}, "JOBIO_URL is not set"},
	} {
		var stderr bytes.Buffer
		err := Main(t.Context(), c.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err = %v, want %s", c.args, err, c.err)
		}
		if !strings.Contains(stderr.String(), "usage: analysis-svc jobio") && c.err != "JOBIO_URL is not set" {
			t.Errorf("%q: no usage on stderr: %q", c.args, stderr.String())
		}
	}
}

// fetch, then upload once the context ends (the kubelet's SIGTERM), against a server playing the callback
// listener: the input lands in the pod's folder and output/ goes back.
func TestMain_FetchThenUploadOnStop(t *testing.T) {
	src := filepath.Join(t.TempDir(), "job")
	if _, err := jobdir.Prepare(src, analysis.KindAnalyzer, analysis.RunInput{Data: "8.8.8.8", DataType: "ip"}, jobdir.Options{}); err != nil {
		t.Fatal(err)
	}
	received := filepath.Join(t.TempDir(), "back")
	os.MkdirAll(filepath.Join(received, jobdir.OutputDir), 0o700)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/run/input" && r.Header.Get("Authorization") == "Bearer in-token":
			jobdir.PackInput(w, src)
		case r.Method == http.MethodPost && r.URL.Path == "/run/output" && r.Header.Get("Authorization") == "Bearer out-token":
			if err := jobdir.UnpackOutput(r.Body, received, jobdir.OutputLimits{}, jobdir.FolderAccess{}); err != nil {
				http.Error(w, err.Error(), http.StatusUnprocessableEntity)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	t.Setenv(EnvURL, srv.URL+"/run")
	t.Setenv(EnvInputToken, "in-token")
	t.Setenv(EnvOutputToken, "out-token")
	pod := filepath.Join(t.TempDir(), "pod")
	if err := Main(t.Context(), []string{"fetch", "--dir=" + pod}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(pod, "input", "input.json")); err != nil || !bytes.Contains(b, []byte(`"8.8.8.8"`)) {
		t.Fatalf("fetched input: %s, %v", b, err)
	}
	os.WriteFile(filepath.Join(pod, "output", "output.json"), []byte(`{"success":true,"full":{}}`), 0o644)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Main(ctx, []string{"upload", "--dir=" + pod}, io.Discard) }()
	select {
	case err := <-done:
		t.Fatalf("upload ran before the stop: %v", err)
	default:
	}
	stop() // SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out, err := jobdir.ReadOutput(received, jobdir.ReadOptions{}); err != nil || !out.Success {
		t.Fatalf("uploaded output: %+v, %v", out, err)
	}

	// A wrong token is refused, not retried.
	t.Setenv(EnvInputToken, "wrong")
	err := Main(t.Context(), []string{"fetch", "--dir=" + filepath.Join(t.TempDir(), "p2")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
}
