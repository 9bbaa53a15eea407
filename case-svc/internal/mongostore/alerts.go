package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// AlertStore keeps alerts. An alert's _id derives from its organisation, type, source and sourceRef, so the
// uniqueness of that key is the _id index. Its status is stored beside read and case, always written with
// them, so lists filter and sort on it.
type AlertStore struct {
	coll *mongo.Collection
}

var _ cases.AlertStore = (*AlertStore)(nil)

// NewAlertStore returns the store and creates the indexes its lists use.
func NewAlertStore(ctx context.Context, db *mongox.DB) (*AlertStore, error) {
	s := &AlertStore{coll: db.Collection("alerts")}
	err := mongox.EnsureIndexes(ctx, s.coll,
		mongox.Index{Name: "organisation_date", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "date", Value: -1}}},
		mongox.Index{Name: "organisation_status", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "status", Value: 1}}},
		mongox.Index{Name: "case", Keys: bson.D{{Key: cases.PathCaseID, Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type alertDoc struct {
	ID           string            `bson:"_id"`
	Org          string            `bson:"organisation"`
	Type         string            `bson:"type"`
	Source       string            `bson:"source"`
	SourceRef    string            `bson:"sourceRef"`
	ExternalLink *string           `bson:"externalLink"`
	CaseID       *string           `bson:"case"`
	Title        string            `bson:"title"`
	Description  string            `bson:"description"`
	Severity     int               `bson:"severity"`
	TLP          int               `bson:"tlp"`
	PAP          int               `bson:"pap"`
	Date         int64             `bson:"date"`
	LastSyncDate int64             `bson:"lastSyncDate"`
	Tags         []string          `bson:"tags"`
	Read         bool              `bson:"read"`
	Follow       bool              `bson:"follow"`
	Status       string            `bson:"status"`
	CustomFields map[string]bson.M `bson:"customFields"`
	Template     *string           `bson:"caseTemplate"`
	Observables  []string          `bson:"observables"`
	CreatedAt    int64             `bson:"createdAt"`
	CreatedBy    string            `bson:"createdBy"`
	UpdatedAt    *int64            `bson:"updatedAt"`
	UpdatedBy    string            `bson:"updatedBy,omitempty"`
}

func toAlertDoc(a cases.Alert) alertDoc {
	tags, obs := a.Tags, a.Observables
	if tags == nil {
		tags = []string{}
	}
	if obs == nil {
		obs = []string{}
	}
	return alertDoc{ID: a.ID, Org: a.Org, Type: a.Type, Source: a.Source, SourceRef: a.SourceRef,
		ExternalLink: nullString(a.ExternalLink), CaseID: nullString(a.CaseID), Title: a.Title,
		Description: a.Description, Severity: a.Severity, TLP: a.TLP, PAP: a.PAP, Date: mongox.Millis(a.Date),
		LastSyncDate: mongox.Millis(a.LastSyncDate), Tags: tags, Read: a.Read, Follow: a.Follow, Status: a.Status(),
		CustomFields: encodeCustom(a.CustomFields), Template: nullString(a.Template), Observables: obs,
		CreatedAt: mongox.Millis(a.CreatedAt), CreatedBy: a.CreatedBy}
}

func (d alertDoc) alert() cases.Alert {
	return cases.Alert{ID: d.ID, Org: d.Org, Type: d.Type, Source: d.Source, SourceRef: d.SourceRef,
		ExternalLink: stringOf(d.ExternalLink), CaseID: stringOf(d.CaseID), Title: d.Title, Description: d.Description,
		Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, Date: mongox.Time(d.Date), LastSyncDate: mongox.Time(d.LastSyncDate),
		Tags: d.Tags, Read: d.Read, Follow: d.Follow, CustomFields: decodeCustom(d.CustomFields),
		Template: stringOf(d.Template), Observables: d.Observables,
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateAlert inserts an alert; a taken _id is ErrAlertExists.
func (s *AlertStore) CreateAlert(ctx context.Context, a cases.Alert) error {
	_, err := s.coll.InsertOne(ctx, toAlertDoc(a))
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create alert: %w", cases.ErrAlertExists)
	}
	if err != nil {
		return fmt.Errorf("create alert: %w", err)
	}
	return nil
}

// Alert finds an alert by id.
func (s *AlertStore) Alert(ctx context.Context, id string) (cases.Alert, error) {
	var d alertDoc
	if err := findOne(ctx, s.coll, byID(id), &d, cases.ErrAlertNotFound); err != nil {
		return cases.Alert{}, err
	}
	return d.alert(), nil
}

// Alerts lists alerts.
func (s *AlertStore) Alerts(ctx context.Context, f search.Node, p search.Page) ([]cases.Alert, int64, error) {
	var docs []alertDoc
	total, err := mongox.FindPage(ctx, s.coll, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Alert, len(docs))
	for i, d := range docs {
		out[i] = d.alert()
	}
	return out, total, nil
}

// UpdateAlert writes the named fields of a; read, case and status change only through SetAlertState.
func (s *AlertStore) UpdateAlert(ctx context.Context, a cases.Alert, fields []string, by string, at time.Time) (cases.Alert, error) {
	d := toAlertDoc(a)
	values := map[string]any{"title": d.Title, "description": d.Description, "externalLink": d.ExternalLink,
		"severity": d.Severity, "tlp": d.TLP, "pap": d.PAP, "date": d.Date, "lastSyncDate": d.LastSyncDate,
		"tags": d.Tags, "follow": d.Follow, "customFields": d.CustomFields, "caseTemplate": d.Template}
	set := stamp(by, at)
	seen := map[string]bool{}
	for _, f := range fields {
		v, ok := values[f]
		if !ok {
			return cases.Alert{}, fmt.Errorf("update alert: unknown field %q", f)
		}
		if !seen[f] {
			seen[f] = true
			set = append(set, bson.E{Key: f, Value: v})
		}
	}
	var out alertDoc
	if err := findOneAndSet(ctx, s.coll, byID(a.ID), set, &out, cases.ErrAlertNotFound); err != nil {
		return cases.Alert{}, err
	}
	return out.alert(), nil
}

// SetAlertState is a compare-and-set of case and read, with the status derived from the new values: one
// update of one document, atomic on MongoDB and on the embedded engine.
func (s *AlertStore) SetAlertState(ctx context.Context, id, expectCase string, expectRead *bool, to cases.AlertState, by string, at time.Time) (cases.Alert, bool, error) {
	filter := bson.D{{Key: "_id", Value: id}, {Key: cases.PathCaseID, Value: nullString(expectCase)}}
	if expectRead != nil {
		filter = append(filter, bson.E{Key: "read", Value: *expectRead})
	}
	set := append(stamp(by, at), bson.E{Key: cases.PathCaseID, Value: nullString(to.Case)},
		bson.E{Key: "read", Value: to.Read}, bson.E{Key: "status", Value: cases.AlertStatus(to.Read, to.Case)})
	var out alertDoc
	err := s.coll.FindOneAndUpdate(ctx, filter, bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		if _, err := s.Alert(ctx, id); err != nil {
			return cases.Alert{}, false, err
		}
		return cases.Alert{}, false, nil
	}
	if err != nil {
		return cases.Alert{}, false, fmt.Errorf("set state of alert %s: %w", id, err)
	}
	return out.alert(), true, nil
}

// AddAlertObservables adds observable ids to an alert's list.
func (s *AlertStore) AddAlertObservables(ctx context.Context, id string, observableIDs []string) error {
	_, err := s.coll.UpdateOne(ctx, byID(id), bson.D{{Key: "$addToSet", Value: bson.D{
		{Key: "observables", Value: bson.D{{Key: "$each", Value: observableIDs}}}}}})
	if err != nil {
		return fmt.Errorf("list observables of alert %s: %w", id, err)
	}
	return nil
}

// RemoveAlertObservable removes an observable id from an alert's list.
func (s *AlertStore) RemoveAlertObservable(ctx context.Context, id, observableID string) error {
	_, err := s.coll.UpdateOne(ctx, byID(id), bson.D{{Key: "$pull", Value: bson.D{{Key: "observables", Value: observableID}}}})
	if err != nil {
		return fmt.Errorf("unlist observable of alert %s: %w", id, err)
	}
	return nil
}

// DeleteAlert removes an alert.
func (s *AlertStore) DeleteAlert(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete alert %s: %w", id, err)
	}
	return nil
}
