package automation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
	// HeadsSince returns the released events dated at or after since, oldest first, at most limit, without
	// their details and object.
	HeadsSince(ctx context.Context, since time.Time, limit int) ([]event.Event, error)
	// EventsByID returns the whole events with these ids (those stored).
	EventsByID(ctx context.Context, ids []string) ([]event.Event, error)
}

// ObjectMatcher evaluates rules' conditions on the stored objects of events.
type ObjectMatcher interface {
	// Match reads the objects of an event's objectType (case_artifact, alert, case, case_task) with these ids
	// and reports, for each one found, which of the filters it matches (in their order); an id not found is
	// absent. It evaluates the filters as a search of the objects' list would (pkg/docstore's Matcher, held to
	// both engines' query results).
	Match(ctx context.Context, objectType string, ids []string, filters []search.Node) (map[string][]bool, error)
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
	Lookback time.Duration // how far before the cursor a sweep reads, for events committed late (default 2 s)
	// Shared says the database is shared with other replicas (MongoDB): the engine sweeps (reads from Lookback
	// before its cursor) once a second for their events written late. On the embedded database every event is
	// written by this process, which tells the engine (Recorded): it sweeps only at its start (for the events
	// written just before a crash).
	Shared bool
	Retry  time.Duration // how often held and interrupted firings are tried again (default 1 min)
	// Gather is the least time between two reads of the events, and how long the firings of the rules that do
	// not apply (condition, depth) are gathered before they are written in one insert (default 10 ms): a
	// burst's events cost one read and one write rather than one each.
	Gather time.Duration
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
	if c.Gather <= 0 {
		c.Gather = 10 * time.Millisecond
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
//
// Events are handled in batches: one read of the new events' heads (a page of up to 500), one read per object
// type of the objects those events are about, every rule's condition evaluated on them in memory, and the
// firings of the rules that do not apply written in one insert.
//
// Events written late: an event is dated when its change is made and written when its request is done (or its
// webhooks are queued), so an event dated before the cursor may be written after the engine moved past it. The
// audit trail tells the engine the dates of the events it writes (Recorded): the next read starts at the
// earliest of them, so the events written by this replica are all read as soon as they are written. At the
// start, and once a second on a database shared with other replicas (for theirs), the read starts Lookback
// before the cursor. The events read again are told from the new ones by their ids (seen).
func (s *Service) Run(ctx context.Context) {
	if s.source == nil || s.matcher == nil {
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
	saved, savedAt := cursor, time.Now()
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
	var swept time.Time // the last read from cursor − Lookback (at the start; once a second when Shared)
	read := time.Now()  // the last read
	const batch = 500
	// The firings of the rules that did not apply, gathered for up to Gather and written in one insert. The
	// stored cursor only moves once they are written: after a crash their events are read again.
	var (
		gathered []Firing
		since0   time.Time // when the first of them was gathered
	)
	flush := func(ctx context.Context) bool {
		if len(gathered) == 0 {
			return true
		}
		// A firing that exists already (an event read again) keeps its outcome.
		if err := s.rules.CreateFirings(ctx, gathered); err != nil {
			if ctx.Err() == nil {
				cfg.Log.Error("automation: write firings", "err", err)
			}
			return false
		}
		gathered = nil
		return true
	}
	defer func() { // a last write on the way out (else its events are read again after the restart)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		flush(fctx)
	}()
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
		early := s.early.Swap(math.MaxInt64)
		if !active {
			cursor, swept = s.now(), time.Now() // nothing before the first rule is swept
			if cursor.Sub(saved) > cfg.Retry {
				if err := s.rules.SetCursor(ctx, cursor); err != nil && ctx.Err() == nil {
					cfg.Log.Error("automation cursor", "err", err)
				}
				saved, savedAt = cursor, time.Now()
			}
		} else {
			since := cursor
			if early != math.MaxInt64 && early < since.UnixMilli() {
				since = time.UnixMilli(early).UTC() // events of this replica written after the cursor passed their date
			}
			if swept.IsZero() || (cfg.Shared && time.Since(swept) > time.Second) {
				if lb := cursor.Add(-cfg.Lookback); lb.Before(since) {
					since = lb
				}
				swept = time.Now()
			}
			for {
				heads, err := s.source.HeadsSince(ctx, since, batch)
				if err != nil {
					if ctx.Err() == nil {
						cfg.Log.Error("automation: read events", "err", err)
					}
					break
				}
				last := cursor
				var fresh []event.Event
				for _, e := range heads {
					if _, done := seen[e.ID]; !done {
						fresh = append(fresh, e)
					}
					if e.Date.After(last) {
						last = e.Date
					}
				}
				done, err := s.handleBatch(ctx, fresh)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					// Read this page again (none of it is marked seen): firings are idempotent.
					cfg.Log.Error("automation: events", "err", err)
					s.readFrom(since)
					break
				}
				for _, e := range fresh {
					seen[e.ID] = e.Date
				}
				if len(done) > 0 {
					if len(gathered) == 0 {
						since0 = time.Now()
					}
					gathered = append(gathered, done...)
					if len(gathered) >= batch {
						flush(ctx)
					}
				}
				if last.After(cursor) {
					cursor = last
				}
				// The stored cursor may lag by a second: after a restart the events of that second are read
				// again, and their firings, already written, are left as they are.
				if cursor.After(saved) && (cursor.Sub(saved) > time.Second || time.Since(savedAt) > time.Second) && flush(ctx) {
					if err := s.rules.SetCursor(ctx, cursor); err != nil && ctx.Err() == nil {
						cfg.Log.Error("automation cursor", "err", err)
					}
					saved, savedAt = cursor, time.Now()
				}
				if len(heads) < batch {
					break
				}
				next := heads[len(heads)-1].Date // the next page (the same millisecond again: seen skips it)
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
		// At most one read per Gather: the rest of a burst comes with the next read (the wakes of its events
		// wait in s.wake meanwhile, so a burst wakes the engine once per Gather, not once per event).
		if wait := cfg.Gather - time.Since(read); wait > 0 && active {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if !s.idle(ctx, poll.C, retry.C, func() (time.Duration, bool) {
			return cfg.Gather - time.Since(since0), len(gathered) > 0
		}, func() { flush(ctx) }) {
			return
		}
		read = time.Now()
	}
}

// idle waits for the next read: a wake, a poll or a retry (which resumes the unfinished firings), writing the
// gathered firings when due (due: how long until they are, and whether there are any). It returns false when
// ctx ends.
func (s *Service) idle(ctx context.Context, poll, retry <-chan time.Time, due func() (time.Duration, bool), flush func()) bool {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var write <-chan time.Time
		if d, ok := due(); ok && d <= 0 {
			flush()
			if _, ok := due(); !ok {
				continue
			}
			// The write failed: it is tried again after the next read.
		} else if ok {
			t.Reset(d)
			write = t.C
		}
		select {
		case <-ctx.Done():
			return false
		case <-poll:
			return true
		case <-s.wake:
			return true
		case <-retry:
			s.resume(ctx)
			return true
		case <-write:
			flush()
		}
	}
}

// readFrom makes the next read start no later than t.
func (s *Service) readFrom(t time.Time) {
	ms := t.UnixMilli()
	for {
		cur := s.early.Load()
		if ms >= cur || s.early.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// Wake makes the engine read the events now; it never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Recorded tells the engine that evs were written to the durable record (the audit trail calls it after each
// write; it never blocks): its next read, at once, starts no later than the earliest of their dates.
func (s *Service) Recorded(evs []event.Event) {
	if len(evs) == 0 {
		return
	}
	first := evs[0].Date
	for _, e := range evs[1:] {
		if e.Date.Before(first) {
			first = e.Date
		}
	}
	s.readFrom(first)
	s.Wake()
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

// objectBatch is the objects of one type a batch of events is about, and the conditions evaluated on them.
type objectBatch struct {
	ids     []string
	known   map[string]bool
	filters []search.Node
	index   map[string]int // a rule's filter in filters
	matched map[string][]bool
}

// eventFirings is an event of a batch and the enabled rules of its organisation on it.
type eventFirings struct {
	e     event.Event
	ev    string
	rules []activeRule
}

// batchState is what the evaluations of one batch share: the owners' callers and the rules stopped in it.
type batchState struct {
	callers map[string]identity.Caller
	stopped map[string]string
}

// handleBatch makes the firings of the active rules of a batch of events (new ones, oldest first) and
// processes them: the events' objects are read once per type and every rule's condition is evaluated on them
// in memory; a firing whose rule acts is claimed (written Pending) before acting, and those of the rules that
// do not apply are returned, for the caller to write (gathered, in one insert).
func (s *Service) handleBatch(ctx context.Context, heads []event.Event) ([]Firing, error) {
	// A case or task update is a rule event by the status it sets: those are read whole.
	var updates []string
	for _, e := range heads {
		if e.Operation == event.Update && (e.ObjectType == "case" || e.ObjectType == "case_task") {
			updates = append(updates, e.ID)
		}
	}
	if len(updates) > 0 {
		whole, err := s.source.EventsByID(ctx, updates)
		if err != nil {
			return nil, err
		}
		details := make(map[string]map[string]any, len(whole))
		for _, e := range whole {
			details[e.ID] = e.Details
		}
		for i := range heads {
			if d, ok := details[heads[i].ID]; ok {
				heads[i].Details = d
			}
		}
	}
	var todo []eventFirings
	objects := map[string]*objectBatch{}
	for _, e := range heads {
		ev := eventOf(e)
		if ev == "" {
			continue
		}
		rules, err := s.cache.activeRules(ctx, s.rules, e.Org, ev)
		if err != nil {
			return nil, err
		}
		if len(rules) == 0 {
			continue
		}
		todo = append(todo, eventFirings{e: e, ev: ev, rules: rules})
		b := objects[e.ObjectType]
		if b == nil {
			b = &objectBatch{known: map[string]bool{}, index: map[string]int{}}
			objects[e.ObjectType] = b
		}
		if !b.known[e.ObjectID] {
			b.known[e.ObjectID] = true
			b.ids = append(b.ids, e.ObjectID)
		}
		for _, r := range rules {
			if _, ok := b.index[r.ID]; !ok {
				b.index[r.ID] = len(b.filters)
				b.filters = append(b.filters, r.cond)
			}
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	for t, b := range objects {
		var err error
		if b.matched, err = s.matcher.Match(ctx, t, b.ids, b.filters); err != nil {
			return nil, err
		}
	}
	st := batchState{callers: map[string]identity.Caller{}, stopped: map[string]string{}}
	var done []Firing
	for _, it := range todo {
		e, b := it.e, objects[it.e.ObjectType]
		for _, r := range it.rules {
			f := Firing{ID: FiringID(r.ID, e.ObjectID, it.ev), Org: e.Org, Rule: r.ID, RuleName: r.Name, Event: it.ev,
				ObjectType: e.ObjectType, ObjectID: e.ObjectID, EventID: e.ID, Cause: e.RequestID, Status: FiringPending,
				Date: e.Date, Updated: s.clock(), fresh: true}
			res := b.matched[e.ObjectID]
			matched := res != nil && res[b.index[r.ID]]
			f, c, applies, err := s.evaluate(ctx, f, r.Rule, &st, func() (bool, error) { return matched, nil })
			if err != nil {
				return nil, err
			}
			if !applies {
				done = append(done, f)
				continue
			}
			if err := s.act(ctx, f, r.Rule, c); err != nil {
				return nil, err
			}
		}
	}
	return done, nil
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
	f, c, applies, err := s.evaluate(ctx, f, r, nil, func() (bool, error) { return s.matches(ctx, r, f) })
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
// (over its depth, condition not met — matched says whether it is —, owner unable: Failed), or the owner's
// caller when it applies. The owner's permissions are checked when the rule would act (depth and condition
// met): a rule that does not apply to an object needs none. st shares the owners' callers and the stopped rules among the firings of one batch
// (nil: none shared).
func (s *Service) evaluate(ctx context.Context, f Firing, r Rule, st *batchState, matched func() (bool, error)) (Firing, identity.Caller, bool, error) {
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
	// The condition first: a rule that does not apply acts as nobody (its owner is not read).
	m, err := matched()
	if err != nil {
		return f, identity.Caller{}, false, err
	}
	if !m {
		f.Status, f.Message = FiringCondition, ""
		return f, identity.Caller{}, false, nil
	}
	if st != nil {
		if why, ok := st.stopped[r.ID]; ok {
			f.Status, f.Message = FiringFailed, why+"; the rule is stopped"
			return f, identity.Caller{}, false, nil
		}
	}
	var c identity.Caller
	ok := false
	if st != nil {
		c, ok = st.callers[r.Owner]
	}
	if !ok {
		if c, err = ownerCaller(ctx, s.owners, r.Owner, r.Org); err == nil && st != nil {
			st.callers[r.Owner] = c
		}
	}
	if err == nil {
		err = lacks(c, r)
	}
	if err != nil {
		if err := s.stopRule(ctx, r, err.Error()); err != nil {
			return f, identity.Caller{}, false, err
		}
		if st != nil {
			st.stopped[r.ID] = err.Error()
		}
		f.Status, f.Message = FiringFailed, err.Error()+"; the rule is stopped"
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
// (organisation, event), with their conditions parsed. A rule saved in this process (or stopped by the engine)
// clears it; another replica's change is seen within the second.
type engineCache struct {
	mu    sync.Mutex
	rules map[string]cachedRules
}

// activeRule is an enabled rule with its condition as a filter of its objects (condition(r)).
type activeRule struct {
	Rule
	cond search.Node
}

type cachedRules struct {
	rules []activeRule
	at    time.Time
}

const cacheTTL = time.Second

func (c *engineCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules = nil
}

func (c *engineCache) activeRules(ctx context.Context, st RuleStore, org, event string) ([]activeRule, error) {
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
	ars := make([]activeRule, len(rs))
	for i, r := range rs {
		ars[i] = activeRule{Rule: r, cond: condition(r)}
	}
	c.mu.Lock()
	if c.rules == nil {
		c.rules = map[string]cachedRules{}
	}
	c.rules[k] = cachedRules{rules: ars, at: time.Now()}
	c.mu.Unlock()
	return ars, nil
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

// condition is a rule's conditions as a filter of the list of its event's objects, in the rule's
// organisation: the query of the search language, parsed with that list's fields, as a search of the list by
// the owner would run it.
func condition(r Rule) search.Node {
	cond := search.Node{Op: search.OpAll}
	if r.Conditions != nil {
		var err error
		if cond, err = search.ParseJSON(r.Conditions, fieldsOf(r.Event)); err != nil {
			return search.Node{Op: search.OpOr} // saved rules parse; a field dropped since matches nothing
		}
	}
	return record.And(cond, record.InOrg(r.Org))
}

// matches reports whether the firing's object matches the rule's conditions (condition), evaluated on the
// stored object.
func (s *Service) matches(ctx context.Context, r Rule, f Firing) (bool, error) {
	m, err := s.matcher.Match(ctx, f.ObjectType, []string{f.ObjectID}, []search.Node{condition(r)})
	if err != nil {
		return false, err
	}
	res := m[f.ObjectID]
	return res != nil && res[0], nil
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
