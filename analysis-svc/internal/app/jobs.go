package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/jobevent"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/builtin"
	"github.com/openir/platform/analysis-svc/internal/runner/catalog"
	"github.com/openir/platform/analysis-svc/internal/runner/docker"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
	"github.com/openir/platform/analysis-svc/internal/store"
)

// jobService builds the executors of job.runner, the analyzer catalog (built-ins, then
// analyzer.paths/responder.paths) and the job queue; opts.Runners, opts.Catalog and opts.Jobs replace the
// runners' settings, the catalog and the queue's settings.
func (a *App) jobService(ctx context.Context, opts Options) error {
	cfg, log, db := a.Config, a.Log, a.DB
	var err error
	if a.WorkerStore, err = store.NewWorkerStore(ctx, db); err != nil {
		return err
	}
	if a.JobStore, err = store.NewJobStore(ctx, db); err != nil {
		return err
	}
	if a.Files, err = store.NewFileStore(ctx, db); err != nil {
		return err
	}
	var jcfg analysis.JobsConfig
	if opts.Jobs != nil {
		jcfg = *opts.Jobs
		if jcfg.Log == nil {
			jcfg.Log = log
		}
	} else if jcfg, err = a.jobsConfig(); err != nil {
		return err
	}
	var ropts runner.Options
	if opts.Runners != nil {
		ropts = *opts.Runners
	} else if ropts, err = a.runnerOptions(ctx); err != nil {
		return err
	}
	ropts.Files = a.Files
	if ropts.Log == nil {
		ropts.Log = log
	}
	if ropts.Metrics == nil {
		ropts.Metrics = runner.NewMetrics()
	}
	a.collectors = append(a.collectors, ropts.Metrics.Collectors()...)
	if k, ok := ropts.Kubernetes.(*kubernetes.Runner); ok {
		a.collectors = append(a.collectors, k.Metrics().Collectors()...)
	}
	a.Runners = runner.New(ropts)
	a.Catalog = opts.Catalog
	if a.Catalog == nil {
		// Built-ins are fixed; the definitions of analyzer.paths and responder.paths are read at start-up (below)
		// and again on POST /api/{analyzer,responder}definition/scan.
		a.Catalog = analysis.NewCatalog(append(builtin.Analyzers(), builtin.Responders()...)...)
		a.Catalog.SetScanner(catalog.Scanner(cfg.Analyzer.Paths, cfg.Responder.Paths, a.Runners.Runnable, log), log)
	}
	a.Catalog.SetExecutors(a.Runners) // each definition resolved to its executor once, here or when a scan loads it
	if opts.Catalog == nil {
		for _, k := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
			rep := a.Catalog.Rescan(k)
			log.Info("definitions", "kind", string(k), "count", rep.Definitions, "loaded", len(rep.Added),
				"refused", len(rep.Refused), "paths_without_definitions", len(rep.Warnings))
		}
	}
	a.JobsConfig = jcfg
	a.Jobs = analysis.NewJobs(jobevent.Wrap(a.JobStore, a.Events, api.JobObject), a.WorkerStore, a.Catalog, a.Files, jcfg, time.Now)
	a.Workers = analysis.NewWorkers(a.WorkerStore, a.Catalog, time.Now)
	return nil
}

// jobsConfig is the job queue's settings of job.*.
func (a *App) jobsConfig() (analysis.JobsConfig, error) {
	cfg := a.Config
	maxFile, err := bytesize(cfg.Job.MaxFile)
	if err != nil {
		return analysis.JobsConfig{}, fmt.Errorf("job.max_file: %w", err)
	}
	return analysis.JobsConfig{
		Workers: cfg.Job.Workers, OrgMax: cfg.Job.OrgMax, Reserve: cfg.Job.Reserve, Lease: cfg.Job.Lease, MaxAttempts: cfg.Job.Attempts, CacheMinutes: cfg.Job.Cache,
		DefaultTimeout: cfg.Job.Timeout, WaitMax: cfg.Job.Waitreport.Max, MaxFileSize: maxFile,
		Extract: builtin.Extract, Log: a.Log,
	}, nil
}

// runnerOptions is the job folders' settings of job.* and the runners of job.runner.
func (a *App) runnerOptions(ctx context.Context) (runner.Options, error) {
	cfg, log := a.Config, a.Log
	access, err := jobdir.ParseFolderAccess(cfg.Job.DirectoryGroup, cfg.Job.DirectoryMode)
	if err != nil {
		return runner.Options{}, err
	}
	if err := access.Check(cfg.Job.Directory); err != nil { // refuse to start rather than fail every job
		return runner.Options{}, err
	}
	if access.Shared() || access.SetGroup {
		log.Info("job folders are open to a group (job.directory_group, job.directory_mode)", "access", access.String())
	}
	o := runner.Options{Dir: cfg.Job.Directory, Access: access, Log: log}
	dockerSeen := false
	for _, r := range cfg.Job.Runner {
		switch r {
		case "kubernetes":
			k, err := a.kubernetesRunner(ctx, access)
			if err != nil {
				log.Warn("job.runner includes kubernetes but the runner cannot start: kubernetes analyzers are disabled", "err", err)
				continue
			}
			o.Kubernetes, o.KubernetesFirst = k, !dockerSeen
		case "process":
			o.Process = process.New(process.Options{Path: cfg.Job.Process.Path, Env: cfg.Job.Process.Env,
				Access: access, Log: log})
		case "docker":
			dockerSeen = true
			d := docker.New(docker.Options{Host: cfg.Job.Docker.Host, Network: cfg.Job.Docker.Network,
				User: cfg.Job.Docker.User, Pull: docker.PullPolicy(cfg.Job.Docker.Pull), CertPath: cfg.Job.Docker.CertPath,
				RegistryConfig: cfg.Job.Docker.RegistryConfig, Access: access, Log: log})
			if !d.Available(ctx) {
				log.Warn("job.runner includes docker but no Docker engine answers: docker analyzers are disabled")
				continue
			}
			o.Docker = d
		}
	}
	return o, nil
}

// kubernetesRunner builds the kubernetes runner of job.kubernetes.*, checks it with a server-side dry run of
// a Job and opens its callback listener (StartJobs serves it).
func (a *App) kubernetesRunner(ctx context.Context, access jobdir.FolderAccess) (*kubernetes.Runner, error) {
	k := a.Config.Job.Kubernetes
	var cc kubernetes.ClientConfig
	var err error
	if k.Kubeconfig != "" {
		cc, err = kubernetes.LoadKubeconfig(k.Kubeconfig, k.Context)
	} else {
		cc, err = kubernetes.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewClient(cc)
	if err != nil {
		return nil, err
	}
	settings, err := k.Settings() // checked by Load
	if err != nil {
		return nil, err
	}
	var profiles []kubernetes.Profile
	for _, p := range k.Profiles {
		ps, err := p.Settings()
		if err != nil {
			return nil, err
		}
		profiles = append(profiles, kubernetes.Profile{Definitions: p.Definitions, Organizations: p.Organizations, Settings: ps})
	}
	maxFile, err := bytesize(a.Config.Job.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("job.max_file: %w", err)
	}
	l, err := net.Listen("tcp", k.CallbackListen)
	if err != nil {
		return nil, fmt.Errorf("job.kubernetes.callback_listen: %w", err)
	}
	k.CallbackListen = l.Addr().String() // the port bound: callback_listen may say :0
	callback, err := k.Callback()
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("job.kubernetes.%w", err)
	}
	opts := kubernetes.Options{Client: client, Settings: settings, Profiles: profiles, Server: k.Server,
		JobioImage: k.JobioImage, JobioCommand: k.JobioCommand, CallbackURL: callback,
		DeadlineMargin: k.DeadlineMargin, TTL: k.TTL, MaxFile: maxFile, Access: access, Log: a.Log, Metrics: kubernetes.NewMetrics()}
	if k.PodName != "" {
		opts.Owner = k.PodName + "." + strings.ToLower(rand.Text()[:8])
		if k.PodUID != "" {
			no := false
			opts.OwnerPod = &kubernetes.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: k.PodName, UID: k.PodUID, BlockOwnerDeletion: &no}
			opts.OwnerNamespace = k.PodNamespace
		}
	}
	r, err := kubernetes.New(opts)
	if err != nil {
		l.Close()
		return nil, err
	}
	if err := r.Check(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("a server-side dry run of a Job failed: %w", err)
	}
	a.kubernetes, a.callbackListener = r, l
	a.Log.Info("kubernetes runner ready", "namespace", settings.Namespace, "callback", callback, "owner", r.Owner())
	return r, nil
}

// startKubernetes serves the kubernetes runner's callback listener and sweeps the Jobs of this host's
// earlier processes every job.kubernetes.sweep_interval until ctx ends (the first sweep is
// sweepKubernetesAtStart's).
func (a *App) startKubernetes(ctx context.Context) {
	if a.kubernetes == nil {
		return
	}
	l := a.callbackListener
	a.Go(ctx, func(ctx context.Context) {
		if err := a.kubernetes.ServeCallbacks(ctx, l); err != nil {
			a.Log.Error("the kubernetes runner's callback listener stopped", "err", err)
		}
	})
	interval := a.Config.Job.Kubernetes.SweepInterval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	a.Go(ctx, func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
			if n, err := a.kubernetes.Sweep(ctx); err != nil && ctx.Err() == nil {
				a.Log.Warn("sweep the Kubernetes Jobs of earlier processes", "err", err)
			} else if n > 0 {
				a.Log.Info("deleted the Kubernetes Jobs of earlier processes", "count", n)
			}
		}
	})
}

// sweepAtStartTimeout bounds the start-up sweep: an API server that does not answer delays the job workers
// by that much at most (the periodic sweep tries again).
const sweepAtStartTimeout = 2 * time.Minute

// sweepKubernetesAtStart deletes the Jobs of this host's earlier processes and waits until their pods are gone,
// before the workers claim jobs: a job that a killed process was running is then never run again beside its
// old pod (docs/kubernetes.md, "Guarantees").
func (a *App) sweepKubernetesAtStart(ctx context.Context) {
	if a.kubernetes == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sweepAtStartTimeout)
	defer cancel()
	n, err := a.kubernetes.SweepAndWait(ctx)
	if err != nil {
		a.Log.Warn("sweep the Kubernetes Jobs of earlier processes at start-up", "err", err)
	}
	if n > 0 {
		a.Log.Info("deleted the Kubernetes Jobs of earlier processes", "count", n)
	}
}

// bytesize reads sizes such as 512K, 100M, 1G (powers of 1024) or a plain number of bytes.
func bytesize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if strings.HasSuffix(t, suffix) {
			t, mult = strings.TrimSuffix(t, suffix), m
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}
