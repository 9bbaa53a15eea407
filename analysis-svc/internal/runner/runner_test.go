package runner_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// family is a process or docker runner that records the job folder it was given.
type family struct {
	dir string
	job runner.Job // the job the executor named in Run's context
}

func (f *family) Run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, error) {
	f.dir = dir
	f.job, _ = runner.JobFrom(ctx)
	return analysis.RunOutput{Success: true, Full: map[string]any{"definition": def.ID, "data": in.Data}}, nil
}

// TestExecutors_Resolve: a definition resolves to its built-in, or to the runner of its family when that
// runner is enabled; otherwise to none, with the reason a scan refuses it for.
func TestExecutors_Resolve(t *testing.T) {
	builtin := func(context.Context, analysis.RunInput) (analysis.RunOutput, error) { return analysis.RunOutput{}, nil }
	process, docker, kube := &family{}, &family{}, &family{}
	for _, c := range []struct {
		name      string
		def       analysis.Definition
		opts      runner.Options
		why       string // "" = runnable
		ranFamily *family
	}{
		{"built-in", analysis.Definition{Builtin: builtin}, runner.Options{}, "", nil},
		{"command", analysis.Definition{Command: "/x"}, runner.Options{Process: process}, "", process},
		{"command without process", analysis.Definition{Command: "/x"}, runner.Options{Docker: docker}, "needs the process runner", nil},
		{"image", analysis.Definition{DockerImage: "x"}, runner.Options{Process: process, Docker: docker}, "", docker},
		{"image without docker", analysis.Definition{DockerImage: "x"}, runner.Options{Process: process}, "needs the docker runner", nil},
		{"both, neither runner", analysis.Definition{Command: "/x", DockerImage: "x"}, runner.Options{}, "neither the process nor the docker or kubernetes runner", nil},
		{"image, kubernetes only", analysis.Definition{DockerImage: "x"}, runner.Options{Kubernetes: kube}, "", kube},
		{"image, docker listed first", analysis.Definition{DockerImage: "x"}, runner.Options{Docker: docker, Kubernetes: kube}, "", docker},
		{"image, kubernetes listed first", analysis.Definition{DockerImage: "x"}, runner.Options{Docker: docker, Kubernetes: kube, KubernetesFirst: true}, "", kube},
		{"both, docker only", analysis.Definition{Command: "/x", DockerImage: "x"}, runner.Options{Docker: docker}, "", docker},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.def.ID, c.def.Kind = "Def_1_0", analysis.KindAnalyzer
			c.opts.Dir = t.TempDir()
			e := runner.New(c.opts)
			x, why := e.Executor(c.def), e.Runnable(c.def)
			if (x == nil) != (c.why != "") || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
				t.Fatalf("Executor = %v, Runnable = %q; want runnable %v (%q)", x, why, c.why == "", c.why)
			}
			if x == nil {
				return
			}
			process.dir, docker.dir, kube.dir = "", "", ""
			out, folder, err := x.Execute(t.Context(), analysis.Execution{JobID: "j1", Attempt: 2, Organization: "acme",
				Input: analysis.RunInput{Data: "v"}, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release(folder)
			if c.ranFamily != nil && (c.ranFamily.dir != filepath.Join(folder, "run") || out.Full["definition"] != "Def_1_0") {
				t.Errorf("the runner got folder %q (job folder %s), output %v", c.ranFamily.dir, folder, out)
			}
			if c.ranFamily != nil && c.ranFamily.job != (runner.Job{ID: "j1", Attempt: 2, Organization: "acme"}) {
				t.Errorf("the runner got the job %+v", c.ranFamily.job)
			}
			if other := map[*family]*family{process: docker, docker: kube, kube: docker}[c.ranFamily]; other != nil && other.dir != "" {
				t.Errorf("the other runner ran too")
			}
		})
	}
}

// TestExecutor_Execute: a job runs in a private folder of its own under Options.Dir, named for the service's
// process and the job, holding a copy of the observable's file; Release removes it. A failure to prepare the
// job is an ExecError with a message for the job's readers and leaves no folder; a built-in that overruns its
// timeout reports it.
func TestExecutor_Execute(t *testing.T) {
	ctx := t.Context()
	files, err := store.NewFileStore(ctx, docstoretest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	info, err := files.Put(ctx, strings.NewReader("sample content"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var seen analysis.RunInput
	read := analysis.Definition{ID: "Read_1_0", Kind: analysis.KindAnalyzer,
		Builtin: func(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
			seen = in
			b, err := os.ReadFile(in.File)
			return analysis.RunOutput{Success: true, Full: map[string]any{"content": string(b)}}, err
		}}
	dir := t.TempDir()
	e := runner.New(runner.Options{Dir: dir, Files: files})
	x := e.Executor(read)

	t.Run("file observable", func(t *testing.T) {
		out, folder, err := x.Execute(ctx, analysis.Execution{JobID: "job1", Timeout: time.Minute,
			Input: analysis.RunInput{DataType: "file", Filename: "sample.bin"}, File: &analysis.Attachment{ID: info.ID}})
		if err != nil {
			t.Fatal(err)
		}
		prefix := filepath.Join(dir, runner.JobDirPrefix+strconv.Itoa(os.Getpid())+"-job1-")
		if !strings.HasPrefix(folder, prefix) || out.Full["content"] != "sample content" ||
			filepath.Dir(seen.File) != folder || seen.Filename != "sample.bin" {
			t.Fatalf("folder %s (want under %s*), output %v, input %+v", folder, prefix, out, seen)
		}
		if st, err := os.Stat(folder); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("job folder: %v, %v; want 0700", st, err)
		}
		x.Release(folder)
		if _, err := os.Stat(folder); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the folder is still there after Release: %v", err)
		}
	})
	t.Run("failures", func(t *testing.T) {
		for _, c := range []struct {
			name string
			x    analysis.Executor
			file string
			want string
		}{
			{"no job folder", runner.New(runner.Options{Dir: filepath.Join(dir, "absent"), Files: files}).Executor(read), info.ID,
				"cannot create the job folder"},
			{"no observable", x, "0000", "cannot read the observable's file"},
			{"worker fails to start", e.Executor(analysis.Definition{ID: "Fail_1_0", Builtin: func(context.Context, analysis.RunInput) (analysis.RunOutput, error) {
				return analysis.RunOutput{}, errors.New("/secret/path: no")
			}}), info.ID, "the worker could not be started"},
		} {
			_, folder, err := c.x.Execute(ctx, analysis.Execution{JobID: "job2", Timeout: time.Minute, File: &analysis.Attachment{ID: c.file}})
			var ee *analysis.ExecError
			if !errors.As(err, &ee) || ee.Message != c.want || folder != "" {
				t.Errorf("%s: %v (folder %q); want an ExecError %q", c.name, err, folder, c.want)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(dir, runner.JobDirPrefix+"*-job2-*")); len(left) != 0 {
			t.Errorf("failed jobs left folders: %v", left)
		}
	})
	t.Run("built-in timeout", func(t *testing.T) {
		slow := e.Executor(analysis.Definition{ID: "Slow_1_0", Builtin: func(ctx context.Context, _ analysis.RunInput) (analysis.RunOutput, error) {
			<-ctx.Done()
			return analysis.RunOutput{Success: true}, nil
		}})
		out, folder, err := slow.Execute(ctx, analysis.Execution{JobID: "job3", Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		slow.Release(folder)
		if out.Success || out.ErrorMessage != "the job timed out after 50ms and was stopped" {
			t.Errorf("output %+v; want the timeout", out)
		}
	})
	t.Run("built-in without a file: no folder", func(t *testing.T) {
		echo := e.Executor(analysis.Definition{ID: "Echo_1_0", Builtin: func(_ context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
			return analysis.RunOutput{Success: true, Full: map[string]any{"data": in.Data}}, nil
		}})
		out, folder, err := echo.Execute(ctx, analysis.Execution{JobID: "job4", Timeout: time.Minute, Input: analysis.RunInput{Data: "v"}})
		if err != nil || folder != "" || !out.Success || out.Full["data"] != "v" {
			t.Fatalf("output %+v, folder %q, err %v; want the built-in's output and no folder", out, folder, err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, runner.JobDirPrefix+"*-job4-*")); len(left) != 0 {
			t.Errorf("a folder was made: %v", left)
		}
		echo.Release(folder) // nothing to remove
	})
}

// TestExecutors_RemoveStale: start-up removes the job folders of service processes that no longer run, and
// keeps those of running ones and anything else.
func TestExecutors_RemoveStale(t *testing.T) {
	const dead = 1 << 30 // above any pid_max (at most 2²²): no such process
	dir := t.TempDir()
	names := map[string]bool{ // name → removed
		runner.JobDirPrefix + strconv.Itoa(dead) + "-job-x":        true,
		runner.JobDirPrefix + strconv.Itoa(os.Getpid()) + "-job-x": false,
		runner.JobDirPrefix + "1-job-x":                            false, // init runs
		"other-" + strconv.Itoa(dead) + "-job-x":                   false,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	runner.New(runner.Options{Dir: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))}).RemoveStale()
	for n, removed := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); errors.Is(err, os.ErrNotExist) != removed {
			t.Errorf("%s: removed %v, want %v; log:\n%s", n, !removed, removed, logs.String())
		}
	}
}
