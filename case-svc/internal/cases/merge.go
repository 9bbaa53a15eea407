package cases

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// MergeMax is the most cases one merge takes.
const MergeMax = 100

// Errors of case merges.
var (
	ErrMergeTooFew  = apperr.New(apperr.BadRequest, "at least two cases are needed to merge")
	ErrMergeTooMany = apperr.Errorf(apperr.BadRequest, "at most %d cases can be merged at once", MergeMax)
	ErrMergeSelf    = apperr.New(apperr.BadRequest, "a case cannot be merged with itself")
	ErrMergeChanged = apperr.New(apperr.Conflict, "a case being merged changed meanwhile: merge again")
)

// mergeSource is a case being merged with what it holds.
type mergeSource struct {
	cs          Case
	tasks       []task.Task
	logs        []task.Log
	observables []Observable
	alerts      []Alert
}

// MergeCases merges cases of the caller's organisation into a new case (manageCase), as the reference
// system's CaseSrv.merge does: titles joined with " / ", descriptions and summaries with a blank line, the
// highest severity, TLP and PAP, the earliest start date, flag if any is flagged, the union of the tags,
// status Open, the caller as owner and a new number. The new case gets the cases' tasks with their logs,
// their observables (one per dataType and value: the first case's wins, gaining the others' tags and flags),
// their custom fields (the first case's value of a field wins) and their alerts; the merged cases are then
// deleted.
//
// Without transactions, nothing half-done stays: the new case's records are written first under its own id,
// the alerts then move to it, and the merged cases go last; a failure before that end undoes what was
// written. Once the merged cases are gone the merge stands; their tasks and observables are removed after,
// and a failure there is reported with the merged case.
func (s *Service) MergeCases(ctx context.Context, c identity.Caller, ids []string) (Case, error) {
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, err
	}
	if len(ids) < 2 {
		return Case{}, ErrMergeTooFew
	}
	if len(ids) > MergeMax {
		return Case{}, ErrMergeTooMany
	}
	srcs := make([]mergeSource, 0, len(ids))
	for _, id := range ids {
		cs, err := s.Case(ctx, c, id)
		if err != nil {
			return Case{}, err
		}
		if slices.ContainsFunc(srcs, func(m mergeSource) bool { return m.cs.ID == cs.ID }) {
			return Case{}, ErrMergeSelf
		}
		srcs = append(srcs, mergeSource{cs: cs})
	}
	for i := range srcs {
		if err := s.readMergeSource(ctx, c, &srcs[i]); err != nil {
			return Case{}, err
		}
	}
	now := s.clock()
	merged, err := s.mergedCase(ctx, c, srcs, now)
	if err != nil {
		return Case{}, err
	}
	tasks, logs := mergedTasks(srcs, now)
	obs := mergedObservables(srcs)

	seq, num, err := s.cases.NextCaseNumber(ctx, c.Org)
	if err != nil {
		return Case{}, err
	}
	merged.Number, merged.ID = num, CaseID(seq)
	for i := range tasks {
		tasks[i].CaseID = merged.ID
	}
	for i := range logs {
		logs[i].CaseID = merged.ID
	}
	obs = rehomeObservables(obs, merged.ID)

	// 1. The new case and its records, under its own id: undone by removing it.
	undo := func() { _ = s.removeCase(context.WithoutCancel(ctx), merged.ID) }
	if err := s.cases.CreateCase(ctx, merged); err != nil {
		undo() // the audit may fail after the write
		return Case{}, fmt.Errorf("create merged case: %w", err)
	}
	if err := s.writeMerged(ctx, tasks, logs, obs); err != nil {
		undo()
		return Case{}, err
	}

	// 2. The alerts of the merged cases move to the new case: undone by moving them back.
	var moved []moveBack
	undoAll := func() {
		uctx := context.WithoutCancel(ctx)
		for _, m := range moved {
			_, _, _ = s.alerts.SetAlertState(uctx, m.alert, merged.ID, nil, AlertState{Case: m.from, Read: m.read}, c.Login, s.clock())
		}
		undo()
	}
	for _, src := range srcs {
		for _, a := range src.alerts {
			_, ok, err := s.alerts.SetAlertState(ctx, a.ID, src.cs.ID, &a.Read, AlertState{Case: merged.ID, Read: a.Read}, c.Login, now)
			if ok || err != nil {
				// A failed audit after the write leaves the alert moved: move it back too.
				moved = append(moved, moveBack{alert: a.ID, from: src.cs.ID, read: a.Read})
			}
			if err != nil {
				undoAll()
				return Case{}, fmt.Errorf("move alert %s to merged case: %w", a.ID, err)
			}
			if !ok { // read, unlinked or moved meanwhile
				undoAll()
				return Case{}, ErrMergeChanged
			}
		}
	}

	// 3. The merged cases go: undone by putting back those this merge deleted. A case already gone was deleted
	// or merged meanwhile by another request, whose change stands.
	for i, src := range srcs {
		if err := s.cases.DeleteCase(ctx, src.cs.ID); err != nil {
			uctx := context.WithoutCancel(ctx)
			deleted := srcs[:i]
			if !errors.Is(err, ErrCaseNotFound) {
				deleted = srcs[:i+1] // the delete may have been made (its audit record failed)
			}
			for _, back := range deleted {
				if _, gone := s.cases.Case(uctx, back.cs.ID); errors.Is(gone, ErrCaseNotFound) {
					_ = s.cases.CreateCase(uctx, back.cs)
				}
			}
			undoAll()
			if errors.Is(err, ErrCaseNotFound) {
				return Case{}, ErrMergeChanged
			}
			return Case{}, fmt.Errorf("delete merged case %s: %w", src.cs.ID, err)
		}
	}

	// The merge stands. The merged cases' own copies of their tasks and observables go now.
	cctx := context.WithoutCancel(ctx)
	var errs []error
	for _, src := range srcs {
		errs = append(errs, s.observables.DeleteParentObservables(cctx, Parent{Case: src.cs.ID}),
			s.tasks.DeleteCaseTasks(cctx, src.cs.ID))
	}
	if err := errors.Join(errs...); err != nil {
		return merged, apperr.Wrap(apperr.Internal, fmt.Sprintf(
			"the cases were merged into case #%d, but the tasks or observables of the merged cases could not all be removed", merged.Number), err)
	}
	return merged, nil
}

// moveBack is an alert moved to the merged case, with where it came from.
type moveBack struct {
	alert, from string
	read        bool
}

// readMergeSource reads what a case being merged holds.
func (s *Service) readMergeSource(ctx context.Context, c identity.Caller, m *mergeSource) error {
	ofCase := record.And(record.InOrg(c.Org), search.Node{Op: search.OpEq, Path: PathCaseID, Value: m.cs.ID})
	var err error
	if m.tasks, _, err = s.tasks.Tasks(ctx, ofCase, search.Page{}); err != nil {
		return err
	}
	if m.logs, _, err = s.tasks.Logs(ctx, ofCase, search.Page{}); err != nil {
		return err
	}
	if m.observables, _, err = s.observables.Observables(ctx, ofCase, search.Page{}); err != nil {
		return err
	}
	m.alerts, _, err = s.alerts.Alerts(ctx, ofCase, search.Page{})
	return err
}

// mergedCase is the new case of a merge, without its id and number.
func (s *Service) mergedCase(ctx context.Context, c identity.Caller, srcs []mergeSource, now time.Time) (Case, error) {
	first := srcs[0].cs
	m := Case{Org: c.Org, Severity: first.Severity, TLP: first.TLP, PAP: first.PAP, StartDate: first.StartDate,
		Status: CaseOpen, Owner: c.Login, CustomFields: customfield.Values{}, Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	var titles, descriptions, summaries []string
	for _, src := range srcs {
		cs := src.cs
		titles = append(titles, cs.Title)
		descriptions = append(descriptions, cs.Description)
		if cs.Summary != "" {
			summaries = append(summaries, cs.Summary)
		}
		m.Severity, m.TLP, m.PAP = max(m.Severity, cs.Severity), max(m.TLP, cs.TLP), max(m.PAP, cs.PAP)
		if cs.StartDate.Before(m.StartDate) {
			m.StartDate = cs.StartDate
		}
		m.Flag = m.Flag || cs.Flag
		m.Tags = record.UnionTags(m.Tags, cs.Tags)
		for name, v := range cs.CustomFields {
			if _, has := m.CustomFields[name]; !has {
				v.Order = -1 // numbered after the first case's fields, in name order
				if src.cs.ID == first.ID {
					v.Order = cs.CustomFields[name].Order
				}
				v.ID = ""
				m.CustomFields[name] = v
			}
		}
	}
	m.Title = strings.Join(titles, " / ")
	m.Description = strings.Join(descriptions, "\n\n")
	m.Summary = strings.Join(summaries, "\n\n")
	customfield.NumberOrders(m.CustomFields)
	var p record.Problems
	p.Text("title", m.Title, true, record.MaxTitle)
	p.Text("description", m.Description, true, record.MaxDescription)
	p.Text("summary", m.Summary, false, record.MaxDescription)
	if err := p.Err(); err != nil {
		return Case{}, err
	}
	// The owner must still be a user of the organisation (the caller is).
	if err := s.checkOwner(ctx, "owner", c.Org, m.Owner); err != nil {
		return Case{}, err
	}
	return m, nil
}

// mergedTasks copies the tasks of the merged cases, each with its logs, under new ids (the caller sets their
// case). A task keeps its fields and history; logs follow their task.
func mergedTasks(srcs []mergeSource, now time.Time) ([]task.Task, []task.Log) {
	var tasks []task.Task
	var logs []task.Log
	for _, src := range srcs {
		newIDs := map[string]string{}
		for _, t := range src.tasks {
			id := record.NewID(now)
			newIDs[t.ID] = id
			t.ID = id
			tasks = append(tasks, t)
		}
		for _, l := range src.logs {
			taskID, ok := newIDs[l.TaskID]
			if !ok {
				continue // a log whose task is gone meanwhile
			}
			l.ID, l.TaskID = record.NewID(now), taskID
			logs = append(logs, l)
		}
	}
	return tasks, logs
}

// mergedObservables gathers the observables of the merged cases, one per (dataType, value): the first
// case's is kept and gains the others' tags, and IOC and sighted when any has them.
func mergedObservables(srcs []mergeSource) []Observable {
	var out []Observable
	at := map[string]int{}
	for _, src := range srcs {
		for _, o := range src.observables {
			k := o.DataType + "\x00" + o.Key
			if i, dup := at[k]; dup {
				out[i].Tags = record.UnionTags(out[i].Tags, o.Tags)
				out[i].IOC = out[i].IOC || o.IOC
				out[i].Sighted = out[i].Sighted || o.Sighted
				continue
			}
			at[k] = len(out)
			out = append(out, o)
		}
	}
	return out
}

// rehomeObservables moves observables to a case: their ids derive from their parent.
func rehomeObservables(obs []Observable, caseID string) []Observable {
	for i := range obs {
		o := &obs[i]
		o.CaseID, o.AlertID = caseID, ""
		o.ID = observableID(Parent{Case: caseID}, o.DataType, o.Key)
	}
	return obs
}

// writeMerged writes the tasks, logs and observables of a merged case.
func (s *Service) writeMerged(ctx context.Context, tasks []task.Task, logs []task.Log, obs []Observable) error {
	if len(tasks) > 0 {
		if err := s.tasks.CreateTasks(ctx, tasks); err != nil {
			return fmt.Errorf("copy tasks to merged case: %w", err)
		}
	}
	for _, l := range logs {
		if err := s.tasks.CreateLog(ctx, l); err != nil {
			return fmt.Errorf("copy log %s to merged case: %w", l.ID, err)
		}
	}
	if len(obs) == 0 {
		return nil
	}
	res, err := s.observables.CreateObservables(ctx, obs) // one per (dataType, value): a conflict is a fault
	if err != nil {
		return fmt.Errorf("copy observables to merged case: %w", err)
	}
	for i, err := range res {
		if err != nil {
			return fmt.Errorf("copy observable %s to merged case: %w", obs[i].ID, err)
		}
	}
	return nil
}
