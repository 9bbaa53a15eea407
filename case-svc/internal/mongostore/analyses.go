package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
)

// AnalysisStore keeps the connector's state: responder actions, and the small `pending` collection of jobs
// and actions whose result is not imported yet (the tracker's work list, read per server).
type AnalysisStore struct {
	actions *mongo.Collection
	pending *mongo.Collection
}

var (
	_ cases.ActionStore  = (*AnalysisStore)(nil)
	_ cases.PendingStore = (*AnalysisStore)(nil)
)

// NewAnalysisStore returns the store.
func NewAnalysisStore(ctx context.Context, db *mongox.DB) (*AnalysisStore, error) {
	s := &AnalysisStore{actions: db.Collection("actions"), pending: db.Collection("pending")}
	if err := mongox.EnsureIndexes(ctx, s.pending, mongox.Index{Name: "server", Keys: bson.D{{Key: "server", Value: 1}}}); err != nil {
		return nil, err
	}
	return s, nil
}

type pendingDoc struct {
	ID       string `bson:"_id"`
	Kind     string `bson:"kind"`
	Server   string `bson:"server"`
	Org      string `bson:"organisation"`
	RemoteID string `bson:"remoteId"`
	Since    int64  `bson:"since"`
}

// AddPending records a job or action to track.
func (s *AnalysisStore) AddPending(ctx context.Context, p cases.Pending) error {
	_, err := s.pending.InsertOne(ctx, pendingDoc{ID: p.ID, Kind: p.Kind, Server: p.Server, Org: p.Org, RemoteID: p.RemoteID,
		Since: mongox.Millis(p.Since)})
	if err != nil && !mongox.IsDuplicate(err) {
		return fmt.Errorf("add pending %s: %w", p.ID, err)
	}
	return nil
}

// PendingOf lists a server's pending records.
func (s *AnalysisStore) PendingOf(ctx context.Context, server string) ([]cases.Pending, error) {
	cur, err := s.pending.Find(ctx, bson.D{{Key: "server", Value: server}})
	if err != nil {
		return nil, fmt.Errorf("list pending: %w", err)
	}
	var docs []pendingDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list pending: %w", err)
	}
	out := make([]cases.Pending, len(docs))
	for i, d := range docs {
		out[i] = cases.Pending{ID: d.ID, Kind: d.Kind, Server: d.Server, Org: d.Org, RemoteID: d.RemoteID, Since: mongox.Time(d.Since)}
	}
	return out, nil
}

// SetRemote records the server's job id.
func (s *AnalysisStore) SetRemote(ctx context.Context, id, remoteID string) error {
	_, err := s.pending.UpdateOne(ctx, byID(id), bson.D{{Key: "$set", Value: bson.D{{Key: "remoteId", Value: remoteID}}}})
	if err != nil {
		return fmt.Errorf("set remote job of %s: %w", id, err)
	}
	return nil
}

// RemovePending forgets a record whose result is imported.
func (s *AnalysisStore) RemovePending(ctx context.Context, id string) error {
	if _, err := s.pending.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("remove pending %s: %w", id, err)
	}
	return nil
}

type actionDoc struct {
	ID                  string `bson:"_id"`
	Org                 string `bson:"organisation"`
	ResponderID         string `bson:"responderId"`
	ResponderName       string `bson:"responderName"`
	ResponderDefinition string `bson:"responderDefinition"`
	AnalysisID          string `bson:"analysisId"`
	AnalysisJobID       string `bson:"analysisJobId"`
	ObjectType          string `bson:"objectType"`
	ObjectID            string `bson:"objectId"`
	CaseID              string `bson:"case"`
	AlertID             string `bson:"alert"`
	TaskID              string `bson:"task"`
	Status              string `bson:"status"`
	StartDate           int64  `bson:"startDate"`
	EndDate             *int64 `bson:"endDate"`
	Operations          string `bson:"operations"`
	Report              string `bson:"report"`
	CreatedAt           int64  `bson:"createdAt"`
	CreatedBy           string `bson:"createdBy"`
	UpdatedAt           *int64 `bson:"updatedAt"`
	UpdatedBy           string `bson:"updatedBy"`
}

func toActionDoc(a cases.Action) actionDoc {
	return actionDoc{ID: a.ID, Org: a.Org, ResponderID: a.ResponderID, ResponderName: a.ResponderName,
		ResponderDefinition: a.ResponderDefinition, AnalysisID: a.AnalysisID, AnalysisJobID: a.AnalysisJobID,
		ObjectType: a.ObjectType, ObjectID: a.ObjectID, CaseID: a.CaseID, AlertID: a.AlertID, TaskID: a.TaskID,
		Status: a.Status, StartDate: mongox.Millis(a.StartDate), EndDate: nullMillis(a.EndDate), Operations: a.Operations,
		Report: a.Report, CreatedAt: mongox.Millis(a.CreatedAt), CreatedBy: a.CreatedBy, UpdatedAt: nullMillis(a.UpdatedAt),
		UpdatedBy: a.UpdatedBy}
}

func (d actionDoc) action() cases.Action {
	return cases.Action{ID: d.ID, Org: d.Org, ResponderID: d.ResponderID, ResponderName: d.ResponderName,
		ResponderDefinition: d.ResponderDefinition, AnalysisID: d.AnalysisID, AnalysisJobID: d.AnalysisJobID,
		ObjectType: d.ObjectType, ObjectID: d.ObjectID, CaseID: d.CaseID, AlertID: d.AlertID, TaskID: d.TaskID,
		Status: d.Status, StartDate: mongox.Time(d.StartDate), EndDate: timeOf(d.EndDate), Operations: d.Operations,
		Report: d.Report, Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
			UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

// CreateAction inserts an action.
func (s *AnalysisStore) CreateAction(ctx context.Context, a cases.Action) error {
	if _, err := s.actions.InsertOne(ctx, toActionDoc(a)); err != nil {
		return fmt.Errorf("create action: %w", err)
	}
	return nil
}

// Action finds an action by id.
func (s *AnalysisStore) Action(ctx context.Context, id string) (cases.Action, error) {
	var d actionDoc
	err := s.actions.FindOne(ctx, byID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return cases.Action{}, cases.ErrActionNotFound
	}
	if err != nil {
		return cases.Action{}, fmt.Errorf("find action %s: %w", id, err)
	}
	return d.action(), nil
}

// UpdateAction replaces an action.
func (s *AnalysisStore) UpdateAction(ctx context.Context, a cases.Action) error {
	if _, err := s.actions.ReplaceOne(ctx, byID(a.ID), toActionDoc(a)); err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	return nil
}

// DeleteAction removes an action.
func (s *AnalysisStore) DeleteAction(ctx context.Context, id string) error {
	if _, err := s.actions.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete action %s: %w", id, err)
	}
	return nil
}
