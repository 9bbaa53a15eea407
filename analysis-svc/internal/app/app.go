// Package app builds analysis-svc from its configuration: the database, the stores, the identity service,
// the job events' bus (log, streams, webhooks), the analyzer catalog with its runners, the job queue and the
// Echo router with its limits. It also owns the configuration (Config, Load, Default): the one place the
// defaults are written. cmd/analysis-svc serves what New builds; the benchmark (cmd/analysis-bench) and the
// API tests (internal/api) build the service with the same function, changing only what Options says.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/analysis-svc/internal/jobevent"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/web"
)

// Options change how New builds the service from the configuration. The zero value builds it as
// cmd/analysis-svc runs it; the other values serve the benchmark and the tests.
type Options struct {
	// DB is the database to build on; nil opens the configured one. The caller keeps ownership of a DB it
	// passes (Close leaves it open).
	DB *docstore.DB
	// Overrides replace the router's settings of the http.* and auth.* keys (clock, throttle, limits, HTTPS).
	conf.Overrides
	// Catalog replaces the built-in definitions and those of analyzer.paths and responder.paths.
	Catalog *analysis.Catalog
	// Jobs replaces the job queue's settings of job.* (its Log is filled in when nil).
	Jobs *analysis.JobsConfig
	// Runners replaces the settings of job folders and runners of job.* (job.runner, job.directory,
	// job.directory_group, job.directory_mode, job.process.*, job.docker.*); its Files is the service's, its
	// Log is filled in when nil.
	Runners *runner.Options
	// Events adjusts the settings of the job events, streams and webhooks built from the configuration.
	Events func(*events.Config)
}

// App is analysis-svc built: what serves the routes, the services behind them and their background work.
type App struct {
	Config Config
	// Base is the logger, the database, the keyring and the background work.
	conf.Base
	// Handler is the router with every route and limit (the api package's Echo, behind http.Handler).
	Handler  http.Handler
	Identity *identity.Service
	Workers  *analysis.Workers
	// Jobs is the job queue; Run runs its workers. JobsConfig is its settings.
	Jobs       *analysis.Jobs
	JobsConfig analysis.JobsConfig
	Catalog    *analysis.Catalog
	// Runners runs the catalog's definitions, in job folders.
	Runners *runner.Executors
	// Events is the job events' bus; Run does its background work (streams, webhooks, repair).
	Events *events.Bus
	// The stores of the job side (JobStore without the events' decorator).
	JobStore    *store.JobStore
	WorkerStore *store.WorkerStore
	Files       *store.FileStore
	// Bootstrapped is true when New created the superadmin of bootstrap.*.
	Bootstrapped bool
	// kubernetes is the kubernetes runner when job.runner enables it, with its callback listener.
	kubernetes       *kubernetes.Runner
	callbackListener net.Listener
	// collectors are the runners' metrics, served at /metrics with the others.
	collectors []prometheus.Collector
}

// New builds analysis-svc from cfg: it opens the database (unless opts.DB), makes sure of the superadmin of
// bootstrap.*, and builds every store, service and route. Nothing runs yet: Start runs the background work,
// Serve serves; Close undoes New.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts Options) (*App, error) {
	a := &App{Config: cfg}
	a.Log, a.DB = log, opts.DB
	if err := a.build(ctx, opts); err != nil {
		a.Close(ctx)
		return nil, err
	}
	return a, nil
}

// build is New's work on a.
func (a *App) build(ctx context.Context, opts Options) (err error) {
	cfg := a.Config
	if err := a.Open(ctx, cfg.Common, "ANALYSIS"); err != nil {
		return err
	}
	istore, err := store.NewIdentityStore(ctx, a.DB)
	if err != nil {
		return err
	}
	cred, err := auth.NewCredentials(a.Keys)
	if err != nil {
		return err
	}
	a.Identity = identity.New(istore, cred, time.Now)
	if a.Bootstrapped, err = a.Identity.Bootstrap(ctx, cfg.Bootstrap.Login, cfg.Bootstrap.Password, cfg.Bootstrap.Key); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if a.Events, err = a.eventBus(ctx, opts); err != nil {
		return err
	}
	if err := a.jobService(ctx, opts); err != nil {
		return err
	}
	a.Handler, err = a.router(ctx, opts)
	return err
}

// router is the Echo router with the configuration's limits, HTTPS rule and login throttle.
func (a *App) router(ctx context.Context, opts Options) (http.Handler, error) {
	cfg := a.Config
	r, err := cfg.Router(ctx, a.DB, a.Keys, a.Log, opts.Overrides)
	if err != nil {
		return nil, err
	}
	maxFile, err := web.ParseSize(cfg.Job.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("job.max_file: %w", err)
	}
	return api.New(api.Config{
		APIConfig: web.APIConfig{Log: a.Log, Auth: r.Auth, Secure: r.Secure, SearchMax: cfg.Search.Max, Limits: r.Limits,
			MaxFile: maxFile, DownloadPassword: cfg.Datastore.Password},
		Ready:  web.Options{Ready: a.DB.Ping, Collectors: a.collectors},
		Events: a.Events,
	}, a.Identity, a.Workers, a.Jobs), nil
}

// eventBus builds the job events' log, streams and webhooks (pkg/events; README, Events). The repair sweep
// asks the job store what became of a job whose JobFinished event a crash left held.
func (a *App) eventBus(ctx context.Context, opts Options) (*events.Bus, error) {
	l, err := events.NewEventLog(ctx, a.DB, store.EventSpec())
	if err != nil {
		return nil, err
	}
	hooks, err := events.NewOutbox(ctx, a.DB)
	if err != nil {
		return nil, err
	}
	jobs, err := store.NewJobStore(ctx, a.DB)
	if err != nil {
		return nil, err
	}
	cfg := a.Config
	ecfg := cfg.Common.Events(cfg.Events.Retention, "analysis-svc-webhook", a.Log)
	ecfg.Confirm, ecfg.RepairAllAtStart = jobevent.Wrap(jobs, nil, api.JobObject).Confirm, a.DB.Embedded()
	if opts.Events != nil {
		opts.Events(&ecfg)
	}
	return events.NewBus(l, hooks, a.Keys, events.NewMetrics("analysis", "job"), ecfg, time.Now), nil
}

// Close stops the background work and closes the database (conf.Base) and the kubernetes runner's callback
// listener.
func (a *App) Close(ctx context.Context) {
	a.Base.Close(ctx)
	if a.callbackListener != nil {
		a.callbackListener.Close()
	}
}

// Start runs the background work until Close: the job workers until ctx ends (their running jobs go back to
// the queue and long polls answer while the HTTP server drains), and the job events' streams, webhook sender
// and repair, stopped after the workers.
func (a *App) Start(ctx context.Context) {
	a.StartJobs(ctx)
	a.StartEvents()
}

// StartJobs runs the job workers until ctx ends, Close, or the returned stop, which waits for them.
func (a *App) StartJobs(ctx context.Context) (stop func()) {
	a.startKubernetes(ctx)
	return a.Go(ctx, func(ctx context.Context) {
		a.Runners.RemoveStale() // the job folders a dead instance left behind
		a.sweepKubernetesAtStart(ctx)
		_ = a.Jobs.Run(ctx)
	})
}

// StartEvents runs the job events' background work until Close or the returned stop, which waits for it.
func (a *App) StartEvents() (stop func()) { return a.Go(context.Background(), a.Events.Run) }

// ServeConfig is the HTTP server's configuration (http.addr, http.tls.*, http.read_timeout); responses may
// take job.waitreport.max and a minute (long polls).
func (a *App) ServeConfig() web.ServeConfig {
	h := a.Config.HTTP
	return web.ServeConfig{Addr: h.Addr, TLSCert: h.TLS.Cert, TLSKey: h.TLS.Key, ReadTimeout: h.ReadTimeout,
		WriteTimeout: a.Config.Job.Waitreport.Max + time.Minute}
}

// Serve serves the routes on http.addr until ctx ends, then drains the requests.
func (a *App) Serve(ctx context.Context) error {
	return web.Serve(ctx, a.Log, a.Handler, a.ServeConfig())
}
