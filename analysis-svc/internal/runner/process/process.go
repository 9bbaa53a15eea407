// Package process runs analyzers and responders that are programs on this machine (definitions with a
// Command), following the public analyzer protocol (reference: analyzers-notes §2.1 and §6, cortex-notes
// §4.5) so that unmodified real analyzers work.
//
// One run:
//
//   - The job folder (the dir given to Run, created if needed) is written by package jobdir: input/input.json,
//     input/attachment… for a file observable, input/cacerts when config.cacerts is non-blank, an empty
//     output/. Folders 0700, files 0600 (Options.Access, i.e. job.directory_group and job.directory_mode:
//     e.g. 0750/0640 and a daemon's group; Options.GroupReadable: 0750/0640 in the service's group).
//   - The program runs as `<command> <job folder>` with the working directory set to the analyzers root
//     (filepath.Dir(filepath.Dir(command)), as the reference does), stdin /dev/null, in a process group of
//     its own that dies with the service (parent-death SIGKILL, see start.go), with a clean environment:
//     never the service's own (it holds secrets). The environment is
//     PATH (Options.Path, default /usr/local/bin:/usr/bin:/bin), HOME=<job folder>, LANG=LC_ALL=C.UTF-8,
//     PYTHONIOENCODING=utf-8, then Options.Env, then per job: http_proxy/HTTP_PROXY and
//     https_proxy/HTTPS_PROXY from config.proxy.http(s) (or config.proxy_http(s)), and
//     REQUESTS_CA_BUNDLE=<job folder>/input/cacerts when cacerts was written.
//   - stdout and stderr go to one pipe; the last Options.TailSize bytes (default 64 KiB) are kept.
//   - The exit code is ignored. When the program exits, whatever it left running in its process group is
//     killed (SIGKILL to the group, sent while the exited leader is not yet reaped, so the group id cannot
//     have been reused). The console output is read until every writer is gone, or for at most
//     Options.KillWait (a process that left the group may hold the pipe).
//   - Context done (the job timeout, or a cancellation): the whole process group gets SIGKILL, the runner
//     waits for it (at most Options.KillWait) and returns a Failure saying "The job timed out after N and its
//     worker was killed." (or "was cancelled"), followed by the console output tail. output.json is not read.
//   - output/output.json is read by jobdir.ReadOutput (limit Options.MaxOutput, default 64 MiB, else Failure
//     "output too large…"). Missing or empty: Failure whose message is the console output tail, or
//     "no output". File artifacts must be regular files directly in output/; invalid artifacts are dropped
//     with a warning in the log (see jobdir.ReadOutput).
//
// Run returns an error only when the worker could not be started (bad definition, job folder, attachment,
// exec failure such as a missing or non-executable program); the caller records it as the job's failure.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// DefaultPath is the PATH of workers when Options.Path is empty.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Options configures a Runner. The zero value is usable.
type Options struct {
	// Path is the workers' PATH (DefaultPath when empty). Put the interpreter the analyzers need first
	// (e.g. /usr/bin for Debian's python3 and its packages).
	Path string
	// Env adds variables to the workers' environment: "KEY=VALUE", or "KEY" alone to pass the service's own
	// value of KEY (read once by New; skipped when unset), e.g. PYTHONPATH. Later entries win; they override
	// the defaults above but not the per-job proxy and cacerts variables.
	Env []string
	// MaxOutput bounds output/output.json (jobdir.DefaultMaxOutput when <= 0).
	MaxOutput int64
	// TailSize is how much console output is kept for failure messages (jobdir.DefaultTailSize when <= 0).
	TailSize int
	// Access opens the job folder to a group (job.directory_group, job.directory_mode), for workers that hand
	// files to a daemon running as another user (e.g. clamd): see jobdir.FolderAccess.
	Access jobdir.FolderAccess
	// GroupReadable makes the job folder group-readable (0750/0640) in the service's group when Access sets
	// no mode.
	GroupReadable bool
	// KillWait bounds the wait for killed processes and for the console pipe to close (default 5 s).
	KillWait time.Duration
	// Log receives warnings about dropped artifacts (nil = discard).
	Log *slog.Logger
}

// Runner runs Command definitions. It is safe for concurrent use.
type Runner struct {
	opts    Options
	env     []string // Options.Env resolved
	starter starter  // starts workers from one thread, for their parent-death signal (start.go)
}

var _ runner.Runner = (*Runner)(nil)

// New returns a Runner.
func New(opts Options) *Runner {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = jobdir.DefaultMaxOutput
	}
	if opts.TailSize <= 0 {
		opts.TailSize = jobdir.DefaultTailSize
	}
	if opts.KillWait <= 0 {
		opts.KillWait = 5 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	var env []string
	for _, kv := range opts.Env {
		if kv == "" {
			continue
		}
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		} else if v, ok := os.LookupEnv(kv); ok {
			env = append(env, kv+"="+v)
		}
	}
	return &Runner{opts: opts, env: env}
}

// Run executes def.Command on in in the job folder dir. See the package comment.
func (r *Runner) Run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, error) {
	if def.Command == "" || !filepath.IsAbs(def.Command) {
		return analysis.RunOutput{}, fmt.Errorf("%s has no absolute command to run", def.ID)
	}
	if err := ctx.Err(); err != nil {
		return jobdir.Interrupted(err, 0, ""), nil
	}
	job, err := jobdir.Prepare(dir, def.Kind, in, jobdir.Options{Access: r.opts.Access, GroupReadable: r.opts.GroupReadable})
	if err != nil {
		return analysis.RunOutput{}, err
	}

	tail := jobdir.NewTail(r.opts.TailSize)
	interrupted, elapsed, err := r.exec(ctx, def.Command, job, tail)
	if err != nil {
		return analysis.RunOutput{}, err
	}
	if interrupted != nil {
		return jobdir.Interrupted(interrupted, elapsed, tail.String()), nil
	}
	out, err := jobdir.ReadOutput(job.Dir, jobdir.ReadOptions{MaxSize: r.opts.MaxOutput, Log: r.opts.Log,
		LogArgs: []any{"definition", def.ID, "dir", job.Dir}})
	if errors.Is(err, jobdir.ErrNoOutput) {
		return jobdir.NoOutput(tail.String()), nil
	}
	return out, err
}

// environ is the environment of a job's worker.
func (r *Runner) environ(job *jobdir.Job) []string {
	var env envList
	env.set("PATH=" + r.opts.Path)
	env.set("HOME=" + job.Dir)
	env.set("LANG=C.UTF-8")
	env.set("LC_ALL=C.UTF-8")
	env.set("PYTHONIOENCODING=utf-8")
	for _, kv := range r.env {
		env.set(kv)
	}
	if job.HTTPProxy != "" {
		env.set("http_proxy=" + job.HTTPProxy)
		env.set("HTTP_PROXY=" + job.HTTPProxy)
	}
	if job.HTTPSProxy != "" {
		env.set("https_proxy=" + job.HTTPSProxy)
		env.set("HTTPS_PROXY=" + job.HTTPSProxy)
	}
	if p := job.CACertsPath(job.Dir); p != "" {
		env.set("REQUESTS_CA_BUNDLE=" + p)
	}
	return env
}

// exec runs the program until it exits or ctx is done. It returns ctx's error when the run was interrupted.
func (r *Runner) exec(ctx context.Context, command string, job *jobdir.Job, tail *jobdir.Tail) (interrupted error, elapsed time.Duration, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", command, err)
	}
	defer pr.Close()
	cmd := &exec.Cmd{
		Path:        command,
		Args:        []string{command, job.Dir},
		Dir:         filepath.Dir(filepath.Dir(command)),
		Env:         r.environ(job),
		Stdout:      pw,
		Stderr:      pw,
		SysProcAttr: sysProcAttr(), // own process group; SIGKILL when the service dies (start.go)
	}
	start := time.Now()
	err = r.starter.start(cmd)
	pw.Close() // the child holds its own copy; EOF comes when every process holding it is gone
	if err != nil {
		return nil, 0, fmt.Errorf("cannot start %s: %w", command, err)
	}
	pid := cmd.Process.Pid

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(tail, pr)
	}()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		waitExited(pid)
	}()

	stuck := false
	select {
	case <-exited:
	case <-ctx.Done():
		interrupted = ctx.Err()
		killGroup(pid)
		select {
		case <-exited:
		case <-time.After(r.opts.KillWait):
			stuck = true
		}
	}
	elapsed = time.Since(start)
	// The leader has exited but is not reaped yet, so its pid (= the group id) is still taken: kill what
	// it left behind in its group.
	killGroup(pid)
	if stuck {
		go func() { _ = cmd.Wait() }() // reap it whenever it dies
		r.opts.Log.Warn("worker process did not die after SIGKILL", "pid", pid, "command", command)
	} else {
		_ = cmd.Wait() // the exit code is ignored by the protocol
	}

	_ = pr.SetReadDeadline(time.Now().Add(r.opts.KillWait))
	<-copied
	return interrupted, elapsed, nil
}

func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitExited blocks until process pid has exited, without reaping it (waitid with WNOWAIT).
func waitExited(pid int) {
	const (
		pPID    = 1         // P_PID
		wExited = 0x4       // WEXITED
		wNoWait = 0x1000000 // WNOWAIT
	)
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), wExited|wNoWait, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// envList is an environment where setting a key again replaces its value in place.
type envList []string

func (e *envList) set(kv string) {
	k, _, _ := strings.Cut(kv, "=")
	for i, old := range *e {
		if ok, _, _ := strings.Cut(old, "="); ok == k {
			(*e)[i] = kv
			return
		}
	}
	*e = append(*e, kv)
}
