package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/store"
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
	log := conf.Logger(stdout, cfg.Log.Level, "case-svc")
	// An empty database.uri opens the embedded SQLite file database.path/<database.name>.db.
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
	names := make([]string, len(cfg.Analysis.Servers))
	for i, s := range cfg.Analysis.Servers {
		names[i] = s.Name // never log keys
	}
	log.Info("analysis servers", "names", names)

	secret, err := conf.AuthSecret(conf.Security{Mode: cfg.Mode, Secret: cfg.Auth.Secret, DataPath: cfg.Database.Path,
		Embedded: db.Embedded(), AllowInsecure: cfg.HTTP.AllowInsecureCredentials, EnvPrefix: "CASE"}, log)
	if err != nil {
		return err
	}
	keys, err := auth.NewKeyring(secret)
	if err != nil {
		return fmt.Errorf("auth.secret: %w", err)
	}
	events, err := eventService(ctx, cfg, db, keys, log)
	if err != nil {
		return err
	}
	zipLimits, err := cfg.zipLimits()
	if err != nil {
		return err
	}
	ids, svc, err := wire(ctx, db, keys, events, zipLimits)
	if err != nil {
		return err
	}
	created, err := ids.Bootstrap(ctx, cfg.Bootstrap.Login, cfg.Bootstrap.Password, cfg.Bootstrap.Key)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if created {
		log.Info("created the first platform administrator", "login", cfg.Bootstrap.Login)
	}

	proxies, err := web.ParseCIDRs(cfg.HTTP.TrustedProxies)
	if err != nil {
		return fmt.Errorf("http.trusted_proxies: %w", err)
	}
	limits, err := cfg.Limits()
	if err != nil {
		return err
	}
	maxFile, err := web.ParseSize(cfg.Observable.MaxFile)
	if err != nil {
		return fmt.Errorf("observable.max_file: %w", err)
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
	analyses, err := connectorService(ctx, cfg, db, svc, events, log)
	if err != nil {
		return err
	}
	e := api.New(api.Config{
		Log: log,
		Auth: web.AuthConfig{Keyring: keys, SessionTTL: cfg.Auth.SessionTTL, Basic: cfg.Auth.Method.Basic, Secure: tls,
			Throttle: auth.NewSharedThrottle(cfg.Auth.Throttle.User, cfg.Auth.Throttle.Address, cfg.Auth.Throttle.Window, attempts)},
		Secure:           web.SecureConfig{AllowInsecure: cfg.HTTP.AllowInsecureCredentials, TrustedProxies: proxies},
		SearchMax:        cfg.Search.Max,
		Limits:           limits,
		MaxFile:          maxFile,
		Ready:            db.Ping,
		Events:           events,
		DownloadPassword: cfg.Datastore.Password,
	}, ids, svc, analyses)

	// The connector's tracker follows pending jobs and actions until the service stops.
	actx, stopTracker := context.WithCancel(context.WithoutCancel(ctx))
	tracked := make(chan struct{})
	go func() {
		defer close(tracked)
		analyses.Run(actx)
	}()
	// The stream tailer, the webhook sender and the audit retention run until the service stops.
	ectx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		events.Run(ectx)
	}()
	serveErr := web.Serve(ctx, log, e, web.ServeConfig{Addr: cfg.HTTP.Addr, TLSCert: cfg.HTTP.TLS.Cert, TLSKey: cfg.HTTP.TLS.Key,
		ReadTimeout: cfg.HTTP.ReadTimeout})
	stopTracker()
	<-tracked
	stopEvents()
	<-eventsDone
	return serveErr
}

// connectorService builds the clients of analysis.servers and the connector's service.
func connectorService(ctx context.Context, cfg config, db *docstore.DB, svc *cases.Service, events *audit.Service, log *slog.Logger) (*cases.Analyses, error) {
	var servers []cases.AnalysisServer
	for _, s := range cfg.Analysis.Servers {
		servers = append(servers, connector.Adapter{Client: connector.New(connector.Server{Name: s.Name, URL: s.URL, Key: s.Key,
			Timeout: s.Timeout, Organisations: s.Organisations}, connector.Options{}, log)})
	}
	st, err := store.NewAnalysisStore(ctx, db)
	if err != nil {
		return nil, err
	}
	return cases.NewAnalyses(svc, servers, st, events.WrapActions(st), cases.AnalysisConfig{Log: log, GiveUp: cfg.Analysis.GiveUp, LongPoll: cfg.Analysis.LongPoll}, time.Now), nil
}

// eventService builds the audit trail, the streams and the webhooks (case-svc/README.md, Events).
func eventService(ctx context.Context, cfg config, db *docstore.DB, keys *auth.Keyring, log *slog.Logger) (*audit.Service, error) {
	trail, err := store.NewAuditStore(ctx, db)
	if err != nil {
		return nil, err
	}
	hooks, err := store.NewWebhookStore(ctx, db)
	if err != nil {
		return nil, err
	}
	return audit.New(trail, hooks, keys, audit.Config{Retention: cfg.Audit.Retention, Poll: cfg.Stream.Poll,
		Refresh: cfg.Stream.Refresh, Log: log, Webhooks: audit.WebhookConfig{AllowPrivate: cfg.Webhook.AllowPrivate,
			MaxAttempts: cfg.Webhook.MaxAttempts, Timeout: cfg.Webhook.Timeout}, RepairAllAtStart: db.Embedded()}, time.Now), nil
}

// wire builds the stores and the domain services on the database; events audits their writes; zips bounds
// uploaded archives.
func wire(ctx context.Context, db *docstore.DB, keys *auth.Keyring, events *audit.Service, zips cases.ZipLimits) (*cases.Identity, *cases.Service, error) {
	idStore, err := store.NewIdentityStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	ids, err := cases.NewIdentity(events.WrapIdentity(idStore), keys, time.Now)
	if err != nil {
		return nil, nil, err
	}
	caseStore, err := store.NewCaseStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	taskStore, err := store.NewTaskStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	templates, err := store.NewTemplateStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	fields, err := store.NewCustomFieldStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	observables, err := store.NewObservableStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	alerts, err := store.NewAlertStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := store.NewJobStore(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	files, err := store.NewFiles(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	tally, err := store.NewTally(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	svc := cases.NewService(events.Wrap(cases.Stores{Cases: caseStore, Tasks: taskStore, Templates: templates, Fields: fields,
		Files: files, Members: ids, Observables: observables, Alerts: alerts, Jobs: jobs, Tally: tally, Zip: zips}), time.Now)
	return ids, svc, nil
}
