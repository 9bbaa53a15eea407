package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/web"
)

// run wires the service and serves until ctx ends, then shuts down in order.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := loadConfig(args, os.Stderr)
	if err != nil {
		return err
	}
	log := conf.Logger(stdout, cfg.Log.Level, "analysis-svc")

	db, err := docstore.Open(ctx, docstore.Config{URI: cfg.Database.URI, Name: cfg.Database.Name, Path: cfg.Database.Path}, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = db.Close(cctx)
	}()
	log.Info("database ready", "engine", db.Engine(), "name", cfg.Database.Name)

	secret, err := conf.AuthSecret(conf.Security{Mode: cfg.Mode, Secret: cfg.Auth.Secret, DataPath: cfg.Database.Path,
		Embedded: db.Embedded(), AllowInsecure: cfg.HTTP.AllowInsecureCredentials, EnvPrefix: "ANALYSIS"}, log)
	if err != nil {
		return err
	}
	keys, err := auth.NewKeyring(secret)
	if err != nil {
		return fmt.Errorf("auth.secret: %w", err)
	}
	istore, err := store.NewIdentityStore(ctx, db)
	if err != nil {
		return err
	}
	ids, err := analysis.NewIdentity(istore, keys, time.Now)
	if err != nil {
		return err
	}
	created, err := ids.Bootstrap(ctx, cfg.Bootstrap.Login, cfg.Bootstrap.Password, cfg.Bootstrap.Key)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if created {
		log.Info("created the first superadmin", "login", cfg.Bootstrap.Login)
	}

	bus, err := eventBus(ctx, cfg, db, keys, log)
	if err != nil {
		return err
	}
	workers, jobs, err := jobService(ctx, cfg, db, log, bus)
	if err != nil {
		return err
	}

	proxies, err := web.ParseCIDRs(cfg.HTTP.TrustedProxies)
	if err != nil {
		return fmt.Errorf("http.trusted_proxies: %w", err)
	}
	limits, err := cfg.Limits()
	if err != nil {
		return err
	}
	maxFile, err := web.ParseSize(cfg.Job.MaxFile)
	if err != nil {
		return fmt.Errorf("job.max_file: %w", err)
	}
	// The login throttle counts in the database, so that replicas share one limit.
	attempts, err := auth.NewStoreCounter(ctx, db, time.Now)
	if err != nil {
		return fmt.Errorf("login throttle: %w", err)
	}
	tls := cfg.HTTP.TLS.Cert != ""
	if cfg.HTTP.AllowInsecureCredentials && !tls {
		log.Warn("http.allow_insecure_credentials is on: passwords and keys travel over plain HTTP (dev only)")
	}
	e := api.New(api.Config{
		Log: log,
		Auth: web.AuthConfig{Keyring: keys, SessionTTL: cfg.Auth.SessionTTL, Basic: cfg.Auth.Method.Basic, Secure: tls,
			Throttle: auth.NewSharedThrottle(cfg.Auth.Throttle.User, cfg.Auth.Throttle.Address, cfg.Auth.Throttle.Window, attempts)},
		Secure:           web.SecureConfig{AllowInsecure: cfg.HTTP.AllowInsecureCredentials, TrustedProxies: proxies},
		SearchMax:        cfg.Search.Max,
		Limits:           limits,
		MaxFile:          maxFile,
		Ready:            web.Options{Ready: db.Ping},
		DownloadPassword: cfg.Datastore.Password,
		Events:           bus,
	}, ids, workers, jobs)

	// When ctx ends the job workers stop (their jobs go back to the queue) and long polls answer, while the
	// HTTP server drains.
	jctx, stopJobs := context.WithCancel(ctx)
	jobsDone := make(chan struct{})
	go func() {
		defer close(jobsDone)
		_ = jobs.Run(jctx)
	}()
	// The job events' streams, webhook sender and repair run until the jobs have stopped.
	ectx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		bus.Run(ectx)
	}()
	serveErr := web.Serve(ctx, log, e, web.ServeConfig{Addr: cfg.HTTP.Addr, TLSCert: cfg.HTTP.TLS.Cert, TLSKey: cfg.HTTP.TLS.Key,
		WriteTimeout: cfg.Job.Waitreport.Max + time.Minute, ReadTimeout: cfg.HTTP.ReadTimeout})
	stopJobs()
	<-jobsDone
	stopEvents()
	<-eventsDone
	return serveErr
}
