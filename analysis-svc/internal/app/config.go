package app

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
	"github.com/openir/platform/pkg/conf"
)

// Config is every setting of analysis-svc. Each key has a default (so an ANALYSIS_* env variable can
// override it) and the names are the ones DECISIONS.md lists: deployments rely on them.
type Config struct {
	conf.Common `mapstructure:",squash"`
	Analyzer    struct {
		Paths []string
	}
	Responder struct {
		Paths []string
	}
	Job struct {
		Workers int
		// OrgMax caps the running jobs of one organization across replicas (0 = no cap).
		OrgMax int `mapstructure:"org_max"`
		// Reserve is how many workers of this instance, once the others are busy, start only the job of an
		// organization running none (at most workers-1; 0 = none).
		Reserve   int
		Cache     int
		Runner    []string
		Timeout   time.Duration
		Lease     time.Duration
		Attempts  int
		Directory string
		// DirectoryGroup and DirectoryMode open job folders to one group (jobdir.FolderAccess).
		DirectoryGroup string `mapstructure:"directory_group"`
		DirectoryMode  string `mapstructure:"directory_mode"`
		MaxFile        string `mapstructure:"max_file"`
		Waitreport     struct {
			Max time.Duration
		}
		Process struct {
			Path string
			Env  []string
		}
		Docker struct {
			Host           string
			Network        string
			User           string
			Pull           string
			CertPath       string `mapstructure:"cert_path"`
			RegistryConfig string `mapstructure:"registry_config"`
		}
		Kubernetes KubernetesConfig
	}
	Events struct {
		Retention time.Duration // job events older than this are deleted; 0 keeps them
	}
}

// KubernetesConfig is job.kubernetes.*: the kubernetes runner (docs/kubernetes.md).
type KubernetesConfig struct {
	Kubeconfig string // "" = in-cluster (the pod's service account)
	Context    string // the kubeconfig's context; "" = its current-context
	// JobioImage is the analysis-svc image the pods' jobio containers run (JobioCommand: its binary).
	JobioImage   string `mapstructure:"jobio_image"`
	JobioCommand string `mapstructure:"jobio_command"`
	// CallbackListen is the callback listener's address; CallbackURL is how the pods reach it, by default
	// http://<PodIP>:<CallbackListen's port> (PodIP from the downward API).
	CallbackListen string `mapstructure:"callback_listen"`
	CallbackURL    string `mapstructure:"callback_url"`
	PodIP          string `mapstructure:"pod_ip"`
	Server         string // the openir.io/server label: one value per analysis-svc deployment
	// PodName, PodUID and PodNamespace name this replica's pod (downward API): the Jobs' owner label, and
	// their owner reference when they share the pod's namespace.
	PodName            string        `mapstructure:"pod_name"`
	PodUID             string        `mapstructure:"pod_uid"`
	PodNamespace       string        `mapstructure:"pod_namespace"`
	DeadlineMargin     time.Duration `mapstructure:"deadline_margin"`
	TTL                time.Duration
	SweepInterval      time.Duration `mapstructure:"sweep_interval"`
	KubernetesSettings `mapstructure:",squash"`
	Profiles           []KubernetesProfile
}

// KubernetesSettings are the pod settings of job.kubernetes.* and of each of job.kubernetes.profiles.
type KubernetesSettings struct {
	Namespace      string
	ImagePrefix    string            `mapstructure:"image_prefix"`
	PullPolicy     string            `mapstructure:"pull_policy"`
	PullSecrets    []string          `mapstructure:"pull_secrets"`
	ServiceAccount string            `mapstructure:"service_account"`
	Requests       map[string]string // cpu, memory, ephemeral-storage
	Limits         map[string]string
	EmptyDirSize   string `mapstructure:"emptydir_size"`
	// NodeSelector and Labels are "key=value" lists: Viper would split a map key such as kubernetes.io/arch.
	NodeSelector  []string `mapstructure:"node_selector"`
	Labels        []string
	Tolerations   []kubernetes.Toleration
	RuntimeClass  string `mapstructure:"runtime_class"`
	PriorityClass string `mapstructure:"priority_class"`
	// RunAsUser and RunAsGroup are numbers, "" = unset (the image's user for the worker, root for jobio).
	RunAsUser      string        `mapstructure:"run_as_user"`
	RunAsGroup     string        `mapstructure:"run_as_group"`
	PendingTimeout time.Duration `mapstructure:"pending_timeout"`
}

// KubernetesProfile applies its settings to the jobs of some definitions (ids or patterns) and
// organizations (names); empty lists match all. The first profile that matches applies.
type KubernetesProfile struct {
	Definitions        []string
	Organizations      []string
	KubernetesSettings `mapstructure:",squash"`
}

// defaults are the common keys' defaults plus this service's.
func defaults() map[string]any {
	d := conf.CommonDefaults(":9001", "analysis", "data/analysis")
	for k, v := range ownDefaults {
		d[k] = v
	}
	return d
}

// ownDefaults are the defaults of the keys only this service has.
var ownDefaults = map[string]any{
	"analyzer.paths":      []string{},
	"responder.paths":     []string{},
	"job.workers":         4,
	"job.org_max":         0,
	"job.reserve":         1,
	"job.cache":           10,
	"job.runner":          []string{"process"},
	"job.waitreport.max":  "10m",
	"job.timeout":         "30m",
	"job.lease":           "30s",
	"job.attempts":        3,
	"job.directory":       "",
	"job.directory_group": "",
	"job.directory_mode":  "",
	"job.max_file":        "1G",
	"job.process.path":    "",
	"job.process.env":     []string{},
	"job.docker.host":     "",
	"job.docker.network":  "",
	"job.docker.user":     "",
	"job.docker.pull":     "missing",
	// TLS to a tcp:// engine, registry credentials for pulls
	"job.docker.cert_path":           "",
	"job.docker.registry_config":     "",
	"job.kubernetes.kubeconfig":      "",
	"job.kubernetes.context":         "",
	"job.kubernetes.namespace":       "",
	"job.kubernetes.jobio_image":     "",
	"job.kubernetes.jobio_command":   "/usr/local/bin/analysis-svc",
	"job.kubernetes.callback_listen": ":9002",
	"job.kubernetes.callback_url":    "",
	"job.kubernetes.server":          "analysis-svc",
	"job.kubernetes.pod_ip":          "",
	"job.kubernetes.pod_name":        "",
	"job.kubernetes.pod_uid":         "",
	"job.kubernetes.pod_namespace":   "",
	"job.kubernetes.deadline_margin": "2m",
	"job.kubernetes.ttl":             "10m",
	"job.kubernetes.sweep_interval":  "5m",
	"job.kubernetes.image_prefix":    "",
	"job.kubernetes.pull_policy":     "IfNotPresent",
	"job.kubernetes.pull_secrets":    []string{},
	"job.kubernetes.service_account": "",
	"job.kubernetes.requests":        map[string]string{},
	"job.kubernetes.limits":          map[string]string{},
	"job.kubernetes.emptydir_size":   "",
	"job.kubernetes.node_selector":   []string{},
	"job.kubernetes.labels":          []string{},
	"job.kubernetes.tolerations":     []any{},
	"job.kubernetes.runtime_class":   "",
	"job.kubernetes.priority_class":  "",
	"job.kubernetes.run_as_user":     "",
	"job.kubernetes.run_as_group":    "",
	"job.kubernetes.pending_timeout": "5m",
	"job.kubernetes.profiles":        []any{},
	"events.retention":               "0s",
}

// Load reads --config FILE (optional), then ANALYSIS_* env variables (key with "." → "_", upper case).
func Load(args []string, stderr io.Writer) (Config, error) { return read(args, stderr, false) }

// Default is the configuration of the defaults alone (no file, no env variables): analysis-svc in another
// program's process, a benchmark or a test, which then sets what it needs.
func Default() (Config, error) { return read(nil, io.Discard, true) }

// read loads the configuration (the defaults alone, or with the file and env variables) and checks it.
func read(args []string, stderr io.Writer, defaultsOnly bool) (Config, error) {
	var c Config
	var err error
	if defaultsOnly {
		err = conf.Defaults(defaults(), &c)
	} else {
		err = conf.Load("analysis-svc", "ANALYSIS", defaults(), args, stderr, &c)
	}
	if err == nil {
		err = c.check()
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// check validates the settings Load and Default read.
func (c Config) check() error {
	if err := c.Check(); err != nil {
		return err
	}
	for _, r := range c.Job.Runner {
		if r != "process" && r != "docker" && r != "kubernetes" {
			return fmt.Errorf("config: job.runner: unknown runner %q (process, docker, kubernetes)", r)
		}
		if r == "kubernetes" {
			if err := c.Job.Kubernetes.check(); err != nil {
				return fmt.Errorf("config: job.kubernetes.%w", err)
			}
		}
	}
	if c.Job.Workers <= 0 || c.Job.Attempts <= 0 || c.Job.Lease < time.Second {
		return errors.New("config: job.workers and job.attempts must be positive, job.lease at least 1s")
	}
	if c.Job.OrgMax < 0 {
		return errors.New("config: job.org_max must be 0 (no cap) or positive")
	}
	if c.Job.Reserve < 0 {
		return errors.New("config: job.reserve must be 0 (none) or positive")
	}
	if _, err := jobdir.ParseFolderAccess(c.Job.DirectoryGroup, c.Job.DirectoryMode); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// check validates job.kubernetes.* when job.runner includes kubernetes (the API server checks the rest, such
// as quantities, with a server-side dry run at start-up). Errors start with the key after "job.kubernetes.".
func (k KubernetesConfig) check() error {
	if k.JobioImage == "" {
		return errors.New("jobio_image: the analysis-svc image is needed (the pods' jobio containers run it)")
	}
	if _, err := k.Callback(); err != nil {
		return err
	}
	if _, err := k.Settings(); err != nil {
		return err
	}
	for i, p := range k.Profiles {
		if _, err := p.Settings(); err != nil {
			return fmt.Errorf("profiles[%d].%w", i, err)
		}
	}
	return nil
}

// Callback is the callback listener's URL as job pods reach it: callback_url, else http://<pod_ip>:<port>.
func (k KubernetesConfig) Callback() (string, error) {
	if k.CallbackURL != "" {
		return k.CallbackURL, nil
	}
	_, port, err := net.SplitHostPort(k.CallbackListen)
	if err != nil {
		return "", fmt.Errorf("callback_listen: %w", err)
	}
	if k.PodIP == "" {
		return "", errors.New("callback_url: needed (how the job pods reach this replica), or pod_ip from the downward API")
	}
	return "http://" + net.JoinHostPort(k.PodIP, port), nil
}

// Settings are the runner's settings of s.
func (s KubernetesSettings) Settings() (kubernetes.Settings, error) {
	out := kubernetes.Settings{Namespace: s.Namespace, ImagePrefix: s.ImagePrefix, PullPolicy: s.PullPolicy,
		PullSecrets: s.PullSecrets, ServiceAccount: s.ServiceAccount, Requests: s.Requests, Limits: s.Limits,
		EmptyDirSize: s.EmptyDirSize, Tolerations: s.Tolerations, RuntimeClass: s.RuntimeClass,
		PriorityClass: s.PriorityClass, PendingTimeout: s.PendingTimeout}
	switch s.PullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return out, fmt.Errorf("pull_policy: %q is not Always, IfNotPresent or Never", s.PullPolicy)
	}
	var err error
	if out.NodeSelector, err = keyValues(s.NodeSelector); err != nil {
		return out, fmt.Errorf("node_selector: %w", err)
	}
	if out.Labels, err = keyValues(s.Labels); err != nil {
		return out, fmt.Errorf("labels: %w", err)
	}
	for _, id := range []struct {
		name string
		text string
		to   **int64
	}{{"run_as_user", s.RunAsUser, &out.RunAsUser}, {"run_as_group", s.RunAsGroup, &out.RunAsGroup}} {
		if strings.TrimSpace(id.text) == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(id.text), 10, 64)
		if err != nil || n < 0 {
			return out, fmt.Errorf("%s: %q is not a user or group number", id.name, id.text)
		}
		*id.to = &n
	}
	for i, t := range s.Tolerations {
		if t.Operator != "" && t.Operator != "Exists" && t.Operator != "Equal" {
			return out, fmt.Errorf("tolerations[%d].operator: %q is not Exists or Equal", i, t.Operator)
		}
	}
	return out, nil
}

// keyValues reads "key=value" entries.
func keyValues(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}
