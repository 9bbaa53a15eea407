package apitest

import (
	"net/http"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are a service's /metrics as scraped (ScrapeMetrics), by family name.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics reads base+"/metrics" in the Prometheus text format.
func ScrapeMetrics(t testing.TB, base string) Metrics {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// Value is the value of the series of family name whose labels include labels (a counter's, a gauge's, or a
// histogram's sample count); ok is false when there is none.
func (m Metrics) Value(name string, labels map[string]string) (v float64, ok bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
next:
	for _, s := range f.GetMetric() {
		for k, want := range labels {
			found := false
			for _, l := range s.GetLabel() {
				if l.GetName() == k && l.GetValue() == want {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			return s.Counter.GetValue(), true
		case s.Gauge != nil:
			return s.Gauge.GetValue(), true
		case s.Histogram != nil:
			return float64(s.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// CheckLabels fails t when a series of family name has a label value outside allowed (label → its values),
// or a label allowed does not name; it also fails when the family is missing.
func (m Metrics) CheckLabels(t testing.TB, name string, allowed map[string][]string) {
	t.Helper()
	f := m[name]
	if f == nil {
		t.Errorf("/metrics has no %s", name)
		return
	}
	for _, s := range f.GetMetric() {
		for _, l := range s.GetLabel() {
			vals, known := allowed[l.GetName()]
			if !known || !slices.Contains(vals, l.GetValue()) {
				t.Errorf("%s: label %s=%q is outside its closed set %v", name, l.GetName(), l.GetValue(), vals)
			}
		}
	}
}
