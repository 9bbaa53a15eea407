package kubernetes

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a run (analysis_kubernetes_runs_total's outcome label): a closed set.
const (
	OutcomeSuccess       = "success"        // the worker's report says success
	OutcomeFailure       = "failure"        // the worker's own failure report
	OutcomeNoOutput      = "no_output"      // the Job ended without output.json (the log tail is the message)
	OutcomeTimeout       = "timeout"        // the job's timeout
	OutcomeInterrupted   = "interrupted"    // the service stopped, or the job was deleted or its lease lost
	OutcomeDeadline      = "deadline"       // activeDeadlineSeconds stopped the Job
	OutcomeOOM           = "oom"            // the worker was OOMKilled
	OutcomeEvicted       = "evicted"        // the pod was evicted
	OutcomeImagePull     = "image_pull"     // an image could not be pulled
	OutcomeCreateError   = "create_error"   // a container could not be created
	OutcomeNotStarted    = "not_started"    // unschedulable, or no pod, within the pending timeout
	OutcomeDeleted       = "deleted"        // the Job was deleted before it finished (a sweep, an operator)
	OutcomeUploadRefused = "upload_refused" // the output upload was refused or could not be received
	OutcomeQuota         = "quota"          // a ResourceQuota refused the Job: the job is deferred
	OutcomeConflict      = "conflict"       // another replica runs this attempt (AlreadyExists)
	OutcomeAPIError      = "api_error"      // the API server refused or did not answer the create
)

var outcomes = []string{OutcomeSuccess, OutcomeFailure, OutcomeNoOutput, OutcomeTimeout, OutcomeInterrupted,
	OutcomeDeadline, OutcomeOOM, OutcomeEvicted, OutcomeImagePull, OutcomeCreateError, OutcomeNotStarted,
	OutcomeDeleted, OutcomeUploadRefused, OutcomeQuota, OutcomeConflict, OutcomeAPIError}

// Callback routes and results (analysis_kubernetes_callbacks_total's labels): closed sets.
var (
	callbackRoutes  = []string{"input", "output"}
	callbackResults = []string{"ok", "unauthorized", "refused", "error"}
)

// Metrics are the kubernetes runner's Prometheus collectors (Collectors lists them for the registry of
// pkg/web); every label has a closed set of values, all present from the start.
type Metrics struct {
	created   prometheus.Counter
	runs      *prometheus.CounterVec
	pending   prometheus.Histogram
	running   prometheus.Histogram
	callbacks *prometheus.CounterVec
	transfer  *prometheus.HistogramVec
	swept     prometheus.Counter
}

// NewMetrics returns the collectors, named analysis_kubernetes_….
func NewMetrics() *Metrics {
	const p = "analysis_kubernetes_"
	m := &Metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{Name: p + "jobs_created_total",
			Help: "Kubernetes Jobs created (one per attempt of a job that started)."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: p + "runs_total",
			Help: "Runs of the kubernetes runner by outcome (success, failure, no_output, timeout, interrupted, deadline, oom, evicted, image_pull, create_error, not_started, deleted, upload_refused, quota, conflict, api_error)."},
			[]string{"outcome"}),
		pending: prometheus.NewHistogram(prometheus.HistogramOpts{Name: p + "pending_seconds",
			Help:    "From the Job's creation to its worker container seen started (image pull, scheduling, the input fetch).",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600}}),
		running: prometheus.NewHistogram(prometheus.HistogramOpts{Name: p + "run_seconds",
			Help:    "From the worker container seen started to the end of the run.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: p + "callbacks_total",
			Help: "Calls of the callback listener by route (input: jobio fetch, output: jobio upload) and result (ok, unauthorized, refused, error)."},
			[]string{"route", "result"}),
		transfer: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: p + "callback_seconds",
			Help:    "Duration of the authorized input and output transfers of the callback listener.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60}}, []string{"route"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: p + "swept_jobs_total",
			Help: "Kubernetes Jobs of this server's earlier processes deleted by the sweep."}),
	}
	for _, o := range outcomes {
		m.runs.WithLabelValues(o)
	}
	for _, r := range callbackRoutes {
		m.transfer.WithLabelValues(r)
		for _, res := range callbackResults {
			m.callbacks.WithLabelValues(r, res)
		}
	}
	return m
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.created, m.runs, m.pending, m.running, m.callbacks, m.transfer, m.swept}
}

// Runs is the counter of outcome (for tests and dashboards' checks).
func (m *Metrics) Runs(outcome string) prometheus.Counter { return m.runs.WithLabelValues(outcome) }

// Created is the counter of Jobs created.
func (m *Metrics) Created() prometheus.Counter { return m.created }

// Callbacks is the counter of route and result.
func (m *Metrics) Callbacks(route, result string) prometheus.Counter {
	return m.callbacks.WithLabelValues(route, result)
}

func (m *Metrics) callback(route, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.callbacks.WithLabelValues(route, result).Inc()
	if result == "ok" || result == "refused" {
		m.transfer.WithLabelValues(route).Observe(took.Seconds())
	}
}
