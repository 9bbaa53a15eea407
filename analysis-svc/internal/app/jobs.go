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
	"github.com/openir/platform/analysis-svc/internal/runner/builtin"
	"github.com/openir/platform/analysis-svc/internal/runner/catalog"
	"github.com/openir/platform/analysis-svc/internal/runner/docker"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
	"github.com/openir/platform/analysis-svc/internal/store"
)

// jobService builds the analyzer catalog (built-ins, then analyzer.paths/responder.paths), the runners of
// job.runner and the job queue; opts.Catalog and opts.Jobs replace the catalog and the queue's settings.
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
	} else if jcfg, err = a.jobsConfig(ctx); err != nil {
		return err
	}
	a.Catalog = opts.Catalog
	if a.Catalog == nil {
		// Built-ins are fixed; the definitions of analyzer.paths and responder.paths are read now and again on
		// POST /api/{analyzer,responder}definition/scan.
		a.Catalog = analysis.NewCatalog(append(builtin.Analyzers(), builtin.Responders()...)...)
		a.Catalog.SetScanner(catalog.Scanner(cfg.Analyzer.Paths, cfg.Responder.Paths, runnable(jcfg.Runners), log), log)
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

// jobsConfig is the job queue's settings of job.*, with the runners of job.runner.
func (a *App) jobsConfig(ctx context.Context) (analysis.JobsConfig, error) {
	cfg, log := a.Config, a.Log
	access, err := analysis.ParseFolderAccess(cfg.Job.DirectoryGroup, cfg.Job.DirectoryMode)
	if err != nil {
		return analysis.JobsConfig{}, err
	}
	if access.Shared() || access.SetGroup {
		log.Info("job folders are open to a group (job.directory_group, job.directory_mode)", "access", access.String())
	}
	runners := map[string]analysis.Runner{}
	for _, r := range cfg.Job.Runner {
		switch r {
		case "process":
			runners[r] = process.New(process.Options{Path: cfg.Job.Process.Path, Env: cfg.Job.Process.Env,
				Access: access, Log: log})
		case "docker":
			d := docker.New(docker.Options{Host: cfg.Job.Docker.Host, Network: cfg.Job.Docker.Network,
				User: cfg.Job.Docker.User, Pull: docker.PullPolicy(cfg.Job.Docker.Pull), CertPath: cfg.Job.Docker.CertPath,
				RegistryConfig: cfg.Job.Docker.RegistryConfig, Access: access, Log: log})
			if !d.Available(ctx) {
				log.Warn("job.runner includes docker but no Docker engine answers: docker analyzers are disabled")
				continue
			}
			runners[r] = d
		}
	}
	maxFile, err := bytesize(cfg.Job.MaxFile)
	if err != nil {
		return analysis.JobsConfig{}, fmt.Errorf("job.max_file: %w", err)
	}
	return analysis.JobsConfig{
		Workers: cfg.Job.Workers, OrgMax: cfg.Job.OrgMax, Lease: cfg.Job.Lease, MaxAttempts: cfg.Job.Attempts, CacheMinutes: cfg.Job.Cache,
		DefaultTimeout: cfg.Job.Timeout, WaitMax: cfg.Job.Waitreport.Max, MaxFileSize: maxFile,
		TempDir: cfg.Job.Directory, Folder: access, Runners: runners, Extract: builtin.Extract, Log: log,
	}, nil
}

// runnable refuses the definitions no enabled runner (job.runner) can run.
func runnable(runners map[string]analysis.Runner) catalog.Runnable {
	return func(d analysis.Definition) string {
		switch {
		case d.Command != "" && runners["process"] != nil, d.DockerImage != "" && runners["docker"] != nil:
			return ""
		case d.Command != "" && d.DockerImage != "":
			return "neither the process nor the docker runner is enabled (job.runner)"
		case d.Command != "":
			return "a command definition needs the process runner (job.runner)"
		default:
			return "a dockerImage definition needs the docker runner (job.runner) and a Docker engine that answers"
		}
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
