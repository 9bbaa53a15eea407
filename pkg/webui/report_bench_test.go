package webui

import (
	"encoding/json"
	"fmt"
	"testing"
)

// benchReport is a report of about n bytes shaped as analysis-bench's large report (a passive DNS answer).
func benchReport(b *testing.B, n int) any {
	types := []string{"A", "AAAA", "CNAME", "MX", "TXT"}
	var records []any
	size := 0
	for i := 0; size < n; i++ {
		r := map[string]any{
			"rrname": fmt.Sprintf("host-%d.bench.example.org", i), "rrtype": types[i%len(types)],
			"rdata":      fmt.Sprintf("203.0.%d.%d", i/256%256, i%256),
			"first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-11-28T12:00:00Z",
			"count": i * 7 % 1000, "score": float64(i%1000) / 10, "sources": []string{"sensor-a", "sensor-b"},
			"geo":     map[string]any{"country": "FR", "asn": 64500 + i%100, "org": "Example & Co <bench>"},
			"comment": fmt.Sprintf(`seen by "sensor %d" <b>&</b> rank %d`, i%7, i%100),
		}
		raw, _ := json.Marshal(r)
		size += len(raw) + 1
		records = append(records, r)
	}
	raw, _ := json.Marshal(map[string]any{"query": "report.bench.example.org", "records": records})
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkJSONTree1MiB(b *testing.B) {
	v := benchReport(b, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		_ = JSONTree(v)
	}
}

func BenchmarkJSONText1MiB(b *testing.B) {
	v := benchReport(b, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		_ = JSONText(v)
	}
}

func BenchmarkMarshal1MiB(b *testing.B) {
	v := benchReport(b, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = json.Marshal(v)
	}
}
