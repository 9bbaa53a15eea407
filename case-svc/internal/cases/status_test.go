package cases_test

import (
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

func status(s string) record.Change[string] { return record.Change[string]{Set: true, V: s} }

// caseStep is one update of a case, made a minute after the previous one.
type caseStep struct {
	as      func(d *domain) identity.Caller // nil: the analyst
	update  cases.CaseUpdate
	wantErr apperr.Kind // the refusal expected; 0 (Internal, never expected): none
}

func ok(u cases.CaseUpdate) caseStep { return caseStep{update: u} }

// TestService_CaseStatusTransitions: Open, Resolved and Duplicated (DECISIONS.md "case-svc"). Closing sets
// endDate to the time of the change unless one is given, and keeps the first close's when moving between the
// closed statuses; it cancels the Waiting tasks and completes the InProgress ones (a Completed or Cancel task
// stays). Reopening clears endDate unless one is given and reopens no task. A refused change changes nothing.
func TestService_CaseStatusTransitions(t *testing.T) {
	given := time.Date(2025, 12, 24, 18, 0, 0, 0, time.UTC)
	at := func(step int) time.Time { return time.Date(2026, 1, 5, 10, 30+step+1, 0, 0, time.UTC) } // each step's clock
	closedTasks := map[string]string{"waiting": task.Cancel, "running": task.Completed, "done": task.Completed}
	openTasks := map[string]string{"waiting": task.Waiting, "running": task.InProgress, "done": task.Completed}
	for _, tc := range []struct {
		name      string
		steps     []caseStep
		wantState string
		wantEnd   time.Time
		wantTasks map[string]string
	}{
		{"open to resolved", []caseStep{ok(cases.CaseUpdate{Status: status(cases.CaseResolved)})},
			cases.CaseResolved, at(0), closedTasks},
		{"open to duplicated with an end date", []caseStep{
			ok(cases.CaseUpdate{Status: status(cases.CaseDuplicated), EndDate: record.Change[time.Time]{Set: true, V: given}})},
			cases.CaseDuplicated, given, closedTasks},
		{"resolved to duplicated keeps the first end date", []caseStep{
			ok(cases.CaseUpdate{Status: status(cases.CaseResolved)}), ok(cases.CaseUpdate{Status: status(cases.CaseDuplicated)})},
			cases.CaseDuplicated, at(0), closedTasks},
		{"reopened", []caseStep{
			ok(cases.CaseUpdate{Status: status(cases.CaseResolved)}), ok(cases.CaseUpdate{Status: status(cases.CaseOpen)})},
			cases.CaseOpen, time.Time{}, closedTasks},
		{"reopened with an end date", []caseStep{
			ok(cases.CaseUpdate{Status: status(cases.CaseResolved)}),
			ok(cases.CaseUpdate{Status: status(cases.CaseOpen), EndDate: record.Change[time.Time]{Set: true, V: given}})},
			cases.CaseOpen, given, closedTasks},
		{"closed again after a reopening", []caseStep{
			ok(cases.CaseUpdate{Status: status(cases.CaseResolved)}), ok(cases.CaseUpdate{Status: status(cases.CaseOpen)}),
			ok(cases.CaseUpdate{Status: status(cases.CaseResolved)})},
			cases.CaseResolved, at(2), closedTasks},
		{"open to open", []caseStep{ok(cases.CaseUpdate{Status: status(cases.CaseOpen)})},
			cases.CaseOpen, time.Time{}, openTasks},
		{"an unknown status", []caseStep{{update: cases.CaseUpdate{Status: status("Closed")}, wantErr: apperr.Invalid}},
			cases.CaseOpen, time.Time{}, openTasks},
		{"a null status", []caseStep{{update: cases.CaseUpdate{Status: record.Change[string]{Set: true, Null: true}}, wantErr: apperr.Invalid}},
			cases.CaseOpen, time.Time{}, openTasks},
		{"a read-only user", []caseStep{{as: func(d *domain) identity.Caller { return d.reader },
			update: cases.CaseUpdate{Status: status(cases.CaseResolved)}, wantErr: apperr.Forbidden}},
			cases.CaseOpen, time.Time{}, openTasks},
		{"another organisation", []caseStep{{as: func(d *domain) identity.Caller { return d.other },
			update: cases.CaseUpdate{Status: status(cases.CaseResolved)}, wantErr: apperr.NotFound}},
			cases.CaseOpen, time.Time{}, openTasks},
		{"a refused close among valid changes", []caseStep{
			{update: cases.CaseUpdate{Status: status(cases.CaseResolved), Severity: record.Change[int]{Set: true, V: 9}}, wantErr: apperr.Invalid}},
			cases.CaseOpen, time.Time{}, openTasks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDomain(t)
			ctx := t.Context()
			cs, tasks, err := d.svc.CreateCase(ctx, d.analyst, cases.NewCase{Title: "phishing", Description: "d",
				Tasks: []task.Input{{Title: "waiting"}, {Title: "running"}, {Title: "done"}}})
			if err != nil {
				t.Fatal(err)
			}
			if cs.Status != cases.CaseOpen || !cs.EndDate.IsZero() {
				t.Fatalf("new case %s, endDate %v", cs.Status, cs.EndDate)
			}
			for _, tk := range tasks {
				to := map[string]string{"running": task.InProgress, "done": task.Completed}[tk.Title]
				if to == "" {
					continue
				}
				if _, err := d.tasks.Update(ctx, d.analyst, tk.ID, task.Update{Status: status(to)}); err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range tc.steps {
				d.now = at(i)
				as := d.analyst
				if s.as != nil {
					as = s.as(d)
				}
				got, err := d.svc.UpdateCase(ctx, as, cs.ID, s.update)
				switch {
				case s.wantErr == 0 && err != nil:
					t.Fatalf("step %d: %v", i, err)
				case s.wantErr != 0 && (err == nil || apperr.KindOf(err) != s.wantErr):
					t.Fatalf("step %d: %v, want kind %v", i, err, s.wantErr)
				case err == nil && got.Status != s.update.Status.V:
					t.Errorf("step %d answered status %s", i, got.Status)
				}
			}
			stored, err := d.svc.Case(ctx, d.analyst, cs.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status != tc.wantState || !stored.EndDate.Equal(tc.wantEnd) {
				t.Errorf("case %s ending %v, want %s ending %v", stored.Status, stored.EndDate, tc.wantState, tc.wantEnd)
			}
			ts, _, err := d.tasks.List(ctx, d.analyst, cs.ID, searchAll(), pageAll())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, tk := range ts {
				got[tk.Title] = tk.Status
			}
			for title, want := range tc.wantTasks {
				if got[title] != want {
					t.Errorf("tasks %v, want %v", got, tc.wantTasks)
					break
				}
			}
		})
	}
}

// TestAlertStatus: the status is derived from read and case.
func TestAlertStatus(t *testing.T) {
	for _, tc := range []struct {
		read bool
		cs   string
		want string
	}{
		{false, "", cases.AlertNew},
		{false, "~1", cases.AlertUpdated},
		{true, "", cases.AlertIgnored},
		{true, "~1", cases.AlertImported},
	} {
		if got := cases.AlertStatus(tc.read, tc.cs); got != tc.want {
			t.Errorf("AlertStatus(read %v, case %q) = %s, want %s", tc.read, tc.cs, got, tc.want)
		}
		if got := (cases.Alert{Read: tc.read, CaseID: tc.cs}).Status(); got != tc.want {
			t.Errorf("Alert{read %v, case %q}.Status() = %s, want %s", tc.read, tc.cs, got, tc.want)
		}
	}
}

// TestService_AlertStatusDerivation: every operation that changes an alert's read flag or case leaves the
// derived status, and the stored one that searches use, in agreement: New, read → Ignored, unread → New,
// imported → Imported, unread → Updated, its case deleted → New; merged → Imported, case deleted → Ignored.
// Refusals leave the status as it was.
func TestService_AlertStatusDerivation(t *testing.T) {
	type step struct {
		op      string // read, unread, import, merge, deleteCase
		as      func(d *domain) identity.Caller
		want    string
		wantErr apperr.Kind // the refusal expected; 0 (Internal, never expected): none
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"read, unread, import, unread, case deleted", []step{
			{op: "read", want: cases.AlertIgnored}, {op: "unread", want: cases.AlertNew},
			{op: "import", want: cases.AlertImported}, {op: "unread", want: cases.AlertUpdated},
			{op: "read", want: cases.AlertImported}, {op: "unread", want: cases.AlertUpdated},
			{op: "deleteCase", want: cases.AlertNew},
		}},
		{"merged, then its case deleted", []step{
			{op: "merge", want: cases.AlertImported}, {op: "deleteCase", want: cases.AlertIgnored},
		}},
		{"imported twice", []step{
			{op: "import", want: cases.AlertImported}, {op: "import", want: cases.AlertImported},
			{op: "merge", want: cases.AlertImported, wantErr: apperr.BadRequest},
		}},
		{"refusals", []step{
			{op: "read", as: func(d *domain) identity.Caller { return d.reader }, want: cases.AlertNew, wantErr: apperr.Forbidden},
			{op: "import", as: func(d *domain) identity.Caller { return d.reader }, want: cases.AlertNew, wantErr: apperr.Forbidden},
			{op: "read", as: func(d *domain) identity.Caller { return d.other }, want: cases.AlertNew, wantErr: apperr.NotFound},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDomain(t)
			ctx := t.Context()
			a, _, err := d.svc.CreateAlert(ctx, d.analyst, cases.NewAlert{Type: "mail", Source: "gw", SourceRef: "r1",
				Title: "phish", Description: "d"})
			if err != nil {
				t.Fatal(err)
			}
			if a.Status() != cases.AlertNew {
				t.Fatalf("new alert %s", a.Status())
			}
			var caseID string
			for i, s := range tc.steps {
				as := d.analyst
				if s.as != nil {
					as = s.as(d)
				}
				switch s.op {
				case "read", "unread":
					_, err = d.svc.MarkAsRead(ctx, as, a.ID, s.op == "read")
				case "import":
					var cs cases.Case
					if cs, _, err = d.svc.CreateCaseFromAlert(ctx, as, a.ID, ""); err == nil {
						caseID = cs.ID
					}
				case "merge":
					var cs cases.Case
					if cs, _, err = d.svc.CreateCase(ctx, d.analyst, cases.NewCase{Title: "target", Description: "d"}); err != nil {
						t.Fatal(err)
					}
					if _, err = d.svc.MergeAlert(ctx, as, a.ID, cs.ID); err == nil {
						caseID = cs.ID
					}
				case "deleteCase":
					err = d.svc.DeleteCase(ctx, as, caseID)
				}
				switch {
				case s.wantErr == 0 && err != nil:
					t.Fatalf("step %d (%s): %v", i, s.op, err)
				case s.wantErr != 0 && (err == nil || apperr.KindOf(err) != s.wantErr):
					t.Fatalf("step %d (%s): %v, want kind %v", i, s.op, err, s.wantErr)
				}
				got, err := d.svc.Alert(ctx, d.analyst, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status() != s.want {
					t.Errorf("step %d (%s): read %v, case %q: %s, want %s", i, s.op, got.Read, got.CaseID, got.Status(), s.want)
				}
				// The stored status (searches) agrees with the derived one.
				found, n, err := d.svc.Alerts(ctx, d.analyst, search.Node{Op: search.OpEq, Path: "status", Value: s.want}, search.Page{Limit: 10})
				if err != nil || n != 1 || found[0].ID != a.ID {
					t.Errorf("step %d (%s): a search for status %s found %d (%v)", i, s.op, s.want, n, err)
				}
			}
		})
	}
}
