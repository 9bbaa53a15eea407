package automation

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// The events a rule fires on.
const (
	EventObservableCreated = "observableCreated" // in a case, in an alert, or by an analyzer's artifact import
	EventAlertCreated      = "alertCreated"
	EventCaseCreated       = "caseCreated"
	EventCaseClosed        = "caseClosed"
	EventTaskClosed        = "taskClosed"
)

// Events lists the events a rule may name.
func Events() []string {
	return []string{EventObservableCreated, EventAlertCreated, EventCaseCreated, EventCaseClosed, EventTaskClosed}
}

// The actions of a rule.
const (
	ActionRunSet       = "runSet"       // run an analyzer set on the object's observables (the observable itself, or those of the alert or case)
	ActionAddTags      = "addTags"      // add tags to the object (observable, alert, case)
	ActionAssign       = "assign"       // give the case or the task an owner
	ActionRunResponder = "runResponder" // run a responder on the object (observable, alert, case, task)
)

// Action is one action of a rule.
type Action struct {
	Type  string
	Set   string   // runSet: the set's id or name
	Tags  []string // addTags
	Owner string   // assign: a login
	// Responder is runResponder's responder, by name (a responder keeps its name when its id changes), on the
	// analysis server AnalysisID ("": the first server of the organisation that offers it).
	Responder  string
	AnalysisID string
}

// Rule is an organisation's automation rule: when Event happens to an object that matches Conditions (the
// search language of the object's lists), it runs Actions, with the permissions of Owner (who last saved it).
type Rule struct {
	ID         string
	Org        string
	Name       string
	Enabled    bool
	Event      string
	Conditions json.RawMessage // a query of the search language; nil: every object
	Actions    []Action
	// MaxDepth stops chains: an observable an analyzer imported from a job a rule made at depth d is at depth
	// d+1, one made by a user or an alert import at 0; the rule fires up to MaxDepth.
	MaxDepth int
	// JobsPerHour is the rule's budget (0: none but the organisation's).
	JobsPerHour int
	// DryRun records what the rule would do without doing it.
	DryRun bool
	// Owner is who last saved the rule: it acts with that user's permissions.
	Owner string
	// Stopped says why the rule stopped by itself (its owner lost a permission it needs); "" while it runs.
	Stopped string
	record.Meta
}

// RuleInput holds a rule's fields as a create or an update gives them.
type RuleInput struct {
	Name        record.Change[string]
	Enabled     record.Change[bool]
	Event       record.Change[string]
	Conditions  record.Change[json.RawMessage]
	Actions     record.Change[[]Action]
	MaxDepth    record.Change[int]
	JobsPerHour record.Change[int]
	DryRun      record.Change[bool]
}

// Firing statuses: what a rule did about one (object, event).
const (
	FiringPending   = "Pending" // being processed (a crash leaves it so; it is resumed)
	FiringFired     = "Fired"
	FiringCondition = "SkippedByCondition"
	FiringDepth     = "SkippedByDepth"
	FiringHeld      = "Held" // over a budget: run when the budget allows, never dropped
	FiringDryRun    = "DryRun"
	FiringFailed    = "Failed"
)

// Firing is the record of one rule about one (object, event): its id is derived from the three, so a rule
// fires at most once per (rule, object, event), also across a crash or a restart.
type Firing struct {
	ID         string
	Org        string
	Rule       string
	RuleName   string
	Event      string
	ObjectType string
	ObjectID   string
	EventID    string
	Cause      string // the event's requestId ("job:<id>" for an analyzer's import)
	Depth      int
	Status     string
	Message    string
	Jobs       []string // the jobs the firing made (or would make, dry-run: their count in Planned)
	Planned    int
	// Responders are the responder runs of the firing's runResponder actions, in the rule's order: recorded
	// before each run is asked for, so that a firing resumed after a crash does not run a responder twice.
	Responders []ResponderRun
	Date       time.Time // when the event happened
	Updated    time.Time
	// fresh: not written yet (the engine writes it with its outcome, or claims it before acting).
	fresh bool
}

// ResponderRun is a firing's run of a responder: written with Since before the connector is asked, then
// with the responder action's id.
type ResponderRun struct {
	Action      int    // the index of the rule's action
	Responder   string // the responder's name
	AnalysisID  string // the server that runs it
	ResponderID string // its id on that server
	Since       time.Time
	ActionID    string // the responder action ("" until the connector made it)
}

// RuleStore persists rules and their firings.
type RuleStore interface {
	// CreateRule fails with ErrRuleExists when the organisation has a rule with that name.
	CreateRule(ctx context.Context, r Rule) error
	// Rule fails with ErrRuleNotFound.
	Rule(ctx context.Context, id string) (Rule, error)
	Rules(ctx context.Context, f search.Node, p search.Page) ([]Rule, int64, error)
	// ActiveRules lists the enabled rules of an organisation on an event; HasActiveRules says whether any
	// organisation has one.
	ActiveRules(ctx context.Context, org, event string) ([]Rule, error)
	HasActiveRules(ctx context.Context) (bool, error)
	// UpdateRule writes every field of r but its id, organisation and creation.
	UpdateRule(ctx context.Context, r Rule, by string, at time.Time) (Rule, error)
	DeleteRule(ctx context.Context, id string) error

	// CreateFiring inserts a firing; it fails with ErrFiringExists for an id that is taken.
	CreateFiring(ctx context.Context, f Firing) error
	// CreateFirings inserts firings in one write, leaving those whose id is taken as they are.
	CreateFirings(ctx context.Context, fs []Firing) error
	// Firing fails with ErrFiringNotFound.
	Firing(ctx context.Context, id string) (Firing, error)
	UpdateFiring(ctx context.Context, f Firing) error
	// Firings lists firings (a rule's history), newest first unless p sorts otherwise.
	Firings(ctx context.Context, f search.Node, p search.Page) ([]Firing, int64, error)
	// Unfinished lists the Pending and Held firings (of every organisation), oldest first, at most limit.
	Unfinished(ctx context.Context, limit int) ([]Firing, error)

	// Cursor and SetCursor keep how far the engine has read the events.
	Cursor(ctx context.Context) (time.Time, error)
	SetCursor(ctx context.Context, t time.Time) error
}

// Errors of rules.
var (
	ErrRuleNotFound   = apperr.New(apperr.NotFound, "Rule not found")
	ErrRuleExists     = apperr.New(apperr.Conflict, "a rule with this name already exists")
	ErrFiringNotFound = apperr.New(apperr.NotFound, "Firing not found")
	ErrFiringExists   = apperr.New(apperr.Conflict, "firing exists")
)

// RuleFields and FiringFields are the allow-lists of rule and history searches.
var (
	RuleFields = search.Fields{
		"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "event": {Path: "event"},
		"enabled": {Path: "enabled", Type: search.Bool}, "dryRun": {Path: "dryRun", Type: search.Bool}, "owner": {Path: "owner"},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	}
	FiringFields = search.Fields{
		"_id": {Path: "_id"}, "id": {Path: "_id"}, "status": {Path: "status"}, "event": {Path: "event"},
		"objectType": {Path: "objectType"}, "objectId": {Path: "objectId"}, "depth": {Path: "depth", Type: search.Number},
		"date": {Path: "date", Type: search.Number},
	}
)

// Limits of a rule.
const (
	MaxActions    = 16
	MaxDepthLimit = 5
	MaxConditions = 16 << 10
)

// fieldsOf is the search allow-list of the objects of an event: conditions are written as searches of those
// objects' lists.
func fieldsOf(event string) search.Fields {
	switch event {
	case EventObservableCreated:
		return cases.ObservableFields
	case EventAlertCreated:
		return cases.AlertFields
	case EventTaskClosed:
		return task.Fields
	default:
		return cases.CaseFields
	}
}

// CreateRule creates a rule in the caller's organisation (manageAutomation); the caller becomes its owner.
func (s *Service) CreateRule(ctx context.Context, c identity.Caller, in RuleInput) (Rule, error) {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return Rule{}, err
	}
	now := s.clock()
	r := Rule{ID: record.NewID(now), Org: c.Org, Enabled: true, MaxDepth: 1, Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	in.Name.Set, in.Event.Set, in.Actions.Set = true, true, true // required
	if err := s.applyRule(ctx, c, &r, in); err != nil {
		return Rule{}, err
	}
	if err := s.rules.CreateRule(ctx, r); err != nil {
		return Rule{}, err
	}
	s.saved.Store(true)
	return r, nil
}

// applyRule validates the input and writes it into r; the caller becomes the owner and the rule runs again.
func (s *Service) applyRule(ctx context.Context, c identity.Caller, r *Rule, in RuleInput) error {
	var p record.Problems
	var changed []string
	p.ChangeText(&changed, "name", in.Name, &r.Name, true, record.MaxShort)
	p.ChangeFlag(nil, "enabled", in.Enabled, &r.Enabled)
	p.ChangeFlag(nil, "dryRun", in.DryRun, &r.DryRun)
	if in.Event.Set {
		r.Event = in.Event.V
		if !slices.Contains(Events(), r.Event) {
			p.Add("event", "one of %v", Events())
		}
	}
	if in.MaxDepth.Set {
		r.MaxDepth = in.MaxDepth.V
		if r.MaxDepth < 0 || r.MaxDepth > MaxDepthLimit {
			p.Add("maxDepth", "an integer from 0 to %d", MaxDepthLimit)
		}
	}
	if in.JobsPerHour.Set {
		r.JobsPerHour = in.JobsPerHour.V
		if r.JobsPerHour < 0 {
			p.Add("jobsPerHour", "0 (no limit but the organisation's) or more")
		}
	}
	if in.Conditions.Set {
		r.Conditions = in.Conditions.V
		if string(r.Conditions) == "null" || len(r.Conditions) == 0 {
			r.Conditions = nil
		}
		if len(r.Conditions) > MaxConditions {
			p.Add("conditions", "at most %d bytes", MaxConditions)
		}
	}
	if r.Conditions != nil && slices.Contains(Events(), r.Event) {
		if _, err := search.ParseJSON(r.Conditions, fieldsOf(r.Event)); err != nil {
			p.Add("conditions", "%s", apperr.SafeMessage(err, "not a query of the search language"))
		}
	}
	if in.Actions.Set {
		r.Actions = in.Actions.V
	}
	s.checkActions(ctx, c, &p, r)
	if err := p.Err(); err != nil {
		return err
	}
	r.Owner, r.Stopped = c.Login, ""
	return nil
}

// checkActions validates a rule's actions against its event.
func (s *Service) checkActions(ctx context.Context, c identity.Caller, p *record.Problems, r *Rule) {
	if len(r.Actions) == 0 || len(r.Actions) > MaxActions {
		p.Add("actions", "1 to %d actions", MaxActions)
		return
	}
	for i := range r.Actions {
		a := &r.Actions[i]
		switch a.Type {
		case ActionRunSet:
			if a.Set == "" {
				p.Add("actions", "runSet needs set")
			} else if set, err := s.Set(ctx, c, a.Set); err != nil {
				p.Add("actions", "unknown analyzer set %q", a.Set)
			} else {
				a.Set = set.ID // by id: a renamed set stays the rule's
			}
		case ActionAddTags:
			if r.Event == EventTaskClosed {
				p.Add("actions", "addTags does not apply to tasks")
			}
			a.Tags = record.CleanTags(p, "actions", a.Tags)
			if len(a.Tags) == 0 {
				p.Add("actions", "addTags needs tags")
			}
		case ActionAssign:
			if r.Event != EventCaseCreated && r.Event != EventCaseClosed && r.Event != EventTaskClosed {
				p.Add("actions", "assign applies to cases and tasks")
			} else if a.Owner == "" {
				p.Add("actions", "assign needs owner")
			}
		case ActionRunResponder:
			switch {
			case a.Responder == "" || len(a.Responder) > record.MaxShort:
				p.Add("actions", "runResponder needs responder (a responder's name, at most %d bytes)", record.MaxShort)
			case a.AnalysisID != "" && !s.analyses.Serves(c, a.AnalysisID):
				p.Add("actions", "unknown analysisId %q", a.AnalysisID)
			}
		default:
			p.Add("actions", "type: one of %v", []string{ActionRunSet, ActionAddTags, ActionAssign, ActionRunResponder})
		}
	}
}

// Rule returns a rule of the caller's organisation. Any member may read the organisation's rules.
func (s *Service) Rule(ctx context.Context, c identity.Caller, id string) (Rule, error) {
	r, err := s.rules.Rule(ctx, id)
	if err == nil && r.Org != c.Org {
		err = ErrRuleNotFound
	}
	return r, err
}

// Rules lists the rules of the caller's organisation.
func (s *Service) Rules(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Rule, int64, error) {
	return s.rules.Rules(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// UpdateRule changes a rule (manageAutomation); the caller becomes its owner, and a stopped rule runs again.
func (s *Service) UpdateRule(ctx context.Context, c identity.Caller, id string, in RuleInput) (Rule, error) {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return Rule{}, err
	}
	r, err := s.Rule(ctx, c, id)
	if err != nil {
		return Rule{}, err
	}
	if err := s.applyRule(ctx, c, &r, in); err != nil {
		return Rule{}, err
	}
	out, err := s.rules.UpdateRule(ctx, r, c.Login, s.clock())
	s.saved.Store(true)
	return out, err
}

// DeleteRule removes a rule (manageAutomation); its history stays readable by its id until purged.
func (s *Service) DeleteRule(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return err
	}
	r, err := s.Rule(ctx, c, id)
	if err != nil {
		return err
	}
	return s.rules.DeleteRule(ctx, r.ID)
}

// History lists the firings of a rule of the caller's organisation, newest first.
func (s *Service) History(ctx context.Context, c identity.Caller, ruleID string, f search.Node, p search.Page) ([]Firing, int64, error) {
	r, err := s.Rule(ctx, c, ruleID)
	if err != nil {
		return nil, 0, err
	}
	scope := search.Node{Op: search.OpAnd, Children: []search.Node{record.InOrg(c.Org), {Op: search.OpEq, Path: "rule", Value: r.ID}}}
	return s.rules.Firings(ctx, record.And(f, scope), p)
}
