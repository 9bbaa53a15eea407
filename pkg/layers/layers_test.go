package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/openir/platform/"

// allowed are today's known exceptions to the rule, "importer -> imported" (imported may end in "/..." for a
// tree; "links" for a transitive dependency), each with why it is still there. Remove an entry when its
// import goes; the test fails on an entry that matches nothing, so the list cannot outlive the problem.
var allowed = map[string]string{
	// The bench kit measures a bare Echo server as the floor of the HTTP figures.
	"pkg/benchkit -> github.com/labstack/echo/v4": "the benchmark's bare-Echo floor",
	// The conformance suite's MongoDB stand-in (embedded FerretDB) and its client.
	"pkg/docstore/mongotest -> go.mongodb.org/mongo-driver/v2/...": "test helper: the MongoDB stand-in",
	"pkg/docstore/mongotest -> github.com/FerretDB/FerretDB/...":   "test helper: the MongoDB stand-in",
}

type layer int

const (
	layerPkg layer = iota
	layerDomain
	layerAdapter
	layerAPI
	layerApp
	layerCmd
	layerExternal
)

var layerNames = map[layer]string{layerPkg: "pkg", layerDomain: "domain", layerAdapter: "adapter", layerAPI: "api",
	layerApp: "app", layerCmd: "cmd", layerExternal: "external"}

// adapters are the adapter trees of each service, relative to the module.
var adapters = []string{
	"analysis-svc/internal/store", "analysis-svc/internal/runner", "analysis-svc/internal/jobevent",
	"case-svc/internal/store", "case-svc/internal/analysissvc", "case-svc/internal/archive", "case-svc/internal/auditbus",
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// classify returns the layer of a package (its path without the module prefix for ours) and, for an
// adapter, its tree.
func classify(p string) (layer, string) {
	if strings.HasPrefix(p, "pkg/") {
		return layerPkg, ""
	}
	svc, rest, ok := strings.Cut(p, "/")
	if !ok || (svc != "analysis-svc" && svc != "case-svc") {
		return layerExternal, ""
	}
	switch {
	case under(rest, "cmd"):
		return layerCmd, ""
	case rest == "internal/app":
		return layerApp, ""
	case under(rest, "internal/api"), under(rest, "internal/webui"):
		return layerAPI, ""
	}
	for _, a := range adapters {
		if under(p, a) {
			return layerAdapter, a
		}
	}
	return layerDomain, ""
}

func service(p string) string { s, _, _ := strings.Cut(p, "/"); return s }

// drivers maps a driver's import path prefix to the only packages that may import it.
var drivers = map[string][]string{
	"go.mongodb.org/mongo-driver/": {"pkg/docstore/mongo"},
	"modernc.org/sqlite":           {"pkg/docstore/sqlite"},
	"github.com/FerretDB/":         {},
	"github.com/labstack/echo/":    {"pkg/web", "pkg/webui"}, // and the api layer
}

// engines are what a domain package must not link, even through other packages.
var engines = []string{"pkg/docstore", "modernc.org/sqlite", "go.mongodb.org/mongo-driver/v2/mongo", "github.com/labstack/echo/v4"}

// violations returns every import of pkgs against the rule, as "importer -> imported: why" keyed by
// "importer -> imported" (or "importer links dep").
func violations(pkgs []listed) map[string]string {
	out := map[string]string{}
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.ImportPath, module)
		fl, tree := classify(from)
		if fl == layerExternal {
			continue
		}
		for _, imp := range p.Imports {
			to := strings.TrimPrefix(imp, module)
			for prefix, owners := range drivers {
				if !strings.HasPrefix(imp, prefix) {
					continue
				}
				ok := false
				for _, o := range owners {
					ok = ok || from == o
				}
				if prefix == "github.com/labstack/echo/" && fl == layerAPI {
					ok = true
				}
				if !ok {
					out[from+" -> "+imp] = "a driver (or Echo) outside its owners"
				}
			}
			if !strings.HasPrefix(imp, module) {
				continue
			}
			tl, ttree := classify(to)
			why := ""
			switch {
			case tl == layerPkg:
				if fl == layerDomain && (under(to, "pkg/docstore") || to == "pkg/authstore" || to == "pkg/web") {
					why = "a domain package imports storage or HTTP code"
				}
			case fl == layerPkg:
				why = "pkg/ imports a service"
			case service(from) != service(to):
				why = "a service imports the other one"
			case fl == layerCmd:
			case fl == layerApp:
				if tl == layerCmd {
					why = "app imports cmd"
				}
			case fl == layerAPI:
				if tl != layerAPI && tl != layerDomain {
					why = "the api layer imports the " + layerNames[tl]
				}
			case fl == layerAdapter:
				if tl != layerDomain && !(tl == layerAdapter && ttree == tree) {
					why = "an adapter imports the " + layerNames[tl]
					if tl == layerAdapter {
						why = "an adapter imports another adapter"
					}
				}
			case fl == layerDomain:
				if tl != layerDomain {
					why = "a domain package imports the " + layerNames[tl]
				}
			}
			if why != "" {
				out[from+" -> "+to] = why
			}
		}
		if fl == layerDomain {
			for _, d := range p.Deps {
				dep := strings.TrimPrefix(d, module)
				for _, e := range engines {
					if dep == e {
						out[from+" links "+dep] = "a domain package links a database engine or Echo"
					}
				}
			}
		}
	}
	return out
}

// matches reports whether a violation key is covered by an allowed entry (exact, or a "/..." tree).
func matches(key, entry string) bool {
	if key == entry {
		return true
	}
	if tree, ok := strings.CutSuffix(entry, "/..."); ok {
		return strings.HasPrefix(key, tree+"/") || key == tree
	}
	return false
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList lists every package of the workspace (both services and pkg/) with its imports and dependencies.
func goList(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps", "./pkg/...", "./analysis-svc/...", "./case-svc/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// Every import of the repository follows the rule (doc.go), but for the allowed exceptions; every allowed
// exception is still needed.
func TestImportRule(t *testing.T) {
	found := violations(goList(t))
	var keys []string
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	used := map[string]bool{}
	for _, k := range keys {
		ok := false
		for e := range allowed {
			if matches(k, e) {
				used[e], ok = true, true
			}
		}
		if !ok {
			t.Errorf("%s: %s", k, found[k])
		}
	}
	for e := range allowed {
		if !used[e] {
			t.Errorf("allowed exception %q matches no import any more: remove it from the list", e)
		}
	}
}

// The checker itself finds each kind of break: domain to adapter, api to adapter, adapter to api and to
// another adapter, a driver outside its engine, Echo in the domain, a domain package linking an engine.
func TestImportRuleFindsBreaks(t *testing.T) {
	m := func(s string) string { return module + s }
	pkgs := []listed{
		{ImportPath: m("case-svc/internal/cases"), Imports: []string{m("case-svc/internal/archive"), "github.com/labstack/echo/v4"},
			Deps: []string{m("pkg/docstore")}},
		{ImportPath: m("case-svc/internal/api/x"), Imports: []string{m("case-svc/internal/store"), m("case-svc/internal/cases")}},
		{ImportPath: m("case-svc/internal/store"), Imports: []string{m("case-svc/internal/api"), m("case-svc/internal/analysissvc"),
			m("case-svc/internal/connector"), m("pkg/docstore")}},
		{ImportPath: m("pkg/web"), Imports: []string{"github.com/labstack/echo/v4", "modernc.org/sqlite"}},
		{ImportPath: m("analysis-svc/internal/runner/docker"), Imports: []string{m("analysis-svc/internal/runner"), m("case-svc/internal/cases")}},
	}
	got := violations(pkgs)
	want := []string{
		"case-svc/internal/cases -> case-svc/internal/archive",
		"case-svc/internal/cases -> github.com/labstack/echo/v4",
		"case-svc/internal/cases links pkg/docstore",
		"case-svc/internal/api/x -> case-svc/internal/store",
		"case-svc/internal/store -> case-svc/internal/api",
		"case-svc/internal/store -> case-svc/internal/analysissvc",
		"pkg/web -> modernc.org/sqlite",
		"analysis-svc/internal/runner/docker -> case-svc/internal/cases",
	}
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("not found: %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("found %d violations, want %d: %s", len(got), len(want), fmt.Sprint(got))
	}
}
