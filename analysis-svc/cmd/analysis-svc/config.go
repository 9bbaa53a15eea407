package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/conf"
)

// config is every setting of analysis-svc. Each key has a default (so an ANALYSIS_* env variable can
// override it) and the names are the ones DECISIONS.md lists: deployments rely on them.
type config struct {
	conf.Common `mapstructure:",squash"`
	Analyzer    struct {
		Paths []string
	}
	Responder struct {
		Paths []string
	}
	Job struct {
		Workers   int
		Cache     int
		Runner    []string
		Timeout   time.Duration
		Lease     time.Duration
		Attempts  int
		Directory string
		// DirectoryGroup and DirectoryMode open job folders to one group (analysis.FolderAccess).
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
			Host    string
			Network string
			User    string
			Pull    string
		}
	}
	Datastore struct {
		Password string // of the zips /api/datastorezip serves, reported as protectDownloadsWith
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
	"datastore.password":  "malware",
}

// loadConfig reads --config FILE (optional), then ANALYSIS_* env variables (key with "." → "_", upper case).
func loadConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	if err := conf.Load("analysis-svc", "ANALYSIS", defaults(), args, stderr, &c); err != nil {
		return config{}, err
	}
	if err := c.Check(); err != nil {
		return config{}, err
	}
	for _, r := range c.Job.Runner {
		if r != "process" && r != "docker" {
			return config{}, fmt.Errorf("config: job.runner: unknown runner %q (process, docker)", r)
		}
	}
	if c.Job.Workers <= 0 || c.Job.Attempts <= 0 || c.Job.Lease < time.Second {
		return config{}, errors.New("config: job.workers and job.attempts must be positive, job.lease at least 1s")
	}
	if _, err := analysis.ParseFolderAccess(c.Job.DirectoryGroup, c.Job.DirectoryMode); err != nil {
		return config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}
