package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openir/platform/pkg/conf"
)

// config is every setting of analysis-svc. Each key has a default (so an ANALYSIS_* env variable can
// override it) and the names are the ones DECISIONS.md lists: deployments rely on them.
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
	Analyzer struct {
		Paths []string
	}
	Responder struct {
		Paths []string
	}
	Job struct {
		Workers    int
		Cache      int
		Runner     []string
		Timeout    time.Duration
		Lease      time.Duration
		Attempts   int
		Directory  string
		MaxFile    string `mapstructure:"max_file"`
		Waitreport struct {
			Max time.Duration
		}
		Process struct {
			Path string
			Env  []string
		}
		Docker struct {
			Host    string
			Network string
			User    string
			Pull    string
		}
	}
}

var defaults = map[string]any{
	"http.addr":                       ":9001",
	"http.tls.cert":                   "",
	"http.tls.key":                    "",
	"http.allow_insecure_credentials": false,
	"http.trusted_proxies":            []string{},
	"http.body_limit":                 "100M",
	"database.uri":                    "",
	"database.name":                   "analysis",
	"database.path":                   "data/analysis",
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
	"analyzer.paths":                  []string{},
	"responder.paths":                 []string{},
	"job.workers":                     4,
	"job.cache":                       10,
	"job.runner":                      []string{"process"},
	"job.waitreport.max":              "10m",
	"job.timeout":                     "30m",
	"job.lease":                       "30s",
	"job.attempts":                    3,
	"job.directory":                   "",
	"job.max_file":                    "1G",
	"job.process.path":                "",
	"job.process.env":                 []string{},
	"job.docker.host":                 "",
	"job.docker.network":              "",
	"job.docker.user":                 "",
	"job.docker.pull":                 "missing",
}

// loadConfig reads --config FILE (optional), then ANALYSIS_* env variables (key with "." → "_", upper case).
func loadConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	if err := conf.Load("analysis-svc", "ANALYSIS", defaults, args, stderr, &c); err != nil {
		return config{}, err
	}
	if (c.HTTP.TLS.Cert == "") != (c.HTTP.TLS.Key == "") {
		return config{}, errors.New("config: http.tls.cert and http.tls.key go together")
	}
	for _, r := range c.Job.Runner {
		if r != "process" && r != "docker" {
			return config{}, fmt.Errorf("config: job.runner: unknown runner %q (process, docker)", r)
		}
	}
	if c.Job.Workers <= 0 || c.Job.Attempts <= 0 || c.Job.Lease < time.Second {
		return config{}, errors.New("config: job.workers and job.attempts must be positive, job.lease at least 1s")
	}
	if c.Search.Max <= 0 {
		return config{}, errors.New("config: search.max must be positive")
	}
	return c, nil
}
