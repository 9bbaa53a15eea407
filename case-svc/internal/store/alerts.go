package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// AlertStore keeps alerts. An alert's _id derives from its organisation, type, source and sourceRef, so the
// uniqueness of that key is the _id's. Its status is stored beside read and case, always written with them,
// so lists filter and sort on it.
type AlertStore struct {
	coll *docstore.Collection
}

var _ cases.AlertStore = (*AlertStore)(nil)

// alertSpec: the alert list of an organisation in its default order (_id) and by date, by status, the alerts
// of a case.
var alertSpec = docstore.Spec{Name: "alerts", Arrays: []string{"tags", "observables"}, Tallies: []docstore.Tally{
	// X-Total of the usual alert lists (status, read, severity within the organisation), on SQLite.
	{Name: "list", Paths: []string{record.PathOrg, "status", "read", "severity"}},
}, Indexes: []docstore.Index{
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "organisation_date", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Desc("date")}},
	{Name: "organisation_status__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Asc("_id")}},
	{Name: "organisation_status_date", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Desc("date")}},
	{Name: "case_organisation__id", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID), docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
}}

// NewAlertStore returns the store and creates the indexes its lists use.
func NewAlertStore(ctx context.Context, db *docstore.DB) (*AlertStore, error) {
	coll, err := db.Collection(ctx, alertSpec)
	if err != nil {
		return nil, err
	}
	return &AlertStore{coll: coll}, nil
}

type alertDoc struct {
	ID           string    `json:"_id"`
	Org          string    `json:"organisation"`
	Type         string    `json:"type"`
	Source       string    `json:"source"`
	SourceRef    string    `json:"sourceRef"`
	ExternalLink *string   `json:"externalLink"`
	CaseID       *string   `json:"case"`
	Title        string    `json:"title"`
	Description  string    `json:"description"`
	Severity     int       `json:"severity"`
	TLP          int       `json:"tlp"`
	PAP          int       `json:"pap"`
	Date         int64     `json:"date"`
	LastSyncDate int64     `json:"lastSyncDate"`
	Tags         []string  `json:"tags"`
	Read         bool      `json:"read"`
	Follow       bool      `json:"follow"`
	Status       string    `json:"status"`
	CustomFields customDoc `json:"customFields"`
	Template     *string   `json:"caseTemplate"`
	Observables  []string  `json:"observables"`
	CreatedAt    int64     `json:"createdAt"`
	CreatedBy    string    `json:"createdBy"`
	UpdatedAt    *int64    `json:"updatedAt"`
	UpdatedBy    string    `json:"updatedBy,omitempty"`
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
		Description: a.Description, Severity: a.Severity, TLP: a.TLP, PAP: a.PAP, Date: docstore.Millis(a.Date),
		LastSyncDate: docstore.Millis(a.LastSyncDate), Tags: tags, Read: a.Read, Follow: a.Follow, Status: a.Status(),
		CustomFields: encodeCustom(a.CustomFields), Template: nullString(a.Template), Observables: obs,
		CreatedAt: docstore.Millis(a.CreatedAt), CreatedBy: a.CreatedBy}
}

func (d alertDoc) alert() cases.Alert {
	return cases.Alert{ID: d.ID, Org: d.Org, Type: d.Type, Source: d.Source, SourceRef: d.SourceRef,
		ExternalLink: stringOf(d.ExternalLink), CaseID: stringOf(d.CaseID), Title: d.Title, Description: d.Description,
		Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, Date: docstore.Time(d.Date), LastSyncDate: docstore.Time(d.LastSyncDate),
		Tags: d.Tags, Read: d.Read, Follow: d.Follow, CustomFields: decodeCustom(d.CustomFields),
		Template: stringOf(d.Template), Observables: d.Observables,
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateAlert inserts an alert; a taken _id is ErrAlertExists.
func (s *AlertStore) CreateAlert(ctx context.Context, a cases.Alert) error {
	err := s.coll.Insert(ctx, toAlertDoc(a))
	if docstore.IsDuplicate(err) {
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
	if err := get(ctx, s.coll, id, &d, cases.ErrAlertNotFound); err != nil {
		return cases.Alert{}, err
	}
	return d.alert(), nil
}

// Alerts lists alerts.
func (s *AlertStore) Alerts(ctx context.Context, f search.Node, p search.Page) ([]cases.Alert, int64, error) {
	return page(ctx, s.coll, f, p, alertDoc.alert)
}

// UpdateAlert writes the named fields of a; read, case and status change only through SetAlertState.
func (s *AlertStore) UpdateAlert(ctx context.Context, a cases.Alert, fields []string, by string, at time.Time) (cases.Alert, error) {
	d := toAlertDoc(a)
	values := map[string]any{"title": d.Title, "description": d.Description, "externalLink": d.ExternalLink,
		"severity": d.Severity, "tlp": d.TLP, "pap": d.PAP, "date": d.Date, "lastSyncDate": d.LastSyncDate,
		"tags": d.Tags, "follow": d.Follow, "customFields": d.CustomFields, "caseTemplate": d.Template}
	u, err := setFields(stamp(by, at), "alert", values, fields)
	if err != nil {
		return cases.Alert{}, err
	}
	var out alertDoc
	if err := findOneAndUpdate(ctx, s.coll, docstore.ID(a.ID), u, &out, cases.ErrAlertNotFound); err != nil {
		return cases.Alert{}, err
	}
	return out.alert(), nil
}

// SetAlertState is a compare-and-set of case and read, with the status derived from the new values: one
// update of one document, atomic on both engines.
func (s *AlertStore) SetAlertState(ctx context.Context, id, expectCase string, expectRead *bool, to cases.AlertState, by string, at time.Time) (cases.Alert, bool, error) {
	conds := []search.Node{docstore.ID(id), docstore.Eq(cases.PathCaseID, nullString(expectCase))}
	if expectRead != nil {
		conds = append(conds, docstore.Eq("read", *expectRead))
	}
	u := stamp(by, at).Set(cases.PathCaseID, nullString(to.Case)).Set("read", to.Read).
		Set("status", cases.AlertStatus(to.Read, to.Case))
	var out alertDoc
	err := s.coll.FindOneAndUpdate(ctx, docstore.And(conds...), nil, u, docstore.FindAndUpdate{}, &out)
	if errors.Is(err, docstore.ErrNotFound) {
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
	if len(observableIDs) == 0 {
		return nil
	}
	items := make([]any, len(observableIDs))
	for i, o := range observableIDs {
		items[i] = o
	}
	if _, err := s.coll.UpdateOne(ctx, docstore.ID(id), docstore.AddToSet("observables", items...), false); err != nil {
		return fmt.Errorf("list observables of alert %s: %w", id, err)
	}
	return nil
}

// RemoveAlertObservable removes an observable id from an alert's list.
func (s *AlertStore) RemoveAlertObservable(ctx context.Context, id, observableID string) error {
	if _, err := s.coll.UpdateOne(ctx, docstore.ID(id), docstore.Pull("observables", observableID), false); err != nil {
		return fmt.Errorf("unlist observable of alert %s: %w", id, err)
	}
	return nil
}

// DeleteAlert removes an alert.
func (s *AlertStore) DeleteAlert(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete alert %s: %w", id, err)
	}
	return nil
}
