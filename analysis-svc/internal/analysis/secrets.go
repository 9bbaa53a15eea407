package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// A credential an organization configured never reaches a reader of a job, and a report is stored exactly as
// the worker wrote it. The two meet where a worker echoes its own configuration: cortexutils' error() writes
// the job's input (config included) to output.json's "input", redacting only top-level keys named like a
// secret; a worker that crashes or prints its configuration ends with that text as the job's errorMessage. The
// service therefore removes configured credentials from the job's errorMessage and from the report's input
// and errorMessage. In the rest of the report it replaces only a value equal to a credential under the key it
// was configured under (a worker reporting its input.json, {"config": {"token": …}}); keys, taxonomy
// namespaces and predicates, any other value, and artifacts stay byte for byte as the worker wrote them.
// Public flavors ship ordinary words as default secrets (VMRay's archive_password "malware", Wazuh's
// wazuh_password "bar"): replacing them wherever they occur rewrote verdicts, families and observables.
//
// Which values are credentials: the values of the organization's configuration (not the definition's fixed
// config) for the items the definition marks secret, for keys named like a secret (the cortexutils rule, at
// any depth) and the proxies' URLs with their user information; never a value equal to one of the
// definition's public defaults or fixed config values (a value anyone can read in the catalog is no secret).
// Built-in workers redact their own echo of the input (RedactConfig).

// redacted replaces a secret value.
const redacted = "REMOVED"

// minSecret is the shortest value removed: shorter ones (a flag, a port) would mangle messages.
const minSecret = 3

// IsSecretName tells configuration keys whose values are credentials (the cortexutils rule).
func IsSecretName(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "password") || strings.Contains(n, "secret")
}

// IsSecretItem tells the configuration items whose value is a credential: marked secret by the definition,
// named like one (IsSecretName) or a proxy's (proxy_http, proxy_https: a URL may hold a password). The web
// interface never shows their values back, and an update that omits one keeps its stored value
// (Workers.Update), so that such a form can send the rest of the configuration.
func IsSecretItem(it ConfigItem) bool {
	return it.Secret || IsSecretName(it.Name) || strings.HasPrefix(strings.ToLower(it.Name), "proxy")
}

// isProxyKey tells the keys of a job config that hold a proxy URL: proxy_http, proxy_https and the entries
// of the nested proxy object (path "proxy.http").
func isProxyKey(path string) bool {
	return strings.HasPrefix(path, "proxy_") || strings.HasPrefix(path, "proxy.")
}

// RedactConfig copies a job config for a worker's echo of its own input: every value whose key names a
// secret (at any depth; cortexutils only looks at the top level) is "REMOVED", and the user information of
// proxy URLs too. The built-in workers use it; cfg is not changed.
func RedactConfig(cfg map[string]any) map[string]any {
	return redactConfig(cfg, "")
}

func redactConfig(cfg map[string]any, path string) map[string]any {
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		p := k
		if path != "" {
			p = path + "." + k
		}
		switch {
		case IsSecretName(k):
			out[k] = redacted
		case isProxyKey(p):
			out[k] = redactProxy(v)
		default:
			if m, ok := v.(map[string]any); ok {
				out[k] = redactConfig(m, p)
			} else {
				out[k] = v
			}
		}
	}
	return out
}

// redactProxy is a proxy URL without its user information ("http://REMOVED@host:port"); a value that does
// not parse as a URL with a host is removed whole.
func redactProxy(v any) any {
	s, ok := v.(string)
	if !ok {
		if m, ok := v.(map[string]any); ok {
			return redactConfig(m, "proxy")
		}
		return v
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		if strings.TrimSpace(s) == "" {
			return s
		}
		return redacted
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	return u.String()
}

// jobSecrets are the credentials of a job: their values, longest first (so that a secret holding another is
// removed whole), and the keys they were configured under.
type jobSecrets struct {
	values []string
	named  map[string]map[string]bool // key → the secret values configured under it
}

// secretValues lists the credentials of a job whose worker was configured with conf (the organization's
// configuration) and runs def.
func secretValues(def Definition, conf map[string]any) jobSecrets {
	public := publicValues(def)
	js := jobSecrets{named: map[string]map[string]bool{}}
	set := map[string]bool{}
	add := func(name string, v any) {
		var list []any
		switch x := v.(type) {
		case string:
			list = []any{x}
		case []any:
			list = x
		}
		for _, e := range list {
			if s, ok := e.(string); ok && len(s) >= minSecret && !public[s] {
				set[s] = true
				if js.named[name] == nil {
					js.named[name] = map[string]bool{}
				}
				js.named[name][s] = true
			}
		}
	}
	addProxy := func(name string, v any) {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return
		}
		add(name, s)
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			set[u.User.String()] = true
			if p, ok := u.User.Password(); ok && len(p) >= minSecret {
				set[p] = true
			}
		}
	}
	for _, it := range def.ConfigurationItems {
		if it.Secret {
			add(it.Name, conf[it.Name])
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
			case isProxyKey(p):
				addProxy(k, v)
			case IsSecretName(k):
				add(k, v)
			}
			if sub, ok := v.(map[string]any); ok {
				walk(sub, p)
			}
		}
	}
	walk(conf, "")
	js.values = make([]string, 0, len(set))
	for s := range set {
		js.values = append(js.values, s)
	}
	sortLongestFirst(js.values)
	return js
}

// publicValues are the strings anyone can read in the catalog: the defaults of the definition's items and of
// the global ones, and the strings of its fixed config.
func publicValues(def Definition) map[string]bool {
	out := map[string]bool{}
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case string:
			out[x] = true
		case []any:
			for _, e := range x {
				add(e)
			}
		case map[string]any:
			for _, e := range x {
				add(e)
			}
		}
	}
	for _, it := range def.ConfigurationItems {
		add(it.DefaultValue)
	}
	for _, it := range globalItems(def.Kind) {
		add(it.DefaultValue)
	}
	add(def.Config)
	return out
}

func sortLongestFirst(s []string) {
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) || len(s[i]) == len(s[j]) && s[i] < s[j] })
}

// secretForms are the texts under which a worker may print a secret: as is, inside a JSON string (Go's
// encoder, with and without HTML escapes; Python's json.dumps with ensure_ascii), inside a Python repr (the
// backslashes doubled) and URL-encoded (a proxy password in a URL). Longest first.
func secretForms(secrets []string) []string {
	set := map[string]bool{}
	for _, s := range secrets {
		for _, f := range []string{s, goJSONString(s, true), goJSONString(s, false), pyJSONString(s),
			strings.ReplaceAll(s, `\`, `\\`), url.QueryEscape(s), url.PathEscape(s)} {
			if len(f) >= minSecret {
				set[f] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sortLongestFirst(out)
	return out
}

// goJSONString is s as Go's encoder writes it inside a JSON string, without the quotes.
func goJSONString(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// pyJSONString is s as Python's json.dumps writes it by default (ensure_ascii) inside a JSON string.
func pyJSONString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// scrubText removes every form of every secret from s.
func scrubText(s string, forms []string) string {
	for _, f := range forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, redacted)
		}
	}
	return s
}

// scrubInput removes the secrets from a report's input: the worker's echo of its input.json, a JSON text
// (compact, as the runner read it) or any string the worker wrote. A JSON text is scrubbed value by value,
// keys included (a secret is never cut half-way through an escape), and written again only when it held a
// secret; then the text is scrubbed as any other.
func scrubInput(s string, secrets, forms []string) string {
	if s == "" || !containsAny(s, forms) {
		return s
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && !dec.More() {
			if w, changed := scrubJSON(v, secrets); changed {
				if b, err := json.Marshal(w); err == nil && utf8.Valid(b) {
					s = string(b)
				}
			}
		}
	}
	return scrubText(s, forms)
}

// scrubJSON removes the secrets from the strings and keys of a decoded JSON value.
func scrubJSON(v any, secrets []string) (any, bool) {
	switch x := v.(type) {
	case string:
		y := scrubText(x, secrets)
		return y, y != x
	case []any:
		changed := false
		out := make([]any, len(x))
		for i, e := range x {
			var c bool
			out[i], c = scrubJSON(e, secrets)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			k2 := scrubText(k, secrets)
			e2, c := scrubJSON(e, secrets)
			changed = changed || c || k2 != k
			out[k2] = e2
		}
		return out, changed
	}
	return v, false
}

func containsAny(s string, forms []string) bool {
	for _, f := range forms {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// scrubEchoes replaces, in a report's decoded JSON, the values that echo a credential of the configuration:
// a string equal to a secret value under the very key it was configured under ({"api_key": <the key>}, as
// in a worker reporting its input). Nothing else is touched: no key, no other value, no substring.
func scrubEchoes(v any, named map[string]map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && named[k][s] {
				x[k] = redacted
				continue
			}
			scrubEchoes(e, named)
		}
	case []any:
		for _, e := range x {
			scrubEchoes(e, named)
		}
	case []map[string]any:
		for _, e := range x {
			scrubEchoes(e, named)
		}
	}
}

// scrubJob removes the secrets from what a finished job echoes of its worker's configuration: its
// errorMessage, its report's errorMessage and input, and in the rest of the report (summary, full,
// operations) a credential reported under its own configuration key. Everything else is left as the worker
// wrote it; artifacts are never touched.
func scrubJob(j Job, r *Report, s jobSecrets) (Job, *Report) {
	if len(s.values) == 0 {
		return j, r
	}
	forms := secretForms(s.values)
	j.ErrorMessage = scrubText(j.ErrorMessage, forms)
	if r != nil {
		r.ErrorMessage = scrubText(r.ErrorMessage, forms)
		r.Input = scrubInput(r.Input, s.values, forms)
		scrubEchoes(r.Summary, s.named)
		scrubEchoes(r.Full, s.named)
		scrubEchoes(r.Operations, s.named)
	}
	return j, r
}
