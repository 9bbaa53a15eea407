// Package conf loads a service's configuration with one Viper instance: defaults for every key (so env
// variables can override any of them), an optional --config file, then PREFIX_* env variables.
package conf

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Load fills out (a pointer to the service's config struct, with mapstructure tags) from defaults, the file
// named by --config in args, and env variables named PREFIX_KEY with "." → "_" (e.g. ANALYSIS_DATABASE_URI).
// List keys accept a comma-separated string or, when it starts with "[", a JSON array.
func Load(name, prefix string, defaults map[string]any, args []string, stderr io.Writer, out any) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration file (YAML, JSON or TOML)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix(prefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if *file != "" {
		v.SetConfigFile(*file)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("read config %s: %w", *file, err)
		}
	}
	return decode(v, out)
}

// Defaults fills out from defaults alone, without a file or env variables: the configuration of a service
// run in another program's process (a benchmark, a test) as a deployment without settings would run it.
func Defaults(defaults map[string]any, out any) error {
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	return decode(v, out)
}

// decode unmarshals v into out with the hooks of every key type (durations, lists as text or JSON).
func decode(v *viper.Viper, out any) error {
	hook := viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		jsonListHook,
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
	))
	if err := v.Unmarshal(out, hook); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Logger returns the JSON logger of a service at the given level (debug, info, warn, error).
func Logger(w io.Writer, level, service string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("service", service)
}
