package main

// The audit overhead row (section 6): POST /api/case on two case-svc instances built alike by internal/app,
// one as it runs (every write recorded in the audit trail before the request answers) and one built
// without the audit decorators (app.Options.NoAudit, used only here). One client sends the same case body
// to each in turn, alternating which goes first, so both see the same machine load.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/openir/platform/pkg/benchkit"
)

// runAudit measures case creation with and without the audit trail and adds its rows.
func runAudit(ctx context.Context, b *bench, logs *benchkit.LogSink) error {
	b.Service = "case-svc"
	dir := filepath.Join(b.Tmp, "db")
	var with, without *stack
	defer func() {
		for _, s := range []*stack{with, without} {
			if s != nil {
				s.close()
			}
		}
	}()
	n := b.sizes.AuditCases
	tasks := b.sizes.TasksPerCase
	var lat [2][]time.Duration // with, without
	err := b.Phase("audit overhead", func() error {
		var err error
		if with, err = startStack(ctx, b.DB(dir, "cases_audit"), logs, stackOptions{}); err != nil {
			return err
		}
		if without, err = startStack(ctx, b.DB(dir, "cases_noaudit"), logs, stackOptions{noAudit: true}); err != nil {
			return err
		}
		create := func(s *stack, i int) (time.Duration, error) {
			ts := make([]map[string]any, tasks)
			for t := range ts {
				ts[t] = map[string]any{"title": fmt.Sprintf("Task %d", t+1), "group": "triage"}
			}
			body := map[string]any{"title": fmt.Sprintf("Audit case %d", i), "description": "A case of the audit overhead row",
				"severity": 2, "tags": []string{"bench"}, "tasks": ts}
			return benchkit.Timed(func() error {
				_, err := s.analyst.Call(ctx, http.MethodPost, "/api/case", body, http.StatusCreated, nil)
				return err
			})
		}
		stacks := [2]*stack{with, without}
		for i := range n + n/10 { // the first tenth warms both up and is not counted
			for k := range 2 {
				v := (i + k) % 2 // alternate which instance goes first
				d, err := create(stacks[v], i)
				if err != nil {
					return err
				}
				if i >= n/10 {
					lat[v] = append(lat[v], d)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	floorWhat := "the same requests to case-svc built without the audit decorators (app.Options.NoAudit)"
	note := fmt.Sprintf("%d sequential creations on each instance, one client, alternating; with audit, the case and each of its tasks also get an audit record, written before the request answers",
		len(lat[0]))
	b.Add(benchkit.TimeKind, secCases, fmt.Sprintf("audit overhead: POST /api/case (%d tasks) p50, with vs without audit", tasks), "ms",
		benchkit.Percentile(lat[0], 0.5), benchkit.Percentile(lat[1], 0.5), floorWhat, note)
	b.Add(benchkit.TimeKind, secCases, fmt.Sprintf("audit overhead: POST /api/case (%d tasks) p99, with vs without audit", tasks), "ms",
		benchkit.Percentile(lat[0], 0.99), benchkit.Percentile(lat[1], 0.99), floorWhat, note)
	return nil
}
