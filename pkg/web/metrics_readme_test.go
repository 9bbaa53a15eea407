package web

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The README names the labels of the HTTP metrics as the code registers them ("`name` by a, b and c").
func TestREADME_HTTPMetricsLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.requests.WithLabelValues("/x", "GET", "200").Inc()
	m.latency.WithLabelValues("/x", "GET").Observe(0.1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	if len(families) != 2 {
		t.Fatalf("%d metric families, want 2", len(families))
	}
	for _, f := range families {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		// Gather sorts the labels by name; the README writes them route, method, status.
		order := map[string]int{"route": 0, "method": 1, "status": 2}
		for i := range labels {
			for j := i + 1; j < len(labels); j++ {
				if order[labels[j]] < order[labels[i]] {
					labels[i], labels[j] = labels[j], labels[i]
				}
			}
		}
		phrase := "`" + f.GetName() + "` by " + strings.Join(labels[:len(labels)-1], ", ") + " and " + labels[len(labels)-1]
		if !strings.Contains(readme, phrase) {
			t.Errorf("README.md does not say %q", phrase)
		}
	}
}
