// Package docker runs analyzers and responders packaged as container images (definitions with a
// DockerImage, e.g. the public catalogs' ghcr.io/thehive-project/<name>:<version>), used when job.runner
// includes docker. It follows the reference server's docker runner (cortex-notes §4.5, analyzers-notes §2.1).
//
// It talks to the engine with the official Docker Go client (github.com/moby/moby/client): the API version
// is negotiated with the engine (API 1.40 and later: Docker 19.03+), the host comes from Options.Host or the
// standard DOCKER_HOST (default unix:///var/run/docker.sock), tcp:// hosts use TLS with the certificates of
// Options.CertPath or DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem; DOCKER_TLS_VERIFY), and pulls send the
// registry's credentials from a docker config.json (Options.RegistryConfig, else $DOCKER_CONFIG/config.json or
// ~/.docker/config.json; inline "auth" entries only, no credential helpers).
//
// One run:
//
//   - The job folder is written by package jobdir exactly as for the process runner (input/input.json,
//     input/attachment…, input/cacerts, empty output/).
//   - A container is created from the image with the job folder bind-mounted read-write at /job, no command
//     or arguments (the image's entrypoint runs; cortexutils then defaults to /job), and an environment of
//     only REQUESTS_CA_BUNDLE=/job/input/cacerts when cacerts was written (the engine and the image add their
//     own PATH, HOME, HOSTNAME). Options: Network ("" = the engine's default bridge, "none" = no network),
//     User ("" = the image's user: real analyzer images run as root and install their Python packages
//     under /root), Memory, NanoCPUs, PidsLimit. Labels name the job folder and definition, so a leftover
//     container can be found (label openir.analysis-svc.job-folder).
//   - Image missing: Options.Pull decides (PullMissing, the default: pull then create; PullNever: fail;
//     PullAlways: pull before every run, as the reference's docker.autoUpdate). A pull is bounded by
//     Options.PullTimeout (10 min) and the job's context; an image without tag or digest is pulled as
//     :latest, as `docker run` does.
//   - The runner waits for the container to stop. Context done (timeout, cancellation): the container is
//     killed and a Failure "The job timed out after N and its worker was killed." (or "was cancelled") with
//     the tail of its logs is returned.
//   - output/output.json is read by jobdir.ReadOutput, as for the process runner. Missing or empty: Failure
//     with the tail of the container's logs (last LogLines lines, at most TailSize bytes), or "no output".
//   - The container is always removed (with its anonymous volumes), also on errors and cancellation.
//
// The job folder must be reachable by the engine: when the service itself runs in a container, set
// JobDirectory (the job folders' parent as the service sees it, e.g. job.directory) and HostJobDirectory
// (the same folder as the engine's host sees it). The folder is 0700: a container running as root reads it;
// with User set to another uid, use that of the service, or job.directory_group with a group of that uid. Files a root container leaves in
// output/ are removed with the job folder, but folders it creates there may not be removable by a non-root
// service.
//
// Run returns an error only when the worker could not be started (no image, engine unreachable, mount
// refused…); the caller records it as the job's failure.
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/pkg/apperr"
)

// DefaultHost is the engine's socket when neither Options.Host nor DOCKER_HOST is set.
const DefaultHost = "unix:///var/run/docker.sock"

// MountPoint is where the job folder appears inside the container.
const MountPoint = "/job"

// Labels set on every container.
const (
	LabelJobFolder  = "openir.analysis-svc.job-folder"
	LabelDefinition = "openir.analysis-svc.definition"
)

// PullPolicy says when images are pulled.
type PullPolicy string

// Pull policies.
const (
	PullMissing PullPolicy = "missing" // only an image the engine does not have (the default)
	PullNever   PullPolicy = "never"   // never: images are loaded by the operator
	PullAlways  PullPolicy = "always"  // before every run, to follow a moving tag
)

// Options configures a Runner. The zero value is usable.
type Options struct {
	Host      string     // unix:///path/to/socket, /path/to/socket or tcp://host:port; "" = DOCKER_HOST or DefaultHost
	Network   string     // container network mode; "" = engine default, "none" = no network
	User      string     // "uid:gid" or a user name of the image; "" = the image's user
	Memory    int64      // bytes; 0 = unlimited
	NanoCPUs  int64      // 1e9 = one CPU; 0 = unlimited
	PidsLimit int64      // 0 = unlimited
	Pull      PullPolicy // "" = PullMissing
	// CertPath is a folder with ca.pem, cert.pem and key.pem for TLS to a tcp:// host ("" = DOCKER_CERT_PATH
	// when DOCKER_TLS_VERIFY is set).
	CertPath string
	// RegistryConfig is a docker config.json whose "auths" hold registry credentials for pulls ("" =
	// $DOCKER_CONFIG/config.json or ~/.docker/config.json if present).
	RegistryConfig string
	// PullTimeout bounds one image pull (default 10 min).
	PullTimeout time.Duration
	// JobDirectory and HostJobDirectory translate a job folder path to the engine host's view (see the
	// package comment). Both empty: the paths are the same.
	JobDirectory, HostJobDirectory string
	// MaxOutput bounds output/output.json (jobdir.DefaultMaxOutput when <= 0).
	MaxOutput int64
	// TailSize bounds the logs kept for failure messages (jobdir.DefaultTailSize when <= 0).
	TailSize int
	// LogLines is how many of the last log lines are fetched (default 10000).
	LogLines int
	// Access opens the job folder to a group (job.directory_group, job.directory_mode; see jobdir.Options).
	Access jobdir.FolderAccess
	// GroupReadable makes the job folder 0750/0640 (see jobdir.Options).
	GroupReadable bool
	// Log receives warnings (dropped artifacts, cleanup failures); nil = discard.
	Log *slog.Logger
}

// Runner runs DockerImage definitions. It is safe for concurrent use.
type Runner struct {
	opts   Options
	engine *engine
	err    error // a bad Host: every call fails with it
}

var _ runner.Runner = (*Runner)(nil)

// cleanupTimeout bounds kill, logs and remove calls made after the job's context is done.
const cleanupTimeout = 30 * time.Second

// New returns a Runner. It does not contact the engine (see Available).
func New(opts Options) *Runner {
	if opts.Pull == "" {
		opts.Pull = PullMissing
	}
	if opts.PullTimeout <= 0 {
		opts.PullTimeout = 10 * time.Minute
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = jobdir.DefaultMaxOutput
	}
	if opts.TailSize <= 0 {
		opts.TailSize = jobdir.DefaultTailSize
	}
	if opts.LogLines <= 0 {
		opts.LogLines = 10000
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e, err := newEngine(opts)
	return &Runner{opts: opts, engine: e, err: err}
}

// Available reports whether a Docker engine answers on the configured host (within 5 s or ctx).
func (r *Runner) Available(ctx context.Context) bool {
	if r.err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.engine.ping(ctx) == nil
}

// Run executes def.DockerImage on in in the job folder dir. See the package comment.
func (r *Runner) Run(ctx context.Context, def analysis.Definition, in analysis.RunInput, dir string) (analysis.RunOutput, error) {
	if r.err != nil {
		return analysis.RunOutput{}, r.err
	}
	if strings.TrimSpace(def.DockerImage) == "" {
		return analysis.RunOutput{}, fmt.Errorf("%s has no docker image", def.ID)
	}
	if err := ctx.Err(); err != nil {
		return jobdir.Interrupted(err, 0, ""), nil
	}
	job, err := jobdir.Prepare(dir, def.Kind, in, jobdir.Options{Access: r.opts.Access, GroupReadable: r.opts.GroupReadable})
	if err != nil {
		return analysis.RunOutput{}, err
	}
	source, err := r.hostPath(job.Dir)
	if err != nil {
		return analysis.RunOutput{}, err
	}
	conf := &container.Config{
		Image:  def.DockerImage,
		Env:    []string{},
		User:   r.opts.User,
		Labels: map[string]string{LabelJobFolder: job.Dir, LabelDefinition: def.ID},
	}
	host := &container.HostConfig{
		Mounts:      []mount.Mount{{Type: mount.TypeBind, Source: source, Target: MountPoint}},
		NetworkMode: container.NetworkMode(r.opts.Network),
		Resources:   container.Resources{Memory: r.opts.Memory, NanoCPUs: r.opts.NanoCPUs},
	}
	if r.opts.PidsLimit > 0 {
		host.PidsLimit = &r.opts.PidsLimit
	}
	if p := job.CACertsPath(MountPoint); p != "" {
		conf.Env = append(conf.Env, "REQUESTS_CA_BUNDLE="+p)
	}

	start := time.Now()
	id, err := r.create(ctx, conf, host)
	if err != nil {
		if ctx.Err() != nil {
			return jobdir.Interrupted(ctx.Err(), time.Since(start), ""), nil
		}
		return analysis.RunOutput{}, err
	}
	defer r.remove(ctx, id, def.ID)

	// interrupted ends a run whose context is done: the worker's output so far, then the kill. The container
	// may be running even when the start call itself was interrupted (the engine started it, the answer was
	// cut short).
	interrupted := func() analysis.RunOutput {
		elapsed := time.Since(start)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		logs := r.logs(cctx, id) // read before the kill: what the worker said so far
		if err := r.engine.kill(cctx, id); err != nil {
			r.opts.Log.Warn("kill a worker container", "container", id, "definition", def.ID, "err", err)
		}
		if after := r.logs(cctx, id); len(after) > len(logs) {
			logs = after
		}
		return jobdir.Interrupted(ctx.Err(), elapsed, logs)
	}
	if err := r.engine.start(ctx, id); err != nil {
		if ctx.Err() != nil {
			return interrupted(), nil
		}
		return analysis.RunOutput{}, fmt.Errorf("start the container of %s: %w", def.DockerImage, err)
	}
	waitErr := r.engine.wait(ctx, id)
	if ctx.Err() != nil {
		return interrupted(), nil
	}
	if waitErr != nil {
		return analysis.RunOutput{}, fmt.Errorf("wait for the container of %s: %w", def.DockerImage, waitErr)
	}

	out, err := jobdir.ReadOutput(job.Dir, jobdir.ReadOptions{MaxSize: r.opts.MaxOutput, Log: r.opts.Log,
		LogArgs: []any{"definition", def.ID, "dir", job.Dir}})
	if errors.Is(err, jobdir.ErrNoOutput) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		return jobdir.NoOutput(r.logs(cctx, id)), nil
	}
	return out, err
}

// create creates the container, pulling the image as the policy says.
func (r *Runner) create(ctx context.Context, conf *container.Config, host *container.HostConfig) (string, error) {
	if r.opts.Pull == PullAlways {
		if err := r.pull(ctx, conf.Image); err != nil {
			return "", err
		}
	}
	id, err := r.engine.create(ctx, conf, host)
	if errors.Is(err, errNoImage) && r.opts.Pull == PullMissing {
		if err := r.pull(ctx, conf.Image); err != nil {
			return "", err
		}
		id, err = r.engine.create(ctx, conf, host)
	}
	if errors.Is(err, errNoImage) {
		// The job's errorMessage: a safe message (the engine's text stays in the log).
		return "", apperr.Wrap(apperr.Unavailable, fmt.Sprintf("the docker image %s is not available on this server", conf.Image), err)
	}
	if err != nil {
		return "", fmt.Errorf("create a container of %s: %w", conf.Image, err)
	}
	return id, nil
}

func (r *Runner) pull(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.PullTimeout)
	defer cancel()
	if err := r.engine.pull(ctx, image); err != nil {
		return fmt.Errorf("pull the docker image %s: %w", image, err)
	}
	return nil
}

// logs returns the tail of the container's output ("" if the engine cannot give it).
func (r *Runner) logs(ctx context.Context, id string) string {
	tail := jobdir.NewTail(r.opts.TailSize)
	if err := r.engine.logs(ctx, id, r.opts.LogLines, tail); err != nil {
		r.opts.Log.Warn("read a worker container's logs", "container", id, "err", err)
	}
	return tail.String()
}

// remove removes the container even when the job's context is done.
func (r *Runner) remove(ctx context.Context, id, def string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.engine.remove(ctx, id); err != nil {
		r.opts.Log.Warn("remove a worker container", "container", id, "definition", def, "err", err)
	}
}

// hostPath is the job folder as the engine's host sees it.
func (r *Runner) hostPath(dir string) (string, error) {
	if r.opts.HostJobDirectory == "" {
		return dir, nil
	}
	from, err := filepath.Abs(r.opts.JobDirectory)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(from, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("the job folder %s is not under the docker job directory %s", dir, from)
	}
	return filepath.Join(r.opts.HostJobDirectory, rel), nil
}
