package analysis

import (
	"context"
	"time"
)

// Kind tells analyzers from responders: they share one model (definitions, enabled workers, jobs).
type Kind string

// The two kinds of worker.
const (
	KindAnalyzer  Kind = "analyzer"
	KindResponder Kind = "responder"
)

// ConfigItem is one setting an orgadmin may give an enabled worker (public definition format).
type ConfigItem struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Type         string `json:"type"` // string, text, number, boolean
	Multi        bool   `json:"multi"`
	Required     bool   `json:"required"`
	DefaultValue any    `json:"defaultValue,omitempty"`
	// Secret marks a credential: its value never appears in a job's report, input or error (see secrets.go).
	Secret bool `json:"secret,omitempty"`
}

// Definition is an analyzer or responder that can be enabled: built into the binary (Builtin set) or read
// from a definition file of the public analyzer format (Command or DockerImage set).
type Definition struct {
	ID                 string // name_version with "." → "_"
	Kind               Kind
	Name               string
	Version            string
	Description        string
	Author             string
	URL                string
	License            string
	DataTypeList       []string
	BaseConfig         string
	ConfigurationItems []ConfigItem
	Config             map[string]any // fixed configuration merged into every job's config
	Command            string         // absolute path of the program (process runner)
	DockerImage        string         // image (docker runner)
	Builtin            RunFunc        // in-process implementation
	Source             string         // the definition file it was read from (loaded definitions)
	SourceName         string         // Source relative to its configured path (analyzer.paths[0]/Name/flavor.json), for answers
	// executor runs the definition's jobs: resolved once, when the catalog takes the definition in (nil:
	// no enabled runner can run it, or the catalog has no Executors).
	executor Executor
}

// RunInput is what a worker receives: the public protocol's input.json, with File the path of the
// observable's file on disk (file observables only).
type RunInput struct {
	Data        any // a string for analyzers, any JSON for responders
	DataType    string
	File        string
	Filename    string
	ContentType string
	TLP         int
	PAP         int
	Message     string
	Parameters  map[string]any
	Config      map[string]any
}

// Taxonomy is one line of a report summary.
type Taxonomy struct {
	Level     string `json:"level"` // info, safe, suspicious, malicious
	Namespace string `json:"namespace"`
	Predicate string `json:"predicate"`
	Value     any    `json:"value"`
}

// OutputArtifact is an artifact as a worker reports it: a value (Data) or a file (File, a path on disk).
type OutputArtifact struct {
	DataType    string   `json:"dataType"`
	Data        string   `json:"data,omitempty"`
	File        string   `json:"file,omitempty"`
	Filename    string   `json:"filename,omitempty"`
	ContentType string   `json:"contentType,omitempty"`
	Message     string   `json:"message,omitempty"`
	TLP         *int     `json:"tlp,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// RunOutput is what a worker returns: the public protocol's output.json.
type RunOutput struct {
	Success      bool
	ErrorMessage string
	Summary      map[string]any // conventionally {"taxonomies": [...]}
	Full         map[string]any
	Artifacts    []OutputArtifact
	Operations   []map[string]any
	Input        string // on failure: the input as the worker saw it (secrets removed)
}

// RunFunc runs a built-in worker. It returns an error only when it could not run at all; an analysis that
// failed is a RunOutput with Success false.
type RunFunc func(ctx context.Context, in RunInput) (RunOutput, error)

// Executor runs the jobs of one definition, in job folders on disk: the execution side, outside the domain
// (package runner). Executors resolves each definition to its executor once, when the catalog takes the
// definition in.
type Executor interface {
	// Execute runs the worker on run.Input within run.Timeout, in a job folder made for the job that holds a
	// copy of the observable's file when run.File is set (run.Input.File is then its path); a built-in
	// without a file runs without one (folder ""). It returns the worker's output and the folder, where the
	// output's file artifacts are: the caller stores them, then removes the folder with Release (after the
	// job's end is stored: a folder's removal is not on the way to its waiters). A failure to prepare the job
	// or to start the worker is an *ExecError, and leaves no folder.
	Execute(ctx context.Context, run Execution) (RunOutput, string, error)
	// Release removes a job folder Execute returned.
	Release(folder string)
}

// Executors resolves definitions to the executor of their jobs: nil when no enabled runner of this server
// (job.runner) can run them.
type Executors interface {
	Executor(def Definition) Executor
}

// Execution is one job as its definition's Executor runs it.
type Execution struct {
	JobID string // names the job folder
	// Attempt is the job's claim count (1 for the first run; a refunded claim reuses its number) and
	// Organization the job's: the kubernetes runner names and labels the attempt's Kubernetes Job with them.
	Attempt      int
	Organization string
	Input        RunInput
	File         *Attachment   // the observable's file (file observables)
	Timeout      time.Duration // from the start of the worker
}

// ExecError is an Executor's failure to prepare a job (its folder, the observable's file) or to start its
// worker. Message is what the job's readers see, unless Err carries a message safe for them (apperr);
// Err, which may hold paths, driver or Docker text, is only logged.
type ExecError struct {
	Message string
	Err     error
}

func (e *ExecError) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}
func (e *ExecError) Unwrap() error { return e.Err }

// DeferError is an Executor's answer that the job cannot start now for a reason outside the job, and that
// nothing ran: the Kubernetes namespace's ResourceQuota refused the job's Kubernetes Job. The job goes back
// to the queue without using an attempt and is claimed again after a backoff (JobsConfig.DeferMin, DeferMax);
// once it has been deferred for longer than its timeout it fails with Reason.
type DeferError struct {
	Reason string // for the job's readers, e.g. "the Kubernetes namespace's quota (ResourceQuota) did not allow its Job"
	Err    error  // logged only
}

func (e *DeferError) Error() string {
	if e.Err == nil {
		return "deferred: " + e.Reason
	}
	return "deferred: " + e.Reason + ": " + e.Err.Error()
}
func (e *DeferError) Unwrap() error { return e.Err }

// Worker is a definition enabled in an organization (an "analyzer" or "responder" of the API).
type Worker struct {
	ID            string
	Kind          Kind
	Organization  string
	DefinitionID  string
	Name          string
	Configuration map[string]any
	Rate          *int
	RateUnit      string
	JobCache      *int // minutes; nil = the job.cache default
	JobTimeout    *int // minutes; nil = 30
	DataTypeList  []string
	Version       string
	Description   string
	Author        string
	URL           string
	License       string
	BaseConfig    string
	CreatedAt     time.Time
	CreatedBy     string
	UpdatedAt     time.Time
	UpdatedBy     string
}
