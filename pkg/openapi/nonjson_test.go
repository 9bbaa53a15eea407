package openapi

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// nonJSON returns "METHOD /path content-type" for every 2xx response of d whose content is not JSON, the
// path without its /api/v0 or /api/v1 prefix (/api/…) and with every parameter written {id}.
func (d *Doc) nonJSON() []string {
	var out []string
	for _, p := range d.paths {
		for _, m := range methods {
			op, ok := p.item[m].(map[string]any)
			if !ok {
				continue
			}
			responses, _ := op["responses"].(map[string]any)
			for code, r := range responses {
				if !strings.HasPrefix(code, "2") {
					continue
				}
				content, _ := d.deref(r)["content"].(map[string]any)
				for ct := range content {
					if ct != "application/json" {
						path := versioned.ReplaceAllString(param.ReplaceAllString(p.path, "{id}"), "/api/")
						out = append(out, strings.ToUpper(m)+" "+path+" "+ct)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

var (
	versioned = regexp.MustCompile(`^/api/v[01]/`)
	param     = regexp.MustCompile(`\{[^}]+\}`)
)

var bodyRow = regexp.MustCompile("^\\| `([A-Z]+) (/[^`]*)` \\| `([a-z]+/[a-z.+-]+)` \\|")

// docs/api/README.md's table of the responses that are not JSON lists exactly those of both services'
// OpenAPI documents (which the API tests hold the responses to), so "every other body is JSON" stays true.
func TestDocsListEveryNonJSONResponse(t *testing.T) {
	want := map[string]bool{}
	for _, f := range []string{"../../analysis-svc/internal/api/openapi.yaml", "../../case-svc/internal/api/openapi.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Load(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range d.nonJSON() {
			want[r] = true
		}
	}
	if len(want) < 5 {
		t.Fatalf("only %d non-JSON responses found: %v", len(want), want)
	}
	b, err := os.ReadFile("../../docs/api/README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := bodyRow.FindStringSubmatch(line); m != nil {
			listed[m[1]+" "+m[2]+" "+m[3]] = true
		}
	}
	for r := range want {
		if !listed[r] {
			t.Errorf("docs/api/README.md does not list the non-JSON response %q", r)
		}
	}
	for r := range listed {
		if !want[r] {
			t.Errorf("docs/api/README.md lists %q, which no OpenAPI document has", r)
		}
	}
}
