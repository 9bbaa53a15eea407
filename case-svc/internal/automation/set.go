// Package automation owns what case-svc does by itself or in bulk (docs/automation.md): analyzer sets (named
// groups of analyzers per data type, by name on an analysis server, per organisation), bulk runs of a set or a
// list of analyzers on the observables of a case or an alert, and the rules that run them on events. It checks
// the callers' permissions and consumes its stores, the case service (to read what it runs on) and the
// connector (which creates and submits the jobs).
package automation

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Analyzer is an analyzer of a set: by name on an analysis server, so the set survives the analyzer's id
// changing on the server, with optional parameters sent with each job.
type Analyzer struct {
	AnalysisID string
	Name       string
	Parameters map[string]any
}

// Set is a named analyzer set of an organisation: for each data type, the analyzers to run.
type Set struct {
	ID          string
	Org         string
	Name        string
	Description string
	// Analyzers maps a data type to its analyzers.
	Analyzers map[string][]Analyzer
	record.Meta
}

// SetInput holds a set's fields as a create or an update gives them; Analyzers, when set, replaces them all.
type SetInput struct {
	Name        record.Change[string]
	Description record.Change[string]
	Analyzers   record.Change[map[string][]Analyzer]
}

// SetStore persists analyzer sets (a unique index holds the organisation's names).
type SetStore interface {
	// CreateSet fails with ErrSetExists when the organisation has a set with that name.
	CreateSet(ctx context.Context, s Set) error
	// Set and SetByName fail with ErrSetNotFound.
	Set(ctx context.Context, id string) (Set, error)
	SetByName(ctx context.Context, org, name string) (Set, error)
	Sets(ctx context.Context, f search.Node, p search.Page) ([]Set, int64, error)
	// UpdateSet writes the name, description and analyzers; it fails with ErrSetExists or ErrSetNotFound.
	UpdateSet(ctx context.Context, s Set, by string, at time.Time) (Set, error)
	DeleteSet(ctx context.Context, id string) error
}

// Errors of analyzer sets.
var (
	ErrSetNotFound = apperr.New(apperr.NotFound, "AnalyzerSet not found")
	ErrSetExists   = apperr.New(apperr.Conflict, "an analyzer set with this name already exists")
)

// SetFields is the allow-list of set searches.
var SetFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "description": {Path: "description"},
	"dataType":  {Path: PathSetDataTypes},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
	"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
}

// PathSetDataTypes is the storage path of the data types a set has analyzers for.
const PathSetDataTypes = "dataTypes"

// Limits of a set.
const (
	MaxAnalyzersPerType = 50
	MaxParameters       = 16 << 10 // bytes of JSON per analyzer
)

// Service is automation's rules. Every method takes the caller and works in its organisation: another
// organisation's sets and rules are not found (404).
type Service struct {
	sets     SetStore
	rules    RuleStore
	cases    *cases.Service
	tasks    *task.Service
	analyses *connector.Analyses
	owners   Owners
	source   EventSource
	matcher  ObjectMatcher
	engine   EngineConfig
	wake     chan struct{}
	early    atomic.Int64 // the earliest date (Unix ms) of the events recorded since the engine's last read
	saved    atomic.Bool  // a rule was saved since the engine last asked whether any is enabled
	cache    engineCache
	objects  atomic.Pointer[ObjectFunc] // the API's rendering of responders' objects (SetObjects)
	now      func() time.Time
}

// Stores are what the service persists in and reads.
type Stores struct {
	Sets  SetStore
	Rules RuleStore
	// Events is the durable record of events the rules fire on (nil: rules never fire).
	Events EventSource
	// Objects evaluates the rules' conditions on the events' objects (nil: rules never fire).
	Objects ObjectMatcher
}

// Services are the domain services automation works through: cases (the objects runs work on, and their
// changes), tasks, the connector (which creates and submits the jobs) and the owners of rules.
type Services struct {
	Cases    *cases.Service
	Tasks    *task.Service
	Analyses *connector.Analyses
	Owners   Owners
}

// NewService returns the automation service; Run fires the rules.
func NewService(st Stores, sv Services, cfg EngineConfig, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	cfg.defaults()
	s := &Service{sets: st.Sets, rules: st.Rules, source: st.Events, matcher: st.Objects, cases: sv.Cases, tasks: sv.Tasks,
		analyses: sv.Analyses, owners: sv.Owners, engine: cfg, wake: make(chan struct{}, 1), now: now}
	s.early.Store(math.MaxInt64)
	return s
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// CreateSet creates an analyzer set in the caller's organisation (manageAutomation).
func (s *Service) CreateSet(ctx context.Context, c identity.Caller, in SetInput) (Set, error) {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return Set{}, err
	}
	now := s.clock()
	set := Set{ID: record.NewID(now), Org: c.Org, Analyzers: map[string][]Analyzer{}, Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	in.Name.Set = true // required: an absent name is checked like an empty one
	if err := s.apply(c, &set, in); err != nil {
		return Set{}, err
	}
	if err := s.sets.CreateSet(ctx, set); err != nil {
		return Set{}, err
	}
	return set, nil
}

// apply validates the input and writes it into set.
func (s *Service) apply(c identity.Caller, set *Set, in SetInput) error {
	var p record.Problems
	var changed []string
	p.ChangeText(&changed, "name", in.Name, &set.Name, true, record.MaxShort)
	if len(set.Name) > 0 && set.Name[0] == '~' {
		p.Add("name", "must not start with ~")
	}
	p.ChangeText(&changed, "description", in.Description, &set.Description, false, record.MaxDescription)
	if in.Analyzers.Set {
		set.Analyzers = s.checkAnalyzers(c, &p, "analyzers", in.Analyzers.V)
	}
	return p.Err()
}

// checkAnalyzers validates a set's analyzers per data type: known data types, configured servers, names,
// parameters that are small JSON objects.
func (s *Service) checkAnalyzers(c identity.Caller, p *record.Problems, field string, m map[string][]Analyzer) map[string][]Analyzer {
	out := map[string][]Analyzer{}
	types := cases.ObservableTypes()
	for dt, as := range m {
		name := field + "." + dt
		if !slices.Contains(types, dt) {
			p.Add(name, "unknown data type (one of %v)", types)
			continue
		}
		if len(as) > MaxAnalyzersPerType {
			p.Add(name, "at most %d analyzers", MaxAnalyzersPerType)
			continue
		}
		clean := s.checkList(c, p, name, as)
		if len(clean) > 0 {
			out[dt] = clean
		}
	}
	return out
}

// checkList validates a list of analyzers (a set's for one data type, or a run's).
func (s *Service) checkList(c identity.Caller, p *record.Problems, name string, as []Analyzer) []Analyzer {
	var clean []Analyzer
	seen := map[[2]string]bool{}
	for _, a := range as {
		switch {
		case a.AnalysisID == "":
			p.Add(name, "analysisId is required")
		case !s.analyses.Serves(c, a.AnalysisID):
			p.Add(name, "unknown analysisId %q", a.AnalysisID)
		case a.Name == "" || len(a.Name) > record.MaxShort:
			p.Add(name, "name is required (at most %d bytes)", record.MaxShort)
		default:
			if b, err := json.Marshal(a.Parameters); err != nil || len(b) > MaxParameters {
				p.Add(name, "parameters: a JSON object of at most %d bytes", MaxParameters)
				continue
			}
			k := [2]string{a.AnalysisID, a.Name}
			if !seen[k] {
				seen[k] = true
				clean = append(clean, a)
			}
		}
	}
	return clean
}

// Set returns an analyzer set of the caller's organisation by id ("~…") or name. Any member may read the
// organisation's sets (running one needs manageAnalyse).
func (s *Service) Set(ctx context.Context, c identity.Caller, idOrName string) (Set, error) {
	var set Set
	var err error
	if len(idOrName) > 0 && idOrName[0] == '~' {
		set, err = s.sets.Set(ctx, idOrName)
		if err == nil && set.Org != c.Org {
			err = ErrSetNotFound
		}
	} else {
		set, err = s.sets.SetByName(ctx, c.Org, idOrName)
	}
	return set, err
}

// Sets lists the analyzer sets of the caller's organisation.
func (s *Service) Sets(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Set, int64, error) {
	return s.sets.Sets(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// UpdateSet changes an analyzer set (manageAutomation).
func (s *Service) UpdateSet(ctx context.Context, c identity.Caller, id string, in SetInput) (Set, error) {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return Set{}, err
	}
	set, err := s.Set(ctx, c, id)
	if err != nil {
		return Set{}, err
	}
	if err := s.apply(c, &set, in); err != nil {
		return Set{}, err
	}
	return s.sets.UpdateSet(ctx, set, c.Login, s.clock())
}

// DeleteSet removes an analyzer set (manageAutomation).
func (s *Service) DeleteSet(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageAutomation); err != nil {
		return err
	}
	set, err := s.Set(ctx, c, id)
	if err != nil {
		return err
	}
	return s.sets.DeleteSet(ctx, set.ID)
}

// Run is a bulk run: a set (by id or name) or a list of analyzers, on the observables of a case or of an
// alert (all of them, or those named).
type Run struct {
	CaseID, AlertID string
	ObservableIDs   []string
	Set             string
	Analyzers       []Analyzer
	// Key makes the run idempotent (the request's Idempotency-Key); Force ignores recent equal jobs.
	Key   string
	Force bool
}

// MaxRunObservables bounds the observables of one run.
const MaxRunObservables = 10000

// RunAnalyzers runs a set or a list of analyzers on the observables of a case or an alert (manageAnalyse):
// one job per (observable, analyzer), created once (connector.RunBulk).
func (s *Service) RunAnalyzers(ctx context.Context, c identity.Caller, r Run) (connector.BulkResult, error) {
	if err := c.Require(identity.ManageAnalyse); err != nil {
		return connector.BulkResult{}, err
	}
	var p record.Problems
	switch {
	case (r.CaseID == "") == (r.AlertID == ""):
		p.Add("caseId", "exactly one of caseId and alertId")
	case (r.Set == "") == (len(r.Analyzers) == 0):
		p.Add("setId", "exactly one of setId and analyzers")
	}
	if len(r.Key) > record.MaxShort {
		p.Add("Idempotency-Key", "at most %d bytes", record.MaxShort)
	}
	list := s.checkList(c, &p, "analyzers", r.Analyzers)
	if err := p.Err(); err != nil {
		return connector.BulkResult{}, err
	}
	var plan func(string) []connector.Planned
	if r.Set != "" {
		set, err := s.Set(ctx, c, r.Set)
		if err != nil {
			return connector.BulkResult{}, err
		}
		plan = func(dt string) []connector.Planned { return planned(set.Analyzers[dt]) }
	} else {
		all := planned(list)
		plan = func(string) []connector.Planned { return all }
	}
	parent, pap, err := s.parent(ctx, c, r.CaseID, r.AlertID)
	if err != nil {
		return connector.BulkResult{}, err
	}
	obs, err := s.observables(ctx, c, parent, r.ObservableIDs)
	if err != nil {
		return connector.BulkResult{}, err
	}
	return s.analyses.RunBulk(ctx, c, pap, obs, plan, connector.BulkOptions{Key: r.Key, Force: r.Force})
}

func planned(as []Analyzer) []connector.Planned {
	out := make([]connector.Planned, len(as))
	for i, a := range as {
		out[i] = connector.Planned{AnalysisID: a.AnalysisID, Analyzer: a.Name, Parameters: a.Parameters}
	}
	return out
}

// parent finds the case or alert of a run in the caller's organisation and returns its PAP.
func (s *Service) parent(ctx context.Context, c identity.Caller, caseID, alertID string) (cases.Parent, int, error) {
	if caseID != "" {
		cs, err := s.cases.Case(ctx, c, caseID)
		if err != nil {
			return cases.Parent{}, 0, err
		}
		return cases.Parent{Case: cs.ID}, cs.PAP, nil
	}
	al, err := s.cases.Alert(ctx, c, alertID)
	if err != nil {
		return cases.Parent{}, 0, err
	}
	return cases.Parent{Alert: al.ID}, al.PAP, nil
}

// observables returns the parent's observables, or those of ids (each must be the parent's).
func (s *Service) observables(ctx context.Context, c identity.Caller, parent cases.Parent, ids []string) ([]cases.Observable, error) {
	f := search.Node{Op: search.OpAll}
	if len(ids) > 0 {
		if len(ids) > MaxRunObservables {
			return nil, record.FieldError("observableIds", "too many")
		}
		vals := make([]any, len(ids))
		for i, id := range ids {
			vals[i] = id
		}
		f = search.Node{Op: search.OpIn, Path: "_id", Values: vals}
	}
	obs, total, err := s.cases.Observables(ctx, c, parent, f, search.Page{Limit: MaxRunObservables})
	if err != nil {
		return nil, err
	}
	if total > MaxRunObservables {
		return nil, apperr.Errorf(apperr.BadRequest, "%d observables; a run takes at most %d (select them with observableIds)", total, MaxRunObservables)
	}
	if len(ids) > 0 {
		found := map[string]bool{}
		for _, o := range obs {
			found[o.ID] = true
		}
		var p record.Problems
		for _, id := range ids {
			if !found[id] {
				p.Add("observableIds", "%s is not an observable of the %s", id, map[bool]string{true: "case", false: "alert"}[parent.Case != ""])
			}
		}
		if err := p.Err(); err != nil {
			return nil, err
		}
	}
	return obs, nil
}
