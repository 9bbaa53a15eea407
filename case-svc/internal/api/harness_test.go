package api_test

// The harness builds the real service with internal/app, the function cmd/case-svc/run.go calls (a fresh
// embedded database of its own, the tests' settings in the configuration and app.Options), and serves it with
// httptest. Tests talk to it over HTTP only, as a client would.

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/apitest"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/case-svc/internal/auditbus"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/web"
)

const (
	testSecret = "test-secret-0123456789"
	// The bootstrapped platform administrator.
	adminLogin    = "root"
	adminPassword = "root-password-0123"
	adminKey      = "root-key-0123456789-abcdefghijklmnop" // bootstrap keys need 32+ characters
	// authFailure is the one message of every 401 (spec §7).
	authFailure = apitest.AuthFailure
)

// envOptions change how the server is built.
type envOptions struct {
	basic         bool
	secure        web.SecureConfig
	adminPassword bool // bootstrap the administrator with a password too (costs a hash)
	zip           archive.Limits
	servers       []connector.AnalysisServer // analysis servers of the connector (none by default)
	analysis      connector.AnalysisConfig
	noTracker     bool                   // configure the servers but do not run the tracker until env.startTracker
	now           func() time.Time       // the sessions' clock; nil = time.Now
	connectorNow  func() time.Time       // the connector's clock; nil = time.Now
	logs          *syncBuffer            // where the service logs; nil = a new buffer
	limits        web.Limits             // zero: the tests' defaults (2M bodies, 64K before authentication)
	maxFile       int64                  // the upload limit; 0 = 2M
	throttle      *auth.Throttle         // nil = none
	events        func(*auditbus.Config) // adjusts the events' settings (events_test.go)
	db            *docstore.DB           // nil = a fresh database
	zipPassword   string                 // datastore.password; "" = the default
	rules         bool                   // run the automation rules' engine (automation_test.go)
	orgJobs       int                    // automation.org_jobs_per_hour; 0 = the default
}

type envOption func(*envOptions)

func withBasic() envOption                    { return func(o *envOptions) { o.basic = true } }
func withZipPassword(p string) envOption      { return func(o *envOptions) { o.zipPassword = p } }
func withSecure(s web.SecureConfig) envOption { return func(o *envOptions) { o.secure = s } }
func withAdminPassword() envOption            { return func(o *envOptions) { o.adminPassword = true } }

// withZipLimits sets observable.zip's limits on uploaded archives.
func withZipLimits(l archive.Limits) envOption { return func(o *envOptions) { o.zip = l } }

// withClock makes sessions use now as their clock (an expired session without waiting an hour).
func withClock(now func() time.Time) envOption { return func(o *envOptions) { o.now = now } }

// withConnectorClock makes the connector use now as its clock (analysis.give_up without waiting a day).
func withConnectorClock(now func() time.Time) envOption {
	return func(o *envOptions) { o.connectorNow = now }
}

// withLogs makes the service (and the connector's tracker) log into buf, which the test may also hand to
// the connector clients it builds.
func withLogs(buf *syncBuffer) envOption { return func(o *envOptions) { o.logs = buf } }

// withLimits sets the request limits (zero values: the service's defaults) and the largest upload.
func withLimits(l web.Limits, maxFile int64) envOption {
	return func(o *envOptions) { o.limits, o.maxFile = l, maxFile }
}

// withThrottle sets the login throttle.
func withThrottle(th *auth.Throttle) envOption { return func(o *envOptions) { o.throttle = th } }

// withRules runs the automation rules' engine with a quick poll; orgJobs sets the organisations' budget
// (0: the default).
func withRules(orgJobs int) envOption {
	return func(o *envOptions) { o.rules, o.orgJobs = true, orgJobs }
}

// withoutTracker leaves pending jobs untracked until the test calls env.startTracker (as a restart would).
func withoutTracker() envOption { return func(o *envOptions) { o.noTracker = true } }

// withServers configures the connector's analysis servers and runs its tracker.
func withServers(cfg connector.AnalysisConfig, servers ...connector.AnalysisServer) envOption {
	return func(o *envOptions) { o.servers, o.analysis = servers, cfg }
}

// env is one server on its own database.
type env struct {
	echo *echo.Echo
	db   *docstore.DB
	jobs *store.JobStore // the analyzer jobs the connector would write
	// analyses holds the connector's responder actions and pending records.
	analyses *store.AnalysisStore
	// userReads counts the identity store's reads of a user by login (what checking an owner costs).
	userReads *atomic.Int64
	srv       *httptest.Server
	logs      *syncBuffer
	admin     *client // the bootstrapped platform administrator, by API key
	// startTracker runs a fresh connector tracker on this database (a restarted case-svc's).
	startTracker func()
	// startRules runs the automation rules' engine (again, after a stop: a restarted case-svc's).
	startRules func() (stop func())
	events     *auditbus.Service // the audit trail, streams and webhooks, running (events_test.go)
	app        *app.App          // the service's domain, for what no request can do (an event written late)
	stopEvents func()            // stops their background work (a restart)
	// check sends the clients' requests and validates each response against the OpenAPI document.
	check http.RoundTripper
}

// syncBuffer collects the service's logs; handlers write from several goroutines.
type syncBuffer = apitest.LogBuffer

// newEnv builds the service with internal/app (as cmd/case-svc does, with the tests' settings) on a fresh
// database and serves it.
func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	o := envOptions{secure: web.SecureConfig{AllowInsecure: true}, limits: web.Limits{Body: 2 << 20}}
	for _, f := range opts {
		f(&o)
	}
	db := o.db
	if db == nil {
		db = docstoretest.New(t)
	}
	cfg, err := app.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth.Secret, cfg.Auth.Method.Basic, cfg.Search.Max = testSecret, o.basic, 1000
	cfg.Bootstrap.Login, cfg.Bootstrap.Key = adminLogin, adminKey
	if o.adminPassword {
		cfg.Bootstrap.Password = adminPassword
	}
	if o.maxFile == 0 {
		o.maxFile = 2 << 20
	}
	cfg.Observable.MaxFile = strconv.FormatInt(o.maxFile, 10)
	if o.zip != (archive.Limits{}) {
		cfg.Observable.Zip.MaxEntries, cfg.Observable.Zip.MaxUnpacked = o.zip.MaxEntries, strconv.FormatInt(o.zip.MaxTotal, 10)
	}
	if o.zipPassword != "" {
		cfg.Datastore.Password = o.zipPassword
	}
	logs := o.logs
	if logs == nil {
		logs = &syncBuffer{}
	}
	userReads := &atomic.Int64{}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)), app.Options{
		DB: db, ConnectorNow: o.connectorNow, Servers: o.servers, Analysis: &o.analysis,
		Overrides: conf.Overrides{Now: o.now, Throttle: o.throttle, NoThrottle: o.throttle == nil, Limits: &o.limits, Secure: &o.secure},
		Events: func(c *auditbus.Config) {
			// the tests' quick settings
			*c = auditbus.Config{Poll: 200 * time.Millisecond, Refresh: 2 * time.Second, Window: 50 * time.Millisecond,
				Webhooks: auditbus.WebhookConfig{AllowPrivate: true, MaxAttempts: 5, Timeout: 2 * time.Second,
					BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Tick: 20 * time.Millisecond}}
			if o.events != nil {
				o.events(c)
			}
		},
		Automation: func(c *automation.EngineConfig) {
			c.Poll, c.Retry = 20*time.Millisecond, 500*time.Millisecond
			if o.orgJobs > 0 {
				c.OrgJobsPerHour = o.orgJobs
			}
		},
		IdentityStore: func(st identity.Store) identity.Store {
			return countingIdentity{Store: st, userReads: userReads}
		},
	})
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if !a.Bootstrapped && o.db == nil { // a database of a previous env (a restart) has its administrator
		t.Fatal("bootstrap: no administrator created")
	}
	stopEvents := a.StartEvents()
	// The tracker is the same service's, as in run.go (requests hold the records they submit); started late,
	// it finds the pending records in the database as a restarted service would.
	startTracker := func() { a.StartTracker() }
	if len(o.servers) > 0 && !o.noTracker {
		startTracker()
	}
	startRules := func() (stop func()) { return a.StartRules() }
	if o.rules {
		startRules()
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	e := &env{echo: a.Handler.(*echo.Echo), db: db, jobs: a.Jobs, analyses: a.AnalysisStore, userReads: userReads, srv: srv, logs: logs,
		startTracker: startTracker, startRules: startRules, events: a.Events, stopEvents: stopEvents, app: a}
	e.check = openapiTransport(t)
	e.admin = e.keyClient(adminLogin, adminKey)
	return e
}

// countingIdentity is the identity store counting its reads of a user by login.
type countingIdentity struct {
	identity.Store
	userReads *atomic.Int64
}

func (c countingIdentity) User(ctx context.Context, login string) (identity.User, error) {
	c.userReads.Add(1)
	return c.Store.User(ctx, login)
}

// The client, its responses and their checks are pkg/apitest's; these names keep the tests short.
type (
	resp = apitest.Response
	obj  = apitest.Object
)

// client is an apitest client of this env's server, with the harness's fixtures as methods.
type client struct {
	*apitest.Client
	e *env
}

// clients makes this env's clients.
func (e *env) clients() apitest.Clients[*client] {
	return apitest.Clients[*client]{URL: e.srv.URL, Transport: e.check,
		Wrap: func(c *apitest.Client) *client { return &client{Client: c, e: e} }}
}

func (e *env) newClient(login string) *client { return e.clients().New(login) }

// anon returns a client without credentials.
func (e *env) anon() *client { return e.clients().Anon() }

// keyClient returns a client sending Authorization: Bearer key.
func (e *env) keyClient(login, key string) *client { return e.clients().Key(login, key) }

// basicClient returns a client sending HTTP basic credentials.
func (e *env) basicClient(login, password string) *client { return e.clients().Basic(login, password) }

// sessionClient returns a client with an empty cookie jar.
func (e *env) sessionClient() *client { return e.clients().Session() }

// part is one file of a multipart request.
type part struct {
	field, filename, contentType string
	content                      []byte
}

// multipart sends a multipart body: the JSON of v in `_json` (when v is not nil), plain fields, and files.
func (c *client) multipart(t testing.TB, method, path string, v any, fields map[string]string, files ...part) *resp {
	t.Helper()
	ps := make([]apitest.Part, len(files))
	for i, f := range files {
		ps[i] = apitest.Part{Field: f.field, Filename: f.filename, ContentType: f.contentType, Content: f.content}
	}
	return c.Multipart(t, method, path, v, fields, ps...)
}

// in returns a copy of the client that sends X-Organisation: org.
func (c *client) in(org string) *client { return &client{Client: c.Client.In(org), e: c.e} }

// --- fixtures, made through the API ---

// createOrg creates an organisation as the platform administrator.
func (e *env) createOrg(t testing.TB, name string) {
	t.Helper()
	e.admin.Call(t, http.MethodPost, "/api/organisation", map[string]any{"name": name, "description": "org " + name}).
		Want(t, http.StatusCreated)
}

// renewKey gives the user a new key as the given client and returns it.
func (e *env) renewKey(t testing.TB, as *client, login string) string {
	t.Helper()
	key := as.Call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).Want(t, http.StatusOK).Text(t)
	if len(key) < 32 {
		t.Fatalf("renew key of %s: key %q is shorter than 32 characters", login, key)
	}
	return key
}

// user creates a user with a key as the platform administrator and returns a client using that key.
func (e *env) user(t testing.TB, login, org, profile string) *client {
	t.Helper()
	e.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": "User " + login,
		"organisation": org, "profile": profile}).Want(t, http.StatusCreated)
	return e.keyClient(login, e.renewKey(t, e.admin, login))
}

// team is the usual cast: organisation soc with one user per profile, and organisation cert with an analyst.
type team struct {
	*env
	orgAdmin, analyst, readOnly *client // in soc
	other                       *client // analyst of cert
}

func newTeam(t testing.TB, opts ...envOption) *team {
	t.Helper()
	e := newEnv(t, opts...)
	e.createOrg(t, "soc")
	e.createOrg(t, "cert")
	return &team{env: e,
		orgAdmin: e.user(t, "socadmin", "soc", "org-admin"),
		analyst:  e.user(t, "ana", "soc", "analyst"),
		readOnly: e.user(t, "reader", "soc", "read-only"),
		other:    e.user(t, "bob", "cert", "analyst"),
	}
}

// newCase creates a case as the client and returns it.
func (c *client) newCase(t testing.TB, body map[string]any) obj {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["title"]; !ok {
		body["title"] = "case"
	}
	if _, ok := body["description"]; !ok {
		body["description"] = "a description"
	}
	return c.Call(t, http.MethodPost, "/api/case", body).Want(t, http.StatusCreated).Object(t)
}
