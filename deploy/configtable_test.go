package deploy_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The README's configuration table lists every key of both services' defaults (pkg/conf's common keys and
// each service's own, as found by sourceKeys), and no key that neither service has.
func TestREADMEConfigTableListsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := configTableKeys(string(b))
	if len(listed) < 20 {
		t.Fatalf("only %d keys found in README.md's configuration table: is the table or the parser broken?", len(listed))
	}
	all := map[string]bool{}
	for _, s := range services {
		for k := range sourceKeys(t, s.source) {
			all[k] = true
			if !listed[k] {
				t.Errorf("README.md's configuration table misses %s's key %q", s.name, k)
			}
		}
	}
	var extra []string
	for k := range listed {
		if !all[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		t.Errorf("README.md's configuration table lists %q, which neither service has", k)
	}
}

// The parser: full keys, ".x" shorthands relative to the row's previous full key, a "service:" label.
func TestConfigTableKeysParser(t *testing.T) {
	md := "## Configuration\n\n| key | default | meaning |\n|---|---|---|\n" +
		"| `mode` | `development` | `production` refuses |\n" +
		"| case-svc: `webhook.allow_private`, `.max_attempts` | `false`, `10` | x |\n" +
		"| `auth.throttle.user`, `.address`, `auth.session_ttl`, `.x` | | |\n\n## Next\n\n| `not.a.key` | | |\n"
	got := configTableKeys(md)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "auth.session_ttl auth.throttle.address auth.throttle.user auth.x mode webhook.allow_private webhook.max_attempts"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys = %v, want %s", keys, want)
	}
}

var keySpan = regexp.MustCompile("`([^`]+)`")

// configTableKeys returns the keys in the first cell of each row of the table under "## Configuration": each
// code span that is a key, or a ".x" shorthand for a sibling of the row's previous full key.
func configTableKeys(md string) map[string]bool {
	keys := map[string]bool{}
	_, section, ok := strings.Cut("\n"+md, "\n## Configuration\n")
	if !ok {
		return keys
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		parent := ""
		for _, m := range keySpan.FindAllStringSubmatch(cell, -1) {
			k := m[1]
			if strings.HasPrefix(k, ".") && parent != "" {
				k = parent + k
			} else if i := strings.LastIndex(k, "."); i > 0 {
				parent = k[:i]
			}
			if configKey.MatchString(k) {
				keys[k] = true
			}
		}
	}
	return keys
}

// deploy/README.md's manifest-test paragraph names the folders whose defaults the env names come from, as
// services[].source reads them.
func TestDeployREADMENamesTheConfigSources(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	for _, s := range services {
		for _, dir := range s.source {
			name := strings.TrimPrefix(dir, "../")
			generic := strings.Replace(name, s.name, "<service>", 1)
			if !strings.Contains(text, "`"+name+"`") && !strings.Contains(text, "`"+generic+"`") {
				t.Errorf("deploy/README.md does not name %s (or %s), where %s's env names come from", name, generic, s.name)
			}
		}
	}
}

var docKey = regexp.MustCompile("`([a-z][a-z0-9_]*(?:\\.[a-z][a-z0-9_]*)+)(\\.\\*)?`")

// Every configuration key the documentation names (a code span whose first part is a section of the keys,
// such as `webhook.backoff_min` or `job.kubernetes.*`) is a key of a service, or the start of some; and a
// key docs/events.md names (it describes both services) is a key of both.
func TestDocumentedConfigKeysExist(t *testing.T) {
	perService := map[string]map[string]bool{}
	sections := map[string]bool{}
	for _, s := range services {
		perService[s.name] = sourceKeys(t, s.source)
		for k := range perService[s.name] {
			section, _, _ := strings.Cut(k, ".")
			sections[section] = true
		}
	}
	has := func(keys map[string]bool, k string) bool {
		if keys[k] {
			return true
		}
		for key := range keys {
			if strings.HasPrefix(key, k+".") {
				return true
			}
		}
		return false
	}
	docs, err := markdownDocs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile("../" + doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docKey.FindAllStringSubmatch(string(b), -1) {
			k := m[1]
			section, _, _ := strings.Cut(k, ".")
			if !sections[section] || strings.HasSuffix(k, ".md") || strings.HasSuffix(k, ".go") || strings.HasSuffix(k, ".yaml") {
				continue
			}
			checked++
			var in []string
			for name, keys := range perService {
				if has(keys, k) {
					in = append(in, name)
				}
			}
			switch {
			case len(in) == 0:
				t.Errorf("%s names the configuration key %q, which no service has", doc, m[0])
			case doc == "docs/events.md" && len(in) != len(services):
				t.Errorf("%s (about both services) names %q, which only %v has", doc, m[0], in)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d configuration keys found in the documentation: is the pattern broken?", checked)
	}
}

// The README's sentence on which sections belong to one service only is the defaults' split: each section it
// names is that service's alone, and every other section is in both services.
func TestREADMEServiceOnlySections(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile("Sections of one service only: analysis-svc's ([^;]+); case-svc's ([^;]+); both services have every other key").
		FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README.md's sentence on the sections of one service only is missing")
	}
	claimed := map[string]string{}
	for i, svc := range []string{"analysis-svc", "case-svc"} {
		for _, s := range keySpan.FindAllStringSubmatch(m[i+1], -1) {
			claimed[s[1]] = svc
		}
	}
	in := map[string]map[string]bool{} // section → services
	for _, s := range services {
		for k := range sourceKeys(t, s.source) {
			section, _, _ := strings.Cut(k, ".")
			if in[section] == nil {
				in[section] = map[string]bool{}
			}
			in[section][s.name] = true
		}
	}
	for section, svcs := range in {
		owner, ok := claimed[section]
		switch {
		case ok && (len(svcs) != 1 || !svcs[owner]):
			t.Errorf("README.md says section %q is %s's only; the defaults put it in %v", section, owner, svcs)
		case !ok && len(svcs) != len(services):
			t.Errorf("section %q is in %v only, but README.md does not say so", section, svcs)
		}
	}
	for section := range claimed {
		if in[section] == nil {
			t.Errorf("README.md names section %q, which no service has", section)
		}
	}
}
