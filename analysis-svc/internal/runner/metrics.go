package runner

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// Runner names (analysis_runs_total's runner label) and run outcomes (its outcome label): closed sets.
const (
	RunnerBuiltin    = "builtin"
	RunnerProcess    = "process"
	RunnerDocker     = "docker"
	RunnerKubernetes = "kubernetes"

	RunSuccess  = "success"  // the worker's report says success
	RunFailure  = "failure"  // a report of failure: the worker's own, a timeout, no output, a pod that did not start…
	RunDeferred = "deferred" // not run now (analysis.DeferError: a Kubernetes quota); the job waits in the queue
	RunError    = "error"    // the job could not be prepared or its worker started
)

var (
	runnerNames = []string{RunnerBuiltin, RunnerProcess, RunnerDocker, RunnerKubernetes}
	runOutcomes = []string{RunSuccess, RunFailure, RunDeferred, RunError}
)

// Metrics are the executors' Prometheus collectors: every job run by runner and outcome, and how long the
// runs took (Collectors lists them for the registry of pkg/web). Every label value is present from the start.
type Metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics returns the collectors, named analysis_runs_total and analysis_run_seconds.
func NewMetrics() *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "analysis_runs_total",
			Help: "Job runs by runner (builtin, process, docker, kubernetes) and outcome (success, failure, deferred, error)."},
			[]string{"runner", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "analysis_run_seconds",
			Help:    "Duration of job runs by runner, from the job folder's preparation to the worker's output read.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600}}, []string{"runner"}),
	}
	for _, r := range runnerNames {
		m.duration.WithLabelValues(r)
		for _, o := range runOutcomes {
			m.runs.WithLabelValues(r, o)
		}
	}
	return m
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.runs, m.duration}
}

// Runs is the counter of runner and outcome.
func (m *Metrics) Runs(runner, outcome string) prometheus.Counter {
	return m.runs.WithLabelValues(runner, outcome)
}

// observe counts one run of runner that took took and ended with out and err.
func (m *Metrics) observe(runner string, took time.Duration, out analysis.RunOutput, err error) {
	if m == nil {
		return
	}
	outcome := RunSuccess
	switch {
	case errors.As(err, new(*analysis.DeferError)):
		m.runs.WithLabelValues(runner, RunDeferred).Inc()
		return // nothing ran: no duration
	case err != nil:
		outcome = RunError
	case !out.Success:
		outcome = RunFailure
	}
	m.runs.WithLabelValues(runner, outcome).Inc()
	m.duration.WithLabelValues(runner).Observe(took.Seconds())
}
