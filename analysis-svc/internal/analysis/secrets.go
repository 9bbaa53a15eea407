package analysis

import (
	"net/url"
	"sort"
	"strings"
)

// Secrets of a worker never reach what a job reports. Cortex's analyzers redact their own input by key name
// (cortexutils: a name holding "key", "password" or "secret") and only at the top level, so a worker that
// reports its configuration (the built-in Echo, a failing external program printing its input or stderr)
// could show a proxy's credentials or an item declared secret to every reader of the job. The service
// therefore removes the values themselves from the job's errorMessage and from its report (input, summary,
// full report, operations, artifacts) before they are stored: for every reader, orgadmin included.

// redacted replaces a secret value.
const redacted = "REMOVED"

// minSecret is the shortest value removed: shorter ones (a flag, a port) would mangle reports.
const minSecret = 3

// IsSecretName tells configuration keys whose values are credentials (the cortexutils rule).
func IsSecretName(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "password") || strings.Contains(n, "secret")
}

// secretValues lists the credentials of a job's config: the values of the definition's items marked secret
// and of keys named like a secret (at any depth), and the proxy URLs (proxy_http, proxy_https, proxy.*) with
// their user information. Longest first, so that a secret holding another is removed whole.
func secretValues(def Definition, conf map[string]any) []string {
	set := map[string]bool{}
	add := func(v any) {
		switch x := v.(type) {
		case string:
			if len(x) >= minSecret {
				set[x] = true
			}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok && len(s) >= minSecret {
					set[s] = true
				}
			}
		}
	}
	addProxy := func(v any) {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return
		}
		add(s)
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			add(u.User.String())
			if p, ok := u.User.Password(); ok {
				add(p)
				add(url.QueryEscape(p))
			}
		}
	}
	for _, it := range def.ConfigurationItems {
		if it.Secret {
			add(conf[it.Name])
		}
	}
	var walk func(m map[string]any, path string)
	walk = func(m map[string]any, path string) {
		for k, v := range m {
			p := k
			if path != "" {
				p = path + "." + k
			}
			switch {
			case strings.HasPrefix(p, "proxy_") || strings.HasPrefix(p, "proxy."):
				addProxy(v)
			case IsSecretName(k):
				add(v)
			}
			if sub, ok := v.(map[string]any); ok {
				walk(sub, p)
			}
		}
	}
	walk(conf, "")
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return out
}

// scrubString removes every secret from s.
func scrubString(s string, secrets []string) string {
	for _, x := range secrets {
		if strings.Contains(s, x) {
			s = strings.ReplaceAll(s, x, redacted)
		}
	}
	return s
}

// scrubValue returns v (decoded JSON) with every secret removed from its strings and keys.
func scrubValue(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return scrubString(x, secrets)
	case map[string]any:
		return scrubMap(x, secrets)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = scrubValue(e, secrets)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = scrubMap(e, secrets)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = scrubString(e, secrets)
		}
		return out
	}
	return v
}

func scrubMap(m map[string]any, secrets []string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[scrubString(k, secrets)] = scrubValue(v, secrets)
	}
	return out
}

// scrubArtifacts removes the secrets from what a worker returned as artifacts, before they are stored.
func scrubArtifacts(arts []OutputArtifact, secrets []string) {
	for i := range arts {
		arts[i].Data = scrubString(arts[i].Data, secrets)
		arts[i].Message = scrubString(arts[i].Message, secrets)
		arts[i].Filename = scrubString(arts[i].Filename, secrets)
		for k, t := range arts[i].Tags {
			arts[i].Tags[k] = scrubString(t, secrets)
		}
	}
}

// scrubJob removes the secrets from a finished job's error and report.
func scrubJob(j Job, r *Report, secrets []string) (Job, *Report) {
	if len(secrets) == 0 {
		return j, r
	}
	j.ErrorMessage = scrubString(j.ErrorMessage, secrets)
	if r != nil {
		r.ErrorMessage = scrubString(r.ErrorMessage, secrets)
		r.Input = scrubString(r.Input, secrets)
		r.Summary = scrubMap(r.Summary, secrets)
		r.Full = scrubMap(r.Full, secrets)
		for i, op := range r.Operations {
			r.Operations[i] = scrubMap(op, secrets)
		}
	}
	return j, r
}
