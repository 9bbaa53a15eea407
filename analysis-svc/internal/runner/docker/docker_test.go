package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// analyzerSource is a real analyzer following the public protocol, built static for a FROM scratch image.
// Its behaviour depends on the observable's data.
const analyzerSource = `package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

func main() {
	job := "/job"
	if len(os.Args) > 1 {
		job = os.Args[1]
	}
	raw, err := os.ReadFile(filepath.Join(job, "input", "input.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot read input:", err)
		os.Exit(1)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(1)
	}
	switch in["data"] {
	case "silent":
		fmt.Println("stdout line")
		fmt.Fprintln(os.Stderr, "stderr line")
		os.Exit(2)
	case "sleep":
		fmt.Println("sleeping")
		time.Sleep(5 * time.Minute)
		return
	}
	full := map[string]any{"args": os.Args[1:], "input": in, "uid": os.Getuid(), "env": os.Environ()}
	if ifs, err := net.Interfaces(); err == nil {
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		full["interfaces"] = names
	}
	if ca := os.Getenv("REQUESTS_CA_BUNDLE"); ca != "" {
		b, _ := os.ReadFile(ca)
		full["cacerts"] = string(b)
	}
	if f, ok := in["file"].(string); ok {
		b, err := os.ReadFile(filepath.Join(job, "input", f))
		if err != nil {
			fmt.Fprintln(os.Stderr, "cannot read the file:", err)
			os.Exit(1)
		}
		sum := sha256.Sum256(b)
		full["sha256"] = hex.EncodeToString(sum[:])
	}
	if err := os.WriteFile(filepath.Join(job, "output", "extracted.bin"), []byte("artifact from the container"), 0o444); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := map[string]any{
		"success": true,
		"summary": map[string]any{"taxonomies": []any{map[string]any{"level": "safe", "namespace": "Go", "predicate": "Seen", "value": 1}}},
		"full":    full,
		"artifacts": []any{
			map[string]any{"dataType": "file", "file": "extracted.bin", "filename": "extracted.bin", "contentType": "application/x-test"},
			map[string]any{"dataType": "domain", "data": "evil.example"},
			map[string]any{"dataType": "file", "file": "../input/input.json"},
		},
		"operations": []any{map[string]any{"type": "AddTagToArtifact", "tag": "go"}},
	}
	b, _ := json.Marshal(out)
	if err := os.WriteFile(filepath.Join(job, "output", "output.json"), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// testImage builds the analyzer and an image FROM scratch holding it (no registry needed) and removes the
// image at the end of the test.
func testImage(t *testing.T, r *Runner) string {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(analyzerSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module analyzer\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(src, "analyzer")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test analyzer: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY analyzer /worker/analyzer\nENTRYPOINT [\"/worker/analyzer\"]\n")},
		{"analyzer", 0o755, binary},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	tag := "analysis-svc-runner-test-" + rand.Text()[:10]
	image := strings.ToLower(tag) + ":1"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	resp, err := r.engine.cli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{Tags: []string{image}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("docker build: %v", err)
	}
	err = progressError(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("docker build: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := r.engine.cli.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the test image: %v", err)
		}
	})
	return image
}

// progressError reads a build's JSON progress stream and returns the error it reports, if any.
func progressError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return m.Error
		}
	}
}

// containers lists the containers (running or not) of a job folder.
func containers(t *testing.T, r *Runner, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ids, err := listContainers(ctx, r, dir)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func listContainers(ctx context.Context, r *Runner, dir string) ([]string, error) {
	abs, _ := filepath.Abs(dir)
	list, err := r.engine.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelJobFolder+"="+abs)})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

func TestRunner_Run(t *testing.T) {
	probe := New(Options{})
	if !probe.Available(t.Context()) {
		t.Skipf("no Docker engine answers at %s", DefaultHost)
	}
	image := testImage(t, probe)
	def := analysis.Definition{ID: "GoTest_1_0", Kind: analysis.KindAnalyzer, Name: "GoTest", Version: "1.0", DockerImage: image}

	run := func(t *testing.T, r *Runner, ctx context.Context, in analysis.RunInput) (analysis.RunOutput, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "run")
		out, err := r.Run(ctx, def, in, dir)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if left := containers(t, r, dir); len(left) != 0 {
			t.Errorf("containers left behind: %v", left)
		}
		return out, dir
	}

	t.Run("report with artifacts", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var logs bytes.Buffer
		r := New(Options{User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), Network: "none",
			Log: slog.New(slog.NewTextHandler(&logs, nil))})
		conf := map[string]any{"cacerts": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "service": "get"}
		out, dir := run(t, r, ctx, analysis.RunInput{Data: "example.org", DataType: "domain", TLP: 2, PAP: 2, Config: conf})
		if !out.Success {
			t.Fatalf("not a success: %q", out.ErrorMessage)
		}
		full := out.Full
		if args, _ := full["args"].([]any); len(args) != 0 {
			t.Errorf("the container got arguments %v; the entrypoint must run alone", args)
		}
		if full["uid"] != json.Number(strconv.Itoa(os.Getuid())) { // numbers as the worker wrote them
			t.Errorf("uid = %v", full["uid"])
		}
		if !reflect.DeepEqual(full["interfaces"], []any{"lo"}) {
			t.Errorf("interfaces = %v, want only lo with network none", full["interfaces"])
		}
		if full["cacerts"] != conf["cacerts"] {
			t.Errorf("cacerts through REQUESTS_CA_BUNDLE = %q", full["cacerts"])
		}
		for _, kv := range full["env"].([]any) {
			if k, _, _ := strings.Cut(kv.(string), "="); k != "PATH" && k != "HOSTNAME" && k != "HOME" && k != "REQUESTS_CA_BUNDLE" {
				t.Errorf("unexpected variable in the container: %s", kv)
			}
		}
		if in := full["input"].(map[string]any); in["data"] != "example.org" || in["dataType"] != "domain" {
			t.Errorf("input = %v", in)
		}
		jobDir, _ := filepath.Abs(dir)
		want := []analysis.OutputArtifact{
			{DataType: "file", File: filepath.Join(jobDir, "output", "extracted.bin"), Filename: "extracted.bin", ContentType: "application/x-test"},
			{DataType: "domain", Data: "evil.example"},
		}
		if !reflect.DeepEqual(out.Artifacts, want) {
			t.Errorf("artifacts = %+v", out.Artifacts)
		}
		if b, err := os.ReadFile(want[0].File); err != nil || string(b) != "artifact from the container" {
			t.Errorf("artifact content %q, %v", b, err)
		}
		if !strings.Contains(logs.String(), "worker artifact dropped") {
			t.Errorf("the ../input/input.json artifact was not reported:\n%s", logs.String())
		}
		if want := []map[string]any{{"type": "AddTagToArtifact", "tag": "go"}}; !reflect.DeepEqual(out.Operations, want) {
			t.Errorf("operations = %v", out.Operations)
		}
		if len(out.Summary) != 1 {
			t.Errorf("summary = %v", out.Summary)
		}
	})

	t.Run("file observable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		content := []byte("some file content\n")
		src := filepath.Join(t.TempDir(), "observable")
		if err := os.WriteFile(src, content, 0o600); err != nil {
			t.Fatal(err)
		}
		out, _ := run(t, New(Options{}), ctx, analysis.RunInput{DataType: "file", File: src, Filename: "a.txt", ContentType: "text/plain"})
		sum := sha256.Sum256(content)
		if !out.Success || out.Full["sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("no output gives the logs", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out, _ := run(t, New(Options{}), ctx, analysis.RunInput{Data: "silent", DataType: "other"})
		if out.Success || !strings.Contains(out.ErrorMessage, "stdout line\n") || !strings.Contains(out.ErrorMessage, "stderr line\n") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("timeout kills and removes the container", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		out, _ := run(t, New(Options{}), ctx, analysis.RunInput{Data: "sleep", DataType: "other"})
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("Run took %s after a 3 s timeout", took)
		}
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "The job timed out after ") {
			t.Errorf("out = %+v", out)
		}
	})

	t.Run("cancellation keeps the logs so far", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r := New(Options{})
		dir := filepath.Join(t.TempDir(), "run")
		go func() { // cancel once the worker has said it sleeps
			defer cancel()
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				ids, _ := listContainers(ctx, r, dir)
				if len(ids) == 1 {
					var logs bytes.Buffer
					if r.engine.logs(ctx, ids[0], 10, &logs) == nil && strings.Contains(logs.String(), "sleeping") {
						return
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		out, err := r.Run(ctx, def, analysis.RunInput{Data: "sleep", DataType: "other"}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if out.Success || !strings.HasPrefix(out.ErrorMessage, "The job was cancelled after ") || !strings.HasSuffix(out.ErrorMessage, "sleeping\n") {
			t.Errorf("out = %+v", out)
		}
		if left := containers(t, r, dir); len(left) != 0 {
			t.Errorf("containers left behind: %v", left)
		}
	})

	t.Run("missing image", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		r := New(Options{Pull: PullNever})
		d := def
		d.DockerImage = "analysis-svc-runner-test-absent:1"
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := r.Run(ctx, d, analysis.RunInput{Data: "x", DataType: "other"}, dir); err == nil ||
			!strings.Contains(err.Error(), "not available") {
			t.Errorf("err = %v", err)
		}
		if left := containers(t, r, dir); len(left) != 0 {
			t.Errorf("containers left behind: %v", left)
		}
	})
}

func TestRunner_Available(t *testing.T) {
	if New(Options{Host: "unix://" + filepath.Join(t.TempDir(), "none.sock")}).Available(t.Context()) {
		t.Error("an absent socket is available")
	}
	if New(Options{Host: "ssh://nowhere"}).Available(t.Context()) {
		t.Error("an unsupported host is available")
	}
}
