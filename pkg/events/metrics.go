package events

import "github.com/prometheus/client_golang/prometheus"

// Metrics are a bus's Prometheus collectors; Collectors lists them for the registry of pkg/web.
type Metrics struct {
	events         *prometheus.CounterVec
	recordFailures prometheus.Counter
	deliveries     *prometheus.CounterVec
	depth          prometheus.Gauge
	oldest         prometheus.Gauge
}

// NewMetrics names the collectors <service>_<trail>_events_total, <service>_<trail>_record_failures_total
// and <service>_webhook_… (case-svc: case, audit; analysis-svc: analysis, job).
func NewMetrics(service, trail string) *Metrics {
	p := service + "_" + trail + "_"
	w := service + "_webhook_"
	return &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: p + "events_total",
			Help: "Events recorded, by object type and operation."}, []string{"object_type", "operation"}),
		recordFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: p + "record_failures_total",
			Help: "Changes whose event could not be written."}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: w + "deliveries_total",
			Help: "Webhook delivery attempts by result (delivered, failed, dead, refused)."}, []string{"result"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: w + "outbox_depth",
			Help: "Webhook deliveries not delivered yet (pending)."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: w + "outbox_oldest_age_seconds",
			Help: "Age of the oldest pending webhook delivery (0 when none)."}),
	}
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.events, m.recordFailures, m.deliveries, m.depth, m.oldest}
}
