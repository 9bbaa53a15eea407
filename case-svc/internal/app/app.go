// Package app builds case-svc from its configuration: the database, the stores, the audit trail with its
// streams and webhooks (and the decorators that record every write), the connector and its analysis servers,
// the domain services and the Echo router with its limits. It also owns the configuration (Config, Load,
// Default): the one place the defaults are written. cmd/case-svc serves what New builds; the benchmark
// (cmd/case-bench) and the API tests (internal/api) build the service with the same function, changing only
// what Options says.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/case-svc/internal/auditbus"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/web"
)

// Options change how New builds the service from the configuration. The zero value builds it as
// cmd/case-svc runs it; the other values serve the benchmark and the tests.
type Options struct {
	// DB is the database to build on; nil opens the configured one. The caller keeps ownership of a DB it
	// passes (Close leaves it open).
	DB *docstore.DB
	// Overrides replace the router's settings of the http.* and auth.* keys (clock, throttle, limits, HTTPS).
	conf.Overrides
	// ConnectorNow is the connector's clock (nil: time.Now).
	ConnectorNow func() time.Time
	// Servers replaces the connector's clients of analysis.servers; Analysis replaces the connector's
	// settings of analysis.* (its Log is filled in when nil).
	Servers  []connector.AnalysisServer
	Analysis *connector.AnalysisConfig
	// Events adjusts the settings of the audit trail, streams and webhooks built from the configuration.
	Events func(*auditbus.Config)
	// IdentityStore wraps the identity store (a test counting its reads).
	IdentityStore func(identity.Store) identity.Store
	// Automation adjusts the settings of the rules' engine built from the configuration.
	Automation func(*automation.EngineConfig)
	// NoAudit leaves out the decorators that record every write in the audit trail (the benchmark's
	// "without audit" figure). The audit, stream and webhook routes remain; nothing is recorded.
	NoAudit bool
}

// App is case-svc built: what serves the routes, the services behind them and their background work.
type App struct {
	Config Config
	// Base is the logger, the database, the keyring and the background work.
	conf.Base
	// Handler is the router with every route and limit (the api package's Echo, behind http.Handler).
	Handler  http.Handler
	Identity *identity.Service
	Cases    *cases.Service
	// Tasks holds the tasks of cases and their logs; Templates the case templates.
	Tasks     *task.Service
	Templates *template.Service
	// CustomFields holds the definitions of the custom fields.
	CustomFields *customfield.Service
	// Analyses is the connector: its jobs and responder actions, and the tracker of pending ones (Run).
	Analyses *connector.Analyses
	// Automation holds analyzer sets, bulk runs and rules.
	Automation *automation.Service
	// Tally counts records for the statistics and the query API's counts.
	Tally *tally.Counter
	// Events is the audit trail, the streams and the webhooks; Run does their background work.
	Events *auditbus.Service
	// Jobs and AnalysisStore are the stores of analyzer jobs and of the connector's records.
	Jobs          *store.JobStore
	AnalysisStore *store.AnalysisStore
	// Bootstrapped is true when New created the platform administrator of bootstrap.*.
	Bootstrapped bool
	// trail is the audit trail's store, which the rules' engine reads the events from.
	trail *store.AuditStore
	// ruleObjects evaluates the rules' conditions on the stored objects.
	ruleObjects *store.RuleObjects
}

// New builds case-svc from cfg: it opens the database (unless opts.DB), makes sure of the platform
// administrator of bootstrap.*, and builds every store, service and route. Nothing runs yet: Start runs the
// background work, Serve serves; Close undoes New.
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
	if err := a.Open(ctx, cfg.Common, "CASE"); err != nil {
		return err
	}
	if a.Events, err = a.eventService(ctx, opts); err != nil {
		return err
	}
	st, err := a.wire(ctx, opts)
	if err != nil {
		return err
	}
	if a.Bootstrapped, err = a.Identity.Bootstrap(ctx, cfg.Bootstrap.Login, cfg.Bootstrap.Password, cfg.Bootstrap.Key); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := a.connectorService(ctx, opts, st); err != nil {
		return err
	}
	if err := a.automationService(ctx, opts); err != nil {
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
	maxFile, err := web.ParseSize(cfg.Observable.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("observable.max_file: %w", err)
	}
	return api.New(api.Config{
		APIConfig: web.APIConfig{Log: a.Log, Auth: r.Auth, Secure: r.Secure, SearchMax: cfg.Search.Max, Limits: r.Limits,
			MaxFile: maxFile, DownloadPassword: cfg.Datastore.Password},
		Ready:   a.DB.Ping,
		Events:  a.Events,
		Metrics: a.Events.Metrics,
	}, api.Services{Identity: a.Identity, Cases: a.Cases, Tasks: a.Tasks, Templates: a.Templates,
		CustomFields: a.CustomFields, Connector: a.Analyses, Tally: a.Tally, Automation: a.Automation}), nil
}

// eventService builds the audit trail, the streams and the webhooks (case-svc/README.md, Events).
func (a *App) eventService(ctx context.Context, opts Options) (*auditbus.Service, error) {
	trail, err := store.NewAuditStore(ctx, a.DB)
	if err != nil {
		return nil, err
	}
	a.trail = trail
	hooks, err := store.NewWebhookStore(ctx, a.DB)
	if err != nil {
		return nil, err
	}
	cfg := a.Config
	ecfg := cfg.Common.Events(cfg.Audit.Retention, "", a.Log)
	ecfg.RepairAllAtStart = a.DB.Embedded()
	if opts.Events != nil {
		opts.Events(&ecfg)
	}
	return auditbus.New(trail, hooks, a.Keys, ecfg, time.Now), nil
}

// wire builds the stores and the domain services on the database; the audit decorators record their writes
// (unless opts.NoAudit). It returns the case stores as the case service has them, for the connector.
func (a *App) wire(ctx context.Context, opts Options) (cases.Stores, error) {
	db := a.DB
	zips, err := a.Config.ZipLimits()
	if err != nil {
		return cases.Stores{}, err
	}
	idStore, err := store.NewIdentityStore(ctx, db)
	if err != nil {
		return cases.Stores{}, err
	}
	var ids identity.Store = idStore
	if opts.IdentityStore != nil {
		ids = opts.IdentityStore(ids)
	}
	if !opts.NoAudit {
		ids = a.Events.WrapIdentity(ids)
	}
	cred, err := auth.NewCredentials(a.Keys)
	if err != nil {
		return cases.Stores{}, err
	}
	a.Identity = identity.New(ids, cred, time.Now)
	st := cases.Stores{Members: a.Identity, Archives: archive.Zips{Limits: zips}}
	var (
		counts  *store.Tally
		caseSt  *store.CaseStore
		taskSt  *store.TaskStore
		obsSt   *store.ObservableStore
		alertSt *store.AlertStore
	)
	for _, open := range []func() error{
		func() (err error) { caseSt, err = store.NewCaseStore(ctx, db); st.Cases = caseSt; return err },
		func() (err error) { taskSt, err = store.NewTaskStore(ctx, db); st.Tasks = taskSt; return err },
		func() (err error) { st.Templates, err = store.NewTemplateStore(ctx, db); return err },
		func() (err error) { st.Fields, err = store.NewCustomFieldStore(ctx, db); return err },
		func() (err error) { obsSt, err = store.NewObservableStore(ctx, db); st.Observables = obsSt; return err },
		func() (err error) { alertSt, err = store.NewAlertStore(ctx, db); st.Alerts = alertSt; return err },
		func() (err error) { a.Jobs, err = store.NewJobStore(ctx, db); return err },
		func() (err error) { st.Files, err = store.NewFiles(ctx, db); return err },
		func() (err error) { counts, err = store.NewTally(ctx, db); return err },
	} {
		if err := open(); err != nil {
			return cases.Stores{}, err
		}
	}
	a.ruleObjects = store.NewRuleObjects(obsSt, alertSt, caseSt, taskSt)
	if !opts.NoAudit {
		st = a.Events.Wrap(st)
	}
	a.Cases = cases.NewService(st, time.Now)
	a.Tasks = task.NewService(a.Cases, task.Stores{Tasks: st.Tasks, Files: st.Files, Members: st.Members}, time.Now)
	a.Templates = template.NewService(template.Stores{Templates: st.Templates, Fields: st.Fields, Members: st.Members}, time.Now)
	a.CustomFields = customfield.NewService(st.Fields, time.Now)
	a.Tally = tally.New(counts)
	return st, nil
}

// connectorService builds the clients of analysis.servers and the connector's service, which reads the case
// records of cs and applies results through the case service.
func (a *App) connectorService(ctx context.Context, opts Options, cs cases.Stores) error {
	cfg := a.Config
	servers := opts.Servers
	if servers == nil {
		names := make([]string, len(cfg.Analysis.Servers))
		for i, s := range cfg.Analysis.Servers {
			names[i] = s.Name // never log keys
			servers = append(servers, analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: s.Name, URL: s.URL, Key: s.Key,
				Timeout: s.Timeout, Organisations: s.Organisations}, analysissvc.Options{}, a.Log)})
		}
		a.Log.Info("analysis servers", "names", names)
	}
	acfg := connector.AnalysisConfig{Log: a.Log, GiveUp: cfg.Analysis.GiveUp, LongPoll: cfg.Analysis.LongPoll}
	if opts.Analysis != nil {
		acfg = *opts.Analysis
		if acfg.Log == nil {
			acfg.Log = a.Log
		}
	}
	st, err := store.NewAnalysisStore(ctx, a.DB)
	if err != nil {
		return err
	}
	a.AnalysisStore = st
	var jobs connector.JobStore = a.Jobs
	var actions connector.ActionStore = st
	if !opts.NoAudit {
		jobs, actions = a.Events.WrapJobs(a.Jobs), a.Events.WrapActions(st)
	}
	a.Analyses = connector.NewAnalyses(a.Cases, a.Tasks, servers, connector.Stores{Jobs: jobs, Actions: actions, Pending: st,
		Cases: cs.Cases, Observables: cs.Observables, Alerts: cs.Alerts, Files: cs.Files}, acfg, opts.ConnectorNow)
	return nil
}

// automationService builds analyzer sets, bulk runs and rules on the case service and the connector.
func (a *App) automationService(ctx context.Context, opts Options) error {
	st, err := store.NewAutomationStore(ctx, a.DB)
	if err != nil {
		return err
	}
	cfg := automation.EngineConfig{Poll: a.Config.Automation.Poll, OrgJobsPerHour: a.Config.Automation.OrgJobsPerHour, Log: a.Log,
		Shared: !a.DB.Embedded()}
	if opts.Automation != nil {
		opts.Automation(&cfg)
	}
	sets, rules := a.Events.WrapAutomation(st, st) // changes of sets and rules are in the audit trail
	a.Automation = automation.NewService(automation.Stores{Sets: sets, Rules: rules, Events: a.trail, Objects: a.ruleObjects},
		automation.Services{Cases: a.Cases, Tasks: a.Tasks, Analyses: a.Analyses, Owners: a.Identity}, cfg, time.Now)
	a.Events.OnRecord(a.Automation.Recorded)
	return nil
}

// Start runs the background work until Close: the connector's tracker (pending jobs and actions), the
// events' stream tailer, webhook sender and audit retention, and the rules' engine.
func (a *App) Start() {
	a.StartTracker()
	a.StartEvents()
	a.StartRules()
}

// StartRules runs the automation rules' engine until Close or the returned stop, which waits for it.
func (a *App) StartRules() (stop func()) { return a.Go(context.Background(), a.Automation.Run) }

// StartTracker runs the connector's tracker until Close or the returned stop, which waits for it.
func (a *App) StartTracker() (stop func()) { return a.Go(context.Background(), a.Analyses.Run) }

// StartEvents runs the events' background work until Close or the returned stop, which waits for it.
func (a *App) StartEvents() (stop func()) { return a.Go(context.Background(), a.Events.Run) }

// ServeConfig is the HTTP server's configuration (http.addr, http.tls.*, http.read_timeout).
func (a *App) ServeConfig() web.ServeConfig {
	h := a.Config.HTTP
	return web.ServeConfig{Addr: h.Addr, TLSCert: h.TLS.Cert, TLSKey: h.TLS.Key, ReadTimeout: h.ReadTimeout}
}

// Serve serves the routes on http.addr until ctx ends, then drains the requests.
func (a *App) Serve(ctx context.Context) error {
	return web.Serve(ctx, a.Log, a.Handler, a.ServeConfig())
}
