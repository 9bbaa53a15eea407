package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// AutomationStore keeps the automation records: analyzer sets and rules (a unique index holds each
// organisation's names), the firings of rules (their history, one record per (rule, object, event), by a
// derived id) and the engine's cursor in the events.
type AutomationStore struct {
	sets, rules, firings, cursor *docstore.Collection
}

var (
	_ automation.SetStore  = (*AutomationStore)(nil)
	_ automation.RuleStore = (*AutomationStore)(nil)
)

// setSpec: the unique name per organisation (also the lookup by name), and the organisation's set list in its
// default order (_id).
var setSpec = docstore.Spec{Name: "analyzerSets", Arrays: []string{automation.PathSetDataTypes, "analyzers"}, Indexes: []docstore.Index{
	{Name: "organisation_name", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("name")}, Unique: true},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
}}

// ruleSpec: the unique name per organisation, the organisation's list (_id), the enabled rules of an event.
// firingSpec: a rule's history newest first; the unfinished firings (Pending, Held) oldest first.
var (
	ruleSpec = docstore.Spec{Name: "rules", Arrays: []string{"actions"}, Indexes: []docstore.Index{
		{Name: "organisation_name", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("name")}, Unique: true},
		{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
		{Name: "organisation_event_enabled", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("event"), docstore.Asc("enabled")}},
	}}
	firingSpec = docstore.Spec{Name: "firings", Arrays: []string{"jobs", "responders"}, Indexes: []docstore.Index{
		{Name: "organisation_rule_date", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("rule"), docstore.Desc("date")}},
		{Name: "status_date", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("date")}},
	}}
	cursorSpec = docstore.Spec{Name: "automation_cursor"}
)

// NewAutomationStore returns the store and creates its indexes.
func NewAutomationStore(ctx context.Context, db *docstore.DB) (*AutomationStore, error) {
	s := &AutomationStore{}
	for _, c := range []struct {
		spec docstore.Spec
		dst  **docstore.Collection
	}{{setSpec, &s.sets}, {ruleSpec, &s.rules}, {firingSpec, &s.firings}, {cursorSpec, &s.cursor}} {
		coll, err := db.Collection(ctx, c.spec)
		if err != nil {
			return nil, err
		}
		*c.dst = coll
	}
	return s, nil
}

// setAnalyzerDoc is one analyzer of a set. Parameters are JSON text: their keys may hold "." or "$", which
// documents may not.
type setAnalyzerDoc struct {
	DataType   string  `json:"dataType"`
	AnalysisID string  `json:"analysisId"`
	Name       string  `json:"name"`
	Parameters *string `json:"parameters"`
}

type setDoc struct {
	ID          string           `json:"_id"`
	Org         string           `json:"organisation"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	DataTypes   []string         `json:"dataTypes"`
	Analyzers   []setAnalyzerDoc `json:"analyzers"`
	CreatedAt   int64            `json:"createdAt"`
	CreatedBy   string           `json:"createdBy"`
	UpdatedAt   *int64           `json:"updatedAt"`
	UpdatedBy   string           `json:"updatedBy,omitempty"`
}

func toSetDoc(s automation.Set) (setDoc, error) {
	d := setDoc{ID: s.ID, Org: s.Org, Name: s.Name, Description: s.Description, DataTypes: []string{},
		Analyzers: []setAnalyzerDoc{}, CreatedAt: docstore.Millis(s.CreatedAt), CreatedBy: s.CreatedBy}
	for dt := range s.Analyzers {
		d.DataTypes = append(d.DataTypes, dt)
	}
	sort.Strings(d.DataTypes)
	for _, dt := range d.DataTypes {
		for _, a := range s.Analyzers[dt] {
			ad := setAnalyzerDoc{DataType: dt, AnalysisID: a.AnalysisID, Name: a.Name}
			if a.Parameters != nil {
				txt, err := encodeJSON(a.Parameters)
				if err != nil {
					return setDoc{}, fmt.Errorf("encode parameters of set %s: %w", s.ID, err)
				}
				ad.Parameters = &txt
			}
			d.Analyzers = append(d.Analyzers, ad)
		}
	}
	return d, nil
}

func (d setDoc) set() automation.Set {
	s := automation.Set{ID: d.ID, Org: d.Org, Name: d.Name, Description: d.Description, Analyzers: map[string][]automation.Analyzer{},
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
	for _, a := range d.Analyzers {
		an := automation.Analyzer{AnalysisID: a.AnalysisID, Name: a.Name}
		if a.Parameters != nil {
			if v, err := decodeJSON(*a.Parameters); err == nil {
				an.Parameters, _ = docstore.Normalize(v).(map[string]any)
			}
		}
		s.Analyzers[a.DataType] = append(s.Analyzers[a.DataType], an)
	}
	return s
}

// CreateSet inserts a set; the unique index refuses a name the organisation already uses.
func (s *AutomationStore) CreateSet(ctx context.Context, set automation.Set) error {
	d, err := toSetDoc(set)
	if err != nil {
		return err
	}
	err = s.sets.Insert(ctx, d)
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create analyzer set %s: %w", set.Name, automation.ErrSetExists)
	}
	if err != nil {
		return fmt.Errorf("create analyzer set %s: %w", set.Name, err)
	}
	return nil
}

// Set finds a set by id.
func (s *AutomationStore) Set(ctx context.Context, id string) (automation.Set, error) {
	var d setDoc
	if err := get(ctx, s.sets, id, &d, automation.ErrSetNotFound); err != nil {
		return automation.Set{}, err
	}
	return d.set(), nil
}

// SetByName finds a set by organisation and name.
func (s *AutomationStore) SetByName(ctx context.Context, org, name string) (automation.Set, error) {
	var d setDoc
	err := findOne(ctx, s.sets, docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("name", name)), &d, automation.ErrSetNotFound)
	if err != nil {
		return automation.Set{}, err
	}
	return d.set(), nil
}

// Sets lists sets.
func (s *AutomationStore) Sets(ctx context.Context, f search.Node, p search.Page) ([]automation.Set, int64, error) {
	return page(ctx, s.sets, f, p, setDoc.set)
}

// UpdateSet writes the name, description and analyzers of set.
func (s *AutomationStore) UpdateSet(ctx context.Context, set automation.Set, by string, at time.Time) (automation.Set, error) {
	d, err := toSetDoc(set)
	if err != nil {
		return automation.Set{}, err
	}
	u := stamp(by, at).Set("name", d.Name).Set("description", d.Description).Set("dataTypes", d.DataTypes).Set("analyzers", d.Analyzers)
	var out setDoc
	err = findOneAndUpdate(ctx, s.sets, docstore.And(docstore.ID(set.ID), docstore.Eq(record.PathOrg, set.Org)), u, &out, automation.ErrSetNotFound)
	if docstore.IsDuplicate(err) {
		return automation.Set{}, fmt.Errorf("update analyzer set %s: %w", set.Name, automation.ErrSetExists)
	}
	if err != nil {
		return automation.Set{}, err
	}
	return out.set(), nil
}

// DeleteSet removes a set.
func (s *AutomationStore) DeleteSet(ctx context.Context, id string) error {
	if _, err := s.sets.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete analyzer set %s: %w", id, err)
	}
	return nil
}

type actionDocA struct {
	Type       string   `json:"type"`
	Set        string   `json:"set,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	Responder  string   `json:"responder,omitempty"`
	AnalysisID string   `json:"analysisId,omitempty"`
}

type ruleDoc struct {
	ID          string       `json:"_id"`
	Org         string       `json:"organisation"`
	Name        string       `json:"name"`
	Enabled     bool         `json:"enabled"`
	Event       string       `json:"event"`
	Conditions  *string      `json:"conditions"` // JSON text: a query's keys start with "_"
	Actions     []actionDocA `json:"actions"`
	MaxDepth    int          `json:"maxDepth"`
	JobsPerHour int          `json:"jobsPerHour"`
	DryRun      bool         `json:"dryRun"`
	Owner       string       `json:"owner"`
	Stopped     string       `json:"stopped,omitempty"`
	CreatedAt   int64        `json:"createdAt"`
	CreatedBy   string       `json:"createdBy"`
	UpdatedAt   *int64       `json:"updatedAt"`
	UpdatedBy   string       `json:"updatedBy,omitempty"`
}

func toRuleDoc(r automation.Rule) ruleDoc {
	d := ruleDoc{ID: r.ID, Org: r.Org, Name: r.Name, Enabled: r.Enabled, Event: r.Event, MaxDepth: r.MaxDepth,
		JobsPerHour: r.JobsPerHour, DryRun: r.DryRun, Owner: r.Owner, Stopped: r.Stopped, Actions: []actionDocA{},
		CreatedAt: docstore.Millis(r.CreatedAt), CreatedBy: r.CreatedBy}
	if r.Conditions != nil {
		txt := string(r.Conditions)
		d.Conditions = &txt
	}
	for _, a := range r.Actions {
		d.Actions = append(d.Actions, actionDocA{Type: a.Type, Set: a.Set, Tags: a.Tags, Owner: a.Owner, Responder: a.Responder,
			AnalysisID: a.AnalysisID})
	}
	return d
}

func (d ruleDoc) rule() automation.Rule {
	r := automation.Rule{ID: d.ID, Org: d.Org, Name: d.Name, Enabled: d.Enabled, Event: d.Event, MaxDepth: d.MaxDepth,
		JobsPerHour: d.JobsPerHour, DryRun: d.DryRun, Owner: d.Owner, Stopped: d.Stopped,
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
	if d.Conditions != nil {
		r.Conditions = []byte(*d.Conditions)
	}
	for _, a := range d.Actions {
		r.Actions = append(r.Actions, automation.Action{Type: a.Type, Set: a.Set, Tags: a.Tags, Owner: a.Owner, Responder: a.Responder,
			AnalysisID: a.AnalysisID})
	}
	return r
}

// CreateRule inserts a rule; the unique index refuses a name the organisation already uses.
func (s *AutomationStore) CreateRule(ctx context.Context, r automation.Rule) error {
	err := s.rules.Insert(ctx, toRuleDoc(r))
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create rule %s: %w", r.Name, automation.ErrRuleExists)
	}
	if err != nil {
		return fmt.Errorf("create rule %s: %w", r.Name, err)
	}
	return nil
}

// Rule finds a rule by id.
func (s *AutomationStore) Rule(ctx context.Context, id string) (automation.Rule, error) {
	var d ruleDoc
	if err := get(ctx, s.rules, id, &d, automation.ErrRuleNotFound); err != nil {
		return automation.Rule{}, err
	}
	return d.rule(), nil
}

// Rules lists rules.
func (s *AutomationStore) Rules(ctx context.Context, f search.Node, p search.Page) ([]automation.Rule, int64, error) {
	return page(ctx, s.rules, f, p, ruleDoc.rule)
}

// ActiveRules lists the enabled rules of an organisation on an event.
func (s *AutomationStore) ActiveRules(ctx context.Context, org, event string) ([]automation.Rule, error) {
	var docs []ruleDoc
	q := docstore.Query{Filter: docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("event", event), docstore.Eq("enabled", true))}
	if err := s.rules.Find(ctx, q, &docs); err != nil {
		return nil, fmt.Errorf("active rules: %w", err)
	}
	out := make([]automation.Rule, len(docs))
	for i, d := range docs {
		out[i] = d.rule()
	}
	return out, nil
}

// HasActiveRules says whether any organisation has an enabled rule.
func (s *AutomationStore) HasActiveRules(ctx context.Context) (bool, error) {
	ok, err := s.rules.Exists(ctx, docstore.Eq("enabled", true))
	if err != nil {
		return false, fmt.Errorf("active rules: %w", err)
	}
	return ok, nil
}

// UpdateRule writes every field of r but its id, organisation and creation.
func (s *AutomationStore) UpdateRule(ctx context.Context, r automation.Rule, by string, at time.Time) (automation.Rule, error) {
	d := toRuleDoc(r)
	u := stamp(by, at).Set("name", d.Name).Set("enabled", d.Enabled).Set("event", d.Event).Set("conditions", d.Conditions).
		Set("actions", d.Actions).Set("maxDepth", d.MaxDepth).Set("jobsPerHour", d.JobsPerHour).Set("dryRun", d.DryRun).
		Set("owner", d.Owner).Set("stopped", d.Stopped)
	var out ruleDoc
	err := findOneAndUpdate(ctx, s.rules, docstore.And(docstore.ID(r.ID), docstore.Eq(record.PathOrg, r.Org)), u, &out, automation.ErrRuleNotFound)
	if docstore.IsDuplicate(err) {
		return automation.Rule{}, fmt.Errorf("update rule %s: %w", r.Name, automation.ErrRuleExists)
	}
	if err != nil {
		return automation.Rule{}, err
	}
	return out.rule(), nil
}

// DeleteRule removes a rule.
func (s *AutomationStore) DeleteRule(ctx context.Context, id string) error {
	if _, err := s.rules.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete rule %s: %w", id, err)
	}
	return nil
}

type firingDoc struct {
	ID         string         `json:"_id"`
	Org        string         `json:"organisation"`
	Rule       string         `json:"rule"`
	RuleName   string         `json:"ruleName"`
	Event      string         `json:"event"`
	ObjectType string         `json:"objectType"`
	ObjectID   string         `json:"objectId"`
	EventID    string         `json:"eventId"`
	Cause      string         `json:"cause,omitempty"`
	Depth      int            `json:"depth"`
	Status     string         `json:"status"`
	Message    string         `json:"message"`
	Jobs       []string       `json:"jobs"`
	Planned    int            `json:"planned"`
	Responders []responderRun `json:"responders,omitempty"`
	Date       int64          `json:"date"`
	Updated    int64          `json:"updated"`
}

// responderRun is a firing's responder run (automation.ResponderRun).
type responderRun struct {
	Action      int    `json:"action"`
	Responder   string `json:"responder"`
	AnalysisID  string `json:"analysisId"`
	ResponderID string `json:"responderId"`
	Since       int64  `json:"since"`
	ActionID    string `json:"actionId"`
}

func toFiringDoc(f automation.Firing) firingDoc {
	jobs := f.Jobs
	if jobs == nil {
		jobs = []string{}
	}
	d := firingDoc{ID: f.ID, Org: f.Org, Rule: f.Rule, RuleName: f.RuleName, Event: f.Event, ObjectType: f.ObjectType,
		ObjectID: f.ObjectID, EventID: f.EventID, Cause: f.Cause, Depth: f.Depth, Status: f.Status, Message: f.Message,
		Jobs: jobs, Planned: f.Planned, Date: docstore.Millis(f.Date), Updated: docstore.Millis(f.Updated)}
	for _, r := range f.Responders {
		d.Responders = append(d.Responders, responderRun{Action: r.Action, Responder: r.Responder, AnalysisID: r.AnalysisID,
			ResponderID: r.ResponderID, Since: docstore.Millis(r.Since), ActionID: r.ActionID})
	}
	return d
}

func (d firingDoc) firing() automation.Firing {
	f := automation.Firing{ID: d.ID, Org: d.Org, Rule: d.Rule, RuleName: d.RuleName, Event: d.Event, ObjectType: d.ObjectType,
		ObjectID: d.ObjectID, EventID: d.EventID, Cause: d.Cause, Depth: d.Depth, Status: d.Status, Message: d.Message,
		Jobs: d.Jobs, Planned: d.Planned, Date: docstore.Time(d.Date), Updated: docstore.Time(d.Updated)}
	for _, r := range d.Responders {
		f.Responders = append(f.Responders, automation.ResponderRun{Action: r.Action, Responder: r.Responder, AnalysisID: r.AnalysisID,
			ResponderID: r.ResponderID, Since: docstore.Time(r.Since), ActionID: r.ActionID})
	}
	return f
}

// CreateFiring inserts a firing; its id is taken when the rule already fired for that object and event.
func (s *AutomationStore) CreateFiring(ctx context.Context, f automation.Firing) error {
	err := s.firings.Insert(ctx, toFiringDoc(f))
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create firing %s: %w", f.ID, automation.ErrFiringExists)
	}
	if err != nil {
		return fmt.Errorf("create firing %s: %w", f.ID, err)
	}
	return nil
}

// CreateFirings inserts firings in one write; those whose id is taken are left as they are.
func (s *AutomationStore) CreateFirings(ctx context.Context, fs []automation.Firing) error {
	docs := make([]any, len(fs))
	for i, f := range fs {
		docs[i] = toFiringDoc(f)
	}
	errs, err := s.firings.InsertMany(ctx, docs)
	if err != nil {
		return fmt.Errorf("create firings: %w", err)
	}
	for _, e := range errs {
		if e != nil && !docstore.IsDuplicate(e) {
			return fmt.Errorf("create firings: %w", e)
		}
	}
	return nil
}

// Firing finds a firing by id.
func (s *AutomationStore) Firing(ctx context.Context, id string) (automation.Firing, error) {
	var d firingDoc
	if err := get(ctx, s.firings, id, &d, automation.ErrFiringNotFound); err != nil {
		return automation.Firing{}, err
	}
	return d.firing(), nil
}

// UpdateFiring replaces a firing.
func (s *AutomationStore) UpdateFiring(ctx context.Context, f automation.Firing) error {
	if err := s.firings.Replace(ctx, toFiringDoc(f), false); err != nil {
		return fmt.Errorf("update firing %s: %w", f.ID, err)
	}
	return nil
}

// Firings lists firings, newest first unless p sorts otherwise.
func (s *AutomationStore) Firings(ctx context.Context, f search.Node, p search.Page) ([]automation.Firing, int64, error) {
	if len(p.Sort) == 0 {
		p.Sort = docstore.Sort("-date")
	}
	return page(ctx, s.firings, f, p, firingDoc.firing)
}

// Unfinished lists the Pending and Held firings, oldest first.
func (s *AutomationStore) Unfinished(ctx context.Context, limit int) ([]automation.Firing, error) {
	var out []automation.Firing
	for _, st := range []string{automation.FiringPending, automation.FiringHeld} {
		var docs []firingDoc
		q := docstore.Query{Filter: docstore.Eq("status", st), Sort: docstore.Sort("date"), Limit: limit}
		if err := s.firings.Find(ctx, q, &docs); err != nil {
			return nil, fmt.Errorf("unfinished firings: %w", err)
		}
		for _, d := range docs {
			out = append(out, d.firing())
		}
	}
	return out, nil
}

type cursorDoc struct {
	ID   string `json:"_id"`
	Date int64  `json:"date"`
}

// Cursor returns how far the engine has read the events (zero before its first run).
func (s *AutomationStore) Cursor(ctx context.Context) (time.Time, error) {
	var d cursorDoc
	err := get(ctx, s.cursor, "rules", &d, errNoCursor)
	if err == errNoCursor {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return docstore.Time(d.Date), nil
}

var errNoCursor = fmt.Errorf("no cursor")

// SetCursor records how far the engine has read the events.
func (s *AutomationStore) SetCursor(ctx context.Context, t time.Time) error {
	if _, err := s.cursor.UpdateOne(ctx, docstore.ID("rules"), docstore.Set("date", docstore.Millis(t)), true); err != nil {
		return fmt.Errorf("set automation cursor: %w", err)
	}
	return nil
}
