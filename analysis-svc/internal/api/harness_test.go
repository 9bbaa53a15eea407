package api_test

// The harness builds the real service with internal/app, the function cmd/analysis-svc/run.go calls (a fresh
// embedded database of its own, the tests' settings in the configuration and app.Options), and serves it with
// httptest. Tests talk to it over HTTP only, as a client would.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/app"
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
	authFailure = "Authentication failure"
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
	noWorkers     bool // do not run the job workers (queue tests start their own)
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
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
		DB: db, Catalog: analysis.NewCatalog(testDefinitions()...), Jobs: &jcfg,
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
	srv := httptest.NewServer(a.Echo)
	t.Cleanup(srv.Close)
	e := &env{db: db, echo: a.Echo, srv: srv, logs: logs, catalog: a.Catalog, jobStore: a.JobStore, wstore: a.WorkerStore,
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

// client is one way of calling the API: a Bearer key, basic credentials, a cookie jar, or nothing.
type client struct {
	e        *env
	login    string // the user behind the credential, "" for none
	key      string
	basic    [2]string
	jar      http.CookieJar
	hc       *http.Client
	csrf     bool        // send the XSRF-TOKEN cookie's value in X-XSRF-TOKEN
	header   http.Header // sent with every request
	password string      // the user's password, when the test set one
}

func (e *env) newClient(login string) *client {
	return &client{e: e, login: login, hc: &http.Client{Timeout: 30 * time.Second, Transport: e.check}, header: http.Header{}}
}

// anon returns a client without credentials.
func (e *env) anon() *client { return e.newClient("") }

// keyClient returns a client sending Authorization: Bearer key.
func (e *env) keyClient(login, key string) *client {
	c := e.newClient(login)
	c.key = key
	return c
}

// basicClient returns a client sending HTTP basic credentials.
func (e *env) basicClient(login, password string) *client {
	c := e.newClient(login)
	c.basic = [2]string{login, password}
	return c
}

// sessionClient returns a client with an empty cookie jar (log in with login).
func (e *env) sessionClient() *client {
	c := e.newClient("")
	jar, _ := cookiejar.New(nil)
	c.jar = jar
	c.hc.Jar = jar
	return c
}

// cookie returns the value of a cookie the jar holds for the server, "" if none.
func (c *client) cookie(name string) string {
	u, _ := url.Parse(c.e.srv.URL)
	for _, ck := range c.jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// login posts credentials to /api/login with the client's jar.
func (c *client) loginAs(t testing.TB, login, password string) *resp {
	t.Helper()
	r := c.call(t, http.MethodPost, "/api/login", map[string]string{"user": login, "password": password})
	if r.status == http.StatusOK {
		c.login = login
	}
	return r
}

// resp is a response read in full.
type resp struct {
	method, path string
	status       int
	header       http.Header
	cookies      []*http.Cookie
	body         []byte
}

// call sends body (nil for none) as JSON.
func (c *client) call(t testing.TB, method, path string, body any) *resp {
	t.Helper()
	if body == nil {
		return c.send(t, method, path, "", nil, nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return c.send(t, method, path, "application/json", bytes.NewReader(b), nil)
}

// raw sends a body as is with a content type.
func (c *client) raw(t testing.TB, method, path, contentType, body string) *resp {
	t.Helper()
	return c.send(t, method, path, contentType, strings.NewReader(body), nil)
}

// form sends a URL-encoded form.
func (c *client) form(t testing.TB, method, path string, v url.Values) *resp {
	t.Helper()
	return c.raw(t, method, path, "application/x-www-form-urlencoded", v.Encode())
}

// multipartJSON sends a multipart body whose part `_json` holds the JSON of v.
func (c *client) multipartJSON(t testing.TB, method, path string, v any) *resp {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("_json", string(js)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return c.send(t, method, path, mw.FormDataContentType(), &buf, nil)
}

// send is the one place requests are made.
func (c *client) send(t testing.TB, method, path, contentType string, body io.Reader, hdr http.Header) *resp {
	t.Helper()
	req, err := http.NewRequest(method, c.e.srv.URL+path, body)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	for k, vs := range c.header {
		req.Header[k] = slices.Clone(vs)
	}
	for k, vs := range hdr {
		req.Header[k] = slices.Clone(vs)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.key != "":
		req.Header.Set("Authorization", "Bearer "+c.key)
	case c.basic[0] != "":
		req.SetBasicAuth(c.basic[0], c.basic[1])
	}
	if c.csrf && c.jar != nil {
		if v := c.cookie(auth.CSRFCookie); v != "" {
			req.Header.Set(auth.CSRFHeader, v)
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &resp{method: method, path: path, status: res.StatusCode, header: res.Header, cookies: res.Cookies(), body: b}
}

// want fails the test unless the status is code.
func (r *resp) want(t testing.TB, code int) *resp {
	t.Helper()
	if r.status != code {
		t.Fatalf("%s %s: status %d, want %d; body %s", r.method, r.path, r.status, code, r.body)
	}
	return r
}

// decode unmarshals the JSON body into v.
func (r *resp) decode(t testing.TB, v any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, want application/json", r.method, r.path, ct)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: decode %s: %v", r.method, r.path, r.body, err)
	}
}

// object decodes the body as a JSON object.
func (r *resp) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// list decodes the body as a JSON array of objects.
func (r *resp) list(t testing.TB) []map[string]any {
	t.Helper()
	var l []map[string]any
	r.decode(t, &l)
	if l == nil {
		t.Fatalf("%s %s: body %s is not an array", r.method, r.path, r.body)
	}
	return l
}

// ids returns the `id` of every item of a list response, in order.
func (r *resp) ids(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, m := range r.list(t) {
		id, _ := m["id"].(string)
		out = append(out, id)
	}
	return out
}

// text returns a text/plain body.
func (r *resp) text(t testing.TB) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("%s %s: Content-Type %q, want text/plain", r.method, r.path, ct)
	}
	return string(r.body)
}

// errorTypes are the error types of DECISIONS.md "Errors" by status.
var errorTypes = map[int][]string{
	400: {"BadRequest", "AttributeCheckingError", "CreateError"},
	401: {"AuthenticationError"},
	403: {"AuthorizationError"},
	404: {"NotFoundError"},
	405: {"BadRequest"},
	413: {"BadRequest"},
	429: {"RateLimitExceeded"},
	500: {"InternalError"},
}

// leaks are fragments that must never reach a client: Go, driver and stack text.
var leaks = []string{"goroutine ", ".go:", "mongo", "bson", "ferret", "sqlite", "runtime.", "panic", "%!", "<nil>"}

// checkErrorShape fails unless the response is an error body of DECISIONS.md: JSON with exactly a string
// `type` and a string `message` (AttributeCheckingError may add `errors`), of a type allowed for the status,
// without Go or driver text.
func (r *resp) checkErrorShape(t testing.TB) (typ, msg string) {
	t.Helper()
	if r.status < 400 {
		t.Fatalf("%s %s: status %d is not an error; body %s", r.method, r.path, r.status, r.body)
	}
	var m map[string]json.RawMessage
	r.decode(t, &m)
	for k := range m {
		if k != "type" && k != "message" && k != "errors" {
			t.Errorf("%s %s: error body has an extra key %q: %s", r.method, r.path, k, r.body)
		}
	}
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ == "" {
		t.Errorf("%s %s: error body without a string type: %s", r.method, r.path, r.body)
	}
	if err := json.Unmarshal(m["message"], &msg); err != nil || msg == "" {
		t.Errorf("%s %s: error body without a string message: %s", r.method, r.path, r.body)
	}
	if errs, ok := m["errors"]; ok {
		if typ != "AttributeCheckingError" {
			t.Errorf("%s %s: `errors` on a %s: %s", r.method, r.path, typ, r.body)
		}
		var fe []struct{ Name, Message string }
		if err := json.Unmarshal(errs, &fe); err != nil || len(fe) == 0 {
			t.Errorf("%s %s: `errors` is not a non-empty list of {name,message}: %s", r.method, r.path, r.body)
		}
	}
	if allowed, ok := errorTypes[r.status]; ok && !slices.Contains(allowed, typ) {
		t.Errorf("%s %s: status %d with type %q, want one of %v", r.method, r.path, r.status, typ, allowed)
	}
	low := strings.ToLower(string(r.body))
	for _, l := range leaks {
		if strings.Contains(low, l) {
			t.Errorf("%s %s: error body leaks %q: %s", r.method, r.path, l, r.body)
		}
	}
	return typ, msg
}

// wantError fails unless the response is an error of this status and type with the DECISIONS.md shape. It
// returns the error message.
func (r *resp) wantError(t testing.TB, status int, typ string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s %s: status %d, want %d %s; body %s", r.method, r.path, r.status, status, typ, r.body)
	}
	got, msg := r.checkErrorShape(t)
	if got != typ {
		t.Fatalf("%s %s: error type %q, want %q; body %s", r.method, r.path, got, typ, r.body)
	}
	if status == http.StatusUnauthorized && msg != authFailure {
		t.Errorf("%s %s: 401 message %q, want %q", r.method, r.path, msg, authFailure)
	}
	return msg
}

// fieldErrors returns the names in the `errors` list of an AttributeCheckingError.
func (r *resp) fieldErrors(t testing.TB) []string {
	t.Helper()
	var b struct {
		Errors []struct{ Name, Message string } `json:"errors"`
	}
	r.decode(t, &b)
	var names []string
	for _, e := range b.Errors {
		names = append(names, e.Name)
	}
	return names
}

// --- fixtures, made through the API ---

// createOrg creates an organization as the superadmin.
func (e *env) createOrg(t testing.TB, name string) {
	t.Helper()
	e.super.call(t, http.MethodPost, "/api/organization", map[string]any{"name": name, "description": "org " + name}).
		want(t, http.StatusCreated)
}

// createUser creates a user (without key or password) as the given admin.
func (e *env) createUser(t testing.TB, as *client, login, org string, roles []string) {
	t.Helper()
	as.call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": "User " + login,
		"organization": org, "roles": roles}).want(t, http.StatusCreated)
}

// renewKey gives the user a new key as the given admin and returns it.
func (e *env) renewKey(t testing.TB, as *client, login string) string {
	t.Helper()
	key := as.call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).want(t, http.StatusOK).text(t)
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
	e.super.call(t, http.MethodPost, "/api/user/"+login+"/password/set", map[string]string{"password": password}).
		want(t, http.StatusNoContent)
}

// getUser reads a user back as the superadmin.
func (e *env) getUser(t testing.TB, login string) map[string]any {
	t.Helper()
	return e.super.call(t, http.MethodGet, "/api/user/"+login, nil).want(t, http.StatusOK).object(t)
}

// getOrg reads an organization back as the superadmin.
func (e *env) getOrg(t testing.TB, id string) map[string]any {
	t.Helper()
	return e.super.call(t, http.MethodGet, "/api/organization/"+id, nil).want(t, http.StatusOK).object(t)
}

// localhostOnly is a trusted-proxy list holding the test server's peer address.
func localhostOnly(t testing.TB) []*net.IPNet {
	t.Helper()
	n, err := web.ParseCIDRs([]string{"127.0.0.1/32", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
