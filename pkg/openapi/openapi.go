// Package openapi loads the OpenAPI 3.1 document of a service, checks it against the routes the service
// registers, and validates real responses against it (docs/openapi.md).
//
// A service writes its document as YAML (embedded with go:embed next to its routes); Load adds the parts
// every service shares (shared.yaml: the error shape, the security schemes, the list parameters, the routes
// pkg/web registers for every service) and returns the JSON the service serves at /api/openapi.json.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/openir/platform/pkg/webui"
)

//go:embed shared.yaml
var sharedYAML []byte

// Methods are the HTTP methods an operation may have, in the document's lower case.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Doc is a loaded document.
type Doc struct {
	// JSON is the document as served.
	JSON  []byte
	root  map[string]any
	paths []pathTemplate
}

type pathTemplate struct {
	path string
	segs []string // "{x}" for a parameter
	item map[string]any
}

// Load merges the service's YAML document with the shared parts and checks the result: OpenAPI 3.1, every
// $ref resolves, every schema compiles as JSON Schema 2020-12, every path parameter is declared.
func Load(serviceYAML []byte) (*Doc, error) {
	b, err := JSON(serviceYAML)
	if err != nil {
		return nil, err
	}
	return parse(b)
}

// JSON merges the service's YAML document with the shared parts and returns it as JSON, without the checks
// of Load (which the service's tests run): what the service serves.
func JSON(serviceYAML []byte) ([]byte, error) {
	var svc, shared map[string]any
	if err := yaml.Unmarshal(serviceYAML, &svc); err != nil {
		return nil, fmt.Errorf("openapi: service document: %w", err)
	}
	if err := yaml.Unmarshal(sharedYAML, &shared); err != nil {
		return nil, fmt.Errorf("openapi: shared.yaml: %w", err)
	}
	if err := merge(svc, shared); err != nil {
		return nil, err
	}
	// Through JSON: YAML's integers and status-code keys become JSON's, as a client reads them.
	delete(svc, "x-anchors") // holds the YAML anchors the document reuses (aliases are expanded)
	b, err := json.Marshal(svc)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return b, nil
}

// merge adds shared's paths and components to doc; a name both define is an error (one home each).
func merge(doc, shared map[string]any) error {
	add := func(dst, src map[string]any, where string) error {
		for k, v := range src {
			if _, dup := dst[k]; dup {
				return fmt.Errorf("openapi: %s %q is defined in the service document and in pkg/openapi/shared.yaml", where, k)
			}
			dst[k] = v
		}
		return nil
	}
	paths := obj(doc, "paths")
	if err := add(paths, obj(shared, "paths"), "path"); err != nil {
		return err
	}
	doc["paths"] = paths
	comps := obj(doc, "components")
	for section, v := range obj(shared, "components") {
		dst := obj(comps, section)
		src, _ := v.(map[string]any)
		if err := add(dst, src, "components."+section); err != nil {
			return err
		}
		comps[section] = dst
	}
	doc["components"] = comps
	return nil
}

func obj(m map[string]any, k string) map[string]any {
	if v, ok := m[k].(map[string]any); ok {
		return v
	}
	return map[string]any{}
}

func parse(b []byte) (*Doc, error) {
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	d := &Doc{JSON: b, root: root}
	if err := d.check(); err != nil {
		return nil, err
	}
	for p, v := range obj(root, "paths") {
		item, _ := v.(map[string]any)
		d.paths = append(d.paths, pathTemplate{path: p, segs: strings.Split(p, "/"), item: item})
	}
	sort.Slice(d.paths, func(i, j int) bool { return d.paths[i].path < d.paths[j].path })
	return d, nil
}

// check is the document's own validation.
func (d *Doc) check() error {
	var errs []error
	if v, _ := d.root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		errs = append(errs, fmt.Errorf("openapi: version %q, want 3.1.x", v))
	}
	info := obj(d.root, "info")
	if info["title"] == nil || info["version"] == nil {
		errs = append(errs, errors.New("openapi: info.title and info.version are required"))
	}
	// Every $ref resolves inside the document.
	walk(d.root, "#", func(ptr string, m map[string]any) {
		if ref, ok := m["$ref"].(string); ok {
			if _, err := d.resolve(ref); err != nil {
				errs = append(errs, fmt.Errorf("openapi: %s: %w", ptr, err))
			}
		}
	})
	// Every schema compiles as JSON Schema 2020-12; every path parameter is declared; every operation
	// declares its responses.
	c, err := d.compiler()
	if err != nil {
		return err
	}
	for name := range obj(obj(d.root, "components"), "schemas") {
		if _, err := c.Compile(docURL + "#/components/schemas/" + escape(name)); err != nil {
			errs = append(errs, fmt.Errorf("openapi: schema %s: %w", name, err))
		}
	}
	for p, v := range obj(d.root, "paths") {
		item, _ := v.(map[string]any)
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			where := strings.ToUpper(m) + " " + p
			if len(obj(op, "responses")) == 0 {
				errs = append(errs, fmt.Errorf("openapi: %s declares no responses", where))
			}
			declared := map[string]bool{}
			for _, prm := range append(list(item["parameters"]), list(op["parameters"])...) {
				pm := d.deref(prm)
				if pm["in"] == "path" {
					name, _ := pm["name"].(string)
					declared[name] = true
				}
			}
			for _, s := range strings.Split(p, "/") {
				if strings.HasPrefix(s, "{") && !declared[strings.Trim(s, "{}")] {
					errs = append(errs, fmt.Errorf("openapi: %s: path parameter %s is not declared in parameters", where, s))
				}
			}
			for code, r := range obj(op, "responses") {
				for ct, mt := range obj(d.deref(r), "content") {
					if _, ok := obj(mt.(map[string]any), "schema")["$ref"]; !ok && len(obj(mt.(map[string]any), "schema")) == 0 {
						continue
					}
					if _, err := d.schemaFor(c, p, m, code, ct); err != nil {
						errs = append(errs, fmt.Errorf("openapi: %s response %s: %w", where, code, err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

const docURL = "urn:openapi:doc"

func (d *Doc) compiler() (*jsonschema.Compiler, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.JSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	return c, nil
}

// schemaFor compiles the schema of one response's media type.
func (d *Doc) schemaFor(c *jsonschema.Compiler, path, method, code, ct string) (*jsonschema.Schema, error) {
	resp := obj(obj(obj(d.root, "paths")[path].(map[string]any), method), "responses")[code]
	ptr := "#/paths/" + escape(path) + "/" + method + "/responses/" + escape(code)
	if ref, ok := resp.(map[string]any)["$ref"].(string); ok {
		ptr = ref
	}
	return c.Compile(docURL + ptr + "/content/" + escape(ct) + "/schema")
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func list(v any) []any { l, _ := v.([]any); return l }

// deref follows a $ref (one level is all the documents use for parameters and responses).
func (d *Doc) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		if r, err := d.resolve(ref); err == nil {
			m, _ = r.(map[string]any)
		}
	}
	return m
}

func (d *Doc) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only references inside the document are allowed", ref)
	}
	var cur any = d.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

func walk(v any, ptr string, f func(string, map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(ptr, x)
		for k, c := range x {
			walk(c, ptr+"/"+escape(k), f)
		}
	case []any:
		for i, c := range x {
			walk(c, fmt.Sprintf("%s/%d", ptr, i), f)
		}
	}
}

// Route is a route as the router registers it: an upper-case method and an Echo path (":id" parameters).
type Route struct {
	Method, Path string
}

// Coverage compares the registered routes with the document's operations. Its error lists each route the
// document lacks and each operation no route serves, with what to add or remove; file names the service's
// YAML source in the messages.
func (d *Doc) Coverage(routes []Route, file string) error {
	if len(routes) == 0 {
		return errors.New("no routes to compare with the document")
	}
	registered := map[string]bool{}
	var missing []string
	for _, r := range routes {
		m := strings.ToLower(r.Method)
		if !isMethod(m) || WebInterface(r.Path) {
			continue // Echo's internal entries (any-method, not-found handlers); the web interface's pages
		}
		p := templatePath(r.Path)
		key := strings.ToUpper(m) + " " + p
		if registered[key] {
			continue
		}
		registered[key] = true
		item, _ := obj(d.root, "paths")[p].(map[string]any)
		if _, ok := item[m]; !ok {
			missing = append(missing, fmt.Sprintf("  %s %s is registered but not in %s: add under paths:\n    %s:\n      %s: {summary, parameters, responses}",
				r.Method, r.Path, file, p, m))
		}
	}
	var extra []string
	for _, pt := range d.paths {
		for _, m := range methods {
			if _, ok := pt.item[m]; ok && !registered[strings.ToUpper(m)+" "+pt.path] {
				extra = append(extra, fmt.Sprintf("  %s names %s %s, which no route serves: remove it from paths (or register the route)",
					file, strings.ToUpper(m), pt.path))
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) == 0 {
		return nil
	}
	return fmt.Errorf("the OpenAPI document and the routes differ (%d missing, %d extra):\n%s",
		len(missing), len(extra), strings.Join(append(missing, extra...), "\n"))
}

func isMethod(m string) bool {
	for _, x := range methods {
		if x == m {
			return true
		}
	}
	return false
}

// templatePath turns an Echo path into an OpenAPI one: /case/:caseId → /case/{caseId}.
func templatePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

// operation finds the operation serving method and an escaped request path the way the router does:
// static segments win over parameters, left to right.
func (d *Doc) operation(method, escapedPath string) (string, map[string]any) {
	m := strings.ToLower(method)
	segs := strings.Split(escapedPath, "/")
	best, bestScore := -1, ""
	for i, pt := range d.paths {
		if _, ok := pt.item[m]; !ok || len(pt.segs) != len(segs) {
			continue
		}
		score := make([]byte, len(segs))
		ok := true
		for j, s := range pt.segs {
			switch {
			case s == segs[j]:
				score[j] = '1'
			case strings.HasPrefix(s, "{") && segs[j] != "":
				score[j] = '0'
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && string(score) > bestScore {
			best, bestScore = i, string(score)
		}
	}
	if best < 0 {
		return "", nil
	}
	op, _ := d.paths[best].item[m].(map[string]any)
	return d.paths[best].path, op
}

// WebInterface reports whether a path is one of the web interface's (pkg/webui: the pages under its prefix,
// the root that redirects there, the icon): HTML pages and their assets, which the API document does not
// describe.
func WebInterface(path string) bool {
	return path == "/" || path == "/favicon.ico" || path == webui.Prefix || strings.HasPrefix(path, webui.Prefix+"/")
}
