package app

import (
	"context"
	"fmt"
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
		Workers: cfg.Job.Workers, OrgMax: cfg.Job.OrgMax, Lease: cfg.Job.Lease, MaxAttempts: cfg.Job.Attempts, CacheMinutes: cfg.Job.Cache,
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
	for _, r := range cfg.Job.Runner {
		switch r {
		case "process":
			o.Process = process.New(process.Options{Path: cfg.Job.Process.Path, Env: cfg.Job.Process.Env,
				Access: access, Log: log})
		case "docker":
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
