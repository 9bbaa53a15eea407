package app

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/pkg/conf"
)

// Config is every setting of analysis-svc. Each key has a default (so an ANALYSIS_* env variable can
// override it) and the names are the ones DECISIONS.md lists: deployments rely on them.
type Config struct {
	conf.Common `mapstructure:",squash"`
	Analyzer    struct {
		Paths []string
	}
	Responder struct {
		Paths []string
	}
	Job struct {
		Workers int
		// OrgMax caps the running jobs of one organization across replicas (0 = no cap).
		OrgMax    int `mapstructure:"org_max"`
		Cache     int
		Runner    []string
		Timeout   time.Duration
		Lease     time.Duration
		Attempts  int
		Directory string
		// DirectoryGroup and DirectoryMode open job folders to one group (jobdir.FolderAccess).
		DirectoryGroup string `mapstructure:"directory_group"`
		DirectoryMode  string `mapstructure:"directory_mode"`
		MaxFile        string `mapstructure:"max_file"`
		Waitreport     struct {
			Max time.Duration
		}
		Process struct {
			Path string
			Env  []string
		}
		Docker struct {
			Host           string
			Network        string
			User           string
			Pull           string
			CertPath       string `mapstructure:"cert_path"`
			RegistryConfig string `mapstructure:"registry_config"`
		}
	}
	Datastore struct {
		Password string // of the zips /api/datastorezip serves, reported as protectDownloadsWith
	}
	Events struct {
		Retention time.Duration // job events older than this are deleted; 0 keeps them
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
		MaxEndpoints int           `mapstructure:"max_endpoints"` // webhooks of one organisation
		BackoffMin   time.Duration `mapstructure:"backoff_min"`   // first retry delay, doubled per attempt
		BackoffMax   time.Duration `mapstructure:"backoff_max"`
	}
}

// defaults are the common keys' defaults plus this service's.
func defaults() map[string]any {
	d := conf.CommonDefaults(":9001", "analysis", "data/analysis")
	for k, v := range ownDefaults {
		d[k] = v
	}
	return d
}

// ownDefaults are the defaults of the keys only this service has.
var ownDefaults = map[string]any{
	"analyzer.paths":      []string{},
	"responder.paths":     []string{},
	"job.workers":         4,
	"job.org_max":         0,
	"job.cache":           10,
	"job.runner":          []string{"process"},
	"job.waitreport.max":  "10m",
	"job.timeout":         "30m",
	"job.lease":           "30s",
	"job.attempts":        3,
	"job.directory":       "",
	"job.directory_group": "",
	"job.directory_mode":  "",
	"job.max_file":        "1G",
	"job.process.path":    "",
	"job.process.env":     []string{},
	"job.docker.host":     "",
	"job.docker.network":  "",
	"job.docker.user":     "",
	"job.docker.pull":     "missing",
	// TLS to a tcp:// engine, registry credentials for pulls
	"job.docker.cert_path":       "",
	"job.docker.registry_config": "",
	"datastore.password":         "malware",
	"events.retention":           "0s",
	"stream.poll":                "1s",
	"stream.refresh":             "1m",
	"stream.max_per_user":        20,
	"stream.max_per_org":         200,
	"stream.buffer":              1000,
	"webhook.allow_private":      false,
	"webhook.max_attempts":       10,
	"webhook.max_endpoints":      20,
	"webhook.timeout":            "10s",
	"webhook.backoff_min":        "1s",
	"webhook.backoff_max":        "10m",
}

// Load reads --config FILE (optional), then ANALYSIS_* env variables (key with "." → "_", upper case).
func Load(args []string, stderr io.Writer) (Config, error) { return read(args, stderr, false) }

// Default is the configuration of the defaults alone (no file, no env variables): analysis-svc in another
// program's process, a benchmark or a test, which then sets what it needs.
func Default() (Config, error) { return read(nil, io.Discard, true) }

// read loads the configuration (the defaults alone, or with the file and env variables) and checks it.
func read(args []string, stderr io.Writer, defaultsOnly bool) (Config, error) {
	var c Config
	var err error
	if defaultsOnly {
		err = conf.Defaults(defaults(), &c)
	} else {
		err = conf.Load("analysis-svc", "ANALYSIS", defaults(), args, stderr, &c)
	}
	if err == nil {
		err = c.check()
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// check validates the settings Load and Default read.
func (c Config) check() error {
	if err := c.Check(); err != nil {
		return err
	}
	for _, r := range c.Job.Runner {
		if r != "process" && r != "docker" {
			return fmt.Errorf("config: job.runner: unknown runner %q (process, docker)", r)
		}
	}
	if c.Job.Workers <= 0 || c.Job.Attempts <= 0 || c.Job.Lease < time.Second {
		return errors.New("config: job.workers and job.attempts must be positive, job.lease at least 1s")
	}
	if c.Job.OrgMax < 0 {
		return errors.New("config: job.org_max must be 0 (no cap) or positive")
	}
	if _, err := jobdir.ParseFolderAccess(c.Job.DirectoryGroup, c.Job.DirectoryMode); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
