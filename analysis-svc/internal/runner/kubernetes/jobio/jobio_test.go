package jobio

import (
	"bytes"
	"context"
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

// Run refuses an unknown command and a missing listener URL (the command line is tested in cmd/analysis-svc).
func TestRun_Refusals(t *testing.T) {
	t.Setenv(EnvURL, "")
	if err := Run(t.Context(), "serve", t.TempDir(), io.Discard); err == nil || !strings.Contains(err.Error(), `unknown command "serve"`) {
		t.Errorf("serve: %v", err)
	}
	if err := Run(t.Context(), "fetch", t.TempDir(), io.Discard); err == nil || !strings.Contains(err.Error(), "JOBIO_URL is not set") {
		t.Errorf("fetch without JOBIO_URL: %v", err)
	}
}

// fetch, then upload once the context ends (the kubelet's SIGTERM), against a server playing the callback
// listener: the input lands in the pod's folder and output/ goes back.
func TestRun_FetchThenUploadOnStop(t *testing.T) {
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
	if err := Run(t.Context(), "fetch", pod, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(pod, "input", "input.json")); err != nil || !bytes.Contains(b, []byte(`"8.8.8.8"`)) {
		t.Fatalf("fetched input: %s, %v", b, err)
	}
	os.WriteFile(filepath.Join(pod, "output", "output.json"), []byte(`{"success":true,"full":{}}`), 0o644)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, "upload", pod, io.Discard) }()
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
	err := Run(t.Context(), "fetch", filepath.Join(t.TempDir(), "p2"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
}
