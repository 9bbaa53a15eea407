package main

import (
	"errors"
	"io"
	"time"

	"github.com/openir/platform/pkg/conf"
)

// server is one analysis server the connector drives; analysisId in requests is its name.
type server struct {
	Name          string
	URL           string
	Key           string
	Timeout       time.Duration
	Organisations []string
}

// config is every setting of case-svc; each key has a default so a CASE_* env variable can override it.
type config struct {
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
	// Mode is development (default) or production (refuses weak secrets and plain-HTTP credentials).
	Mode      string
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
	Analysis struct {
		Servers []server
	}
}

var defaults = map[string]any{
	"http.addr":                       ":9000",
	"http.tls.cert":                   "",
	"http.tls.key":                    "",
	"http.allow_insecure_credentials": false,
	"http.trusted_proxies":            []string{},
	"http.body_limit":                 "100M",
	"database.uri":                    "",
	"database.name":                   "cases",
	"database.path":                   "data/case",
	"auth.secret":                     "",
	"auth.method.basic":               false,
	"auth.session_ttl":                "1h",
	"auth.throttle.user":              5,
	"auth.throttle.address":           30,
	"auth.throttle.window":            "5m",
	"mode":                            "development",
	"bootstrap.login":                 "",
	"bootstrap.password":              "",
	"bootstrap.key":                   "",
	"search.max":                      10000,
	"log.level":                       "info",
	"analysis.servers":                []map[string]any{},
}

// loadConfig reads --config FILE (optional), then CASE_* env variables (CASE_ANALYSIS_SERVERS as JSON).
func loadConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	if err := conf.Load("case-svc", "CASE", defaults, args, stderr, &c); err != nil {
		return config{}, err
	}
	if (c.HTTP.TLS.Cert == "") != (c.HTTP.TLS.Key == "") {
		return config{}, errors.New("config: http.tls.cert and http.tls.key go together")
	}
	seen := map[string]bool{}
	for _, s := range c.Analysis.Servers {
		if s.Name == "" || s.URL == "" {
			return config{}, errors.New("config: every analysis.servers entry needs a name and a url")
		}
		if seen[s.Name] {
			return config{}, errors.New("config: analysis.servers names must be unique: " + s.Name)
		}
		seen[s.Name] = true
	}
	return c, nil
}
