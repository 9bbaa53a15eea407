package cases_test

// Case merge without transactions (merge.go): a failure at any step leaves the two cases as they were, with
// their tasks, logs, observables and alerts, and nothing of the new case. The failures are real ones of the
// database, provoked by wrappers of the real stores: a unique conflict (the same observable written twice)
// and a closed context (the request's context cancelled in the middle of the merge).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/search"
)

// mergeFixture is the domain (domain_test.go) with its stores wrapped to fail at a chosen call, an analyst of
// soc, and the real stores to look at.
type mergeFixture struct {
	svc   *cases.Service
	tasks *task.Service
	ana   identity.Caller
	st    cases.Stores // unwrapped
	fails *failAt
}

// failAt names the call of a store method that fails: "CreateLog" 2 is the second log written.
type failAt struct {
	method string
	n      int64
	calls  atomic.Int64
	cancel context.CancelFunc // set: the failure is a closed context
}

// hit reports whether this call of method is the one that fails.
func (f *failAt) hit(method string) bool {
	return f.method == method && f.calls.Add(1) == f.n
}

// closeContext cancels the merge's context when the failure is a closed context, and reports whether it did;
// otherwise the wrappers make the failing write twice, the second answering the database's unique conflict.
func (f *failAt) closeContext() bool {
	if f.cancel != nil {
		f.cancel()
		return true
	}
	return false
}

type failingCases struct {
	cases.CaseStore
	f *failAt
}

func (w failingCases) CreateCase(ctx context.Context, c cases.Case) error {
	if w.f.hit("CreateCase") && !w.f.closeContext() {
		if err := w.CaseStore.CreateCase(ctx, c); err != nil {
			return err
		}
	}
	return w.CaseStore.CreateCase(ctx, c)
}

func (w failingCases) DeleteCase(ctx context.Context, id string) error {
	if w.f.hit("DeleteCase") {
		w.f.cancel()
	}
	return w.CaseStore.DeleteCase(ctx, id)
}

type failingTasks struct {
	task.Store
	f *failAt
}

func (w failingTasks) CreateTasks(ctx context.Context, ts []task.Task) error {
	if w.f.hit("CreateTasks") && !w.f.closeContext() {
		if err := w.Store.CreateTasks(ctx, ts); err != nil {
			return err
		}
	}
	return w.Store.CreateTasks(ctx, ts)
}

func (w failingTasks) CreateLog(ctx context.Context, l task.Log) error {
	if w.f.hit("CreateLog") && !w.f.closeContext() {
		if err := w.Store.CreateLog(ctx, l); err != nil {
			return err
		}
	}
	return w.Store.CreateLog(ctx, l)
}

type failingObservables struct {
	cases.ObservableStore
	f *failAt
}

func (w failingObservables) CreateObservables(ctx context.Context, os []cases.Observable) ([]error, error) {
	if w.f.hit("CreateObservables") && !w.f.closeContext() {
		if _, err := w.ObservableStore.CreateObservables(ctx, os); err != nil {
			return nil, err
		}
	}
	return w.ObservableStore.CreateObservables(ctx, os)
}

type failingAlerts struct {
	cases.AlertStore
	f *failAt
}

func (w failingAlerts) SetAlertState(ctx context.Context, id, expectCase string, expectRead *bool, to cases.AlertState, by string, at time.Time) (cases.Alert, bool, error) {
	if w.f.hit("SetAlertState") {
		w.f.cancel()
	}
	return w.AlertStore.SetAlertState(ctx, id, expectCase, expectRead, to, by, at)
}

func newMergeFixture(t *testing.T) *mergeFixture {
	t.Helper()
	f := &failAt{}
	d := newDomain(t, func(st cases.Stores) cases.Stores {
		st.Cases = failingCases{st.Cases, f}
		st.Tasks = failingTasks{st.Tasks, f}
		st.Observables = failingObservables{st.Observables, f}
		st.Alerts = failingAlerts{st.Alerts, f}
		return st
	})
	return &mergeFixture{svc: d.svc, tasks: d.tasks, ana: d.analyst, st: d.stores, fails: f}
}

// mergeCase makes a case of soc with two tasks (one with a log), observables and an alert merged in.
func (m *mergeFixture) mergeCase(t *testing.T, name string, shared string) cases.Case {
	t.Helper()
	ctx := t.Context()
	cs, tasks, err := m.svc.CreateCase(ctx, m.ana, cases.NewCase{Title: name, Description: "about " + name,
		Tags: []string{name, "common"}, Tasks: []task.Input{{Title: name + " first"}, {Title: name + " second"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.tasks.CreateLog(ctx, m.ana, tasks[0].ID, "log of "+name, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.svc.CreateObservables(ctx, m.ana, cases.Parent{Case: cs.ID},
		cases.NewObservable{DataType: "domain", Data: []string{name + ".example", shared}, Tags: []string{name}}); err != nil {
		t.Fatal(err)
	}
	a, _, err := m.svc.CreateAlert(ctx, m.ana, cases.NewAlert{Type: "t", Source: "s", SourceRef: name, Title: "alert " + name, Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.MergeAlert(ctx, m.ana, a.ID, cs.ID); err != nil {
		t.Fatal(err)
	}
	cs, err = m.svc.Case(ctx, m.ana, cs.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// snapshot is what soc holds: its cases and, per case, its tasks, logs, observables and alerts.
type snapshot map[string]string

func (m *mergeFixture) snapshot(t *testing.T) snapshot {
	t.Helper()
	ctx := context.Background()
	org := search.Node{Op: search.OpEq, Path: record.PathOrg, Value: "soc"}
	out := snapshot{}
	cs, _, err := m.st.Cases.Cases(ctx, org, search.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		out["case "+c.ID] = fmt.Sprintf("#%d %q %q sev=%d tags=%v fields=%v", c.Number, c.Title, c.Description, c.Severity, c.Tags, c.CustomFields)
	}
	ts, _, err := m.st.Tasks.Tasks(ctx, org, search.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		out["task "+x.ID] = x.CaseID + " " + x.Title
	}
	ls, _, err := m.st.Tasks.Logs(ctx, org, search.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ls {
		out["log "+x.ID] = x.CaseID + " " + x.TaskID + " " + x.Message
	}
	os, _, err := m.st.Observables.Observables(ctx, org, search.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range os {
		tags := slices.Clone(x.Tags)
		sort.Strings(tags)
		out["observable "+x.ID] = fmt.Sprintf("%s %s %s %v", x.CaseID, x.AlertID, x.Data, tags)
	}
	as, _, err := m.st.Alerts.Alerts(ctx, org, search.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range as {
		out["alert "+x.ID] = fmt.Sprintf("%s read=%v %s", x.CaseID, x.Read, x.Status())
	}
	return out
}

func TestService_MergeCasesAllOrNothing(t *testing.T) {
	steps := []struct {
		name   string
		method string
		n      int64
		closed bool // a closed context, else a unique conflict
	}{
		{"the new case conflicts", "CreateCase", 1, false},
		{"the tasks conflict", "CreateTasks", 1, false},
		{"a log conflicts", "CreateLog", 2, false},
		{"the observables conflict", "CreateObservables", 1, false},
		{"the context closes while observables are written", "CreateObservables", 1, true},
		{"the context closes while alerts move", "SetAlertState", 2, true},
		{"the context closes while the first case is deleted", "DeleteCase", 1, true},
		{"the context closes while the second case is deleted", "DeleteCase", 2, true},
		{"the context closes while tasks are written", "CreateTasks", 1, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			m := newMergeFixture(t)
			a := m.mergeCase(t, "alpha", "shared.example")
			b := m.mergeCase(t, "beta", "shared.example")
			before := m.snapshot(t)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			m.fails.method, m.fails.n = step.method, step.n
			if step.closed || step.method == "SetAlertState" {
				m.fails.cancel = cancel
			}
			_, err := m.svc.MergeCases(ctx, m.ana, []string{a.ID, b.ID})
			if err == nil {
				t.Fatalf("merge succeeded although %s %d failed", step.method, step.n)
			}
			if m.fails.calls.Load() < step.n {
				t.Fatalf("%s was called %d times, the failure was never provoked", step.method, m.fails.calls.Load())
			}
			if step.closed && !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want the closed context's", err)
			}
			after := m.snapshot(t)
			for k, v := range before {
				if after[k] != v {
					t.Errorf("%s: %q after the failed merge, was %q", k, after[k], v)
				}
			}
			for k, v := range after {
				if _, ok := before[k]; !ok {
					t.Errorf("%s: %q left by the failed merge", k, v)
				}
			}

			// Nothing is stuck: the same merge succeeds once the failure is gone.
			m.fails.method = ""
			merged, err := m.svc.MergeCases(t.Context(), m.ana, []string{a.ID, b.ID})
			if err != nil {
				t.Fatalf("merge after the failure: %v", err)
			}
			got := m.snapshot(t)
			if _, ok := got["case "+a.ID]; ok {
				t.Errorf("case %s still exists after the merge", a.ID)
			}
			if _, ok := got["case "+b.ID]; ok {
				t.Errorf("case %s still exists after the merge", b.ID)
			}
			counts := map[string]int{}
			for k, v := range got {
				kind, _, _ := strings.Cut(k, " ")
				if (kind == "task" || kind == "log") && !strings.HasPrefix(v, merged.ID+" ") {
					t.Errorf("%s: %q does not belong to the merged case %s", k, v, merged.ID)
				}
				counts[kind]++
			}
			// 4 tasks, 2 logs, 3 observables (shared.example once), 2 alerts, 1 case.
			want := map[string]int{"case": 1, "task": 4, "log": 2, "observable": 3, "alert": 2}
			for kind, n := range want {
				if counts[kind] != n {
					t.Errorf("%d %s records after the merge, want %d (%v)", counts[kind], kind, n, got)
				}
			}
		})
	}
}
