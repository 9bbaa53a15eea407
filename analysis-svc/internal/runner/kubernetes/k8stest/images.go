package k8stest

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// WorkerSource is the program of the test worker image (BuildWorkerImage): it speaks the public job-folder
// protocol, and its behaviour depends on the observable's data (a responder's: the title of its data object):
// "silent" writes no output, "sleep" sleeps 5 minutes, "error" reports a failure, "oom" allocates 1 GiB,
// "hold" waits until the configuration's release_url answers 200, "stubborn" too but ignores SIGTERM; anything else succeeds with artifacts.
const WorkerSource = `package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
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
	write := func(out map[string]any) {
		b, _ := json.Marshal(out)
		if err := os.WriteFile(filepath.Join(job, "output", "output.json"), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	data := in["data"]
	if m, ok := data.(map[string]any); ok {
		data = m["title"]
	}
	switch data {
	case "silent":
		fmt.Println("stdout line")
		fmt.Fprintln(os.Stderr, "stderr line")
		os.Exit(2)
	case "sleep":
		fmt.Println("sleeping")
		time.Sleep(5 * time.Minute)
		return
	case "error":
		write(map[string]any{"success": false, "errorMessage": "the API key was refused"})
		os.Exit(1)
	case "oom":
		fmt.Println("allocating")
		var keep [][]byte
		for i := 0; i < 64; i++ {
			b := make([]byte, 16<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		fmt.Println("still alive", len(keep))
		os.Exit(3)
	case "hold", "stubborn":
		if data == "stubborn" { // a worker that only a SIGKILL stops: its pod outlives a delete by the grace period
			signal.Ignore(syscall.SIGTERM)
		}
		url, _ := in["config"].(map[string]any)["release_url"].(string)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if resp, err := http.Get(url); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(job, "output", "extracted.bin"), []byte("artifact from the pod"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	write(map[string]any{
		"success": true,
		"summary": map[string]any{"taxonomies": []any{map[string]any{"level": "safe", "namespace": "K8s", "predicate": "Seen", "value": 1}}},
		"full":    map[string]any{"input": in, "uid": os.Getuid()},
		"artifacts": []any{
			map[string]any{"dataType": "file", "file": "extracted.bin", "filename": "extracted.bin", "contentType": "application/x-test"},
			map[string]any{"dataType": "domain", "data": "evil.example"},
		},
	})
	fmt.Println("done")
}
`

// DockerBuild builds dir with dockerfile (written into dir) as tag.
func DockerBuild(dir, dockerfile, tag string) error {
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	out, err := exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build %s: %v: %s", tag, err, out)
	}
	return nil
}

// GoBuild builds pkg of the module in dir as a static Linux binary out.
func GoBuild(dir, pkg, out string, env ...string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux"), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", pkg, err, b)
	}
	return nil
}

// BuildWorkerImage builds WorkerSource into a FROM scratch image with a tag of its own; the caller removes
// it (docker rmi).
func BuildWorkerImage() (string, error) {
	dir, err := os.MkdirTemp("", "k8s-analyzer-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(WorkerSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module analyzer\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	if err := GoBuild(dir, ".", "analyzer", "GOWORK=off", "GOFLAGS="); err != nil {
		return "", err
	}
	tag := "openir-k8stest-analyzer:" + strings.ToLower(rand.Text()[:10])
	return tag, DockerBuild(dir, "FROM scratch\nCOPY analyzer /worker/analyzer\nENTRYPOINT [\"/worker/analyzer\"]\n", tag)
}

// BuildJobioImage builds this repository's analysis-svc into a FROM scratch image, as deploy/docker does
// (the image of the jobio init container and sidecar); the caller removes it.
func BuildJobioImage() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "k8s-jobio-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := GoBuild(filepath.Join(root, "analysis-svc"), "./cmd/analysis-svc", filepath.Join(dir, "analysis-svc")); err != nil {
		return "", err
	}
	tag := "openir-k8stest-jobio:" + strings.ToLower(rand.Text()[:10])
	return tag, DockerBuild(dir, "FROM scratch\nCOPY analysis-svc /usr/local/bin/analysis-svc\nUSER 65532:65532\nENTRYPOINT [\"/usr/local/bin/analysis-svc\"]\n", tag)
}
