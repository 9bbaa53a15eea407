package analysis

import (
	"context"
	"slices"
	"sort"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
)

// Base configurations (GET/PATCH /api/analyzerconfig, /api/responderconfig) are the settings an organization
// gives once for every flavor of an analyzer: one per baseConfig of the catalog's definitions (VirusTotal's
// API key for VirusTotal_GetReport and VirusTotal_Scan), plus "global" (proxies, cacerts, timeouts, and the
// TLP and PAP checks) for every worker of the kind. Cortex only uses them to prefill its UI's forms; here
// they also take effect:
//
//   - enabling a flavor takes, for each item the request leaves out, the base configuration's value before
//     the definition's default;
//   - a job's config takes, for each item whose value in the worker's configuration is null (not set, or an
//     empty list for a multi item), the base configuration's value ("global" first, then the flavor's own
//     base configuration). A value set in the worker's configuration always wins.

// GlobalBaseConfig is the name of the base configuration shared by every worker of a kind.
const GlobalBaseConfig = "global"

// BaseConfig is one base configuration of an organization: its items (those of every definition sharing the
// name, none required) and the values the organization set.
type BaseConfig struct {
	Name    string
	Workers []string // the names of the definitions sharing it
	Items   []ConfigItem
	Config  map[string]any
}

// BaseConfigStore keeps the organizations' base configuration values.
type BaseConfigStore interface {
	// BaseConfigs returns the values an organization set, by base configuration name.
	BaseConfigs(ctx context.Context, org string, kind Kind) (map[string]map[string]any, error)
	// SetBaseConfig replaces the values of one base configuration.
	SetBaseConfig(ctx context.Context, org string, kind Kind, name string, conf map[string]any, by string) error
}

// baseConfigItems lists the base configurations of a kind: "global" first, then the catalog's by name; a
// base configuration whose definitions have no item is not listed.
func baseConfigItems(catalog *Catalog, kind Kind) []BaseConfig {
	global := BaseConfig{Name: GlobalBaseConfig, Workers: []string{}, Items: globalItems(kind)}
	byName := map[string]*BaseConfig{}
	for _, d := range catalog.Definitions(kind) {
		if d.BaseConfig == "" || d.BaseConfig == GlobalBaseConfig {
			continue
		}
		b := byName[d.BaseConfig]
		if b == nil {
			b = &BaseConfig{Name: d.BaseConfig, Workers: []string{}, Items: []ConfigItem{}}
			byName[d.BaseConfig] = b
		}
		b.Workers = append(b.Workers, d.Name)
	next:
		for _, it := range d.ConfigurationItems {
			for _, have := range b.Items {
				if have.Name == it.Name {
					continue next
				}
			}
			it.Required = false
			b.Items = append(b.Items, it)
		}
	}
	out := []BaseConfig{global}
	names := make([]string, 0, len(byName))
	for n, b := range byName {
		if len(b.Items) > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}

// BaseConfigs lists the caller's organization's base configurations of a kind (orgadmin).
func (s *Workers) BaseConfigs(ctx context.Context, c identity.Caller, kind Kind) ([]BaseConfig, error) {
	if err := c.Require(identity.RoleOrgAdmin); err != nil {
		return nil, err
	}
	vals, err := s.baseStore().BaseConfigs(ctx, c.Org, kind)
	if err != nil {
		return nil, err
	}
	out := baseConfigItems(s.catalog, kind)
	for i := range out {
		out[i].Config = vals[out[i].Name]
		if out[i].Config == nil {
			out[i].Config = map[string]any{}
		}
	}
	return out, nil
}

// BaseConfig returns one base configuration (orgadmin); NotFound when no definition of the catalog has it.
func (s *Workers) BaseConfig(ctx context.Context, c identity.Caller, kind Kind, name string) (BaseConfig, error) {
	all, err := s.BaseConfigs(ctx, c, kind)
	if err != nil {
		return BaseConfig{}, err
	}
	for _, b := range all {
		if b.Name == name {
			return b, nil
		}
	}
	return BaseConfig{}, apperr.Errorf(apperr.NotFound, "%s configuration %s not found", kind, name)
}

// SetBaseConfig replaces the values of a base configuration (orgadmin): known items only, of their types;
// null values are dropped.
func (s *Workers) SetBaseConfig(ctx context.Context, c identity.Caller, kind Kind, name string, conf map[string]any) (BaseConfig, error) {
	b, err := s.BaseConfig(ctx, c, kind, name)
	if err != nil {
		return BaseConfig{}, err
	}
	known := map[string]ConfigItem{}
	for _, it := range b.Items {
		known[it.Name] = it
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]any{}
	var probs []apperr.FieldError
	for _, k := range keys {
		it, ok := known[k]
		switch {
		case !ok:
			probs = append(probs, apperr.FieldError{Name: "config." + k, Message: "unknown configuration item"})
		case conf[k] == nil:
		default:
			v, ok := checkItem(it, conf[k])
			if !ok {
				want := it.Type
				if it.Multi {
					want = "an array of " + it.Type
				}
				probs = append(probs, apperr.FieldError{Name: "config." + k, Message: "expected " + want})
				continue
			}
			out[k] = v
		}
	}
	if probs != nil {
		return BaseConfig{}, apperr.Fields(probs...)
	}
	if err := s.baseStore().SetBaseConfig(ctx, c.Org, kind, name, out, c.Login); err != nil {
		return BaseConfig{}, err
	}
	b.Config = out
	return b, nil
}

// baseStore is the workers' store as a BaseConfigStore (the stores of this service are both).
func (s *Workers) baseStore() BaseConfigStore {
	if b, ok := s.store.(BaseConfigStore); ok {
		return b
	}
	return noBaseConfigs{}
}

type noBaseConfigs struct{}

func (noBaseConfigs) BaseConfigs(context.Context, string, Kind) (map[string]map[string]any, error) {
	return nil, nil
}
func (noBaseConfigs) SetBaseConfig(context.Context, string, Kind, string, map[string]any, string) error {
	return apperr.New(apperr.Internal, "base configurations are not stored")
}

// baseValues are the values that apply to a worker of def in org: "global" then def's base configuration.
func baseValues(ctx context.Context, st WorkerStore, org string, def Definition) (map[string]any, error) {
	b, ok := st.(BaseConfigStore)
	if !ok {
		return nil, nil
	}
	vals, err := b.BaseConfigs(ctx, org, def.Kind)
	if err != nil || len(vals) == 0 {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range vals[GlobalBaseConfig] {
		out[k] = v
	}
	if def.BaseConfig != GlobalBaseConfig {
		for k, v := range vals[def.BaseConfig] {
			out[k] = v
		}
	}
	return out, nil
}

// unset tells a configuration value the worker left to its base configuration: null or an empty list.
func unset(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

// withBase returns conf with its unset values taken from base (only the keys conf has: the items of the
// worker's definition and the global ones).
func withBase(conf, base map[string]any) map[string]any {
	if len(base) == 0 {
		return conf
	}
	out := make(map[string]any, len(conf))
	for k, v := range conf {
		if b, ok := base[k]; ok && unset(v) {
			v = b
		}
		out[k] = v
	}
	return out
}

// prefill returns the configuration of an enable request with the items it leaves out taken from base.
func prefill(def Definition, conf, base map[string]any) map[string]any {
	if len(base) == 0 {
		return conf
	}
	out := make(map[string]any, len(conf))
	for k, v := range conf {
		out[k] = v
	}
	for _, it := range append(slices.Clone(def.ConfigurationItems), globalItems(def.Kind)...) {
		if v, ok := base[it.Name]; ok {
			if _, given := out[it.Name]; !given {
				out[it.Name] = v
			}
		}
	}
	return out
}
