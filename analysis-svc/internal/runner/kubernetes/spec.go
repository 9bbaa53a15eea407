package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/jobio"
)

// Labels and annotations of the Jobs and pods the runner creates.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedBy       = "analysis-svc"
	LabelServer     = "openir.io/server"
	LabelJob        = "openir.io/job-id"
	LabelAttempt    = "openir.io/attempt"
	LabelDefinition = "openir.io/definition"
	LabelOwner      = "openir.io/owner"
	LabelOrg        = "openir.io/organization"
	LabelRole       = "openir.io/role"
	RoleJob         = "analyzer-job" // the pods' role: what the network policies select
	AnnotationJob   = "openir.io/job-id"
	AnnotationDef   = "openir.io/definition"
	AnnotationOrg   = "openir.io/organization"
	// LabelJobName is the label the job controller puts on a Job's pods.
	LabelJobName = "batch.kubernetes.io/job-name"
)

// Names inside the pod.
const (
	WorkerContainer = "worker"
	FetchContainer  = "fetch-input"
	UploadContainer = "upload-output"
	VolumeName      = "job"
	MountPoint      = "/job"
)

// maxName is the longest Job name: the job controller copies it into its pods' job-name label (63 bytes).
const maxName = 63

// JobName is the Kubernetes Job of one attempt of a job: "an-" (analyzer) or "re-" (responder), the job id
// made a DNS label (lower case, [a-z0-9-]), then "-<attempt>". Whenever the id had to change (case, other
// characters, length) 8 hex digits of its SHA-256 are added, so two ids never share a name; the result is at
// most 63 characters. The same (kind, id, attempt) always gives the same name: a second create of one attempt
// is refused with AlreadyExists.
func JobName(kind analysis.Kind, jobID string, attempt int) string {
	prefix := "an-"
	if kind == analysis.KindResponder {
		prefix = "re-"
	}
	suffix := "-" + strconv.Itoa(attempt)
	clean := dnsLabel(jobID)
	room := maxName - len(prefix) - len(suffix)
	if clean != jobID || len(clean) > room || clean == "" {
		sum := sha256.Sum256([]byte(jobID))
		hash := hex.EncodeToString(sum[:4])
		if len(clean) > room-len(hash)-1 {
			clean = strings.TrimRight(clean[:room-len(hash)-1], "-")
		}
		if clean == "" {
			clean = hash
		} else {
			clean += "-" + hash
		}
	}
	return prefix + clean + suffix
}

// dnsLabel lower-cases s and keeps [a-z0-9-], without leading or trailing dashes.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	return strings.Trim(b.String(), "-")
}

// LabelValue makes s a valid label value: at most 63 characters of [A-Za-z0-9._-] that start and end with an
// alphanumeric; other characters become "_". A value that had to change ends with 8 hex digits of its SHA-256,
// so distinct values stay distinct. The raw value goes in an annotation where it matters.
func LabelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	v := strings.Trim(b.String(), "-_.")
	if v == s && len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(s))
	hash := hex.EncodeToString(sum[:4])
	if len(v) > 63-len(hash)-1 {
		v = v[:63-len(hash)-1]
	}
	v = strings.TrimRight(v, "-_.")
	if v == "" {
		return hash
	}
	return v + "-" + hash
}

// Settings are the pod settings of a Job that configuration may set, globally (Options.Settings) or for the
// definitions and organizations of a Profile. Zero fields are unset.
type Settings struct {
	Namespace      string
	ImagePrefix    string   // prepended to the definition's image (a mirror: "registry.example/mirror/")
	PullPolicy     string   // Always, IfNotPresent, Never
	PullSecrets    []string // imagePullSecrets
	ServiceAccount string   // the pods' service account (no API token is mounted)
	Requests       map[string]string
	Limits         map[string]string
	EmptyDirSize   string // sizeLimit of the /job emptyDir
	NodeSelector   map[string]string
	Tolerations    []Toleration
	RuntimeClass   string // gVisor, Kata… where the cluster has them
	PriorityClass  string
	Labels         map[string]string // extra labels on the Job and its pods (the runner's own labels win)
	RunAsUser      *int64            // every container's user (default: the image's for the worker, 0 for jobio)
	RunAsGroup     *int64
	PendingTimeout time.Duration // a pod not started by then fails its job with the reason
}

// Profile applies Settings to the jobs of some definitions and organizations.
type Profile struct {
	Definitions   []string // definition ids or path.Match patterns ("File_Info_*"); empty = all
	Organizations []string // organization names; empty = all
	Settings      Settings
}

func (p Profile) matches(def, org string) bool {
	return matchAny(p.Definitions, def) && matchAny(p.Organizations, org)
}

func matchAny(patterns []string, s string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok || p == s {
			return true
		}
	}
	return false
}

// over returns s with the fields o sets; maps are merged (o's keys win).
func (s Settings) over(o Settings) Settings {
	str := func(a *string, b string) {
		if b != "" {
			*a = b
		}
	}
	str(&s.Namespace, o.Namespace)
	str(&s.ImagePrefix, o.ImagePrefix)
	str(&s.PullPolicy, o.PullPolicy)
	str(&s.ServiceAccount, o.ServiceAccount)
	str(&s.EmptyDirSize, o.EmptyDirSize)
	str(&s.RuntimeClass, o.RuntimeClass)
	str(&s.PriorityClass, o.PriorityClass)
	if o.PullSecrets != nil {
		s.PullSecrets = o.PullSecrets
	}
	if o.Tolerations != nil {
		s.Tolerations = o.Tolerations
	}
	s.Requests = merge(s.Requests, o.Requests)
	s.Limits = merge(s.Limits, o.Limits)
	s.NodeSelector = merge(s.NodeSelector, o.NodeSelector)
	s.Labels = merge(s.Labels, o.Labels)
	if o.RunAsUser != nil {
		s.RunAsUser = o.RunAsUser
	}
	if o.RunAsGroup != nil {
		s.RunAsGroup = o.RunAsGroup
	}
	if o.PendingTimeout > 0 {
		s.PendingTimeout = o.PendingTimeout
	}
	return s
}

func merge(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// jobSpec is what buildJob needs besides the settings.
type jobSpec struct {
	name        string
	def         analysis.Definition
	job         jobRef
	owner       string // this process (openir.io/owner)
	server      string // openir.io/server
	ownerRef    *OwnerReference
	jobioImage  string
	jobioCmd    string
	callbackURL string // this run's base URL on the callback listener
	inToken     string
	outToken    string
	caBundle    bool // input/cacerts was written
	proxyHTTP   string
	proxyHTTPS  string
	deadline    time.Duration // activeDeadlineSeconds
	ttl         time.Duration
	grace       time.Duration // terminationGracePeriodSeconds: bounds the upload
}

type jobRef struct {
	id      string
	attempt int
	org     string
}

func ptr[T any](v T) *T { return &v }

// buildJob is the Job of one attempt (docs/kubernetes.md shows it as YAML).
func buildJob(sp jobSpec, s Settings) *Job {
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	own := map[string]string{
		LabelManagedBy:  ManagedBy,
		LabelServer:     LabelValue(sp.server),
		LabelJob:        LabelValue(sp.job.id),
		LabelAttempt:    strconv.Itoa(sp.job.attempt),
		LabelDefinition: LabelValue(sp.def.ID),
		LabelOwner:      LabelValue(sp.owner),
		LabelRole:       RoleJob,
	}
	if sp.job.org != "" {
		own[LabelOrg] = LabelValue(sp.job.org)
	}
	for k, v := range own {
		labels[k] = v
	}
	annotations := map[string]string{AnnotationJob: sp.job.id, AnnotationDef: sp.def.ID}
	if sp.job.org != "" {
		annotations[AnnotationOrg] = sp.job.org
	}

	// Every container: no privilege escalation, no capability. The jobio containers run as the worker's
	// user when one is configured, else as root (catalog images run as root, and with no capability a
	// process reads only files of its own user): the three share the emptyDir.
	locked := func(user *int64, readOnly bool) *SecurityContext {
		sc := &SecurityContext{AllowPrivilegeEscalation: ptr(false), Capabilities: &Capabilities{Drop: []string{"ALL"}}}
		if user != nil {
			sc.RunAsUser = user
		}
		if readOnly {
			sc.ReadOnlyRootFilesystem = ptr(true)
		}
		return sc
	}
	jobioUser := s.RunAsUser
	if jobioUser == nil {
		jobioUser = ptr(int64(0))
	}
	mount := []VolumeMount{{Name: VolumeName, MountPath: MountPoint}}
	small := &ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "32Mi"},
		Limits: map[string]string{"memory": "128Mi"}}
	jobioContainer := func(name, verb, token string) Container {
		return Container{
			Name:            name,
			Image:           sp.jobioImage,
			ImagePullPolicy: "IfNotPresent",
			Command:         []string{sp.jobioCmd, "jobio", verb, "--dir=" + MountPoint},
			Env:             []EnvVar{{Name: jobio.EnvURL, Value: sp.callbackURL}, {Name: token, Value: tokenOf(sp, token)}},
			VolumeMounts:    mount,
			Resources:       small,
			SecurityContext: locked(jobioUser, true),
		}
	}
	fetch := jobioContainer(FetchContainer, "fetch", jobio.EnvInputToken)
	upload := jobioContainer(UploadContainer, "upload", jobio.EnvOutputToken)
	upload.RestartPolicy = ptr("Always") // a native sidecar: stopped (SIGTERM) once the worker has exited

	worker := Container{
		Name:            WorkerContainer,
		Image:           s.ImagePrefix + sp.def.DockerImage,
		ImagePullPolicy: s.PullPolicy,
		Args:            []string{MountPoint},
		VolumeMounts:    mount,
		SecurityContext: locked(s.RunAsUser, false),
	}
	if s.RunAsGroup != nil {
		worker.SecurityContext.RunAsGroup = s.RunAsGroup
	}
	if sp.caBundle {
		worker.Env = append(worker.Env, EnvVar{Name: "REQUESTS_CA_BUNDLE", Value: MountPoint + "/input/cacerts"})
	}
	if sp.proxyHTTP != "" {
		worker.Env = append(worker.Env, EnvVar{Name: "http_proxy", Value: sp.proxyHTTP}, EnvVar{Name: "HTTP_PROXY", Value: sp.proxyHTTP})
	}
	if sp.proxyHTTPS != "" {
		worker.Env = append(worker.Env, EnvVar{Name: "https_proxy", Value: sp.proxyHTTPS}, EnvVar{Name: "HTTPS_PROXY", Value: sp.proxyHTTPS})
	}
	if len(s.Requests) > 0 || len(s.Limits) > 0 {
		worker.Resources = &ResourceRequirements{Requests: s.Requests, Limits: s.Limits}
	}

	pod := PodSpec{
		RestartPolicy:                 "Never",
		ServiceAccountName:            s.ServiceAccount,
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		TerminationGracePeriodSeconds: ptr(int64(sp.grace / time.Second)),
		SecurityContext:               &PodSecurityContext{SeccompProfile: &SeccompProfile{Type: "RuntimeDefault"}},
		NodeSelector:                  s.NodeSelector,
		Tolerations:                   s.Tolerations,
		PriorityClassName:             s.PriorityClass,
		Volumes:                       []Volume{{Name: VolumeName, EmptyDir: &EmptyDirSource{SizeLimit: s.EmptyDirSize}}},
		InitContainers:                []Container{fetch, upload},
		Containers:                    []Container{worker},
	}
	if s.RuntimeClass != "" {
		pod.RuntimeClassName = ptr(s.RuntimeClass)
	}
	for _, name := range s.PullSecrets {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, LocalObjectReference{Name: name})
	}
	job := &Job{
		Metadata: ObjectMeta{Name: sp.name, Namespace: s.Namespace, Labels: labels, Annotations: annotations},
		Spec: JobSpec{
			BackoffLimit:            ptr(int32(0)),
			ActiveDeadlineSeconds:   ptr(int64(sp.deadline / time.Second)),
			TTLSecondsAfterFinished: ptr(int32(sp.ttl / time.Second)),
			PodReplacementPolicy:    "Failed",
			PodFailurePolicy: &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "FailJob",
				OnExitCodes: &PodFailurePolicyOnExitCodes{ContainerName: WorkerContainer, Operator: "NotIn", Values: []int32{0}}}}},
			Template: PodTemplateSpec{Metadata: ObjectMeta{Labels: labels, Annotations: annotations}, Spec: pod},
		},
	}
	if sp.ownerRef != nil {
		job.Metadata.OwnerReferences = []OwnerReference{*sp.ownerRef}
	}
	return job
}

func tokenOf(sp jobSpec, env string) string {
	if env == jobio.EnvInputToken {
		return sp.inToken
	}
	return sp.outToken
}
