package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// AnalysisStore keeps the connector's state: responder actions, and the small `pending` collection of jobs
// and actions whose result is not imported yet (the tracker's work list, read per server).
type AnalysisStore struct {
	actions *docstore.Collection
	pending *docstore.Collection
}

var (
	_ connector.ActionStore  = (*AnalysisStore)(nil)
	_ connector.PendingStore = (*AnalysisStore)(nil)
)

var (
	// actionSpec: the responder history of an object, newest first (ActionsOf); the organisation's actions (listAction)
	actionSpec = docstore.Spec{Name: "actions", Indexes: []docstore.Index{
		{Name: "objectId_organisation_startDate", Keys: []docstore.Key{docstore.Asc("objectId"), docstore.Asc(record.PathOrg), docstore.Desc("startDate")}},
		{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	}}
	pendingSpec = docstore.Spec{Name: "pending", Indexes: []docstore.Index{
		{Name: "server__id", Keys: []docstore.Key{docstore.Asc("server"), docstore.Asc("_id")}},
	}}
)

// NewAnalysisStore returns the store.
func NewAnalysisStore(ctx context.Context, db *docstore.DB) (*AnalysisStore, error) {
	actions, err := db.Collection(ctx, actionSpec)
	if err != nil {
		return nil, err
	}
	pending, err := db.Collection(ctx, pendingSpec)
	if err != nil {
		return nil, err
	}
	return &AnalysisStore{actions: actions, pending: pending}, nil
}

type pendingDoc struct {
	ID       string `json:"_id"`
	Kind     string `json:"kind"`
	Server   string `json:"server"`
	Org      string `json:"organisation"`
	RemoteID string `json:"remoteId"`
	Since    int64  `json:"since"`
	// Unreachable is when the server stopped answering this record's calls (0 while it answers).
	Unreachable int64 `json:"unreachableSince,omitempty"`
}

// AddPending records a job or action to track.
func (s *AnalysisStore) AddPending(ctx context.Context, p connector.Pending) error {
	err := s.pending.Insert(ctx, pendingDoc{ID: p.ID, Kind: p.Kind, Server: p.Server, Org: p.Org, RemoteID: p.RemoteID,
		Since: docstore.Millis(p.Since), Unreachable: docstore.Millis(p.Unreachable)})
	if err != nil && !docstore.IsDuplicate(err) {
		return fmt.Errorf("add pending %s: %w", p.ID, err)
	}
	return nil
}

// PendingOf lists a server's pending records.
func (s *AnalysisStore) PendingOf(ctx context.Context, server string) ([]connector.Pending, error) {
	var docs []pendingDoc
	if err := s.pending.Find(ctx, docstore.Query{Filter: docstore.Eq("server", server)}, &docs); err != nil {
		return nil, fmt.Errorf("list pending: %w", err)
	}
	out := make([]connector.Pending, len(docs))
	for i, d := range docs {
		out[i] = connector.Pending{ID: d.ID, Kind: d.Kind, Server: d.Server, Org: d.Org, RemoteID: d.RemoteID, Since: docstore.Time(d.Since),
			Unreachable: docstore.Time(d.Unreachable)}
	}
	return out, nil
}

// SetRemote records the server's job id.
func (s *AnalysisStore) SetRemote(ctx context.Context, id, remoteID string) error {
	if _, err := s.pending.UpdateOne(ctx, docstore.ID(id), docstore.Set("remoteId", remoteID), false); err != nil {
		return fmt.Errorf("set remote job of %s: %w", id, err)
	}
	return nil
}

// SetUnreachable records since when the record's server has not answered (zero: it answers again).
func (s *AnalysisStore) SetUnreachable(ctx context.Context, id string, since time.Time) error {
	if _, err := s.pending.UpdateOne(ctx, docstore.ID(id), docstore.Set("unreachableSince", docstore.Millis(since)), false); err != nil {
		return fmt.Errorf("set unreachable of %s: %w", id, err)
	}
	return nil
}

// RemovePending forgets a record whose result is imported.
func (s *AnalysisStore) RemovePending(ctx context.Context, id string) error {
	if _, err := s.pending.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("remove pending %s: %w", id, err)
	}
	return nil
}

type actionDoc struct {
	ID                  string `json:"_id"`
	Org                 string `json:"organisation"`
	ResponderID         string `json:"responderId"`
	ResponderName       string `json:"responderName"`
	ResponderDefinition string `json:"responderDefinition"`
	AnalysisID          string `json:"analysisId"`
	AnalysisJobID       string `json:"analysisJobId"`
	ObjectType          string `json:"objectType"`
	ObjectID            string `json:"objectId"`
	CaseID              string `json:"case"`
	AlertID             string `json:"alert"`
	TaskID              string `json:"task"`
	Status              string `json:"status"`
	StartDate           int64  `json:"startDate"`
	EndDate             *int64 `json:"endDate"`
	Operations          string `json:"operations"`
	Report              string `json:"report"`
	Message             string `json:"message,omitempty"`
	CreatedAt           int64  `json:"createdAt"`
	CreatedBy           string `json:"createdBy"`
	UpdatedAt           *int64 `json:"updatedAt"`
	UpdatedBy           string `json:"updatedBy"`
}

func toActionDoc(a connector.Action) actionDoc {
	return actionDoc{ID: a.ID, Org: a.Org, ResponderID: a.ResponderID, ResponderName: a.ResponderName,
		ResponderDefinition: a.ResponderDefinition, AnalysisID: a.AnalysisID, AnalysisJobID: a.AnalysisJobID,
		ObjectType: a.ObjectType, ObjectID: a.ObjectID, CaseID: a.CaseID, AlertID: a.AlertID, TaskID: a.TaskID,
		Status: a.Status, StartDate: docstore.Millis(a.StartDate), EndDate: nullMillis(a.EndDate), Operations: a.Operations,
		Report: a.Report, Message: a.Message, CreatedAt: docstore.Millis(a.CreatedAt), CreatedBy: a.CreatedBy, UpdatedAt: nullMillis(a.UpdatedAt),
		UpdatedBy: a.UpdatedBy}
}

func (d actionDoc) action() connector.Action {
	return connector.Action{ID: d.ID, Org: d.Org, ResponderID: d.ResponderID, ResponderName: d.ResponderName,
		ResponderDefinition: d.ResponderDefinition, AnalysisID: d.AnalysisID, AnalysisJobID: d.AnalysisJobID,
		ObjectType: d.ObjectType, ObjectID: d.ObjectID, CaseID: d.CaseID, AlertID: d.AlertID, TaskID: d.TaskID,
		Status: d.Status, StartDate: docstore.Time(d.StartDate), EndDate: timeOf(d.EndDate), Operations: d.Operations,
		Report: d.Report, Message: d.Message, Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
			UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

// CreateAction inserts an action.
func (s *AnalysisStore) CreateAction(ctx context.Context, a connector.Action) error {
	if err := s.actions.Insert(ctx, toActionDoc(a)); err != nil {
		return fmt.Errorf("create action: %w", err)
	}
	return nil
}

// Action finds an action by id.
// Actions lists actions.
func (s *AnalysisStore) Actions(ctx context.Context, f search.Node, p search.Page) ([]connector.Action, int64, error) {
	return page(ctx, s.actions, f, p, actionDoc.action)
}

func (s *AnalysisStore) Action(ctx context.Context, id string) (connector.Action, error) {
	var d actionDoc
	if err := get(ctx, s.actions, id, &d, connector.ErrActionNotFound); err != nil {
		return connector.Action{}, err
	}
	return d.action(), nil
}

// UpdateAction replaces an action (a vanished one stays vanished, as MongoDB's replaceOne without upsert).
func (s *AnalysisStore) UpdateAction(ctx context.Context, a connector.Action) error {
	if err := s.actions.Replace(ctx, toActionDoc(a), false); err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	return nil
}

// DeleteAction removes an action.
func (s *AnalysisStore) DeleteAction(ctx context.Context, id string) error {
	if _, err := s.actions.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete action %s: %w", id, err)
	}
	return nil
}
