package conf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/authstore"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/web"
)

// Common holds the settings both services have. A service embeds it with `mapstructure:",squash"`, so the
// keys stay at the top level (http.addr, database.uri, auth.secret…: DECISIONS.md lists them).
type Common struct {
	// Mode is development (default) or production (refuses weak secrets and plain-HTTP credentials).
	Mode string
	HTTP struct {
		Addr string
		TLS  struct {
			Cert string
			Key  string
		}
		AllowInsecureCredentials bool          `mapstructure:"allow_insecure_credentials"`
		TrustedProxies           []string      `mapstructure:"trusted_proxies"`
		BodyLimit                string        `mapstructure:"body_limit"`
		UnauthenticatedBodyLimit string        `mapstructure:"unauthenticated_body_limit"`
		ReadTimeout              time.Duration `mapstructure:"read_timeout"`
		UploadTimeout            time.Duration `mapstructure:"upload_timeout"`
		RequestTimeout           time.Duration `mapstructure:"request_timeout"`
		JSON                     struct {
			MaxDepth   int    `mapstructure:"max_depth"`
			MaxArray   int    `mapstructure:"max_array"`
			MaxString  string `mapstructure:"max_string"`
			MaxDecoded string `mapstructure:"max_decoded"`
			InFlight   string `mapstructure:"in_flight"`
		}
	}
	Database struct {
		URI  string
		Name string
		Path string
	}
	Auth struct {
		Secret string
		Method struct {
			Basic bool
		}
		SessionTTL time.Duration `mapstructure:"session_ttl"`
		Throttle   struct {
			User    int
			Address int
			Window  time.Duration
		}
	}
	Bootstrap struct {
		Login    string
		Password string
		Key      string
	}
	Search struct {
		Max int
	}
	Log struct {
		Level string
	}
	Datastore struct {
		Password string // of the zips /api/datastorezip serves, reported as protectDownloadsWith
	}
	Stream struct {
		Poll    time.Duration // how often other replicas' events are read
		Refresh time.Duration // how long a stream poll waits
		// MaxPerUser, MaxPerOrg bound the open streams of a user (the least recently polled closes) and of an
		// organisation (429) on a replica; Buffer is how many of an organisation's latest events it keeps.
		MaxPerUser int `mapstructure:"max_per_user"`
		MaxPerOrg  int `mapstructure:"max_per_org"`
		Buffer     int
	}
	Webhook struct {
		AllowPrivate bool          `mapstructure:"allow_private"` // deliver to loopback, private, link-local addresses
		MaxAttempts  int           `mapstructure:"max_attempts"`  // then the delivery is dead
		Timeout      time.Duration // one attempt
		MaxEndpoints int           `mapstructure:"max_endpoints"`         // webhooks of one organisation
		MaxInFlight  int           `mapstructure:"max_in_flight_per_org"` // attempts of one organisation at once, per instance
		BackoffMin   time.Duration `mapstructure:"backoff_min"`           // first retry delay, doubled per attempt
		BackoffMax   time.Duration `mapstructure:"backoff_max"`
	}
}

// Events is the event bus's configuration of the stream.* and webhook.* keys, with the service's retention
// (analysis-svc's events.retention, case-svc's audit.retention) and its deliveries' User-Agent ("" =
// pkg/events' default); the service adds what is its own (Confirm, RepairAllAtStart).
func (c Common) Events(retention time.Duration, userAgent string, log *slog.Logger) events.Config {
	s, w := c.Stream, c.Webhook
	return events.Config{Retention: retention, Poll: s.Poll, Refresh: s.Refresh, Log: log,
		StreamMaxPerUser: s.MaxPerUser, StreamMaxPerOrg: s.MaxPerOrg, StreamBuffer: s.Buffer,
		Webhooks: events.WebhookConfig{AllowPrivate: w.AllowPrivate, MaxAttempts: w.MaxAttempts,
			MaxEndpoints: w.MaxEndpoints, MaxInFlightPerOrg: w.MaxInFlight, Timeout: w.Timeout,
			BackoffMin: w.BackoffMin, BackoffMax: w.BackoffMax, UserAgent: userAgent}}
}

// CommonDefaults returns the defaults of the common keys for a service listening on addr with its database
// named dbName under dbPath; the service adds its own keys to the map.
func CommonDefaults(addr, dbName, dbPath string) map[string]any {
	return map[string]any{
		"mode":                            "development",
		"http.addr":                       addr,
		"http.tls.cert":                   "",
		"http.tls.key":                    "",
		"http.allow_insecure_credentials": false,
		"http.trusted_proxies":            []string{},
		"http.body_limit":                 "1M",
		"http.unauthenticated_body_limit": "64K",
		"http.read_timeout":               "1m",
		"http.upload_timeout":             "15m",
		"http.request_timeout":            "1m",
		"http.json.max_depth":             web.DefaultJSONDepth,
		"http.json.max_array":             web.DefaultJSONArray,
		"http.json.max_string":            "", // = http.body_limit
		"http.json.max_decoded":           "32M",
		"http.json.in_flight":             "32M",
		"database.uri":                    "",
		"database.name":                   dbName,
		"database.path":                   dbPath,
		"auth.secret":                     "",
		"auth.method.basic":               false,
		"auth.session_ttl":                "1h",
		"auth.throttle.user":              5,
		"auth.throttle.address":           30,
		"auth.throttle.window":            "5m",
		"bootstrap.login":                 "",
		"bootstrap.password":              "",
		"bootstrap.key":                   "",
		"search.max":                      10000,
		"log.level":                       "info",
		"datastore.password":              "malware",
		"stream.poll":                     "1s",
		"stream.refresh":                  "1m",
		"stream.max_per_user":             20,
		"stream.max_per_org":              200,
		"stream.buffer":                   1000,
		"webhook.allow_private":           false,
		"webhook.max_attempts":            10,
		"webhook.timeout":                 "10s",
		"webhook.max_endpoints":           20,
		"webhook.max_in_flight_per_org":   2,
		"webhook.backoff_min":             "1s",
		"webhook.backoff_max":             "10m",
	}
}

// Check validates the common settings.
func (c Common) Check() error {
	if (c.HTTP.TLS.Cert == "") != (c.HTTP.TLS.Key == "") {
		return errors.New("config: http.tls.cert and http.tls.key go together")
	}
	if c.Search.Max <= 0 {
		return errors.New("config: search.max must be positive")
	}
	if _, err := c.Limits(); err != nil {
		return err
	}
	return nil
}

// Limits are the request limits of the http.* keys.
func (c Common) Limits() (web.Limits, error) {
	h := c.HTTP
	var l web.Limits
	for _, s := range []struct {
		key, v string
		into   *int64
	}{
		{"http.body_limit", h.BodyLimit, &l.Body},
		{"http.unauthenticated_body_limit", h.UnauthenticatedBodyLimit, &l.Unauthenticated},
		{"http.json.max_string", h.JSON.MaxString, &l.JSON.String},
		{"http.json.max_decoded", h.JSON.MaxDecoded, &l.JSON.Decoded},
		{"http.json.in_flight", h.JSON.InFlight, &l.JSON.InFlight},
	} {
		if s.v == "" && s.key == "http.json.max_string" {
			continue // the body limit
		}
		n, err := web.ParseSize(s.v)
		if err != nil {
			return web.Limits{}, fmt.Errorf("config: %s: %w", s.key, err)
		}
		*s.into = n
	}
	if l.Unauthenticated > l.Body {
		return web.Limits{}, errors.New("config: http.unauthenticated_body_limit must not exceed http.body_limit")
	}
	if l.JSON.Decoded > l.JSON.InFlight {
		return web.Limits{}, errors.New("config: http.json.max_decoded must not exceed http.json.in_flight")
	}
	if h.JSON.MaxDepth <= 0 || h.JSON.MaxArray <= 0 || h.ReadTimeout <= 0 || h.UploadTimeout <= 0 {
		return web.Limits{}, errors.New("config: http.json.max_depth, http.json.max_array, http.read_timeout and http.upload_timeout must be positive")
	}
	if h.RequestTimeout < 0 {
		return web.Limits{}, errors.New("config: http.request_timeout must be 0 (none) or positive")
	}
	l.JSON.Depth, l.JSON.Array, l.UploadTimeout = h.JSON.MaxDepth, h.JSON.MaxArray, h.UploadTimeout
	l.Request = h.RequestTimeout
	return l, nil
}

// Overrides replace what the common keys give a service's router: the benchmark and the tests set them, a
// deployed service sets none.
type Overrides struct {
	Now        func() time.Time  // the sessions' clock (nil: time.Now)
	Throttle   *auth.Throttle    // replaces auth.throttle's
	NoThrottle bool              // no login throttle at all
	Limits     *web.Limits       // replaces the http.* request limits (zero values: the service's defaults)
	Secure     *web.SecureConfig // replaces http.allow_insecure_credentials and http.trusted_proxies
}

// Router is what the common keys give a service's router.
type Router struct {
	Auth   web.AuthConfig
	Secure web.SecureConfig
	Limits web.Limits
}

// Router builds the router's settings of the http.* and auth.* keys, with the keyring of auth.secret and
// the login throttle of auth.throttle, which counts in db so that replicas share one limit. It warns on log
// when credentials may travel over plain HTTP.
func (c Common) Router(ctx context.Context, db *docstore.DB, keys *auth.Keyring, log *slog.Logger, o Overrides) (Router, error) {
	r := Router{Secure: web.SecureConfig{AllowInsecure: c.HTTP.AllowInsecureCredentials}}
	if o.Secure != nil {
		r.Secure = *o.Secure
	} else {
		proxies, err := web.ParseCIDRs(c.HTTP.TrustedProxies)
		if err != nil {
			return Router{}, fmt.Errorf("http.trusted_proxies: %w", err)
		}
		r.Secure.TrustedProxies = proxies
	}
	if o.Limits != nil {
		r.Limits = *o.Limits
	} else {
		l, err := c.Limits()
		if err != nil {
			return Router{}, err
		}
		r.Limits = l
	}
	throttle := o.Throttle
	if throttle == nil && !o.NoThrottle {
		attempts, err := authstore.NewStoreCounter(ctx, db, time.Now)
		if err != nil {
			return Router{}, fmt.Errorf("login throttle: %w", err)
		}
		throttle = auth.NewSharedThrottle(c.Auth.Throttle.User, c.Auth.Throttle.Address, c.Auth.Throttle.Window, attempts)
	}
	tls := c.HTTP.TLS.Cert != ""
	if r.Secure.AllowInsecure && !tls {
		log.Warn("http.allow_insecure_credentials is on: passwords and keys travel over plain HTTP (dev only)")
	}
	r.Auth = web.AuthConfig{Keyring: keys, SessionTTL: c.Auth.SessionTTL, Basic: c.Auth.Method.Basic, Secure: tls,
		Now: o.Now, Throttle: throttle}
	return r, nil
}
