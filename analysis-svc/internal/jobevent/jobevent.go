// Package jobevent tells about analysis-svc's jobs on pkg/events's bus: a decorator of the job store records
// a job's creation (streams only) and its end, JobFinished, which the organisation's webhooks receive through
// the durable outbox. Hooking the store keeps the job pipeline (claims, runners) free of event code.
package jobevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/events"
)

// ObjectType is the objectType of job events, as Cortex's stream names it.
const ObjectType = "job"

// Renderer writes a job as the API shows it.
type Renderer func(j analysis.Job) map[string]any

// Store is the job store with its creations and ends recorded as events.
type Store struct {
	analysis.JobStore
	bus    *events.Bus
	render Renderer
}

// Wrap returns st recording job events on bus.
func Wrap(st analysis.JobStore, bus *events.Bus, render Renderer) *Store {
	return &Store{JobStore: st, bus: bus, render: render}
}

// Enqueue queues a job and records its creation (for the streams; no webhook receives it).
func (s *Store) Enqueue(ctx context.Context, j analysis.Job) error {
	if err := s.JobStore.Enqueue(ctx, j); err != nil {
		return err
	}
	obj := s.render(j)
	e := events.Event{ID: s.bus.NewID(j.CreatedAt), Operation: events.Creation, ObjectType: ObjectType, ObjectID: j.ID,
		RootID: j.ID, Details: obj, Object: obj, User: j.CreatedBy, Org: j.Organization, Date: j.CreatedAt}
	if err := s.bus.RecordOnly(ctx, []events.Event{e}); err != nil {
		return fmt.Errorf("the job was queued but its event could not be written: %w", err)
	}
	return nil
}

// Finish stores the end of a job. Its JobFinished event is written held before, released (its webhook
// deliveries queued) after, or dropped when the end was not stored; a crash in between leaves it to the
// bus's repair, which asks Confirm what became of the job.
func (s *Store) Finish(ctx context.Context, j analysis.Job, r *analysis.Report, owner string) error {
	e := s.Finished(j)
	if err := s.bus.Hold(ctx, []events.Event{e}); err != nil {
		return err
	}
	if err := s.JobStore.Finish(ctx, j, r, owner); err != nil {
		// Drop the event unless the job has ended anyway (another worker's Finish released it).
		cctx := context.WithoutCancel(ctx)
		if _, ended, cerr := s.Confirm(cctx, e); cerr == nil && !ended {
			_ = s.bus.Drop(cctx, []events.Event{e}) // else the repair drops it
		}
		return err
	}
	return s.bus.Release(ctx, []events.Event{e})
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
