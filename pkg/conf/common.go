package conf

import (
	"errors"
	"time"
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
		AllowInsecureCredentials bool     `mapstructure:"allow_insecure_credentials"`
		TrustedProxies           []string `mapstructure:"trusted_proxies"`
		BodyLimit                string   `mapstructure:"body_limit"`
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
		"http.body_limit":                 "100M",
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
	return nil
}
