package auditbus

import (
	"context"
	"time"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/search"
)

// Wrap returns the stores with their writes audited: each successful write of a record records one event.
// Children deleted with their case or alert (its tasks, logs and observables) are covered by the parent's
// Delete event, as in the reference system.
func (s *Service) Wrap(st cases.Stores) cases.Stores {
	st.Cases = caseStore{st.Cases, s}
	st.Tasks = taskStore{st.Tasks, s}
	st.Templates = templateStore{st.Templates, s}
	st.Fields = fieldStore{st.Fields, s}
	st.Observables = observableStore{st.Observables, s}
	st.Alerts = alertStore{st.Alerts, s}
	return st
}

// WrapJobs returns the analyzer job store with its writes audited.
func (s *Service) WrapJobs(st connector.JobStore) connector.JobStore { return jobStore{st, s} }

// WrapIdentity returns the identity store with its writes of users and organisations audited.
func (s *Service) WrapIdentity(st identity.Store) identity.Store {
	return identityStore{st, s}
}

// WrapActions returns the responder action store with its writes audited.
func (s *Service) WrapActions(st connector.ActionStore) connector.ActionStore {
	return actionStore{st, s}
}

// WrapAutomation returns the stores of analyzer sets and rules with their writes of sets and rules audited.
// Of the firings, only those a budget holds are recorded (so that the live stream and webhooks report them):
// a rule's history is the record of the others, and the changes a firing makes are audited where they are
// made.
func (s *Service) WrapAutomation(sets automation.SetStore, rules automation.RuleStore) (automation.SetStore, automation.RuleStore) {
	return setStore{sets, s}, ruleStore{rules, s}
}

func observableRoot(o cases.Observable) string {
	if o.CaseID != "" {
		return o.CaseID
	}
	return o.AlertID
}

type caseStore struct {
	cases.CaseStore
	s *Service
}

func (w caseStore) CreateCase(ctx context.Context, c cases.Case) error {
	if err := w.CaseStore.CreateCase(ctx, c); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeCase, id: c.ID, org: c.Org, by: c.CreatedBy, obj: c})
}

func (w caseStore) UpdateCase(ctx context.Context, c cases.Case, fields []string, by string, at time.Time) (cases.Case, error) {
	out, err := w.CaseStore.UpdateCase(ctx, c, fields, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeCase, id: out.ID, org: out.Org, by: by, obj: out, fields: fields})
}

func (w caseStore) DeleteCase(ctx context.Context, id string) error {
	before, err := w.CaseStore.Case(ctx, id)
	if err != nil {
		return err
	}
	if err := w.CaseStore.DeleteCase(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeCase, id: id, org: before.Org, obj: before})
}

type taskStore struct {
	task.Store
	s *Service
}

func (w taskStore) CreateTasks(ctx context.Context, ts []task.Task) error {
	if err := w.Store.CreateTasks(ctx, ts); err != nil {
		return err
	}
	cs := make([]change, len(ts))
	for i, t := range ts {
		cs[i] = change{op: audit.Creation, objectType: audit.TypeTask, id: t.ID, root: t.CaseID, org: t.Org, by: t.CreatedBy, obj: t}
	}
	return w.s.recordAll(ctx, cs)
}

func (w taskStore) UpdateTask(ctx context.Context, t task.Task, fields []string, by string, at time.Time) (task.Task, error) {
	out, err := w.Store.UpdateTask(ctx, t, fields, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeTask, id: out.ID, root: out.CaseID, org: out.Org, by: by, obj: out, fields: fields})
}

func (w taskStore) CloseCaseTasks(ctx context.Context, caseID, by string, at time.Time) error {
	open, _, err := w.Store.Tasks(ctx, search.Node{Op: search.OpAnd, Children: []search.Node{
		{Op: search.OpEq, Path: cases.PathCaseID, Value: caseID},
		{Op: search.OpIn, Path: "status", Values: []any{task.Waiting, task.InProgress}}}}, search.Page{})
	if err != nil {
		return err
	}
	if err := w.Store.CloseCaseTasks(ctx, caseID, by, at); err != nil {
		return err
	}
	for _, t := range open {
		after, err := w.Store.Task(ctx, t.ID)
		if err != nil {
			continue // deleted meanwhile
		}
		if err := w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeTask, id: t.ID, root: t.CaseID, org: t.Org, by: by, obj: after, before: t}); err != nil {
			return err
		}
	}
	return nil
}

func (w taskStore) CreateLog(ctx context.Context, l task.Log) error {
	if err := w.Store.CreateLog(ctx, l); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeLog, id: l.ID, root: l.CaseID, org: l.Org, by: l.CreatedBy, obj: l})
}

func (w taskStore) UpdateLogMessage(ctx context.Context, id, message, by string, at time.Time) (task.Log, error) {
	out, err := w.Store.UpdateLogMessage(ctx, id, message, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeLog, id: out.ID, root: out.CaseID, org: out.Org, by: by, obj: out,
		fields: []string{"message"}})
}

func (w taskStore) DeleteLog(ctx context.Context, id string) error {
	before, err := w.Store.Log(ctx, id)
	if err != nil {
		return err
	}
	if err := w.Store.DeleteLog(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeLog, id: id, root: before.CaseID, org: before.Org, obj: before})
}

type templateStore struct {
	template.Store
	s *Service
}

func (w templateStore) CreateTemplate(ctx context.Context, t template.Template) error {
	if err := w.Store.CreateTemplate(ctx, t); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeTemplate, id: t.ID, org: t.Org, by: t.CreatedBy, obj: t})
}

func (w templateStore) UpdateTemplate(ctx context.Context, t template.Template, by string, at time.Time) (template.Template, error) {
	before, err := w.Store.Template(ctx, t.ID)
	if err != nil {
		return template.Template{}, err
	}
	out, err := w.Store.UpdateTemplate(ctx, t, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeTemplate, id: out.ID, org: out.Org, by: by, obj: out, before: before})
}

func (w templateStore) DeleteTemplate(ctx context.Context, id string) error {
	before, err := w.Store.Template(ctx, id)
	if err != nil {
		return err
	}
	if err := w.Store.DeleteTemplate(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeTemplate, id: id, org: before.Org, obj: before})
}

type fieldStore struct {
	customfield.Store
	s *Service
}

func (w fieldStore) CreateCustomField(ctx context.Context, f customfield.Field) error {
	if err := w.Store.CreateCustomField(ctx, f); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeCustomField, id: f.ID, by: f.CreatedBy, obj: f})
}

func (w fieldStore) UpdateCustomField(ctx context.Context, f customfield.Field, by string, at time.Time) (customfield.Field, error) {
	before, err := w.Store.CustomField(ctx, f.ID)
	if err != nil {
		return customfield.Field{}, err
	}
	out, err := w.Store.UpdateCustomField(ctx, f, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeCustomField, id: out.ID, by: by, obj: out, before: before})
}

func (w fieldStore) DeleteCustomField(ctx context.Context, id string) error {
	before, err := w.Store.CustomField(ctx, id)
	if err != nil {
		return err
	}
	if err := w.Store.DeleteCustomField(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeCustomField, id: id, obj: before})
}

type observableStore struct {
	cases.ObservableStore
	s *Service
}

func (w observableStore) CreateObservable(ctx context.Context, o cases.Observable) error {
	if err := w.ObservableStore.CreateObservable(ctx, o); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeObservable, id: o.ID, root: observableRoot(o), org: o.Org, by: o.CreatedBy, obj: o})
}

// CreateObservables records the events of the observables stored, in one write.
func (w observableStore) CreateObservables(ctx context.Context, obs []cases.Observable) ([]error, error) {
	res, err := w.ObservableStore.CreateObservables(ctx, obs)
	if err != nil {
		return nil, err
	}
	var cs []change
	for i, o := range obs {
		if res[i] == nil {
			cs = append(cs, change{op: audit.Creation, objectType: audit.TypeObservable, id: o.ID, root: observableRoot(o), org: o.Org, by: o.CreatedBy, obj: o})
		}
	}
	return res, w.s.recordAll(ctx, cs)
}

func (w observableStore) UpdateObservable(ctx context.Context, o cases.Observable, fields []string, by string, at time.Time) (cases.Observable, error) {
	out, err := w.ObservableStore.UpdateObservable(ctx, o, fields, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeObservable, id: out.ID, root: observableRoot(out), org: out.Org, by: by, obj: out, fields: fields})
}

func (w observableStore) AddObservableTags(ctx context.Context, id string, tags []string, by string, at time.Time) error {
	if err := w.ObservableStore.AddObservableTags(ctx, id, tags, by, at); err != nil {
		return err
	}
	return w.after(ctx, id, by, "tags")
}

func (w observableStore) MergeReport(ctx context.Context, id, analyzer string, summary any) error {
	if err := w.ObservableStore.MergeReport(ctx, id, analyzer, summary); err != nil {
		return err
	}
	return w.after(ctx, id, "", "reports")
}

// after records an update of the named field from the observable as it is now.
func (w observableStore) after(ctx context.Context, id, by, field string) error {
	o, err := w.ObservableStore.Observable(ctx, id)
	if err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeObservable, id: id, root: observableRoot(o), org: o.Org, by: by, obj: o, fields: []string{field}})
}

func (w observableStore) DeleteObservable(ctx context.Context, id string) error {
	before, err := w.ObservableStore.Observable(ctx, id)
	if err != nil {
		return err
	}
	if err := w.ObservableStore.DeleteObservable(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeObservable, id: id, root: observableRoot(before), org: before.Org, obj: before})
}

type alertStore struct {
	cases.AlertStore
	s *Service
}

func (w alertStore) CreateAlert(ctx context.Context, a cases.Alert) error {
	if err := w.AlertStore.CreateAlert(ctx, a); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeAlert, id: a.ID, org: a.Org, by: a.CreatedBy, obj: a})
}

func (w alertStore) UpdateAlert(ctx context.Context, a cases.Alert, fields []string, by string, at time.Time) (cases.Alert, error) {
	out, err := w.AlertStore.UpdateAlert(ctx, a, fields, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeAlert, id: out.ID, org: out.Org, by: by, obj: out, fields: fields})
}

func (w alertStore) SetAlertState(ctx context.Context, id, expectCase string, expectRead *bool, to cases.AlertState, by string, at time.Time) (cases.Alert, bool, error) {
	before, err := w.AlertStore.Alert(ctx, id)
	if err != nil {
		return cases.Alert{}, false, err
	}
	out, ok, err := w.AlertStore.SetAlertState(ctx, id, expectCase, expectRead, to, by, at)
	if err != nil || !ok {
		return out, ok, err
	}
	return out, ok, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeAlert, id: out.ID, org: out.Org, by: by, obj: out, before: before})
}

func (w alertStore) DeleteAlert(ctx context.Context, id string) error {
	before, err := w.AlertStore.Alert(ctx, id)
	if err != nil {
		return err
	}
	if err := w.AlertStore.DeleteAlert(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeAlert, id: id, org: before.Org, obj: before})
}

type jobStore struct {
	connector.JobStore
	s *Service
}

func (w jobStore) Create(ctx context.Context, j connector.Job) error {
	if err := w.JobStore.Create(ctx, j); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeJob, id: j.ID, root: j.CaseID, org: j.Org, by: j.CreatedBy, obj: j})
}

func (w jobStore) Update(ctx context.Context, j connector.Job, fields []string, by string, at time.Time) (connector.Job, error) {
	out, err := w.JobStore.Update(ctx, j, fields, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeJob, id: out.ID, root: out.CaseID, org: out.Org, by: by, obj: out, fields: fields})
}

func (w jobStore) Delete(ctx context.Context, id string) error {
	before, err := w.JobStore.Job(ctx, id)
	if err != nil {
		return err
	}
	if err := w.JobStore.Delete(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeJob, id: id, root: before.CaseID, org: before.Org, obj: before})
}

type actionStore struct {
	connector.ActionStore
	s *Service
}

func actionRoot(a connector.Action) string {
	if a.CaseID != "" {
		return a.CaseID
	}
	if a.AlertID != "" {
		return a.AlertID
	}
	return a.ObjectID
}

func (w actionStore) CreateAction(ctx context.Context, a connector.Action) error {
	if err := w.ActionStore.CreateAction(ctx, a); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeAction, id: a.ID, root: actionRoot(a), org: a.Org, by: a.CreatedBy, obj: a})
}

func (w actionStore) UpdateAction(ctx context.Context, a connector.Action) error {
	before, err := w.ActionStore.Action(ctx, a.ID)
	if err != nil {
		return err
	}
	if err := w.ActionStore.UpdateAction(ctx, a); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeAction, id: a.ID, root: actionRoot(a), org: a.Org, obj: a, before: before})
}

func (w actionStore) DeleteAction(ctx context.Context, id string) error {
	before, err := w.ActionStore.Action(ctx, id)
	if err != nil {
		return err
	}
	if err := w.ActionStore.DeleteAction(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeAction, id: id, root: actionRoot(before), org: before.Org, obj: before})
}

type identityStore struct {
	identity.Store
	s *Service
}

// public drops a user's secrets (password hash, sealed key, key hash): they never reach an event.
func public(u identity.User) identity.User {
	u.PasswordHash, u.KeySealed, u.KeyHash = "", "", ""
	return u
}

func (w identityStore) CreateOrg(ctx context.Context, o identity.Organisation) error {
	if err := w.Store.CreateOrg(ctx, o); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeOrg, id: o.Name, by: o.CreatedBy, obj: o})
}

func (w identityStore) UpdateOrg(ctx context.Context, name, description, by string, at time.Time) (identity.Organisation, error) {
	out, err := w.Store.UpdateOrg(ctx, name, description, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeOrg, id: out.Name, by: by, obj: out, fields: []string{"description"}})
}

func (w identityStore) DeleteUser(ctx context.Context, login string) error {
	before, err := w.Store.User(ctx, login)
	if err != nil {
		return err
	}
	if err := w.Store.DeleteUser(ctx, login); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeUser, id: login, obj: public(before)})
}

func (w identityStore) CreateUser(ctx context.Context, u identity.User) error {
	if err := w.Store.CreateUser(ctx, u); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeUser, id: u.Login, by: u.CreatedBy, obj: public(u)})
}

func (w identityStore) UpdateUser(ctx context.Context, u identity.User, by string, at time.Time) (identity.User, error) {
	before, err := w.Store.User(ctx, u.Login)
	if err != nil {
		return identity.User{}, err
	}
	out, err := w.Store.UpdateUser(ctx, u, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeUser, id: out.Login, by: by, obj: public(out), before: public(before)})
}

// SetPassword and SetKey record that the credential changed, never its value.
func (w identityStore) SetPassword(ctx context.Context, login, hash, by string, at time.Time) error {
	if err := w.Store.SetPassword(ctx, login, hash, by, at); err != nil {
		return err
	}
	return w.credential(ctx, login, by, "password")
}

func (w identityStore) SetKey(ctx context.Context, login, sealed, hash, by string, at time.Time) error {
	if err := w.Store.SetKey(ctx, login, sealed, hash, by, at); err != nil {
		return err
	}
	return w.credential(ctx, login, by, "key")
}

func (w identityStore) credential(ctx context.Context, login, by, what string) error {
	u, err := w.Store.User(ctx, login)
	if err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeUser, id: login, by: by, obj: public(u), fields: []string{what}})
}

type setStore struct {
	automation.SetStore
	s *Service
}

func (w setStore) CreateSet(ctx context.Context, set automation.Set) error {
	if err := w.SetStore.CreateSet(ctx, set); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeAnalyzerSet, id: set.ID, org: set.Org, by: set.CreatedBy, obj: set})
}

func (w setStore) UpdateSet(ctx context.Context, set automation.Set, by string, at time.Time) (automation.Set, error) {
	before, err := w.SetStore.Set(ctx, set.ID)
	if err != nil {
		return automation.Set{}, err
	}
	out, err := w.SetStore.UpdateSet(ctx, set, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeAnalyzerSet, id: out.ID, org: out.Org, by: by, obj: out, before: before})
}

func (w setStore) DeleteSet(ctx context.Context, id string) error {
	before, err := w.SetStore.Set(ctx, id)
	if err != nil {
		return err
	}
	if err := w.SetStore.DeleteSet(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeAnalyzerSet, id: id, org: before.Org, obj: before})
}

type ruleStore struct {
	automation.RuleStore
	s *Service
}

func (w ruleStore) CreateRule(ctx context.Context, r automation.Rule) error {
	if err := w.RuleStore.CreateRule(ctx, r); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Creation, objectType: audit.TypeRule, id: r.ID, org: r.Org, by: r.CreatedBy, obj: r})
}

// UpdateRule records the changes of a user's PATCH, and a rule the engine stops (by "system": its owner lost
// a permission).
func (w ruleStore) UpdateRule(ctx context.Context, r automation.Rule, by string, at time.Time) (automation.Rule, error) {
	before, err := w.RuleStore.Rule(ctx, r.ID)
	if err != nil {
		return automation.Rule{}, err
	}
	out, err := w.RuleStore.UpdateRule(ctx, r, by, at)
	if err != nil {
		return out, err
	}
	return out, w.s.record(ctx, change{op: audit.Update, objectType: audit.TypeRule, id: out.ID, org: out.Org, by: by, obj: out, before: before})
}

func (w ruleStore) DeleteRule(ctx context.Context, id string) error {
	before, err := w.RuleStore.Rule(ctx, id)
	if err != nil {
		return err
	}
	if err := w.RuleStore.DeleteRule(ctx, id); err != nil {
		return err
	}
	return w.s.record(ctx, change{op: audit.Delete, objectType: audit.TypeRule, id: id, org: before.Org, obj: before})
}

// UpdateFiring records a firing that became Held: the engine writes a Held firing only when it becomes held
// (a firing still held when it is tried again is not written again). The event is by the system and names
// the rule as its request; its details are the status and the message (which budget).
func (w ruleStore) UpdateFiring(ctx context.Context, f automation.Firing) error {
	if err := w.RuleStore.UpdateFiring(ctx, f); err != nil {
		return err
	}
	return w.held(ctx, audit.Update, f)
}

// CreateFiring records a firing created Held (the engine claims a firing before weighing it against the
// budgets, so it does not happen today).
func (w ruleStore) CreateFiring(ctx context.Context, f automation.Firing) error {
	if err := w.RuleStore.CreateFiring(ctx, f); err != nil {
		return err
	}
	return w.held(ctx, audit.Creation, f)
}

func (w ruleStore) held(ctx context.Context, op string, f automation.Firing) error {
	if f.Status != automation.FiringHeld {
		return nil
	}
	if record.CauseOf(ctx) == "" {
		ctx = record.WithCause(ctx, "rule:"+f.Rule)
	}
	return w.s.record(ctx, change{op: op, objectType: audit.TypeFiring, id: f.ID, root: f.Rule, org: f.Org, by: "system", obj: f,
		fields: []string{"status", "message"}})
}
