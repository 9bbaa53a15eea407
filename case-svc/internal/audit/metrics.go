package audit

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the service's Prometheus collectors; Collectors lists them for the registry of pkg/web.
type Metrics struct {
	events         *prometheus.CounterVec
	recordFailures prometheus.Counter
	deliveries     *prometheus.CounterVec
	depth          prometheus.Gauge
	oldest         prometheus.Gauge
}

func newMetrics() *Metrics {
	return &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "case_audit_events_total",
			Help: "Audit events recorded, by object type and operation."}, []string{"object_type", "operation"}),
		recordFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "case_audit_record_failures_total",
			Help: "Changes whose audit record could not be written."}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "case_webhook_deliveries_total",
			Help: "Webhook delivery attempts by result (delivered, failed, dead, refused)."}, []string{"result"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "case_webhook_outbox_depth",
			Help: "Webhook deliveries not delivered yet (pending)."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "case_webhook_outbox_oldest_age_seconds",
			Help: "Age of the oldest pending webhook delivery (0 when none)."}),
	}
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.events, m.recordFailures, m.deliveries, m.depth, m.oldest}
}
