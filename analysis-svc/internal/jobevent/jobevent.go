// Package jobevent tells about analysis-svc's jobs on pkg/events's bus: a decorator of the job store records
// a job's creation, each start (Waiting → InProgress) and its deletion (streams only), and its end,
// JobFinished, which the organisation's webhooks receive through the durable outbox. Hooking the store keeps
// the job pipeline (claims, runners) free of event code.
package jobevent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
)

// ObjectType is the objectType of job events, as Cortex's stream names it.
const ObjectType = "job"

// Renderer writes a job as the API shows it.
type Renderer func(j analysis.Job) map[string]any

// JobStore is the job store this package decorates: the domain's, with an Enqueue and a Finish that also
// write documents of the caller's (the job's events) in the same write as the job.
type JobStore interface {
	analysis.JobStore
	FinishWith(ctx context.Context, j analysis.Job, r *analysis.Report, owner string, with func() ([]docstore.Insertion, error)) error
	EnqueueWith(ctx context.Context, j analysis.Job, with []docstore.Insertion) error
}

// Store is the job store with its creations, starts, deletions and ends recorded as events.
type Store struct {
	JobStore
	bus    *events.Bus
	render Renderer
}

// Wrap returns st recording job events on bus.
func Wrap(st JobStore, bus *events.Bus, render Renderer) *Store {
	return &Store{JobStore: st, bus: bus, render: render}
}

// Enqueue queues a job and records its creation (for the streams; no webhook receives it), in the same write.
func (s *Store) Enqueue(ctx context.Context, j analysis.Job) error {
	obj := s.render(j)
	e := events.Event{ID: s.bus.NewID(j.CreatedAt), Operation: events.Creation, ObjectType: ObjectType, ObjectID: j.ID,
		RootID: j.ID, Details: obj, Object: obj, User: j.CreatedBy, Org: j.Organization, Date: j.CreatedAt}
	rec, err := s.bus.RecordOnlyWith([]events.Event{e})
	if err != nil {
		return fmt.Errorf("the job was not queued: its event cannot be written: %w", err)
	}
	if err := s.JobStore.EnqueueWith(ctx, j, rec.Insertions); err != nil {
		return err
	}
	return rec.Stored(ctx)
}

// Claim claims a Waiting job and records its start (an Update to InProgress, as Cortex's stream shows it; for
// the streams, no webhook receives it). A job runs only once its start is recorded: when the event cannot be
// written the job is put back in the queue, its attempt refunded, and the next claim records it. (A crash
// between the claim and the event leaves that claim without one; the job's lease expires and its next
// claim, or its end, is recorded.)
func (s *Store) Claim(ctx context.Context, owner string, until, now time.Time, rule analysis.ClaimRule) (analysis.Job, error) {
	j, err := s.JobStore.Claim(ctx, owner, until, now, rule)
	if err != nil {
		return j, err
	}
	if err := s.bus.RecordOnly(ctx, []events.Event{s.started(j)}); err != nil {
		if rerr := s.JobStore.Requeue(context.WithoutCancel(ctx), j.ID, owner, true); rerr != nil {
			err = errors.Join(err, fmt.Errorf("put the job back: %w", rerr)) // its lease expires instead
		}
		return analysis.Job{}, fmt.Errorf("job %s was claimed but its start could not be recorded: %w", j.ID, err)
	}
	return j, nil
}

// started is the event of a job's start: each claim is one (a job whose lease was lost runs again).
func (s *Store) started(j analysis.Job) events.Event {
	at := j.StartDate
	if at.IsZero() {
		at = time.Now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	user := j.UpdatedBy
	if user == "" {
		user = j.CreatedBy
	}
	return events.Event{ID: s.bus.NewID(at), Operation: events.Update, ObjectType: ObjectType, ObjectID: j.ID,
		RootID: j.ID, Details: map[string]any{"status": analysis.JobInProgress, "startDate": at.UnixMilli()},
		Object: s.render(j), User: user, Org: j.Organization, Date: at}
}

// MarkDeleted sets a job Deleted and records its deletion (a Delete with the job as deleted, as Cortex's
// stream shows it; for the streams, no webhook receives it). A job is deleted once: the event's id is the
// job's, so deleting it again (or retrying a deletion whose event could not be written) adds no second one.
func (s *Store) MarkDeleted(ctx context.Context, id, by string, at time.Time) error {
	if err := s.JobStore.MarkDeleted(ctx, id, by, at); err != nil {
		return err
	}
	j, err := s.JobStore.Job(ctx, id)
	if err == nil {
		at = at.UTC().Truncate(time.Millisecond)
		e := events.Event{ID: fmt.Sprintf("%011x-%s-deleted", j.CreatedAt.UnixMilli(), j.ID), Operation: events.Delete,
			ObjectType: ObjectType, ObjectID: j.ID, RootID: j.ID, Details: map[string]any{}, Object: s.render(j),
			User: by, Org: j.Organization, Date: at}
		err = s.bus.RecordOnly(ctx, []events.Event{e})
	}
	if err != nil {
		return fmt.Errorf("the job was deleted but its event could not be written: %w", err)
	}
	return nil
}

// Finish stores the end of a job with its JobFinished event, in the same write as the final job (the store
// writes the event first): held when webhooks are to receive it, then released with its deliveries queued
// once the end is stored, or dropped when it was not; a crash in between leaves it to the bus's repair, which
// asks Confirm what became of the job. Without webhooks the event is written released.
func (s *Store) Finish(ctx context.Context, j analysis.Job, r *analysis.Report, owner string) error {
	evs := []events.Event{s.Finished(j)}
	var rec *events.Recording
	with := func() (ins []docstore.Insertion, err error) {
		if rec, err = s.bus.RecordWith(ctx, evs); err != nil {
			return nil, fmt.Errorf("the job's end was not stored: its event cannot be written: %w", err)
		}
		return rec.Insertions, nil
	}
	// The event is finished as soon as the final job can be read, beside the rest of the store's Finish (the
	// job leaving the queue): one commit on the embedded engine.
	var stored sync.WaitGroup
	var storedErr error
	finishing := false
	fctx := analysis.OnFinishedReadable(ctx, func(end *analysis.Ended) {
		analysis.FinishedReadable(ctx, end) // the caller's own callback first (waitreport's waiters)
		finishing = true
		stored.Go(func() { storedErr = rec.Stored(ctx) })
	})
	if err := s.JobStore.FinishWith(fctx, j, r, owner, with); err != nil {
		stored.Wait()
		// Drop the event unless the job has ended anyway (another worker's Finish released it).
		cctx := context.WithoutCancel(ctx)
		if rec != nil {
			if _, ended, cerr := s.Confirm(cctx, evs[0]); cerr == nil && !ended {
				_ = s.bus.Drop(cctx, evs) // else the repair drops it
			}
		}
		return err
	}
	stored.Wait()
	if !finishing { // a store that did not call FinishedReadable: finished after the end
		storedErr = rec.Stored(ctx)
	}
	return storedErr
}

// Finished is the JobFinished event of a job. Its id is the job's (after the creation date, so that events
// sort by job age): the same job finished twice (a lost lease) is one event and one delivery per endpoint.
func (s *Store) Finished(j analysis.Job) events.Event {
	obj := s.render(j)
	at := j.EndDate
	if at.IsZero() {
		at = time.Now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	details := map[string]any{"status": j.Status, "endDate": at.UnixMilli()}
	if j.ErrorMessage != "" {
		details["errorMessage"] = j.ErrorMessage
	}
	user := j.UpdatedBy
	if user == "" {
		user = j.CreatedBy
	}
	return events.Event{ID: fmt.Sprintf("%011x-%s", j.CreatedAt.UnixMilli(), j.ID), Operation: events.Update,
		ObjectType: ObjectType, ObjectID: j.ID, RootID: j.ID, Details: details, Object: obj, User: user,
		Org: j.Organization, Date: at}
}

// Confirm is the bus's repair question for a held JobFinished event: the event of the job as it ended, or
// nothing when the job did not end (it was put back in the queue and will end again, with a new event) or
// is gone.
func (s *Store) Confirm(ctx context.Context, e events.Event) (events.Event, bool, error) {
	if e.ObjectType != ObjectType {
		return e, true, nil
	}
	j, err := s.JobStore.Job(ctx, e.ObjectID)
	if errors.Is(err, analysis.ErrJobNotFound) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	if j.Status != analysis.JobSuccess && j.Status != analysis.JobFailure {
		return e, false, nil
	}
	c := s.Finished(j)
	c.ID = e.ID
	return c, true, nil
}
