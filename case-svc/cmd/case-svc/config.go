package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/web"
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
	conf.Common `mapstructure:",squash"`
	Analysis    struct {
		Servers  []server
		GiveUp   time.Duration `mapstructure:"give_up"`   // a record whose server stays unreachable this long, without a break, fails
		LongPoll time.Duration `mapstructure:"long_poll"` // one waitreport call
	}
	Observable struct {
		MaxFile string `mapstructure:"max_file"` // largest uploaded file: observable, archive, task log attachment
		Zip     struct {
			MaxUnpacked string `mapstructure:"max_unpacked"` // all files of one uploaded archive, unpacked
			MaxEntries  int    `mapstructure:"max_entries"`  // entries of one uploaded archive
		}
	}
	Audit struct {
		Retention time.Duration // events older than this are deleted; 0 keeps them
	}
	Stream struct {
		Poll    time.Duration // how often other replicas' events are read
		Refresh time.Duration // how long a stream poll waits
	}
	Webhook struct {
		AllowPrivate bool          `mapstructure:"allow_private"` // deliver to loopback, private, link-local addresses
		MaxAttempts  int           `mapstructure:"max_attempts"`  // then the delivery is dead
		Timeout      time.Duration // one attempt
	}
	Datastore struct {
		Password string // of the zips /api/datastorezip serves, reported as protectDownloadsWith
	}
}

// defaults are the common keys' defaults plus this service's.
func defaults() map[string]any {
	d := conf.CommonDefaults(":9000", "cases", "data/case")
	for k, v := range ownDefaults {
		d[k] = v
	}
	return d
}

// ownDefaults are the defaults of the keys only this service has.
var ownDefaults = map[string]any{
	"analysis.servers":            []map[string]any{},
	"analysis.give_up":            "24h",
	"analysis.long_poll":          "1m",
	"observable.max_file":         "100M",
	"observable.zip.max_unpacked": "256M",
	"observable.zip.max_entries":  1000,
	"audit.retention":             "0s",
	"stream.poll":                 "1s",
	"stream.refresh":              "1m",
	"webhook.allow_private":       false,
	"webhook.max_attempts":        10,
	"webhook.timeout":             "10s",
	"datastore.password":          "malware",
}

// loadConfig reads --config FILE (optional), then CASE_* env variables (CASE_ANALYSIS_SERVERS as JSON).
func loadConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	if err := conf.Load("case-svc", "CASE", defaults(), args, stderr, &c); err != nil {
		return config{}, err
	}
	if err := c.Check(); err != nil {
		return config{}, err
	}
	if _, err := web.ParseSize(c.Observable.MaxFile); err != nil {
		return config{}, fmt.Errorf("config: observable.max_file: %w", err)
	}
	if _, err := c.zipLimits(); err != nil {
		return config{}, err
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

// zipLimits are observable.zip's limits on one uploaded archive.
func (c config) zipLimits() (cases.ZipLimits, error) {
	total, err := web.ParseSize(c.Observable.Zip.MaxUnpacked)
	if err != nil || total <= 0 {
		return cases.ZipLimits{}, fmt.Errorf("config: observable.zip.max_unpacked: want a size such as 256M")
	}
	if c.Observable.Zip.MaxEntries <= 0 {
		return cases.ZipLimits{}, fmt.Errorf("config: observable.zip.max_entries: want a positive number")
	}
	return cases.ZipLimits{MaxEntries: c.Observable.Zip.MaxEntries, MaxTotal: total}, nil
}
