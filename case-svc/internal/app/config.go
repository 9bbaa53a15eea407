package app

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/web"
)

// Server is one analysis server the connector drives; analysisId in requests is its name.
type Server struct {
	Name          string
	URL           string
	Key           string
	Timeout       time.Duration
	Organisations []string
}

// Config is every setting of case-svc; each key has a default so a CASE_* env variable can override it.
type Config struct {
	conf.Common `mapstructure:",squash"`
	Analysis    struct {
		Servers  []Server
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
	Automation struct {
		Poll           time.Duration // how often the rules' engine reads the events
		OrgJobsPerHour int           `mapstructure:"org_jobs_per_hour"` // jobs rules may make per organisation and hour; more are held
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
	"analysis.servers":             []map[string]any{},
	"analysis.give_up":             "24h",
	"analysis.long_poll":           "1m",
	"observable.max_file":          "100M",
	"observable.zip.max_unpacked":  "256M",
	"observable.zip.max_entries":   1000,
	"audit.retention":              "0s",
	"automation.poll":              "200ms",
	"automation.org_jobs_per_hour": 1000,
}

// Load reads --config FILE (optional), then CASE_* env variables (CASE_ANALYSIS_SERVERS as JSON).
func Load(args []string, stderr io.Writer) (Config, error) { return read(args, stderr, false) }

// Default is the configuration of the defaults alone (no file, no env variables): case-svc in another
// program's process, a benchmark or a test, which then sets what it needs.
func Default() (Config, error) { return read(nil, io.Discard, true) }

// read loads the configuration (the defaults alone, or with the file and env variables) and checks it.
func read(args []string, stderr io.Writer, defaultsOnly bool) (Config, error) {
	var c Config
	var err error
	if defaultsOnly {
		err = conf.Defaults(defaults(), &c)
	} else {
		err = conf.Load("case-svc", "CASE", defaults(), args, stderr, &c)
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
	if _, err := web.ParseSize(c.Observable.MaxFile); err != nil {
		return fmt.Errorf("config: observable.max_file: %w", err)
	}
	if _, err := c.ZipLimits(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range c.Analysis.Servers {
		if s.Name == "" || s.URL == "" {
			return errors.New("config: every analysis.servers entry needs a name and a url")
		}
		if seen[s.Name] {
			return errors.New("config: analysis.servers names must be unique: " + s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// ZipLimits are observable.zip's limits on one uploaded archive.
func (c Config) ZipLimits() (archive.Limits, error) {
	total, err := web.ParseSize(c.Observable.Zip.MaxUnpacked)
	if err != nil || total <= 0 {
		return archive.Limits{}, fmt.Errorf("config: observable.zip.max_unpacked: want a size such as 256M")
	}
	if c.Observable.Zip.MaxEntries <= 0 {
		return archive.Limits{}, fmt.Errorf("config: observable.zip.max_entries: want a positive number")
	}
	return archive.Limits{MaxEntries: c.Observable.Zip.MaxEntries, MaxTotal: total}, nil
}
