package automation

import (
	"context"
	"fmt"

	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// ObjectFunc loads the object a responder runs on (of the caller's organisation) and renders it as the API
// does: the connector sends that rendering to the responder, as for a responder run asked for through the API.
type ObjectFunc func(ctx context.Context, c identity.Caller, objectType, id string) (connector.ResponderObject, error)

// SetObjects sets how the objects of responder runs are rendered (the API's rendering); until it is set, a
// rule's runResponder action fails.
func (s *Service) SetObjects(f ObjectFunc) { s.objects.Store(&f) }

// responderObjectType is the object type (the connector's, as the reference system names it) of an event's
// object.
func responderObjectType(event string) string {
	switch event {
	case EventObservableCreated:
		return "case_artifact"
	case EventAlertCreated:
		return "alert"
	case EventTaskClosed:
		return "case_task"
	}
	return "case"
}

// respond runs the responder of the rule's action i on the firing's object, as its owner c, through the
// connector (as POST /api/connector/cortex/action does), and records the run in f. The run is written into the
// firing (with its start) before the connector is asked, so that a firing resumed after a crash finds the
// action the connector made for it — the owner's action of that responder on the object since that start —
// instead of running the responder twice. A responder above the object's TLP or PAP (when its server lists
// its limits) is refused before anything is sent. An Unavailable error means no server could be asked which
// responder has the name: the firing waits for them.
func (s *Service) respond(ctx, actx context.Context, c identity.Caller, f *Firing, i int, a Action) error {
	typ := responderObjectType(f.Event)
	run := -1
	for j, rr := range f.Responders {
		if rr.Action == i {
			run = j
		}
	}
	if run >= 0 && f.Responders[run].ActionID != "" {
		return nil // done before the firing was interrupted
	}
	if run >= 0 {
		rr := f.Responders[run]
		acts, _, err := s.analyses.ActionsOf(ctx, c, typ, f.ObjectID, search.Page{Limit: 100})
		if err != nil {
			return err
		}
		for _, act := range acts {
			if act.CreatedBy == c.Login && act.AnalysisID == rr.AnalysisID && act.ResponderID == rr.ResponderID && !act.CreatedAt.Before(rr.Since) {
				f.Responders[run].ActionID = act.ID
				return nil
			}
		}
	}
	render := s.objects.Load()
	if render == nil {
		return fmt.Errorf("rule %s: no renderer of responder objects", f.Rule)
	}
	server, w, err := s.analyses.ResponderNamed(ctx, c, a.AnalysisID, "thehive:"+typ, a.Responder)
	if err != nil {
		return err
	}
	obj, err := (*render)(ctx, c, typ, f.ObjectID)
	if err != nil {
		return err
	}
	label := connector.ObjectTypeLabel(typ)
	if w.MaxTLP != nil && obj.TLP > *w.MaxTLP {
		return apperr.Errorf(apperr.BadRequest, "the %s's TLP %d is above the limit %d of the responder %s", label, obj.TLP, *w.MaxTLP, a.Responder)
	}
	if w.MaxPAP != nil && obj.PAP > *w.MaxPAP {
		return apperr.Errorf(apperr.BadRequest, "the %s's PAP %d is above the limit %d of the responder %s", label, obj.PAP, *w.MaxPAP, a.Responder)
	}
	rr := ResponderRun{Action: i, Responder: a.Responder, AnalysisID: server, ResponderID: w.ID, Since: s.clock()}
	if run >= 0 {
		f.Responders[run] = rr
	} else {
		run = len(f.Responders)
		f.Responders = append(f.Responders, rr)
	}
	if err := s.rules.UpdateFiring(ctx, *f); err != nil {
		return err
	}
	// A server that stops answering now does not fail the run: the connector accepts it Waiting and submits
	// it when the server is back.
	act, err := s.analyses.RunResponder(actx, c, server, w.ID, obj)
	if err != nil {
		return err
	}
	f.Responders[run].ActionID = act.ID
	return nil
}
