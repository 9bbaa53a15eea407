// Package conf loads a service's configuration with one Viper instance: defaults for every key (so env
// variables can override any of them), an optional --config file, then PREFIX_* env variables. A key the
// service does not have, in the file or in the environment, is an error naming it: a misspelt key would
// otherwise be ignored without a word.
package conf

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Load fills out (a pointer to the service's config struct, with mapstructure tags) from defaults, the file
// named by --config in args, and env variables named PREFIX_KEY with "." → "_" (e.g. ANALYSIS_DATABASE_URI).
// List keys accept a comma-separated string or, when it starts with "[", a JSON array. A key of the file
// that out has no field for, and an env variable PREFIX_SECTION_… whose section (http, webhook…) is one of
// the defaults' but whose name is no key's, are errors naming them (UnknownEnv says which variables count).
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
	if bad := UnknownEnv(prefix, defaults, os.Environ()); len(bad) > 0 {
		return fmt.Errorf("config: unknown key in the environment: %s (no such key; env names are %s_ + the key with \".\" → \"_\", upper case)",
			strings.Join(bad, ", "), prefix)
	}
	if *file != "" {
		v.SetConfigFile(*file)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("read config %s: %w", *file, err)
		}
	}
	if err := decode(v, out); err != nil {
		if *file != "" {
			return fmt.Errorf("%w (file %s)", err, *file)
		}
		return err
	}
	return nil
}

// UnknownEnv returns the variables of environ (KEY=VALUE entries) that look meant for this service but
// name no key: PREFIX_ followed by a section of the defaults' keys (HTTP_, WEBHOOK_…) and then anything
// that is no key's env name. Other PREFIX_ variables are left alone: a Kubernetes service link
// (CASE_SVC_PORT) or a test's own switch is not a misspelt key.
func UnknownEnv(prefix string, defaults map[string]any, environ []string) []string {
	known := map[string]bool{}
	sections := map[string]bool{}
	for k := range defaults {
		known[EnvName(prefix, k)] = true
		if section, _, ok := strings.Cut(k, "."); ok {
			sections[EnvName(prefix, section)+"_"] = true
		}
	}
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if known[name] {
			continue
		}
		for s := range sections {
			if strings.HasPrefix(name, s) {
				bad = append(bad, name)
				break
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// EnvName is the env variable that sets key: PREFIX_ + the key with "." → "_", upper case.
func EnvName(prefix, key string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
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

// decode unmarshals v into out with the hooks of every key type (durations, lists as text or JSON). A key
// out has no field for (a misspelt one, one of the other service, a field of an analysis.servers entry) is
// an error naming it with its full path.
func decode(v *viper.Viper, out any) error {
	hook := viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		jsonListHook,
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
	))
	var md mapstructure.Metadata
	if err := v.Unmarshal(out, hook, func(c *mapstructure.DecoderConfig) { c.Metadata = &md }); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if len(md.Unused) > 0 {
		// mapstructure names the path with the fields' Go names where they have no tag; the keys are those
		// names in lower case (Viper folds keys), so the lower-cased path is the key as written.
		unused := make([]string, len(md.Unused))
		for i, k := range md.Unused {
			unused[i] = strings.ToLower(k)
		}
		slices.Sort(unused)
		return fmt.Errorf("config: unknown key %s (no such setting)", strings.Join(unused, ", "))
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
