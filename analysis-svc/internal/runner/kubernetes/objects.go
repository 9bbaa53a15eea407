package kubernetes

import "time"

// The few fields of the Kubernetes API objects the runner sends and reads (batch/v1 Job, core/v1 Pod,
// meta/v1 Status), written by hand after k8s.io/api v0.37.2: the k8s.io/api types would add about 5.5 MB to
// the binary and client-go about 18 MB (docs/kubernetes.md). Fields left out of a response are ignored;
// fields left out of a request take the API server's defaults.

// ObjectMeta is metav1.ObjectMeta.
type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	CreationTimestamp *time.Time        `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
}

// OwnerReference is metav1.OwnerReference.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// Job is batch/v1 Job.
type Job struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       JobSpec    `json:"spec"`
	Status     JobStatus  `json:"status,omitzero"`
}

// JobSpec is batch/v1 JobSpec.
type JobSpec struct {
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	PodReplacementPolicy    string            `json:"podReplacementPolicy,omitempty"`
	PodFailurePolicy        *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	Template                PodTemplateSpec   `json:"template"`
}

// PodFailurePolicy is batch/v1 PodFailurePolicy.
type PodFailurePolicy struct {
	Rules []PodFailurePolicyRule `json:"rules"`
}

// PodFailurePolicyRule is batch/v1 PodFailurePolicyRule (exit-code rules only).
type PodFailurePolicyRule struct {
	Action      string                       `json:"action"`
	OnExitCodes *PodFailurePolicyOnExitCodes `json:"onExitCodes,omitempty"`
}

// PodFailurePolicyOnExitCodes is batch/v1 PodFailurePolicyOnExitCodesRequirement.
type PodFailurePolicyOnExitCodes struct {
	ContainerName string  `json:"containerName,omitempty"`
	Operator      string  `json:"operator"`
	Values        []int32 `json:"values"`
}

// JobStatus is batch/v1 JobStatus.
type JobStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
	Active     int32       `json:"active,omitempty"`
	Succeeded  int32       `json:"succeeded,omitempty"`
	Failed     int32       `json:"failed,omitempty"`
	StartTime  *time.Time  `json:"startTime,omitempty"`
}

// Condition is a Job or Pod condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// PodTemplateSpec is core/v1 PodTemplateSpec.
type PodTemplateSpec struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// PodSpec is core/v1 PodSpec.
type PodSpec struct {
	RestartPolicy                 string                 `json:"restartPolicy,omitempty"`
	ServiceAccountName            string                 `json:"serviceAccountName,omitempty"`
	AutomountServiceAccountToken  *bool                  `json:"automountServiceAccountToken,omitempty"`
	EnableServiceLinks            *bool                  `json:"enableServiceLinks,omitempty"`
	TerminationGracePeriodSeconds *int64                 `json:"terminationGracePeriodSeconds,omitempty"`
	SecurityContext               *PodSecurityContext    `json:"securityContext,omitempty"`
	ImagePullSecrets              []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	NodeSelector                  map[string]string      `json:"nodeSelector,omitempty"`
	Tolerations                   []Toleration           `json:"tolerations,omitempty"`
	RuntimeClassName              *string                `json:"runtimeClassName,omitempty"`
	PriorityClassName             string                 `json:"priorityClassName,omitempty"`
	Volumes                       []Volume               `json:"volumes,omitempty"`
	InitContainers                []Container            `json:"initContainers,omitempty"`
	Containers                    []Container            `json:"containers"`
	NodeName                      string                 `json:"nodeName,omitempty"`
}

// PodSecurityContext is core/v1 PodSecurityContext.
type PodSecurityContext struct {
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	FSGroup        *int64          `json:"fsGroup,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// SeccompProfile is core/v1 SeccompProfile.
type SeccompProfile struct {
	Type string `json:"type"`
}

// LocalObjectReference is core/v1 LocalObjectReference.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// Toleration is core/v1 Toleration.
type Toleration struct {
	Key               string `json:"key,omitempty" mapstructure:"key"`
	Operator          string `json:"operator,omitempty" mapstructure:"operator"`
	Value             string `json:"value,omitempty" mapstructure:"value"`
	Effect            string `json:"effect,omitempty" mapstructure:"effect"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty" mapstructure:"toleration_seconds"`
}

// Volume is core/v1 Volume (emptyDir only).
type Volume struct {
	Name     string          `json:"name"`
	EmptyDir *EmptyDirSource `json:"emptyDir,omitempty"`
}

// EmptyDirSource is core/v1 EmptyDirVolumeSource.
type EmptyDirSource struct {
	SizeLimit string `json:"sizeLimit,omitempty"`
}

// Container is core/v1 Container.
type Container struct {
	Name            string                `json:"name"`
	Image           string                `json:"image"`
	ImagePullPolicy string                `json:"imagePullPolicy,omitempty"`
	Command         []string              `json:"command,omitempty"`
	Args            []string              `json:"args,omitempty"`
	Env             []EnvVar              `json:"env,omitempty"`
	VolumeMounts    []VolumeMount         `json:"volumeMounts,omitempty"`
	Resources       *ResourceRequirements `json:"resources,omitempty"`
	SecurityContext *SecurityContext      `json:"securityContext,omitempty"`
	// RestartPolicy Always on an init container makes it a native sidecar (Kubernetes 1.29+).
	RestartPolicy *string `json:"restartPolicy,omitempty"`
}

// EnvVar is core/v1 EnvVar (plain values only).
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// VolumeMount is core/v1 VolumeMount.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// ResourceRequirements is core/v1 ResourceRequirements, quantities as text ("500m", "1Gi").
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// SecurityContext is core/v1 SecurityContext.
type SecurityContext struct {
	RunAsUser                *int64        `json:"runAsUser,omitempty"`
	RunAsGroup               *int64        `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool         `json:"runAsNonRoot,omitempty"`
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	Capabilities             *Capabilities `json:"capabilities,omitempty"`
}

// Capabilities is core/v1 Capabilities.
type Capabilities struct {
	Drop []string `json:"drop,omitempty"`
}

// Pod is core/v1 Pod, as far as the runner reads it.
type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
	Status   PodStatus  `json:"status"`
}

// PodStatus is core/v1 PodStatus.
type PodStatus struct {
	Phase                 string            `json:"phase,omitempty"`
	Reason                string            `json:"reason,omitempty"`
	Message               string            `json:"message,omitempty"`
	Conditions            []Condition       `json:"conditions,omitempty"`
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []ContainerStatus `json:"containerStatuses,omitempty"`
	StartTime             *time.Time        `json:"startTime,omitempty"`
}

// ContainerStatus is core/v1 ContainerStatus.
type ContainerStatus struct {
	Name  string         `json:"name"`
	Image string         `json:"image,omitempty"`
	State ContainerState `json:"state"`
}

// ContainerState is core/v1 ContainerState.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is core/v1 ContainerStateWaiting.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning is core/v1 ContainerStateRunning.
type ContainerStateRunning struct {
	StartedAt *time.Time `json:"startedAt,omitempty"`
}

// ContainerStateTerminated is core/v1 ContainerStateTerminated.
type ContainerStateTerminated struct {
	ExitCode int32  `json:"exitCode"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// condition returns the condition of type t whose status is True.
func condition(conds []Condition, t string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == t && c.Status == "True" {
			return c, true
		}
	}
	return Condition{}, false
}
