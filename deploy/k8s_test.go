// Package deploy_test renders every Kustomize overlay under k8s/overlays with the kustomize library, decodes
// each object strictly into its typed Kubernetes struct and checks the wiring against the services' own
// configuration: env names the binaries read (from the defaults in config.go, cross-checked with
// configs/*.yaml), listen ports, probes, selectors, Secret and ConfigMap references, replicas, network
// policies and the connector's CASE_ANALYSIS_SERVERS.
package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// service describes one of our binaries: where its config keys are defined and how its env names start.
type service struct {
	name       string   // also the image repository's last element and the Dockerfile suffix
	prefix     string   // env prefix
	source     []string // Go packages whose map[string]any literals hold the config defaults
	configYAML string   // the example configuration, which lists every key but the env-only ones
}

var services = []service{
	{"analysis-svc", "ANALYSIS", []string{"../analysis-svc/internal/app", "../pkg/conf"}, "../configs/analysis-svc.yaml"},
	{"case-svc", "CASE", []string{"../case-svc/internal/app", "../pkg/conf"}, "../configs/case-svc.yaml"},
}

// secretKeys are config keys whose values must come from a Secret, never from a ConfigMap or a literal.
var secretKeys = []string{"auth.secret", "bootstrap.login", "bootstrap.password", "bootstrap.key", "database.uri",
	"analysis.servers"}

// envOnlyKeys are the keys configs/*.yaml leaves out on purpose (secrets and files set per deployment).
var envOnlyKeys = []string{"bootstrap.login", "bootstrap.password", "bootstrap.key", "http.tls.cert", "http.tls.key"}

func envName(prefix, key string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

var configKey = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// sourceKeys returns the string keys of every map[string]any literal in the non-test files of the given
// packages: the defaults conf.Load registers with Viper, so the only keys an env variable can set.
func sourceKeys(t *testing.T, dirs []string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", file, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				mt, ok := lit.Type.(*ast.MapType)
				if !ok || !isIdent(mt.Key, "string") || !(isIdent(mt.Value, "any") || isEmptyInterface(mt.Value)) {
					return true
				}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if bl, ok := kv.Key.(*ast.BasicLit); ok && bl.Kind == token.STRING {
						if k, err := strconv.Unquote(bl.Value); err == nil && configKey.MatchString(k) {
							keys[k] = true
						}
					}
				}
				return false
			})
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%v: no map[string]any literal of config defaults found", dirs)
	}
	return keys
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func isEmptyInterface(e ast.Expr) bool {
	it, ok := e.(*ast.InterfaceType)
	return ok && (it.Methods == nil || len(it.Methods.List) == 0)
}

// yamlKeys returns the leaf keys of a YAML configuration file, dotted (lists are leaves).
func yamlKeys(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if mm, ok := v.(map[string]any); ok && len(mm) > 0 {
			for k, vv := range mm {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, vv)
			}
			return
		}
		out = append(out, prefix)
	}
	walk("", m)
	sort.Strings(out)
	return out
}

// allowedEnv is, per service name, every env variable the binary reads. It fails the test when
// configs/*.yaml and the defaults in the source diverge.
func allowedEnv(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for _, s := range services {
		keys := sourceKeys(t, s.source)
		inYAML := map[string]bool{}
		for _, k := range yamlKeys(t, s.configYAML) {
			inYAML[k] = true
			if !keys[k] {
				t.Errorf("%s sets %q, which has no default in %v", s.configYAML, k, s.source)
			}
		}
		for k := range keys {
			if !inYAML[k] && !slices.Contains(envOnlyKeys, k) {
				t.Errorf("%s: key %q (default in %v) is missing from the example configuration", s.configYAML, k, s.source)
			}
		}
		for _, k := range secretKeys {
			if k == "analysis.servers" && s.name != "case-svc" {
				continue
			}
			if !keys[k] {
				t.Errorf("%s: expected the key %q among the defaults in %v", s.name, k, s.source)
			}
		}
		names := map[string]bool{}
		for k := range keys {
			names[envName(s.prefix, k)] = true
		}
		out[s.name] = names
	}
	return out
}

func TestConfigKeysMatchExampleConfigs(t *testing.T) {
	env := allowedEnv(t)
	for _, s := range services {
		for _, k := range []string{"HTTP_ADDR", "DATABASE_PATH", "DATABASE_URI", "AUTH_SECRET", "BOOTSTRAP_KEY"} {
			if !env[s.name][s.prefix+"_"+k] {
				t.Errorf("%s: %s_%s missing from the derived env names", s.name, s.prefix, k)
			}
		}
	}
}

// dockerfile is what the tests read from deploy/docker/Dockerfile.<service>.
type dockerfile struct {
	from, user string
	env        map[string]string
	expose     []int
	volumes    []string
}

func readDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := dockerfile{env: map[string]string{}}
	var lines []string
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	for _, l := range lines {
		f := strings.Fields(l)
		switch strings.ToUpper(f[0]) {
		case "FROM":
			d.from = f[1]
		case "USER":
			d.user = f[1]
		case "ENV":
			for _, kv := range f[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("%s: ENV %q: use KEY=VALUE", path, kv)
				}
				d.env[k] = v
			}
		case "EXPOSE":
			for _, p := range f[1:] {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("%s: EXPOSE %q", path, p)
				}
				d.expose = append(d.expose, n)
			}
		case "VOLUME":
			var v []string
			if err := json.Unmarshal([]byte(strings.TrimSpace(l[len("VOLUME"):])), &v); err != nil {
				v = f[1:]
			}
			d.volumes = append(d.volumes, v...)
		}
	}
	return d
}

// addrPort is the port of a listen address such as ":9001" or "0.0.0.0:9001".
func addrPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return n
}

func TestDockerfiles(t *testing.T) {
	env := allowedEnv(t)
	for _, s := range services {
		variants := []string{"docker/Dockerfile." + s.name}
		if s.name == "analysis-svc" {
			variants = append(variants, "docker/Dockerfile.analysis-svc-python")
		}
		for _, path := range variants {
			d := readDockerfile(t, path)
			if path == "docker/Dockerfile."+s.name && d.from != "scratch" {
				t.Errorf("%s: FROM %s, want scratch (no image can be pulled)", path, d.from)
			}
			if d.user != "65532:65532" {
				t.Errorf("%s: USER %q, want 65532:65532", path, d.user)
			}
			for k := range d.env {
				if !env[s.name][k] && k != "TMPDIR" {
					t.Errorf("%s: ENV %s is not read by %s", path, k, s.name)
				}
			}
			addr := d.env[s.prefix+"_HTTP_ADDR"]
			if addr == "" || !slices.Equal(d.expose, []int{addrPort(t, addr)}) {
				t.Errorf("%s: EXPOSE %v does not match %s_HTTP_ADDR=%q", path, d.expose, s.prefix, addr)
			}
			if d.env[s.prefix+"_DATABASE_PATH"] != "/data" || !slices.Equal(d.volumes, []string{"/data"}) {
				t.Errorf("%s: want %s_DATABASE_PATH=/data and VOLUME [\"/data\"], have %q and %v", path, s.prefix,
					d.env[s.prefix+"_DATABASE_PATH"], d.volumes)
			}
		}
	}
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 1\n  replica: 2\n")
	if _, err := decode("apps/v1", "Deployment", bad); err == nil {
		t.Fatal("an unknown field decoded without error")
	}
}

// ---------------------------------------------------------------------------------------------------------
// Rendering

type rendered struct {
	overlay     string
	namespaces  []*corev1.Namespace
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    map[string]*corev1.Service
	pvcs        map[string]*corev1.PersistentVolumeClaim
	deployments map[string]*appsv1.Deployment
	statefuls   map[string]*appsv1.StatefulSet
	jobs        map[string]*batchv1.Job
	pdbs        map[string]*policyv1.PodDisruptionBudget
	netpols     map[string]*networkingv1.NetworkPolicy
	workloads   []workload
}

// workload is a pod template with the object it came from.
type workload struct {
	kind, name string
	replicas   int32
	claims     []string // volumeClaimTemplates of a StatefulSet
	template   *corev1.PodTemplateSpec
}

func (w workload) String() string { return w.kind + "/" + w.name }

func decode(apiVersion, kind string, y []byte) (any, error) {
	var obj any
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		obj = &corev1.Namespace{}
	case "v1/ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1/Secret":
		obj = &corev1.Secret{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "v1/PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1/StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "batch/v1/Job":
		obj = &batchv1.Job{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1/NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	default:
		return nil, fmt.Errorf("no typed decoder for %s %s: add it to the test", apiVersion, kind)
	}
	if err := yaml.UnmarshalStrict(y, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func render(t *testing.T, overlay string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("k8s", "overlays", overlay))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", overlay, err)
	}
	r := &rendered{overlay: overlay,
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, pvcs: map[string]*corev1.PersistentVolumeClaim{},
		deployments: map[string]*appsv1.Deployment{}, statefuls: map[string]*appsv1.StatefulSet{},
		jobs: map[string]*batchv1.Job{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		netpols: map[string]*networkingv1.NetworkPolicy{}}
	seen := map[string]bool{}
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(y, &tm); err != nil {
			t.Fatal(err)
		}
		obj, err := decode(tm.APIVersion, tm.Kind, y)
		if err != nil {
			t.Errorf("%s: %s %s: %v", overlay, tm.Kind, res.GetName(), err)
			continue
		}
		id := tm.Kind + "/" + res.GetName()
		if seen[id] {
			t.Errorf("%s: %s twice", overlay, id)
		}
		seen[id] = true
		switch o := obj.(type) {
		case *corev1.Namespace:
			r.namespaces = append(r.namespaces, o)
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		case *corev1.Secret:
			r.secrets[o.Name] = o
		case *corev1.Service:
			r.services[o.Name] = o
		case *corev1.PersistentVolumeClaim:
			r.pvcs[o.Name] = o
		case *appsv1.Deployment:
			r.deployments[o.Name] = o
			r.workloads = append(r.workloads, workload{"Deployment", o.Name, replicas(o.Spec.Replicas), nil, &o.Spec.Template})
			checkSelector(t, overlay, id, o.Spec.Selector, o.Spec.Template.Labels)
		case *appsv1.StatefulSet:
			r.statefuls[o.Name] = o
			var claims []string
			for _, c := range o.Spec.VolumeClaimTemplates {
				claims = append(claims, c.Name)
			}
			r.workloads = append(r.workloads, workload{"StatefulSet", o.Name, replicas(o.Spec.Replicas), claims, &o.Spec.Template})
			checkSelector(t, overlay, id, o.Spec.Selector, o.Spec.Template.Labels)
		case *batchv1.Job:
			r.jobs[o.Name] = o
			r.workloads = append(r.workloads, workload{"Job", o.Name, 1, nil, &o.Spec.Template})
		case *policyv1.PodDisruptionBudget:
			r.pdbs[o.Name] = o
		case *networkingv1.NetworkPolicy:
			r.netpols[o.Name] = o
		}
	}
	if len(r.workloads) == 0 {
		t.Fatalf("%s: no workloads rendered", overlay)
	}
	for _, s := range r.statefuls {
		if _, ok := r.services[s.Spec.ServiceName]; !ok {
			t.Errorf("%s: StatefulSet/%s: serviceName %q is not rendered", overlay, s.Name, s.Spec.ServiceName)
		}
	}
	return r
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func checkSelector(t *testing.T, overlay, id string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		t.Errorf("%s: %s has no selector", overlay, id)
		return
	}
	if !matches(t, sel, podLabels) {
		t.Errorf("%s: %s: selector %v does not match its pod template labels %v", overlay, id, sel, podLabels)
	}
}

func matches(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(l))
}

// selected are the workloads whose pods a selector picks (a Service's map selector or a LabelSelector).
func (r *rendered) selected(t *testing.T, sel *metav1.LabelSelector) []workload {
	var out []workload
	for _, w := range r.workloads {
		if matches(t, sel, w.template.Labels) {
			out = append(out, w)
		}
	}
	return out
}

// serviceOf tells which of our binaries a container runs, from its image ("" for others).
func serviceOf(image string) string {
	repo := image
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	last := repo[strings.LastIndex(repo, "/")+1:]
	for _, s := range services {
		if last == s.name {
			return s.name
		}
	}
	return ""
}

func svcDef(name string) service {
	for _, s := range services {
		if s.name == name {
			return s
		}
	}
	panic(name)
}

// envValue is where a container's env variable comes from.
type envValue struct {
	value      string
	fromSecret bool
	secret     string // Secret name (fromSecret)
	key        string // key in that Secret
	optional   bool
	literal    bool // set with value: in the pod spec
}

// containerEnv resolves a container's env as Kubernetes does (env over envFrom), checking that every
// referenced ConfigMap and Secret (and key) is rendered.
func (r *rendered) containerEnv(t *testing.T, where string, c corev1.Container) map[string]envValue {
	t.Helper()
	out := map[string]envValue{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, ok := r.configMaps[ef.ConfigMapRef.Name]
			if !ok {
				t.Errorf("%s: envFrom ConfigMap %q is not rendered", where, ef.ConfigMapRef.Name)
				continue
			}
			for k, v := range cm.Data {
				out[ef.Prefix+k] = envValue{value: v}
			}
		case ef.SecretRef != nil:
			s, ok := r.secrets[ef.SecretRef.Name]
			if !ok {
				t.Errorf("%s: envFrom Secret %q is not rendered", where, ef.SecretRef.Name)
				continue
			}
			for k, v := range s.Data {
				out[ef.Prefix+k] = envValue{value: string(v), fromSecret: true, secret: s.Name, key: k}
			}
		}
	}
	names := map[string]bool{}
	for _, e := range c.Env {
		if names[e.Name] {
			t.Errorf("%s: env %s set twice", where, e.Name)
		}
		names[e.Name] = true
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = envValue{value: e.Value, literal: true}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := r.secrets[ref.Name]
			if !ok {
				t.Errorf("%s: env %s: Secret %q is not rendered", where, e.Name, ref.Name)
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if ref.Optional == nil || !*ref.Optional {
					t.Errorf("%s: env %s: Secret %q has no key %q", where, e.Name, ref.Name, ref.Key)
				}
				continue // optional and absent: the variable is not set
			}
			out[e.Name] = envValue{value: string(v), fromSecret: true, secret: ref.Name, key: ref.Key,
				optional: ref.Optional != nil && *ref.Optional}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := r.configMaps[ref.Name]
			if !ok {
				t.Errorf("%s: env %s: ConfigMap %q is not rendered", where, e.Name, ref.Name)
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				t.Errorf("%s: env %s: ConfigMap %q has no key %q", where, e.Name, ref.Name, ref.Key)
				continue
			}
			out[e.Name] = envValue{value: v}
		default:
			out[e.Name] = envValue{} // fieldRef, resourceFieldRef: set, value known at run time only
		}
	}
	return out
}

// portNumber resolves a probe, Service or NetworkPolicy port against a container's ports (0 if none).
func portNumber(p intstr.IntOrString, ports []corev1.ContainerPort) int32 {
	for _, cp := range ports {
		if (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) || (p.Type == intstr.String && cp.Name == p.StrVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

// ---------------------------------------------------------------------------------------------------------
// The checks

func TestOverlays(t *testing.T) {
	start := time.Now()
	env := allowedEnv(t)
	dirs, err := os.ReadDir(filepath.Join("k8s", "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	var overlays []string
	for _, d := range dirs {
		if d.IsDir() {
			overlays = append(overlays, d.Name())
		}
	}
	for _, want := range []string{"dev", "prod"} {
		if !slices.Contains(overlays, want) {
			t.Errorf("overlay %s is missing", want)
		}
	}
	for _, o := range overlays {
		t.Run(o, func(t *testing.T) {
			r := render(t, o)
			r.checkWorkloads(t, env)
			r.checkServices(t)
			r.checkPDBs(t)
			r.checkNetworkPolicies(t)
			r.checkConnector(t)
			r.checkDatabaseURIs(t)
			switch o {
			case "dev":
				r.checkDev(t)
			case "prod":
				r.checkProd(t)
			}
		})
	}
	t.Logf("rendered and checked %d overlays in %v", len(overlays), time.Since(start).Round(time.Millisecond))
}

// ours returns the Deployments running a given binary ("" = both), sorted by name.
func (r *rendered) ours(svc string) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range r.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if s := serviceOf(c.Image); s != "" && (svc == "" || s == svc) {
				out = append(out, d)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *rendered) checkWorkloads(t *testing.T, allowed map[string]map[string]bool) {
	for _, w := range r.workloads {
		spec := w.template.Spec
		where := r.overlay + ": " + w.String()
		vols := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			if _, dup := vols[v.Name]; dup {
				t.Errorf("%s: volume %s twice", where, v.Name)
			}
			vols[v.Name] = v
			switch {
			case v.PersistentVolumeClaim != nil:
				if _, ok := r.pvcs[v.PersistentVolumeClaim.ClaimName]; !ok {
					t.Errorf("%s: volume %s: PVC %q is not rendered", where, v.Name, v.PersistentVolumeClaim.ClaimName)
				}
			case v.Secret != nil:
				s, ok := r.secrets[v.Secret.SecretName]
				if !ok {
					t.Errorf("%s: volume %s: Secret %q is not rendered", where, v.Name, v.Secret.SecretName)
					continue
				}
				for _, it := range v.Secret.Items {
					if _, ok := s.Data[it.Key]; !ok {
						t.Errorf("%s: volume %s: Secret %q has no key %q", where, v.Name, s.Name, it.Key)
					}
				}
			case v.ConfigMap != nil:
				if _, ok := r.configMaps[v.ConfigMap.Name]; !ok {
					t.Errorf("%s: volume %s: ConfigMap %q is not rendered", where, v.Name, v.ConfigMap.Name)
				}
			}
		}
		podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
		all := append(slices.Clone(spec.InitContainers), spec.Containers...)
		for _, c := range all {
			cwhere := where + " container " + c.Name
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok && !slices.Contains(w.claims, m.Name) {
					t.Errorf("%s: mount %s: no such volume", cwhere, m.Name)
				}
				mounts[m.MountPath] = m
			}
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s: no securityContext", cwhere)
				continue
			}
			if !podNonRoot && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
				t.Errorf("%s: runAsNonRoot is not set", cwhere)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: allowPrivilegeEscalation must be false", cwhere)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s: capabilities must drop ALL and add none", cwhere)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: readOnlyRootFilesystem must be true", cwhere)
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s: memory request and limit must be set", cwhere)
			}
			cenv := r.containerEnv(t, cwhere, c)
			svc := serviceOf(c.Image)
			if svc == "" {
				continue
			}
			r.checkServiceContainer(t, cwhere, svcDef(svc), c, cenv, mounts, vols, allowed[svc])
		}
	}
}

func (r *rendered) checkServiceContainer(t *testing.T, where string, s service, c corev1.Container,
	cenv map[string]envValue, mounts map[string]corev1.VolumeMount, vols map[string]corev1.Volume, allowed map[string]bool) {
	for name := range cenv {
		if !allowed[name] {
			t.Errorf("%s: env %s is not read by %s (known: %s_ + a key of its config defaults)", where, name, s.name, s.prefix)
		}
	}
	for _, k := range secretKeys {
		name := envName(s.prefix, k)
		if v, ok := cenv[name]; ok && !v.fromSecret {
			t.Errorf("%s: %s must come from a Secret", where, name)
		}
	}
	// The listen port: the container's env, else the image's ENV, else the binary's default.
	img := readDockerfile(t, filepath.Join("docker", "Dockerfile."+s.name))
	addr, ok := cenv[s.prefix+"_HTTP_ADDR"]
	if !ok {
		addr = envValue{value: img.env[s.prefix+"_HTTP_ADDR"]}
	}
	port := int32(addrPort(t, addr.value))
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != port {
		t.Errorf("%s: container ports %v, want exactly one: %d (%s_HTTP_ADDR=%q)", where, c.Ports, port, s.prefix, addr.value)
	}
	probes := []struct {
		kind string
		p    *corev1.Probe
		path string
		must bool
	}{
		{"liveness", c.LivenessProbe, "/healthz", true},
		{"readiness", c.ReadinessProbe, "/readyz", true},
		{"startup", c.StartupProbe, "/healthz", false},
	}
	for _, p := range probes {
		if p.p == nil {
			if p.must {
				t.Errorf("%s: no %s probe", where, p.kind)
			}
			continue
		}
		if p.p.HTTPGet == nil || p.p.HTTPGet.Path != p.path {
			t.Errorf("%s: %s probe must be an HTTP GET of %s", where, p.kind, p.path)
			continue
		}
		if got := portNumber(p.p.HTTPGet.Port, c.Ports); got != port {
			t.Errorf("%s: %s probe port %s is %d, want %d", where, p.kind, p.p.HTTPGet.Port.String(), got, port)
		}
	}
	// /tmp (job folders) and /data (the embedded database) are writable volumes on a read-only root.
	for _, path := range []string{"/tmp", "/data"} {
		m, ok := mounts[path]
		if !ok || m.ReadOnly {
			t.Errorf("%s: %s must be a writable volume", where, path)
			continue
		}
		if v := vols[m.Name]; v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
			t.Errorf("%s: %s must be an emptyDir or a PVC", where, path)
		}
	}
	dbPath, ok := cenv[s.prefix+"_DATABASE_PATH"]
	if !ok {
		dbPath = envValue{value: img.env[s.prefix+"_DATABASE_PATH"]}
	}
	if dbPath.value != "/data" {
		t.Errorf("%s: %s_DATABASE_PATH is %q, want /data", where, s.prefix, dbPath.value)
	}
}

func (r *rendered) checkServices(t *testing.T) {
	for _, s := range r.services {
		where := r.overlay + ": Service/" + s.Name
		if len(s.Spec.Selector) == 0 {
			t.Errorf("%s: no selector", where)
			continue
		}
		ws := r.selected(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector})
		var owners []string
		for _, w := range ws {
			if w.kind != "Job" {
				owners = append(owners, w.String())
			}
		}
		if len(owners) != 1 {
			t.Errorf("%s: selector %v picks the pods of %v, want exactly one Deployment or StatefulSet", where, s.Spec.Selector, owners)
		}
		for _, w := range ws {
			for _, sp := range s.Spec.Ports {
				found := false
				for _, c := range w.template.Spec.Containers {
					if n := portNumber(sp.TargetPort, c.Ports); n != 0 {
						found = true
						if svc := serviceOf(c.Image); svc != "" && sp.Port != n {
							t.Errorf("%s: port %d forwards to %d: keep them equal so URLs name the listen port", where, sp.Port, n)
						}
					}
				}
				if !found {
					t.Errorf("%s: targetPort %s matches no container port of %s", where, sp.TargetPort.String(), w)
				}
			}
		}
	}
	// Every Deployment of ours has its Service.
	for _, d := range r.ours("") {
		n := 0
		for _, s := range r.services {
			if len(s.Spec.Selector) > 0 && matches(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, d.Spec.Template.Labels) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: Deployment/%s is selected by %d Services, want 1", r.overlay, d.Name, n)
		}
	}
}

func (r *rendered) checkPDBs(t *testing.T) {
	covered := map[string]bool{}
	for _, p := range r.pdbs {
		where := r.overlay + ": PodDisruptionBudget/" + p.Name
		if p.Spec.Selector == nil {
			t.Errorf("%s: no selector", where)
			continue
		}
		ws := r.selected(t, p.Spec.Selector)
		if len(ws) != 1 {
			t.Errorf("%s: selector picks %v, want exactly one workload", where, ws)
			continue
		}
		covered[ws[0].String()] = true
		if p.Spec.MinAvailable != nil && p.Spec.MinAvailable.Type == intstr.Int && p.Spec.MinAvailable.IntVal >= ws[0].replicas {
			t.Errorf("%s: minAvailable %d blocks every eviction of %s (%d replicas)", where, p.Spec.MinAvailable.IntVal, ws[0], ws[0].replicas)
		}
	}
	for _, w := range r.workloads {
		if w.kind != "Job" && w.replicas > 1 && !covered[w.String()] {
			t.Errorf("%s: %s has %d replicas and no PodDisruptionBudget", r.overlay, w, w.replicas)
		}
	}
}

// ingressPeers returns, for a workload, the workloads its NetworkPolicies let in (nil, true: anything may
// connect, because no policy selects it or one rule has no peer list).
func (r *rendered) ingressPeers(t *testing.T, target workload) (peers map[string]bool, open bool) {
	peers = map[string]bool{}
	isolated := false
	for _, np := range r.netpols {
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !matches(t, &np.Spec.PodSelector, target.template.Labels) {
			continue
		}
		isolated = true
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				return nil, true
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil {
					return nil, true
				}
				for _, w := range r.selected(t, peer.PodSelector) {
					peers[w.String()] = true
				}
			}
		}
	}
	return peers, !isolated
}

func (r *rendered) checkNetworkPolicies(t *testing.T) {
	for _, np := range r.netpols {
		where := r.overlay + ": NetworkPolicy/" + np.Name
		targets := r.selected(t, &np.Spec.PodSelector)
		if len(targets) == 0 {
			t.Errorf("%s: podSelector %v selects no pods", where, np.Spec.PodSelector)
		}
		for _, rule := range np.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.PodSelector != nil && len(r.selected(t, peer.PodSelector)) == 0 {
					t.Errorf("%s: peer podSelector %v selects no pods", where, peer.PodSelector)
				}
			}
			for _, p := range rule.Ports {
				if p.Port == nil || len(np.Spec.PodSelector.MatchLabels) == 0 {
					continue
				}
				for _, w := range targets {
					found := false
					for _, c := range w.template.Spec.Containers {
						if portNumber(*p.Port, c.Ports) != 0 {
							found = true
						}
					}
					if !found {
						t.Errorf("%s: port %s is no container port of %s", where, p.Port.String(), w)
					}
				}
			}
		}
	}
}

// server is one entry of CASE_ANALYSIS_SERVERS, as case-svc reads it.
type server struct {
	Name          string   `json:"name"`
	URL           string   `json:"url"`
	Key           string   `json:"key"`
	Timeout       string   `json:"timeout"`
	Organisations []string `json:"organisations"`
}

// checkConnector parses CASE_ANALYSIS_SERVERS of every case-svc container and checks that its URLs name the
// analysis Services (DNS name and port), one entry per analysis server.
func (r *rendered) checkConnector(t *testing.T) {
	analysisServices := map[string]*corev1.Service{}
	for _, s := range r.services {
		for _, w := range r.selected(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}) {
			for _, c := range w.template.Spec.Containers {
				if serviceOf(c.Image) == "analysis-svc" {
					analysisServices[s.Name] = s
				}
			}
		}
	}
	ns := r.namespace()
	for _, d := range r.ours("case-svc") {
		for _, c := range d.Spec.Template.Spec.Containers {
			if serviceOf(c.Image) != "case-svc" {
				continue
			}
			where := r.overlay + ": Deployment/" + d.Name
			v, ok := r.containerEnv(t, where, c)["CASE_ANALYSIS_SERVERS"]
			if !ok || !v.fromSecret {
				t.Errorf("%s: CASE_ANALYSIS_SERVERS must be set from a Secret", where)
				continue
			}
			dec := json.NewDecoder(strings.NewReader(v.value))
			dec.DisallowUnknownFields()
			var servers []server
			if err := dec.Decode(&servers); err != nil {
				t.Errorf("%s: CASE_ANALYSIS_SERVERS (Secret %s) is not a JSON array of {name,url,key,timeout,organisations}: %v", where, v.secret, err)
				continue
			}
			reached := map[string]bool{}
			names := map[string]bool{}
			for _, s := range servers {
				if s.Name == "" || s.URL == "" || s.Key == "" || len(s.Organisations) == 0 {
					t.Errorf("%s: CASE_ANALYSIS_SERVERS entry %+v needs name, url, key and organisations", where, s)
				}
				if names[s.Name] {
					t.Errorf("%s: CASE_ANALYSIS_SERVERS: name %q twice", where, s.Name)
				}
				names[s.Name] = true
				if s.Timeout != "" {
					if _, err := time.ParseDuration(s.Timeout); err != nil {
						t.Errorf("%s: CASE_ANALYSIS_SERVERS %s: timeout: %v", where, s.Name, err)
					}
				}
				u, err := url.Parse(s.URL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
					t.Errorf("%s: CASE_ANALYSIS_SERVERS %s: url %q is not http(s)", where, s.Name, s.URL)
					continue
				}
				host, rest, _ := strings.Cut(u.Hostname(), ".")
				svc, ok := analysisServices[host]
				if !ok || !slices.Contains([]string{"", ns, ns + ".svc", ns + ".svc.cluster.local"}, rest) {
					t.Errorf("%s: CASE_ANALYSIS_SERVERS %s: host %q is not an analysis Service of namespace %q (have %v)",
						where, s.Name, u.Hostname(), ns, keys(analysisServices))
					continue
				}
				port := u.Port()
				if port == "" {
					port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
				}
				okPort := false
				for _, p := range svc.Spec.Ports {
					if strconv.Itoa(int(p.Port)) == port {
						okPort = true
					}
				}
				if !okPort {
					t.Errorf("%s: CASE_ANALYSIS_SERVERS %s: port %s is not a port of Service %s", where, s.Name, port, svc.Name)
				}
				reached[svc.Name] = true
			}
			for name := range analysisServices {
				if !reached[name] {
					t.Errorf("%s: analysis Service %s is not in CASE_ANALYSIS_SERVERS", where, name)
				}
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (r *rendered) namespace() string {
	if len(r.namespaces) == 1 {
		return r.namespaces[0].Name
	}
	return "default"
}

// checkDatabaseURIs: when the overlay renders the MongoDB StatefulSet, the services' URIs name its members.
func (r *rendered) checkDatabaseURIs(t *testing.T) {
	for _, d := range r.ours("") {
		for _, c := range d.Spec.Template.Spec.Containers {
			svc := serviceOf(c.Image)
			if svc == "" {
				continue
			}
			where := r.overlay + ": Deployment/" + d.Name
			v, ok := r.containerEnv(t, where, c)[svcDef(svc).prefix+"_DATABASE_URI"]
			if !ok || v.value == "" {
				continue
			}
			u, err := url.Parse(v.value)
			if err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") {
				t.Errorf("%s: database URI is not a MongoDB URI: %v", where, err)
				continue
			}
			if u.Scheme != "mongodb" {
				continue
			}
			for _, hp := range strings.Split(u.Host, ",") {
				host, port, err := net.SplitHostPort(hp)
				if err != nil {
					t.Errorf("%s: database URI host %q: %v", where, hp, err)
					continue
				}
				pod, svcName, _ := strings.Cut(host, ".")
				svcName, _, _ = strings.Cut(svcName, ".")
				sts, ok := r.statefuls[svcName]
				if !ok {
					continue // an external MongoDB
				}
				ord, err := strconv.Atoi(strings.TrimPrefix(pod, sts.Name+"-"))
				if err != nil || ord < 0 || ord >= int(replicas(sts.Spec.Replicas)) {
					t.Errorf("%s: database URI host %q is not a member of StatefulSet %s", where, host, sts.Name)
				}
				if _, ok := r.services[sts.Spec.ServiceName]; !ok || sts.Spec.ServiceName != svcName {
					t.Errorf("%s: database URI host %q: %s is not the StatefulSet's governing Service", where, host, svcName)
				}
				if port != "27017" {
					t.Errorf("%s: database URI host %q: port %s, MongoDB listens on 27017", where, host, port)
				}
			}
			if u.Query().Get("replicaSet") == "" {
				t.Errorf("%s: database URI names no replicaSet", where)
			}
		}
	}
}

func (r *rendered) checkDev(t *testing.T) {
	if len(r.statefuls) != 0 {
		t.Errorf("dev renders StatefulSets %v: the embedded database needs none", keys(r.statefuls))
	}
	for _, svc := range []string{"analysis-svc", "case-svc"} {
		ds := r.ours(svc)
		if len(ds) != 1 {
			t.Errorf("dev: %d Deployments of %s, want 1", len(ds), svc)
			continue
		}
		d := ds[0]
		if replicas(d.Spec.Replicas) != 1 {
			t.Errorf("dev: %s has %d replicas: the embedded database allows 1", d.Name, replicas(d.Spec.Replicas))
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("dev: %s must use the Recreate strategy (one pod owns the embedded database)", d.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if v, ok := r.containerEnv(t, "dev", c)[svcDef(svc).prefix+"_DATABASE_URI"]; ok && v.value != "" {
				t.Errorf("dev: %s sets a database URI: dev uses the embedded database", d.Name)
			}
		}
	}
}

func (r *rendered) checkProd(t *testing.T) {
	analysis := r.ours("analysis-svc")
	if len(analysis) < 2 {
		t.Errorf("prod: %d analysis servers, want at least 2", len(analysis))
	}
	if len(r.ours("case-svc")) < 1 {
		t.Errorf("prod: no case-svc")
	}
	databases := map[string]string{}
	secrets := map[string]string{}
	for _, d := range r.ours("") {
		where := "prod: Deployment/" + d.Name
		if n := replicas(d.Spec.Replicas); n < 2 {
			t.Errorf("%s: %d replicas, want at least 2", where, n)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			svc := serviceOf(c.Image)
			if svc == "" {
				continue
			}
			p := svcDef(svc).prefix
			cenv := r.containerEnv(t, where, c)
			for _, k := range []string{"database.uri", "auth.secret"} {
				name := envName(p, k)
				if v, ok := cenv[name]; !ok || !v.fromSecret || v.optional || v.value == "" {
					t.Errorf("%s: %s must come from a Secret and be required", where, name)
				}
			}
			if cenv[p+"_MODE"].value != "production" {
				t.Errorf("%s: %s_MODE must be production", where, p)
			}
			if c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("%s: no CPU request", where)
			}
			if svc == "analysis-svc" {
				db := cenv[p+"_DATABASE_URI"].value + " " + cenv[p+"_DATABASE_NAME"].value
				if other, dup := databases[db]; dup {
					t.Errorf("prod: analysis servers %s and %s share a database: they would be one server", other, d.Name)
				}
				databases[db] = d.Name
				sec := cenv[p+"_AUTH_SECRET"].value
				if other, dup := secrets[sec]; dup {
					t.Errorf("prod: analysis servers %s and %s share an auth secret", other, d.Name)
				}
				secrets[sec] = d.Name
			}
		}
	}
	if len(r.statefuls) == 0 {
		t.Errorf("prod: no MongoDB StatefulSet")
	}
	for _, s := range r.statefuls {
		if replicas(s.Spec.Replicas) < 3 {
			t.Errorf("prod: StatefulSet/%s: %d members, a replica set wants 3", s.Name, replicas(s.Spec.Replicas))
		}
		if svc, ok := r.services[s.Spec.ServiceName]; !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("prod: StatefulSet/%s: governing Service %q must be headless", s.Name, s.Spec.ServiceName)
		}
	}
	// Only case-svc reaches the analysis servers; only the services (and MongoDB itself) reach MongoDB.
	defaultDeny := false
	for _, np := range r.netpols {
		if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) == 0 && len(np.Spec.Ingress) == 0 &&
			slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			defaultDeny = true
		}
	}
	if !defaultDeny {
		t.Errorf("prod: no default-deny ingress NetworkPolicy")
	}
	caseWorkloads, analysisWorkloads, services := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range r.ours("case-svc") {
		caseWorkloads["Deployment/"+d.Name] = true
	}
	for _, d := range r.ours("analysis-svc") {
		analysisWorkloads["Deployment/"+d.Name] = true
	}
	for _, d := range r.ours("") {
		services["Deployment/"+d.Name] = true
	}
	for _, w := range r.workloads {
		peers, open := r.ingressPeers(t, w)
		switch {
		case analysisWorkloads[w.String()]:
			if open || !mapsEqual(peers, caseWorkloads) {
				t.Errorf("prod: %s is reached by %v (open: %v), want case-svc only %v", w, keys(peers), open, keys(caseWorkloads))
			}
		case w.kind == "StatefulSet":
			if open {
				t.Errorf("prod: %s is open to every pod", w)
			}
			for p := range peers {
				if !services[p] && p != w.String() && !strings.HasPrefix(p, "Job/") {
					t.Errorf("prod: %s is reached by %s", w, p)
				}
			}
			for s := range services {
				if !peers[s] {
					t.Errorf("prod: %s cannot reach %s", s, w)
				}
			}
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
