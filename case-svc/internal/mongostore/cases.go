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

// caseCounter is the _id of the case number sequence in the counters collection.
const caseCounter = "caseNumber"

// CaseStore keeps cases and the case number sequence: a counter document found by _id and incremented
// atomically, backed by a unique index on the number.
type CaseStore struct {
	cases    *mongo.Collection
	counters *mongo.Collection
}

var _ cases.CaseStore = (*CaseStore)(nil)

// NewCaseStore returns the store, creates its indexes and makes sure the sequence starts after the highest
// existing number (a restored or migrated database).
func NewCaseStore(ctx context.Context, db *mongox.DB) (*CaseStore, error) {
	s := &CaseStore{cases: db.Collection("cases"), counters: db.Collection("counters")}
	err := mongox.EnsureIndexes(ctx, s.cases,
		mongox.Index{Name: "caseId", Keys: bson.D{{Key: "caseId", Value: 1}}, Unique: true},
		mongox.Index{Name: "organisation_caseId", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "caseId", Value: -1}}},
		mongox.Index{Name: "organisation_status", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "status", Value: 1}}},
		mongox.Index{Name: "organisation_startDate", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "startDate", Value: -1}}},
	)
	if err != nil {
		return nil, err
	}
	if err := s.counters.FindOne(ctx, byID(caseCounter)).Err(); errors.Is(err, mongo.ErrNoDocuments) {
		var top struct {
			Number int64 `bson:"caseId"`
		}
		err := s.cases.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "caseId", Value: -1}})).Decode(&top)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, fmt.Errorf("find the highest case number: %w", err)
		}
		_, err = s.counters.InsertOne(ctx, bson.D{{Key: "_id", Value: caseCounter}, {Key: "seq", Value: top.Number}})
		if err != nil && !mongox.IsDuplicate(err) { // another replica made it first
			return nil, fmt.Errorf("create the case number sequence: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("find the case number sequence: %w", err)
	}
	return s, nil
}

type caseDoc struct {
	ID               string            `bson:"_id"`
	Org              string            `bson:"organisation"`
	Number           int64             `bson:"caseId"`
	Title            string            `bson:"title"`
	Description      string            `bson:"description"`
	Severity         int               `bson:"severity"`
	TLP              int               `bson:"tlp"`
	PAP              int               `bson:"pap"`
	StartDate        int64             `bson:"startDate"`
	EndDate          *int64            `bson:"endDate"`
	ImpactStatus     *string           `bson:"impactStatus"`
	ResolutionStatus *string           `bson:"resolutionStatus"`
	Summary          *string           `bson:"summary"`
	Tags             []string          `bson:"tags"`
	Flag             bool              `bson:"flag"`
	Status           string            `bson:"status"`
	Owner            *string           `bson:"owner"`
	CustomFields     map[string]bson.M `bson:"customFields"`
	Template         *string           `bson:"caseTemplate"`
	CreatedAt        int64             `bson:"createdAt"`
	CreatedBy        string            `bson:"createdBy"`
	UpdatedAt        *int64            `bson:"updatedAt"`
	UpdatedBy        string            `bson:"updatedBy,omitempty"`
}

func toCaseDoc(c cases.Case) caseDoc {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	return caseDoc{ID: c.ID, Org: c.Org, Number: c.Number, Title: c.Title, Description: c.Description,
		Severity: c.Severity, TLP: c.TLP, PAP: c.PAP, StartDate: mongox.Millis(c.StartDate), EndDate: nullMillis(c.EndDate),
		ImpactStatus: nullString(c.ImpactStatus), ResolutionStatus: nullString(c.ResolutionStatus),
		Summary: nullString(c.Summary), Tags: tags, Flag: c.Flag, Status: c.Status, Owner: nullString(c.Owner),
		CustomFields: encodeCustom(c.CustomFields), Template: nullString(c.Template),
		CreatedAt: mongox.Millis(c.CreatedAt), CreatedBy: c.CreatedBy}
}

func (d caseDoc) toCase() cases.Case {
	return cases.Case{ID: d.ID, Org: d.Org, Number: d.Number, Title: d.Title, Description: d.Description,
		Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, StartDate: mongox.Time(d.StartDate), EndDate: timeOf(d.EndDate),
		ImpactStatus: stringOf(d.ImpactStatus), ResolutionStatus: stringOf(d.ResolutionStatus),
		Summary: stringOf(d.Summary), Tags: d.Tags, Flag: d.Flag, Status: d.Status, Owner: stringOf(d.Owner),
		CustomFields: decodeCustom(d.CustomFields), Template: stringOf(d.Template),
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
			UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

// NextCaseNumber increments the sequence document (found by _id) and returns the new value. One update on one
// document is atomic on MongoDB, and on the embedded engine, whose single connection serializes writes.
func (s *CaseStore) NextCaseNumber(ctx context.Context) (int64, error) {
	var d struct {
		Seq int64 `bson:"seq"`
	}
	err := s.counters.FindOneAndUpdate(ctx, byID(caseCounter), bson.D{{Key: "$inc", Value: bson.D{{Key: "seq", Value: int64(1)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&d)
	if err != nil {
		return 0, fmt.Errorf("next case number: %w", err)
	}
	return d.Seq, nil
}

// CreateCase inserts a case.
func (s *CaseStore) CreateCase(ctx context.Context, c cases.Case) error {
	if _, err := s.cases.InsertOne(ctx, toCaseDoc(c)); err != nil {
		return fmt.Errorf("create case %d: %w", c.Number, err)
	}
	return nil
}

// Case finds a case by id.
func (s *CaseStore) Case(ctx context.Context, id string) (cases.Case, error) {
	var d caseDoc
	if err := findOne(ctx, s.cases, byID(id), &d, cases.ErrCaseNotFound); err != nil {
		return cases.Case{}, err
	}
	return d.toCase(), nil
}

// Cases lists cases.
func (s *CaseStore) Cases(ctx context.Context, f search.Node, p search.Page) ([]cases.Case, int64, error) {
	var docs []caseDoc
	total, err := mongox.FindPage(ctx, s.cases, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Case, len(docs))
	for i, d := range docs {
		out[i] = d.toCase()
	}
	return out, total, nil
}

// caseField maps a domain field name to its stored key and value.
func caseField(d caseDoc, name string) (bson.E, bool) {
	v, ok := map[string]any{
		"title": d.Title, "description": d.Description, "severity": d.Severity, "tlp": d.TLP, "pap": d.PAP,
		"startDate": d.StartDate, "endDate": d.EndDate, "impactStatus": d.ImpactStatus,
		"resolutionStatus": d.ResolutionStatus, "summary": d.Summary, "tags": d.Tags, "flag": d.Flag,
		"status": d.Status, "owner": d.Owner, "customFields": d.CustomFields,
	}[name]
	return bson.E{Key: name, Value: v}, ok
}

// UpdateCase writes the named fields of c.
func (s *CaseStore) UpdateCase(ctx context.Context, c cases.Case, fields []string, by string, at time.Time) (cases.Case, error) {
	d := toCaseDoc(c)
	set := stamp(by, at)
	seen := map[string]bool{}
	for _, f := range fields {
		e, ok := caseField(d, f)
		if !ok {
			return cases.Case{}, fmt.Errorf("update case: unknown field %q", f)
		}
		if !seen[f] {
			seen[f] = true
			set = append(set, e)
		}
	}
	var out caseDoc
	if err := findOneAndSet(ctx, s.cases, bson.D{{Key: "_id", Value: c.ID}, {Key: cases.PathOrg, Value: c.Org}},
		set, &out, cases.ErrCaseNotFound); err != nil {
		return cases.Case{}, err
	}
	return out.toCase(), nil
}

// DeleteCase removes a case.
func (s *CaseStore) DeleteCase(ctx context.Context, id string) error {
	if _, err := s.cases.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete case %s: %w", id, err)
	}
	return nil
}
