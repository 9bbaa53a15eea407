package automation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/event"
	"github.com/openir/platform/pkg/search"
)

// EventSource is the durable record of case-svc's events (the audit trail) the engine reads rules' events
// from.
type EventSource interface {
	// EventsSince returns the released events dated at or after since, oldest first, at most limit.
	EventsSince(ctx context.Context, since time.Time, limit int) ([]event.Event, error)
}

// Owners gives the caller a rule acts as: its owner in the rule's organisation, with the permissions the
// owner holds now (an error when the owner is locked, gone, or no longer a member).
type Owners interface {
	BySession(ctx context.Context, login string) (identity.User, int64, error)
	CallerOf(u identity.User, org string) (identity.Caller, error)
}

// EngineConfig tunes the rules' engine.
type EngineConfig struct {
	Poll     time.Duration // how often the events are read (default 200 ms)
	Lookback time.Duration // how far before the cursor each read starts, for events committed late (default 2 s)
	Retry    time.Duration // how often held and interrupted firings are tried again (default 1 min)
	// OrgJobsPerHour is every organisation's budget of jobs made by rules (default 1000; automation.org_jobs_per_hour).
	OrgJobsPerHour int
	Log            *slog.Logger
}

func (c *EngineConfig) defaults() {
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Lookback <= 0 {
		c.Lookback = 2 * time.Second
	}
	if c.Retry <= 0 {
		c.Retry = time.Minute
	}
	if c.OrgJobsPerHour <= 0 {
		c.OrgJobsPerHour = 1000
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// eventOf says which rule event an audit event is, and the object type of its firing ("" when none).
func eventOf(e event.Event) string {
	switch {
	case e.ObjectType == "case_artifact" && e.Operation == event.Creation:
		return EventObservableCreated
	case e.ObjectType == "alert" && e.Operation == event.Creation:
		return EventAlertCreated
	case e.ObjectType == "case" && e.Operation == event.Creation:
		return EventCaseCreated
	case e.ObjectType == "case" && e.Operation == event.Update:
		if st, ok := e.Details["status"].(string); ok && (st == cases.CaseResolved || st == cases.CaseDuplicated) {
			return EventCaseClosed
		}
	case e.ObjectType == "case_task" && e.Operation == event.Update:
		if st, ok := e.Details["status"].(string); ok && st == task.Completed {
			return EventTaskClosed
		}
	}
	return ""
}

// FiringID is the id of the firing of a rule about an (object, event): derived from the three, so that a
// rule fires at most once per (rule, object, event).
func FiringID(rule, objectID, event string) string {
	h := sha256.Sum256([]byte(rule + "\x00" + objectID + "\x00" + event))
	return "~f" + hex.EncodeToString(h[:15])
}

// Run reads the events from the durable record and fires the rules until ctx ends: from where the last run
// stopped (the cursor, stored), minus the look-back; every Retry, it also goes over the held firings and those
// a crash interrupted. Each (rule, object, event) has one firing record, written before any action, and the
// actions are idempotent (a rule's jobs carry an idempotency key derived from the firing), so a firing resumed
// after a crash does not act twice.
func (s *Service) Run(ctx context.Context) {
	if s.source == nil {
		return
	}
	cfg := s.engine
	cursor, err := s.rules.Cursor(ctx)
	if err != nil || cursor.IsZero() {
		cursor = s.now() // rules do not fire on the past
		if err := s.rules.SetCursor(ctx, cursor); err != nil && ctx.Err() == nil {
			cfg.Log.Error("automation cursor", "err", err)
		}
	}
	saved := cursor
	var (
		active  bool
		checked time.Time
	)
	s.saved.Store(true)
	s.resume(ctx)
	seen := map[string]time.Time{} // events handled in the look-back window
	poll := time.NewTicker(cfg.Poll)
	defer poll.Stop()
	retry := time.NewTicker(cfg.Retry)
	defer retry.Stop()
	var swept time.Time // the last read from cursor − Lookback (once a second; the others start at the cursor)
	const batch = 500
	for {
		// Without an enabled rule there is nothing to fire: the events are not read (the cursor moves on). The
		// store is asked at most once a second (a rule saved here is seen at once: saved is set).
		if s.saved.Swap(false) || time.Since(checked) > time.Second {
			checked = time.Now()
			s.cache.clear()
			if active, err = s.rules.HasActiveRules(ctx); err != nil && ctx.Err() == nil {
				cfg.Log.Error("automation: rules", "err", err)
				active = true
			}
		}
		if !active {
			cursor = s.now()
			if cursor.Sub(saved) > cfg.Retry {
				if err := s.rules.SetCursor(ctx, cursor); err != nil && ctx.Err() == nil {
					cfg.Log.Error("automation cursor", "err", err)
				}
				saved = cursor
			}
		} else {
			since := cursor
			if time.Since(swept) > time.Second {
				since, swept = cursor.Add(-cfg.Lookback), time.Now()
			}
			for {
				evs, err := s.source.EventsSince(ctx, since, batch)
				if err != nil {
					if ctx.Err() == nil {
						cfg.Log.Error("automation: read events", "err", err)
					}
					break
				}
				last, failed := cursor, false
				for _, e := range evs {
					if _, done := seen[e.ID]; !done {
						if ev := eventOf(e); ev != "" {
							if err := s.handle(ctx, e, ev); err != nil {
								if ctx.Err() != nil {
									return
								}
								cfg.Log.Error("automation: event", "event", e.ID, "err", err)
								failed = true // read again from the cursor: firings are idempotent
								break
							}
						}
						seen[e.ID] = e.Date
					}
					if e.Date.After(last) {
						last = e.Date
					}
				}
				if last.After(cursor) {
					cursor = last
				}
				// The stored cursor may lag by a second: after a restart the events of that second are read
				// again, and their firings, already written, are left as they are.
				if cursor.Sub(saved) > time.Second || (cursor.After(saved) && len(evs) < batch && time.Since(swept) > time.Second) {
					if err := s.rules.SetCursor(ctx, cursor); err != nil && ctx.Err() == nil {
						cfg.Log.Error("automation cursor", "err", err)
					}
					saved = cursor
				}
				if failed || len(evs) < batch {
					break
				}
				next := evs[len(evs)-1].Date // the next page (the same millisecond again: seen skips it)
				if !next.After(since) {
					next = since.Add(time.Millisecond)
				}
				since = next
			}
			for id, d := range seen {
				if d.Before(cursor.Add(-cfg.Lookback)) {
					delete(seen, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-s.wake:
		case <-retry.C:
			s.resume(ctx)
		}
	}
}

// Wake makes the engine read the events now (the audit trail calls it after recording some); it never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// resume goes over the firings a crash left Pending and the Held ones.
func (s *Service) resume(ctx context.Context) {
	fs, err := s.rules.Unfinished(ctx, 1000)
	if err != nil {
		if ctx.Err() == nil {
			s.engine.Log.Error("automation: unfinished firings", "err", err)
		}
		return
	}
	for _, f := range fs {
		if err := s.process(ctx, f); err != nil && ctx.Err() == nil {
			s.engine.Log.Error("automation: resume firing", "firing", f.ID, "err", err)
		}
	}
}

// handle makes the firings of the active rules of an event's organisation, and processes them.
func (s *Service) handle(ctx context.Context, e event.Event, ev string) error {
	rules, err := s.cache.activeRules(ctx, s.rules, e.Org, ev)
	if err != nil {
		return err
	}
	// The firings of the rules that do not apply (condition, depth) are written together, once their outcome
	// is known; one that acts is claimed (written Pending) before acting.
	var done []Firing
	callers := map[string]identity.Caller{}
	for _, r := range rules {
		f := Firing{ID: FiringID(r.ID, e.ObjectID, ev), Org: e.Org, Rule: r.ID, RuleName: r.Name, Event: ev,
			ObjectType: e.ObjectType, ObjectID: e.ObjectID, EventID: e.ID, Cause: e.RequestID, Status: FiringPending,
			Date: e.Date, Updated: s.clock(), fresh: true}
		f, c, applies, err := s.evaluate(ctx, f, r, callers)
		if err != nil {
			return err
		}
		if !applies {
			done = append(done, f)
			continue
		}
		if err := s.act(ctx, f, r, c); err != nil {
			return err
		}
	}
	if len(done) > 0 {
		// A firing that exists already (an event read again) keeps its outcome.
		return s.rules.CreateFirings(ctx, done)
	}
	return nil
}

// claim writes a fresh firing as Pending before its rule acts. It returns false when the firing exists and
// is no longer Pending (this rule already acted, or not, on this object and event); an existing Pending one
// (a crash's) is taken over.
func (s *Service) claim(ctx context.Context, f *Firing) (bool, error) {
	if !f.fresh {
		return true, nil
	}
	err := s.rules.CreateFiring(ctx, *f)
	if errors.Is(err, ErrFiringExists) {
		old, err := s.rules.Firing(ctx, f.ID)
		if err != nil {
			return false, err
		}
		if old.Status != FiringPending {
			return false, nil
		}
		old.Depth = f.Depth
		*f = old
		return true, nil
	}
	if err != nil {
		return false, err
	}
	f.fresh = false
	return true, nil
}

// process decides and does what a Pending or Held firing's rule does, and records it. An error is a store
// failure: the firing stays as it was, to be processed again.
func (s *Service) process(ctx context.Context, f Firing) error {
	r, err := s.rules.Rule(ctx, f.Rule)
	if errors.Is(err, ErrRuleNotFound) {
		return s.finish(ctx, f, FiringFailed, "the rule was deleted")
	}
	if err != nil {
		return err
	}
	return s.processRule(ctx, f, r)
}

// processRule is process with the firing's rule at hand.
func (s *Service) processRule(ctx context.Context, f Firing, r Rule) error {
	f, c, applies, err := s.evaluate(ctx, f, r, nil)
	if err != nil {
		return err
	}
	if !applies {
		return s.finish(ctx, f, f.Status, f.Message)
	}
	return s.act(ctx, f, r, c)
}

// evaluate decides whether a rule applies to a firing's object, without side effects but for a rule whose
// owner cannot act (it is stopped): it returns the firing with its final status when the rule does nothing
// (over its depth, condition not met, owner unable: Failed), or the owner's caller when it applies. callers
// shares the owners' callers among the rules of one event (nil: none shared).
func (s *Service) evaluate(ctx context.Context, f Firing, r Rule, callers map[string]identity.Caller) (Firing, identity.Caller, bool, error) {
	var err error
	if f.Status == FiringPending {
		if f.Depth, err = s.depth(ctx, f); err != nil {
			return f, identity.Caller{}, false, err
		}
	}
	if f.Depth > r.MaxDepth {
		f.Status, f.Message = FiringDepth, fmt.Sprintf("depth %d is over the rule's %d", f.Depth, r.MaxDepth)
		return f, identity.Caller{}, false, nil
	}
	c, ok := callers[r.Owner]
	if !ok {
		if c, err = ownerCaller(ctx, s.owners, r.Owner, r.Org); err == nil && callers != nil {
			callers[r.Owner] = c
		}
	}
	if err == nil {
		err = lacks(c, r)
	}
	if err != nil {
		if err := s.stopRule(ctx, r, err.Error()); err != nil {
			return f, identity.Caller{}, false, err
		}
		f.Status, f.Message = FiringFailed, err.Error()+"; the rule is stopped"
		return f, identity.Caller{}, false, nil
	}
	matched, err := s.matches(ctx, c, r, f)
	if err != nil {
		return f, identity.Caller{}, false, err
	}
	if !matched {
		f.Status, f.Message = FiringCondition, ""
		return f, identity.Caller{}, false, nil
	}
	return f, c, true, nil
}

// act does what a rule that applies does, as its owner c: claims the firing, weighs its jobs against the
// budgets, and runs its actions (or records them, dry-run).
func (s *Service) act(ctx context.Context, f Firing, r Rule, c identity.Caller) error {
	// The rule's changes name it: their audit events carry it as their requestId.
	actx := record.WithCause(ctx, "rule:"+r.ID)
	if ok, err := s.claim(ctx, &f); err != nil || !ok {
		return err
	}
	// What the analyzer sets would create, to weigh it against the budgets.
	planned, err := s.runSets(actx, c, r, f, true)
	if err != nil {
		return s.failed(ctx, r, f, err)
	}
	f.Planned = len(planned.Created)
	if f.Planned > 0 && !r.DryRun {
		if msg, err := s.overBudget(ctx, r, f.Planned); err != nil {
			return err
		} else if msg != "" {
			return s.finish(ctx, f, FiringHeld, msg)
		}
	}
	if r.DryRun {
		return s.finish(ctx, f, FiringDryRun, describe(r, planned))
	}
	res, err := s.runSets(actx, c, r, f, false)
	if err != nil {
		return s.failed(ctx, r, f, err)
	}
	f.Jobs = nil // a resumed firing lists again the jobs it made before
	for _, j := range res.Created {
		f.Jobs = append(f.Jobs, j.ID)
	}
	for _, sk := range res.Skipped {
		if sk.Reason == connector.SkipDone { // made by this firing before a crash interrupted it
			f.Jobs = append(f.Jobs, sk.JobID)
		}
	}
	for i, a := range r.Actions {
		var err error
		if a.Type == ActionRunResponder {
			err = s.respond(ctx, actx, c, &f, i, a)
			if apperr.Is(err, apperr.Unavailable) && ctx.Err() == nil {
				return s.wait(ctx, f, apperrMessage(err))
			}
		} else {
			err = s.doAction(actx, c, a, f)
		}
		if err != nil {
			return s.failed(ctx, r, f, err)
		}
	}
	msg := fmt.Sprintf("%d jobs", len(f.Jobs))
	if n := len(f.Responders); n > 0 {
		msg += fmt.Sprintf(", %d responder actions", n)
	}
	return s.finish(ctx, f, FiringFired, msg)
}

// wait leaves a firing Pending, saying why: it is tried again with the interrupted ones (every Retry).
func (s *Service) wait(ctx context.Context, f Firing, why string) error {
	f.Message, f.Updated = "waiting: "+why+"; tried again every "+s.engine.Retry.String(), s.clock()
	s.engine.Log.Warn("automation: firing waits", "rule", f.Rule, "firing", f.ID, "org", f.Org, "why", why)
	return s.rules.UpdateFiring(ctx, f)
}

// describe says what a dry-run rule would have done.
func describe(r Rule, planned connector.BulkResult) string {
	var parts []string
	if n := len(planned.Created); n > 0 || slices.ContainsFunc(r.Actions, func(a Action) bool { return a.Type == ActionRunSet }) {
		var names []string
		for _, j := range planned.Created {
			names = append(names, j.AnalyzerName+"@"+j.AnalysisID+" on "+j.ObservableID)
		}
		parts = append(parts, fmt.Sprintf("would create %d jobs %v", n, names))
	}
	for _, a := range r.Actions {
		switch a.Type {
		case ActionAddTags:
			parts = append(parts, fmt.Sprintf("would add tags %v", a.Tags))
		case ActionAssign:
			parts = append(parts, "would assign to "+a.Owner)
		case ActionRunResponder:
			parts = append(parts, "would run the responder "+a.Responder)
		}
	}
	return strings.Join(parts, "; ")
}

// depth is the chain depth of a firing's object: an observable an analyzer imported is one deeper than the
// firing that made the job (0 when a user made it).
func (s *Service) depth(ctx context.Context, f Firing) (int, error) {
	jobID, ok := strings.CutPrefix(f.Cause, "job:")
	if !ok || f.Event != EventObservableCreated {
		return 0, nil
	}
	j, err := s.analyses.JobRecord(ctx, jobID)
	if errors.Is(err, connector.ErrJobNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	if j.Firing == "" {
		return 1, nil
	}
	parent, err := s.rules.Firing(ctx, j.Firing)
	if errors.Is(err, ErrFiringNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return parent.Depth + 1, nil
}

// lacks names the permission a rule's actions need that its owner's caller does not hold (nil when none).
func lacks(c identity.Caller, r Rule) error {
	for _, p := range needs(r) {
		if !c.Can(p) {
			return fmt.Errorf("the rule's owner %s lost the permission %s", r.Owner, p)
		}
	}
	return nil
}

// ownerCaller builds the caller of a rule's owner in an organisation from the identity store.
func ownerCaller(ctx context.Context, owners Owners, login, org string) (identity.Caller, error) {
	u, _, err := owners.BySession(ctx, login)
	if err != nil {
		return identity.Caller{}, fmt.Errorf("the rule's owner %s cannot act (locked or removed)", login)
	}
	c, err := owners.CallerOf(u, org)
	if err != nil {
		return identity.Caller{}, fmt.Errorf("the rule's owner %s is no longer a member of %s", login, org)
	}
	return c, nil
}

// engineCache keeps, for a second, what every event of a burst would read again: the enabled rules of an
// (organisation, event). A rule saved in this process (or stopped by the engine) clears it; another replica's
// change is seen within the second.
type engineCache struct {
	mu    sync.Mutex
	rules map[string]cachedRules
}

type cachedRules struct {
	rules []Rule
	at    time.Time
}

const cacheTTL = time.Second

func (c *engineCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules = nil
}

func (c *engineCache) activeRules(ctx context.Context, st RuleStore, org, event string) ([]Rule, error) {
	k := org + "\x00" + event
	c.mu.Lock()
	e, ok := c.rules[k]
	c.mu.Unlock()
	if ok && time.Since(e.at) < cacheTTL {
		return e.rules, nil
	}
	rs, err := st.ActiveRules(ctx, org, event)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.rules == nil {
		c.rules = map[string]cachedRules{}
	}
	c.rules[k] = cachedRules{rules: rs, at: time.Now()}
	c.mu.Unlock()
	return rs, nil
}

// needs lists the permissions a rule's actions need.
func needs(r Rule) []identity.Permission {
	var out []identity.Permission
	add := func(p identity.Permission) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, a := range r.Actions {
		switch a.Type {
		case ActionRunSet:
			add(identity.ManageAnalyse)
		case ActionAddTags:
			switch r.Event {
			case EventObservableCreated:
				add(identity.ManageObservable)
			case EventAlertCreated:
				add(identity.ManageAlert)
			default:
				add(identity.ManageCase)
			}
		case ActionAssign:
			if r.Event == EventTaskClosed {
				add(identity.ManageTask)
			} else {
				add(identity.ManageCase)
			}
		case ActionRunResponder:
			add(identity.ManageAction)
		}
	}
	return out
}

// matches reports whether the firing's object matches the rule's conditions: the conditions, a query of the
// search language of the object's list, are run on that list with the object's id.
func (s *Service) matches(ctx context.Context, c identity.Caller, r Rule, f Firing) (bool, error) {
	cond := search.Node{Op: search.OpAll}
	if r.Conditions != nil {
		var err error
		if cond, err = search.ParseJSON(r.Conditions, fieldsOf(r.Event)); err != nil {
			return false, nil // saved rules parse; a field dropped since matches nothing
		}
	}
	f1 := search.Node{Op: search.OpAnd, Children: []search.Node{cond, {Op: search.OpEq, Path: "_id", Value: f.ObjectID}}}
	one := search.Page{Limit: 1}
	var n int
	var err error
	switch r.Event {
	case EventObservableCreated:
		var l []cases.Observable
		l, _, err = s.cases.Observables(ctx, c, cases.Parent{}, f1, one)
		n = len(l)
	case EventAlertCreated:
		var l []cases.Alert
		l, _, err = s.cases.Alerts(ctx, c, f1, one)
		n = len(l)
	case EventTaskClosed:
		var l []task.Task
		l, _, err = s.tasks.List(ctx, c, "", f1, one)
		n = len(l)
	default:
		var l []cases.Case
		l, _, err = s.cases.Cases(ctx, c, f1, one)
		n = len(l)
	}
	return n > 0, err
}

// runSets runs (or plans, dry) the rule's analyzer sets on the firing's observables: the observable itself,
// or those of the alert, the case, or the task's case. The jobs' ids derive from the firing (the run's
// idempotency key), so a resumed firing makes no job twice.
func (s *Service) runSets(ctx context.Context, c identity.Caller, r Rule, f Firing, dry bool) (connector.BulkResult, error) {
	var out connector.BulkResult
	for i, a := range r.Actions {
		if a.Type != ActionRunSet {
			continue
		}
		set, err := s.Set(ctx, c, a.Set)
		if err != nil {
			return out, fmt.Errorf("analyzer set %s: %w", a.Set, err)
		}
		_, pap, obs, err := s.objectObservables(ctx, c, f)
		if err != nil {
			return out, err
		}
		plan := func(dt string) []connector.Planned { return planned(set.Analyzers[dt]) }
		res, err := s.analyses.RunBulk(ctx, c, pap, obs, plan, connector.BulkOptions{Key: fmt.Sprintf("%s/%d", f.ID, i),
			Rule: r.ID, Firing: f.ID, DryRun: dry})
		if err != nil {
			return out, err
		}
		out.Created = append(out.Created, res.Created...)
		out.Skipped = append(out.Skipped, res.Skipped...)
	}
	return out, nil
}

// objectObservables returns the observables a firing's sets run on, with their parent's PAP.
func (s *Service) objectObservables(ctx context.Context, c identity.Caller, f Firing) (cases.Parent, int, []cases.Observable, error) {
	switch f.Event {
	case EventObservableCreated:
		o, err := s.cases.Observable(ctx, c, f.ObjectID)
		if err != nil {
			return cases.Parent{}, 0, nil, err
		}
		parent, pap, err := s.parent(ctx, c, o.CaseID, o.AlertID)
		return parent, pap, []cases.Observable{o}, err
	case EventAlertCreated:
		parent, pap, err := s.parent(ctx, c, "", f.ObjectID)
		if err != nil {
			return parent, 0, nil, err
		}
		obs, err := s.observables(ctx, c, parent, nil)
		return parent, pap, obs, err
	case EventTaskClosed:
		t, err := s.tasks.Task(ctx, c, f.ObjectID)
		if err != nil {
			return cases.Parent{}, 0, nil, err
		}
		parent, pap, err := s.parent(ctx, c, t.CaseID, "")
		if err != nil {
			return parent, 0, nil, err
		}
		obs, err := s.observables(ctx, c, parent, nil)
		return parent, pap, obs, err
	default:
		parent, pap, err := s.parent(ctx, c, f.ObjectID, "")
		if err != nil {
			return parent, 0, nil, err
		}
		obs, err := s.observables(ctx, c, parent, nil)
		return parent, pap, obs, err
	}
}

// doAction does one action other than running a set (tags, owner); both are idempotent.
func (s *Service) doAction(ctx context.Context, c identity.Caller, a Action, f Firing) error {
	switch a.Type {
	case ActionAddTags:
		switch f.Event {
		case EventObservableCreated:
			o, err := s.cases.Observable(ctx, c, f.ObjectID)
			if err != nil {
				return err
			}
			if tags, changed := union(o.Tags, a.Tags); changed {
				_, err = s.cases.UpdateObservable(ctx, c, o.ID, cases.ObservableUpdate{Tags: record.Change[[]string]{Set: true, V: tags}})
			}
			return err
		case EventAlertCreated:
			al, err := s.cases.Alert(ctx, c, f.ObjectID)
			if err != nil {
				return err
			}
			if tags, changed := union(al.Tags, a.Tags); changed {
				_, err = s.cases.UpdateAlert(ctx, c, al.ID, cases.AlertUpdate{Tags: record.Change[[]string]{Set: true, V: tags}})
			}
			return err
		default:
			cs, err := s.cases.Case(ctx, c, f.ObjectID)
			if err != nil {
				return err
			}
			if tags, changed := union(cs.Tags, a.Tags); changed {
				_, err = s.cases.UpdateCase(ctx, c, cs.ID, cases.CaseUpdate{Tags: record.Change[[]string]{Set: true, V: tags}})
			}
			return err
		}
	case ActionAssign:
		if f.Event == EventTaskClosed {
			_, err := s.tasks.Update(ctx, c, f.ObjectID, task.Update{Owner: record.Change[string]{Set: true, V: a.Owner}})
			return err
		}
		_, err := s.cases.UpdateCase(ctx, c, f.ObjectID, cases.CaseUpdate{Owner: record.Change[string]{Set: true, V: a.Owner}})
		return err
	}
	return nil
}

// union adds tags to have, keeping the order; changed is false when it had them all.
func union(have, add []string) ([]string, bool) {
	out := slices.Clone(have)
	for _, t := range add {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, len(out) != len(have)
}

// overBudget says why running n more jobs now would exceed the rule's or the organisation's budget ("" when
// it would not).
func (s *Service) overBudget(ctx context.Context, r Rule, n int) (string, error) {
	since := s.now().Add(-time.Hour)
	if r.JobsPerHour > 0 {
		used, err := s.analyses.CountRuleJobs(ctx, r.Org, r.ID, since)
		if err != nil {
			return "", err
		}
		if used+int64(n) > int64(r.JobsPerHour) {
			return fmt.Sprintf("held by the rule's budget: %d jobs in the last hour, %d more would exceed %d per hour", used, n, r.JobsPerHour), nil
		}
	}
	used, err := s.analyses.CountRuleJobs(ctx, r.Org, "", since)
	if err != nil {
		return "", err
	}
	if used+int64(n) > int64(s.engine.OrgJobsPerHour) {
		return fmt.Sprintf("held by the organisation's budget: %d jobs in the last hour, %d more would exceed %d per hour", used, n, s.engine.OrgJobsPerHour), nil
	}
	return "", nil
}

// finish records a firing's outcome.
func (s *Service) finish(ctx context.Context, f Firing, status, msg string) error {
	if f.Status == FiringHeld && status == FiringHeld {
		return nil // still held: nothing new to record
	}
	f.Status, f.Message, f.Updated = status, msg, s.clock()
	if status == FiringHeld {
		s.engine.Log.Warn("automation: firing held by a budget", "rule", f.Rule, "firing", f.ID, "org", f.Org)
	}
	if f.fresh {
		// One write: a firing that already exists (an event read again) keeps its outcome.
		if err := s.rules.CreateFiring(ctx, f); err != nil && !errors.Is(err, ErrFiringExists) {
			return err
		}
		return nil
	}
	return s.rules.UpdateFiring(ctx, f)
}

// failed records a firing whose action was refused (the object vanished, a set was deleted…).
func (s *Service) failed(ctx context.Context, r Rule, f Firing, err error) error {
	if ctx.Err() != nil {
		return err
	}
	msg := "the action failed"
	if e := apperrMessage(err); e != "" {
		msg = e
	} else {
		s.engine.Log.Error("automation: action", "rule", r.ID, "firing", f.ID, "err", err)
	}
	return s.finish(ctx, f, FiringFailed, msg)
}

// apperrMessage is the client-safe message of a classified error ("" for an internal one).
func apperrMessage(err error) string {
	if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
		return e.Message
	}
	return ""
}

// stopRule records that a rule's owner cannot act any more: the rule stops, saying why, until someone who
// may saves it again (its firing fails with the same reason).
func (s *Service) stopRule(ctx context.Context, r Rule, why string) error {
	r.Enabled, r.Stopped = false, why
	// Its audit record is by the system, and names the rule as its cause.
	if _, err := s.rules.UpdateRule(record.WithCause(ctx, "rule:"+r.ID), r, "system", s.clock()); err != nil {
		return err
	}
	s.saved.Store(true)
	s.engine.Log.Warn("automation: rule stopped", "rule", r.ID, "org", r.Org, "why", why)
	return nil
}
