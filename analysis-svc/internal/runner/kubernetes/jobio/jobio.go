// Package jobio is the pod side of the kubernetes runner: `analysis-svc jobio fetch` (the init container that
// fills the pod's emptyDir with the job folder's input/) and `analysis-svc jobio upload` (the native sidecar
// that, once stopped after the worker exited, posts output/ back). Both call the callback listener of the
// replica that runs the job, at JOBIO_URL, with a one-time token (JOBIO_INPUT_TOKEN, JOBIO_OUTPUT_TOKEN).
package jobio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// Environment variables (the runner sets them on the containers).
const (
	EnvURL         = "JOBIO_URL"
	EnvInputToken  = "JOBIO_INPUT_TOKEN"
	EnvOutputToken = "JOBIO_OUTPUT_TOKEN"
)

// UploadTimeout bounds the upload once the sidecar is stopped; the pod's terminationGracePeriodSeconds must
// leave it this long (the runner sets 60 s).
const UploadTimeout = 50 * time.Second

// Help describes the two commands (the `jobio` command line's help).
const Help = `Runs inside an analyzer's pod started by the kubernetes runner (docs/kubernetes.md):
  fetch   downloads the job's input/ into DIR and creates DIR/output (the pod's init container)
  upload  waits for SIGTERM (sent once the worker exited), then uploads DIR/output (the pod's sidecar)
Environment: JOBIO_URL, and JOBIO_INPUT_TOKEN (fetch) or JOBIO_OUTPUT_TOKEN (upload).`

// UploadWaiting is what upload prints on stderr once it waits for SIGTERM.
const UploadWaiting = "jobio upload: waiting for SIGTERM (sent once the worker exited)"

// Run runs the command verb (fetch or upload) on the job folder dir, calling the listener at JOBIO_URL with the
// token of the environment. For upload, ctx ending (SIGTERM) starts the upload.
func Run(ctx context.Context, verb, dir string, stderr io.Writer) error {
	if verb != "fetch" && verb != "upload" {
		return fmt.Errorf("jobio: unknown command %q (fetch, upload)", verb)
	}
	base := os.Getenv(EnvURL)
	if base == "" {
		return fmt.Errorf("jobio: %s is not set", EnvURL)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}
	if verb == "fetch" {
		return Fetch(ctx, client, base, os.Getenv(EnvInputToken), dir)
	}
	fmt.Fprintln(stderr, UploadWaiting)
	<-ctx.Done() // the kubelet stops the sidecar once the worker exited
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), UploadTimeout)
	defer cancel()
	skipped, err := Upload(uctx, client, base, os.Getenv(EnvOutputToken), dir)
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "jobio upload: left out (not regular files, or unreadable): %s\n", strings.Join(skipped, ", "))
	}
	return err
}

// Fetch downloads the input of base with token into dir (jobdir.UnpackInput). Connection failures are
// retried for about 30 s (the listener may not be reachable yet); a refusal is final.
func Fetch(ctx context.Context, client *http.Client, base, token, dir string) error {
	var resp *http.Response
	giveUp := time.Now().Add(30 * time.Second)
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/input", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err = client.Do(req)
		if err == nil {
			break
		}
		if !isDial(err) || time.Now().After(giveUp) {
			return fmt.Errorf("jobio fetch: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("jobio fetch: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := jobdir.UnpackInput(resp.Body, dir); err != nil {
		return fmt.Errorf("jobio fetch: %w", err)
	}
	return nil
}

// Upload posts the regular files of dir/output to base with token; it returns the entries it left out.
func Upload(ctx context.Context, client *http.Client, base, token, dir string) ([]string, error) {
	pr, pw := io.Pipe()
	skippedCh := make(chan []string, 1)
	go func() {
		skipped, err := jobdir.PackOutput(pw, dir)
		skippedCh <- skipped
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/output", pr)
	if err != nil {
		pr.Close()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := client.Do(req)
	pr.Close() // ends the packer if the request stopped reading
	skipped := <-skippedCh
	if err != nil {
		return skipped, fmt.Errorf("jobio upload: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return skipped, fmt.Errorf("jobio upload: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return skipped, nil
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
