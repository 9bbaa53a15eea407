package api_test

// The harness builds the real service with internal/app, the function cmd/analysis-svc/run.go calls (a fresh
// embedded database of its own, the tests' settings in the configuration and app.Options), and serves it with
// httptest. Tests talk to it over HTTP only, as a client would.

import (
	"context"
	"encoding/json"
	"github.com/openir/platform/pkg/apitest"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/app"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/web"
)

const (
	testSecret = "test-secret-0123456789"
	// The bootstrapped superadmin.
	superLogin    = "root"
	superPassword = "root-password-0123"
	superKey      = "root-key-0123456789-abcdefghijklmnop" // bootstrap keys need 32+ characters
	// authFailure is the one message of every 401 (spec §7.2).
	authFailure = apitest.AuthFailure
)

// Role sets of the contract.
var (
	roleRead     = []string{"read"}
	roleAnalyze  = []string{"read", "analyze"}
	roleOrgAdmin = []string{"read", "analyze", "orgadmin"}
	roleSuper    = []string{"superadmin"}
)

// envOptions change how the server is built.
type envOptions struct {
	basic         bool
	secure        web.SecureConfig
	superPassword bool             // bootstrap the superadmin with a password too (costs a hash)
	now           func() time.Time // the sessions' clock; nil = time.Now
	jobs          analysis.JobsConfig
	runners       *runner.Options // nil = those of the configuration (job.runner: process)
	noWorkers     bool            // do not run the job workers (queue tests start their own)
	limits        web.Limits
	maxFile       int64          // the upload limit of analyzer runs; 0 = 2M
	throttle      *auth.Throttle // nil = none
	zipPassword   string         // datastore.password; "" = the default
	// events adjusts the settings of the job events, streams and webhooks (events_test.go)
	events func(*events.Config)
}

type envOption func(*envOptions)

// withZipPassword sets datastore.password, the password of /api/datastorezip.
func withZipPassword(p string) envOption { return func(o *envOptions) { o.zipPassword = p } }

// withBasic turns auth.method.basic on.
func withBasic() envOption { return func(o *envOptions) { o.basic = true } }

// withSecure replaces the default SecureConfig{AllowInsecure: true}.
func withSecure(s web.SecureConfig) envOption { return func(o *envOptions) { o.secure = s } }

// withClock makes sessions use now as their clock.
func withClock(now func() time.Time) envOption { return func(o *envOptions) { o.now = now } }

// withJobs sets the job queue's configuration.
func withJobs(cfg analysis.JobsConfig) envOption { return func(o *envOptions) { o.jobs = cfg } }

// withRunners sets the job folders' and runners' settings.
func withRunners(o runner.Options) envOption { return func(e *envOptions) { e.runners = &o } }

// withoutWorkers leaves jobs Waiting: nothing runs them until the test starts workers.
func withoutWorkers() envOption { return func(o *envOptions) { o.noWorkers = true } }

// withLimits sets the request limits (zero values: the service's defaults) and the largest upload.
func withLimits(l web.Limits, maxFile int64) envOption {
	return func(o *envOptions) { o.limits, o.maxFile = l, maxFile }
}

// withThrottle sets the login throttle.
func withThrottle(th *auth.Throttle) envOption { return func(o *envOptions) { o.throttle = th } }

// withSuperPassword gives the bootstrapped superadmin the password superPassword.
func withSuperPassword() envOption { return func(o *envOptions) { o.superPassword = true } }

// env is one server on its own database.
type env struct {
	db    *docstore.DB
	echo  *echo.Echo // the router api.New built: its Routes() are the whole API surface
	srv   *httptest.Server
	logs  *syncBuffer
	super *client // the bootstrapped superadmin, by API key
	// The job side, for queue tests that start extra workers ("replicas") on the same database.
	catalog  *analysis.Catalog
	jobStore *store.JobStore
	wstore   *store.WorkerStore
	files    *store.FileStore
	jobs     *analysis.Jobs
	jobsCfg  analysis.JobsConfig
	// check sends the clients' requests and validates each response against the OpenAPI document.
	check http.RoundTripper
}

// syncBuffer collects the service's logs; handlers write from several goroutines.
type syncBuffer = apitest.LogBuffer

// newEnv builds the service with internal/app (as cmd/analysis-svc does, with the tests' settings: the
// test definitions, a quick queue and quick events) on a fresh database and serves it.
func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	o := envOptions{secure: web.SecureConfig{AllowInsecure: true}}
	for _, f := range opts {
		f(&o)
	}
	cfg, err := app.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth.Secret, cfg.Auth.Method.Basic, cfg.Search.Max = testSecret, o.basic, 1000
	cfg.Bootstrap.Login, cfg.Bootstrap.Key = superLogin, superKey
	if o.superPassword {
		cfg.Bootstrap.Password = superPassword
	}
	if o.maxFile == 0 {
		o.maxFile = 2 << 20
	}
	cfg.Job.MaxFile = strconv.FormatInt(o.maxFile, 10)
	if o.zipPassword != "" {
		cfg.Datastore.Password = o.zipPassword
	}
	jcfg := o.jobs
	if jcfg.Workers == 0 {
		jcfg.Workers = 2
	}
	if jcfg.CacheMinutes == 0 {
		jcfg.CacheMinutes = 10
	}
	if jcfg.Poll == 0 {
		jcfg.Poll = 200 * time.Millisecond
	}
	logs := &syncBuffer{}
	db := docstoretest.New(t)
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)), app.Options{
		DB: db, Catalog: analysis.NewCatalog(testDefinitions()...), Jobs: &jcfg, Runners: o.runners,
		// the limits' zero values: the defaults (1M bodies, 64K before authentication)
		Overrides: conf.Overrides{Now: o.now, Throttle: o.throttle, NoThrottle: o.throttle == nil, Limits: &o.limits, Secure: &o.secure},
		Events: func(c *events.Config) {
			// the tests' quick settings
			*c = events.Config{Poll: 200 * time.Millisecond, Refresh: 2 * time.Second, Window: 20 * time.Millisecond, Confirm: c.Confirm,
				Webhooks: events.WebhookConfig{AllowPrivate: true, MaxAttempts: 5, Timeout: 2 * time.Second,
					BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Tick: 100 * time.Millisecond}}
			if o.events != nil {
				o.events(c)
			}
		},
	})
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if !a.Bootstrapped {
		t.Fatal("bootstrap: no superadmin created")
	}
	a.StartEvents()
	if !o.noWorkers {
		startWorkers(t, a.Jobs)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	e := &env{db: db, echo: a.Handler.(*echo.Echo), srv: srv, logs: logs, catalog: a.Catalog, jobStore: a.JobStore, wstore: a.WorkerStore,
		files: a.Files, jobs: a.Jobs, jobsCfg: a.JobsConfig}
	e.check = openapiTransport(t)
	e.super = e.keyClient(superLogin, superKey)
	return e
}

// collection opens a collection of the test's database as the stores declare it, for tests that write or
// read the raw database.
func (e *env) collection(t testing.TB, name string) *docstore.Collection {
	t.Helper()
	c, err := store.Collection(context.Background(), e.db, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// insertRaw writes a document into a collection as is, bypassing the stores (JSON text: a malformed document).
func (e *env) insertRaw(t testing.TB, coll, doc string) {
	t.Helper()
	if err := e.collection(t, coll).Insert(context.Background(), json.RawMessage(doc)); err != nil {
		t.Fatalf("insert into %s: %v", coll, err)
	}
}

// rawDocs returns every document of a collection as stored, decoded as generic JSON.
func (e *env) rawDocs(t testing.TB, coll string) []map[string]any {
	t.Helper()
	raws, err := e.collection(t, coll).FindRaw(context.Background(), docstore.Query{Filter: docstore.All()})
	if err != nil {
		t.Fatalf("read %s: %v", coll, err)
	}
	out := make([]map[string]any, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("decode a document of %s: %v", coll, err)
		}
	}
	return out
}

// startWorkers runs the job workers of jobs until the test ends, and returns a function that stops them
// earlier (as a replica's shutdown would) and waits until they have.
func startWorkers(t testing.TB, jobs *analysis.Jobs) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = jobs.Run(ctx)
	}()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("job workers did not stop within 30 s")
		}
	}
	t.Cleanup(stop)
	return stop
}

// The client, its responses and their checks are pkg/apitest's.
type resp = apitest.Response

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

// loginAs posts credentials to /api/login with the client's jar.
func (c *client) loginAs(t testing.TB, login, password string) *resp {
	t.Helper()
	r := c.Call(t, http.MethodPost, "/api/login", map[string]string{"user": login, "password": password})
	if r.Status == http.StatusOK {
		c.Login = login
	}
	return r
}

// --- fixtures, made through the API ---

// createOrg creates an organization as the superadmin.
func (e *env) createOrg(t testing.TB, name string) {
	t.Helper()
	e.super.Call(t, http.MethodPost, "/api/organization", map[string]any{"name": name, "description": "org " + name}).
		Want(t, http.StatusCreated)
}

// createUser creates a user (without key or password) as the given admin.
func (e *env) createUser(t testing.TB, as *client, login, org string, roles []string) {
	t.Helper()
	as.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": "User " + login,
		"organization": org, "roles": roles}).Want(t, http.StatusCreated)
}

// renewKey gives the user a new key as the given admin and returns it.
func (e *env) renewKey(t testing.TB, as *client, login string) string {
	t.Helper()
	key := as.Call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).Want(t, http.StatusOK).Text(t)
	if len(key) < 32 {
		t.Fatalf("renew key of %s: key %q is shorter than 32 characters", login, key)
	}
	return key
}

// user creates a user with a key as the superadmin and returns a client using that key.
func (e *env) user(t testing.TB, login, org string, roles []string) *client {
	t.Helper()
	e.createUser(t, e.super, login, org, roles)
	return e.keyClient(login, e.renewKey(t, e.super, login))
}

// setPassword sets a user's password as the superadmin.
func (e *env) setPassword(t testing.TB, login, password string) {
	t.Helper()
	e.super.Call(t, http.MethodPost, "/api/user/"+login+"/password/set", map[string]string{"password": password}).
		Want(t, http.StatusNoContent)
}

// getUser reads a user back as the superadmin.
func (e *env) getUser(t testing.TB, login string) map[string]any {
	t.Helper()
	return e.super.Call(t, http.MethodGet, "/api/user/"+login, nil).Want(t, http.StatusOK).Object(t)
}

// getOrg reads an organization back as the superadmin.
func (e *env) getOrg(t testing.TB, id string) map[string]any {
	t.Helper()
	return e.super.Call(t, http.MethodGet, "/api/organization/"+id, nil).Want(t, http.StatusOK).Object(t)
}

// localhostOnly is a trusted-proxy list holding the test server's peer address.
func localhostOnly(t testing.TB) []*net.IPNet { return apitest.LocalhostOnly(t) }

// plainMaps is a list of objects as plain maps.
func plainMaps(l []apitest.Object) []map[string]any {
	out := make([]map[string]any, len(l))
	for i, o := range l {
		out[i] = o
	}
	return out
}
