// Package runner is the execution side of jobs. It resolves each analyzer and responder definition to the
// executor of its jobs once, when the catalog takes the definition in (analysis.Catalog.SetExecutors): in
// process for a built-in, the process runner for a command, the docker runner for an image (job.runner). An
// executor runs each job in a job folder of its own under job.directory (private unless
// job.directory_group/_mode say otherwise), holding a copy of the observable's file, and removes the folder
// on Release, once the domain has stored the job's file artifacts; at start-up Executors.RemoveStale removes
// the folders a dead process left behind. The domain sees none of this but analysis.Executor and
// analysis.Executors.
package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// Runner runs the jobs of the definitions of one family: process.Runner (Command), docker.Runner and
// kubernetes.Runner (DockerImage).
type Runner interface {
	// Run executes the worker on in. dir is a private folder the runner may use for the job; it is removed
	// by the caller. Output file artifacts must be left inside dir.
	Run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, error)
}

// Job names the job a Runner's Run is for: the executor puts it in Run's context (JobFrom). The process and
// docker runners do not need it; the kubernetes runner names the attempt's Kubernetes Job after it, so that
// two replicas never run one attempt twice.
type Job struct {
	ID           string
	Attempt      int // the job's claim count; 0 when unknown (a caller outside the job queue)
	Organization string
}

type jobKey struct{}

// WithJob returns ctx carrying job.
func WithJob(ctx context.Context, job Job) context.Context {
	return context.WithValue(ctx, jobKey{}, job)
}

// JobFrom returns the job WithJob put in ctx.
func JobFrom(ctx context.Context) (Job, bool) {
	j, ok := ctx.Value(jobKey{}).(Job)
	return j, ok
}

// Options configures Executors. The zero value runs built-ins only, in job folders under the system temp
// folder.
type Options struct {
	Dir     string              // where job folders are made (job.directory); "" = the system temp folder
	Access  jobdir.FolderAccess // who else may read job folders (job.directory_group, job.directory_mode)
	Process Runner              // runs Command definitions; nil = the process runner is not in job.runner
	Docker  Runner              // runs DockerImage definitions; nil = not in job.runner, or no engine answers
	// Kubernetes runs DockerImage definitions as Kubernetes Jobs; nil = not in job.runner. When both are set,
	// job.runner's order decides (KubernetesFirst).
	Kubernetes      Runner
	KubernetesFirst bool
	Files           analysis.FileStore // where observables' files are read (needed for file observables)
	Log             *slog.Logger
	Metrics         *Metrics // counts every run (nil: not counted)
}

// Executors resolves definitions to the executor of their jobs. It is safe for concurrent use.
type Executors struct {
	opts Options
}

var _ analysis.Executors = (*Executors)(nil)

// New returns the executors of opts.
func New(opts Options) *Executors {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Executors{opts: opts}
}

// Executor returns the executor of def's jobs; nil when no enabled runner can run them (see Runnable).
func (e *Executors) Executor(def analysis.Definition) analysis.Executor {
	x, _ := e.resolve(def)
	return x
}

// Runnable says why no enabled runner can run def ("" when one can): the catalog's scans refuse such
// definitions with this reason.
func (e *Executors) Runnable(def analysis.Definition) string {
	_, why := e.resolve(def)
	return why
}

func (e *Executors) resolve(def analysis.Definition) (analysis.Executor, string) {
	switch {
	case def.Builtin != nil:
		return &executor{opts: &e.opts, def: def, name: RunnerBuiltin}, ""
	case def.Command != "" && e.opts.Process != nil:
		return &executor{opts: &e.opts, def: def, runner: e.opts.Process, name: RunnerProcess}, ""
	case def.DockerImage != "" && e.opts.Kubernetes != nil && (e.opts.KubernetesFirst || e.opts.Docker == nil):
		return &executor{opts: &e.opts, def: def, runner: e.opts.Kubernetes, name: RunnerKubernetes}, ""
	case def.DockerImage != "" && e.opts.Docker != nil:
		return &executor{opts: &e.opts, def: def, runner: e.opts.Docker, name: RunnerDocker}, ""
	case def.Command != "" && def.DockerImage != "":
		return nil, "neither the process nor the docker or kubernetes runner is enabled (job.runner)"
	case def.Command != "":
		return nil, "a command definition needs the process runner (job.runner)"
	default:
		return nil, "a dockerImage definition needs the docker runner (job.runner) and a Docker engine that answers, or the kubernetes runner"
	}
}

// executor runs the jobs of one definition: its built-in (runner nil) or its family's runner.
type executor struct {
	opts   *Options
	def    analysis.Definition
	runner Runner
	name   string // the runner's, in the metrics
}

// Execute makes the job folder, copies the observable's file into it and runs the worker within the job's
// timeout (see analysis.Executor).
func (x *executor) Execute(ctx context.Context, run analysis.Execution) (out analysis.RunOutput, folder string, err error) {
	start := time.Now()
	defer func() { x.opts.Metrics.observe(x.name, time.Since(start), out, err) }()
	if x.runner == nil && run.File == nil { // a built-in without a file has nothing to put in a folder
		out, err := x.builtin(ctx, run.Input, run.Timeout)
		return out, "", err
	}
	dir, err := os.MkdirTemp(x.opts.Dir, jobDirPattern(run.JobID))
	if err != nil {
		return analysis.RunOutput{}, "", &analysis.ExecError{Message: "cannot create the job folder", Err: err}
	}
	out, err = x.execute(ctx, run, dir)
	if err != nil {
		os.RemoveAll(dir)
		return analysis.RunOutput{}, "", err
	}
	return out, dir, nil
}

func (x *executor) execute(ctx context.Context, run analysis.Execution, dir string) (analysis.RunOutput, error) {
	if err := x.opts.Access.Apply(dir, true); err != nil { // 0700 unless job.directory_group/_mode say otherwise
		return analysis.RunOutput{}, &analysis.ExecError{Message: "cannot protect the job folder", Err: err}
	}
	in := run.Input
	if run.File != nil {
		path, err := x.fetch(ctx, run.File.ID, filepath.Join(dir, "observable"))
		if err != nil {
			return analysis.RunOutput{}, &analysis.ExecError{Message: "cannot read the observable's file", Err: err}
		}
		in.File = path
	}
	if x.runner == nil {
		return x.builtin(ctx, in, run.Timeout)
	}
	tctx, cancel := context.WithTimeout(ctx, run.Timeout)
	defer cancel()
	tctx = WithJob(tctx, Job{ID: run.JobID, Attempt: run.Attempt, Organization: run.Organization})
	out, err := x.runner.Run(tctx, x.def, in, filepath.Join(dir, "run"))
	return out, startError(err)
}

// builtin runs the definition's built-in within timeout.
func (x *executor) builtin(ctx context.Context, in analysis.RunInput, timeout time.Duration) (analysis.RunOutput, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := x.def.Builtin(tctx, in)
	if err == nil && tctx.Err() != nil && ctx.Err() == nil {
		out = analysis.RunOutput{ErrorMessage: fmt.Sprintf("the job timed out after %s and was stopped", timeout)}
	}
	return out, startError(err)
}

func startError(err error) error {
	if err == nil {
		return nil
	}
	return &analysis.ExecError{Message: "the worker could not be started", Err: err}
}

// Release removes a job folder Execute returned ("" for a built-in's job without a file: nothing to remove).
func (x *executor) Release(folder string) {
	if folder != "" {
		os.RemoveAll(folder)
	}
}

// fetch copies a stored file to path, readable by the service's user only.
func (x *executor) fetch(ctx context.Context, id, path string) (string, error) {
	r, _, err := x.opts.Files.Open(ctx, id)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}
