package main

import (
	"context"
	"fmt"
	"log/slog"
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
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
)

// jobService builds the analyzer catalog (built-ins, then analyzer.paths/responder.paths), the runners of
// job.runner and the job queue.
func jobService(ctx context.Context, cfg config, db *docstore.DB, log *slog.Logger, bus *events.Bus) (*analysis.Workers, *analysis.Jobs, error) {
	access, err := analysis.ParseFolderAccess(cfg.Job.DirectoryGroup, cfg.Job.DirectoryMode)
	if err != nil {
		return nil, nil, err
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
	// Built-ins are fixed; the definitions of analyzer.paths and responder.paths are read now and again on
	// POST /api/{analyzer,responder}definition/scan.
	cat := analysis.NewCatalog(append(builtin.Analyzers(), builtin.Responders()...)...)
	cat.SetScanner(catalog.Scanner(cfg.Analyzer.Paths, cfg.Responder.Paths, runnable(runners), log), log)
	for _, k := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
		rep := cat.Rescan(k)
		log.Info("definitions", "kind", string(k), "count", rep.Definitions, "loaded", len(rep.Added),
			"refused", len(rep.Refused), "paths_without_definitions", len(rep.Warnings))
	}

	wstore, err := store.NewWorkerStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	jstore, err := store.NewJobStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	files, err := store.NewFileStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	maxFile, err := bytesize(cfg.Job.MaxFile)
	if err != nil {
		return nil, nil, fmt.Errorf("job.max_file: %w", err)
	}
	jobs := analysis.NewJobs(jobevent.Wrap(jstore, bus, api.JobObject), wstore, cat, files, analysis.JobsConfig{
		Workers: cfg.Job.Workers, OrgMax: cfg.Job.OrgMax, Lease: cfg.Job.Lease, MaxAttempts: cfg.Job.Attempts, CacheMinutes: cfg.Job.Cache,
		DefaultTimeout: cfg.Job.Timeout, WaitMax: cfg.Job.Waitreport.Max, MaxFileSize: maxFile,
		TempDir: cfg.Job.Directory, Folder: access, Runners: runners, Extract: builtin.Extract, Log: log,
	}, time.Now)
	return analysis.NewWorkers(wstore, cat, time.Now), jobs, nil
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
