package api_test

// The harness builds the real service with internal/app, the function cmd/case-svc/run.go calls (a fresh
// embedded database of its own, the tests' settings in the configuration and app.Options), and serves it with
// httptest. Tests talk to it over HTTP only, as a client would.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/app"
	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/cases"
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
	authFailure = "Authentication failure"
)

// envOptions change how the server is built.
type envOptions struct {
	basic         bool
	secure        web.SecureConfig
	adminPassword bool // bootstrap the administrator with a password too (costs a hash)
	zip           archive.Limits
	servers       []cases.AnalysisServer // analysis servers of the connector (none by default)
	analysis      cases.AnalysisConfig
	noTracker     bool                // configure the servers but do not run the tracker until env.startTracker
	now           func() time.Time    // the sessions' clock; nil = time.Now
	connectorNow  func() time.Time    // the connector's clock; nil = time.Now
	logs          *syncBuffer         // where the service logs; nil = a new buffer
	limits        web.Limits          // zero: the tests' defaults (2M bodies, 64K before authentication)
	maxFile       int64               // the upload limit; 0 = 2M
	throttle      *auth.Throttle      // nil = none
	events        func(*audit.Config) // adjusts the events' settings (events_test.go)
	db            *docstore.DB        // nil = a fresh database
	zipPassword   string              // datastore.password; "" = the default
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

// withoutTracker leaves pending jobs untracked until the test calls env.startTracker (as a restart would).
func withoutTracker() envOption { return func(o *envOptions) { o.noTracker = true } }

// withServers configures the connector's analysis servers and runs its tracker.
func withServers(cfg cases.AnalysisConfig, servers ...cases.AnalysisServer) envOption {
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
	events       *audit.Service // the audit trail, streams and webhooks, running (events_test.go)
	stopEvents   func()         // stops their background work (a restart)
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
		Events: func(c *audit.Config) {
			// the tests' quick settings
			*c = audit.Config{Poll: 200 * time.Millisecond, Refresh: 2 * time.Second, Window: 50 * time.Millisecond,
				Webhooks: audit.WebhookConfig{AllowPrivate: true, MaxAttempts: 5, Timeout: 2 * time.Second,
					BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Tick: 20 * time.Millisecond}}
			if o.events != nil {
				o.events(c)
			}
		},
		IdentityStore: func(st cases.IdentityStore) cases.IdentityStore {
			return countingIdentity{IdentityStore: st, userReads: userReads}
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
	srv := httptest.NewServer(a.Echo)
	t.Cleanup(srv.Close)
	e := &env{echo: a.Echo, db: db, jobs: a.Jobs, analyses: a.AnalysisStore, userReads: userReads, srv: srv, logs: logs,
		startTracker: startTracker, events: a.Events, stopEvents: stopEvents}
	e.check = openapiTransport(t)
	e.admin = e.keyClient(adminLogin, adminKey)
	return e
}

// countingIdentity is the identity store counting its reads of a user by login.
type countingIdentity struct {
	cases.IdentityStore
	userReads *atomic.Int64
}

func (c countingIdentity) User(ctx context.Context, login string) (cases.User, error) {
	c.userReads.Add(1)
	return c.IdentityStore.User(ctx, login)
}

// client is one way of calling the API: a Bearer key, basic credentials, a cookie jar, or nothing.
type client struct {
	e      *env
	login  string // the user behind the credential, "" for none
	key    string
	basic  [2]string
	jar    http.CookieJar
	hc     *http.Client
	csrf   bool        // send the XSRF-TOKEN cookie's value in X-XSRF-TOKEN
	header http.Header // sent with every request
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

// sessionClient returns a client with an empty cookie jar.
func (e *env) sessionClient() *client {
	c := e.newClient("")
	jar, _ := cookiejar.New(nil)
	c.jar = jar
	c.hc.Jar = jar
	return c
}

// in returns a copy of the client that sends X-Organisation: org.
func (c *client) in(org string) *client {
	d := *c
	d.header = c.header.Clone()
	d.header.Set("X-Organisation", org)
	return &d
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

// resp is a response read in full.
type resp struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
}

// call sends body (nil for none) as JSON.
func (c *client) call(t testing.TB, method, path string, body any) *resp {
	t.Helper()
	if body == nil {
		return c.send(t, method, path, "", nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return c.send(t, method, path, "application/json", bytes.NewReader(b))
}

// raw sends a body as is with a content type.
func (c *client) raw(t testing.TB, method, path, contentType, body string) *resp {
	t.Helper()
	return c.send(t, method, path, contentType, strings.NewReader(body))
}

// part is one file of a multipart request.
type part struct {
	field, filename, contentType string
	content                      []byte
}

// multipart sends a multipart body: the JSON of v in `_json` (when v is not nil), plain fields, and files.
func (c *client) multipart(t testing.TB, method, path string, v any, fields map[string]string, files ...part) *resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if v != nil {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := mw.WriteField("_json", string(js)); err != nil {
			t.Fatal(err)
		}
	}
	for k, x := range fields {
		if err := mw.WriteField(k, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+f.field+`"; filename="`+f.filename+`"`)
		if f.contentType != "" {
			h.Set("Content-Type", f.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(f.content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return c.send(t, method, path, mw.FormDataContentType(), &buf)
}

// send is the one place requests are made.
func (c *client) send(t testing.TB, method, path, contentType string, body io.Reader) *resp {
	t.Helper()
	req, err := http.NewRequest(method, c.e.srv.URL+path, body)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	for k, vs := range c.header {
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
	return &resp{method: method, path: path, status: res.StatusCode, header: res.Header, body: b}
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
func (r *resp) object(t testing.TB) obj {
	t.Helper()
	var m obj
	r.decode(t, &m)
	return m
}

// list decodes the body as a JSON array of objects.
func (r *resp) list(t testing.TB) []obj {
	t.Helper()
	var l []obj
	r.decode(t, &l)
	if l == nil {
		t.Fatalf("%s %s: body %s is not an array", r.method, r.path, r.body)
	}
	return l
}

// total returns the X-Total header of a list.
func (r *resp) total(t testing.TB) string {
	t.Helper()
	v := r.header.Get("X-Total")
	if v == "" {
		t.Fatalf("%s %s: no X-Total header", r.method, r.path)
	}
	return v
}

// text returns a text/plain body.
func (r *resp) text(t testing.TB) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("%s %s: Content-Type %q, want text/plain", r.method, r.path, ct)
	}
	return string(r.body)
}

// obj is a decoded JSON object with typed accessors that fail the test on a wrong type.
type obj map[string]any

func (o obj) str(t testing.TB, k string) string {
	t.Helper()
	s, ok := o[k].(string)
	if !ok {
		t.Fatalf("field %q = %#v, want a string in %v", k, o[k], o)
	}
	return s
}

func (o obj) num(t testing.TB, k string) float64 {
	t.Helper()
	n, ok := o[k].(float64)
	if !ok {
		t.Fatalf("field %q = %#v, want a number in %v", k, o[k], o)
	}
	return n
}

func (o obj) obj(t testing.TB, k string) obj {
	t.Helper()
	m, ok := o[k].(map[string]any)
	if !ok {
		t.Fatalf("field %q = %#v, want an object in %v", k, o[k], o)
	}
	return m
}

func (o obj) strs(t testing.TB, k string) []string {
	t.Helper()
	l, ok := o[k].([]any)
	if !ok {
		t.Fatalf("field %q = %#v, want an array in %v", k, o[k], o)
	}
	out := []string{}
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("field %q has a non-string %#v", k, x)
		}
		out = append(out, s)
	}
	return out
}

// null fails unless the field is present and null.
func (o obj) null(t testing.TB, k string) {
	t.Helper()
	if v, ok := o[k]; !ok || v != nil {
		t.Fatalf("field %q = %#v (present %v), want null", k, v, ok)
	}
}

// errorTypes are the error types of DECISIONS.md "Errors" by status.
var errorTypes = map[int][]string{
	400: {"BadRequest", "AttributeCheckingError", "CreateError"},
	401: {"AuthenticationError"},
	403: {"AuthorizationError"},
	404: {"NotFoundError"},
	405: {"BadRequest"},
	413: {"BadRequest"},
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
// returns the message.
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

// createOrg creates an organisation as the platform administrator.
func (e *env) createOrg(t testing.TB, name string) {
	t.Helper()
	e.admin.call(t, http.MethodPost, "/api/organisation", map[string]any{"name": name, "description": "org " + name}).
		want(t, http.StatusCreated)
}

// renewKey gives the user a new key as the given client and returns it.
func (e *env) renewKey(t testing.TB, as *client, login string) string {
	t.Helper()
	key := as.call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).want(t, http.StatusOK).text(t)
	if len(key) < 32 {
		t.Fatalf("renew key of %s: key %q is shorter than 32 characters", login, key)
	}
	return key
}

// user creates a user with a key as the platform administrator and returns a client using that key.
func (e *env) user(t testing.TB, login, org, profile string) *client {
	t.Helper()
	e.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": "User " + login,
		"organisation": org, "profile": profile}).want(t, http.StatusCreated)
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
	return c.call(t, http.MethodPost, "/api/case", body).want(t, http.StatusCreated).object(t)
}
