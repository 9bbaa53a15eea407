package mongostore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// ObservableStore keeps the observables of cases and alerts in one collection. Their _id derives from the
// parent and the value, so uniqueness is the _id index and creation is a plain insert. A small collection,
// fileGrants (_id = "<organisation>:<sha256>"), records which organisation holds which file, so a download
// checks access by _id.
type ObservableStore struct {
	coll   *mongo.Collection
	grants *mongo.Collection
}

var _ cases.ObservableStore = (*ObservableStore)(nil)

// NewObservableStore returns the store and creates the indexes its lists and similarity lookups use.
func NewObservableStore(ctx context.Context, db *mongox.DB) (*ObservableStore, error) {
	s := &ObservableStore{coll: db.Collection("observables"), grants: db.Collection("fileGrants")}
	err := mongox.EnsureIndexes(ctx, s.coll,
		mongox.Index{Name: "organisation_key", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "key", Value: 1}}},
		mongox.Index{Name: "case_startDate", Keys: bson.D{{Key: cases.PathCaseID, Value: 1}, {Key: "startDate", Value: -1}}},
		mongox.Index{Name: "alert", Keys: bson.D{{Key: cases.PathAlertID, Value: 1}}},
		mongox.Index{Name: "organisation_createdAt", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "createdAt", Value: -1}}},
	)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type observableDoc struct {
	ID               string         `bson:"_id"`
	Org              string         `bson:"organisation"`
	CaseID           string         `bson:"case,omitempty"`
	AlertID          string         `bson:"alert,omitempty"`
	DataType         string         `bson:"dataType"`
	Data             *string        `bson:"data"`
	Key              string         `bson:"key"`
	Attachment       *attachmentDoc `bson:"attachment,omitempty"`
	StartDate        int64          `bson:"startDate"`
	TLP              int            `bson:"tlp"`
	Tags             []string       `bson:"tags"`
	IOC              bool           `bson:"ioc"`
	Sighted          bool           `bson:"sighted"`
	IgnoreSimilarity bool           `bson:"ignoreSimilarity"`
	Message          string         `bson:"message"`
	// Reports holds, per analyzer, its summary as JSON text: reports carry keys ("." and "$") that documents
	// may not.
	Reports   map[string]string `bson:"reports"`
	CreatedAt int64             `bson:"createdAt"`
	CreatedBy string            `bson:"createdBy"`
	UpdatedAt *int64            `bson:"updatedAt"`
	UpdatedBy string            `bson:"updatedBy,omitempty"`
}

func toObservableDoc(o cases.Observable) observableDoc {
	tags := o.Tags
	if tags == nil {
		tags = []string{}
	}
	d := observableDoc{ID: o.ID, Org: o.Org, CaseID: o.CaseID, AlertID: o.AlertID, DataType: o.DataType, Key: o.Key,
		StartDate: mongox.Millis(o.StartDate), TLP: o.TLP, Tags: tags, IOC: o.IOC, Sighted: o.Sighted,
		IgnoreSimilarity: o.IgnoreSimilarity, Message: o.Message, Reports: map[string]string{},
		CreatedAt: mongox.Millis(o.CreatedAt), CreatedBy: o.CreatedBy}
	if o.Attachment == nil {
		data := o.Data
		d.Data = &data
	} else {
		a := o.Attachment
		d.Attachment = &attachmentDoc{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	for name, v := range o.Reports {
		if b, err := json.Marshal(v); err == nil {
			d.Reports[reportKey(name)] = string(b)
		}
	}
	return d
}

func (d observableDoc) observable() cases.Observable {
	o := cases.Observable{ID: d.ID, Org: d.Org, CaseID: d.CaseID, AlertID: d.AlertID, DataType: d.DataType,
		Data: stringOf(d.Data), Key: d.Key, StartDate: mongox.Time(d.StartDate), TLP: d.TLP, Tags: d.Tags, IOC: d.IOC,
		Sighted: d.Sighted, IgnoreSimilarity: d.IgnoreSimilarity, Message: d.Message, Reports: map[string]any{},
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if a := d.Attachment; a != nil {
		o.Attachment = &cases.Attachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	for name, js := range d.Reports {
		if v, err := decodeJSON(js); err == nil {
			o.Reports[name] = v
		}
	}
	return o
}

// decodeJSON reads stored JSON text, keeping numbers exact.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// reportKey turns an analyzer name into a key usable in a document path: anything but letters, digits, "_"
// and "-" becomes "_".
func reportKey(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

type grantDoc struct {
	ID          string   `bson:"_id"`
	Name        string   `bson:"name"`
	ContentType string   `bson:"contentType"`
	Size        int64    `bson:"size"`
	Hashes      []string `bson:"hashes"`
}

// CreateObservable inserts an observable, and for a file the organisation's grant to it.
func (s *ObservableStore) CreateObservable(ctx context.Context, o cases.Observable) error {
	_, err := s.coll.InsertOne(ctx, toObservableDoc(o))
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create observable: %w", cases.ErrObservableExists)
	}
	if err != nil {
		return fmt.Errorf("create observable: %w", err)
	}
	if a := o.Attachment; a != nil {
		_, err := s.grants.InsertOne(ctx, grantDoc{ID: o.Org + ":" + a.ID, Name: a.Name, ContentType: a.ContentType,
			Size: a.Size, Hashes: a.Hashes})
		if err != nil && !mongox.IsDuplicate(err) {
			return fmt.Errorf("grant file %s: %w", a.ID, err)
		}
	}
	return nil
}

// Observable finds an observable by id.
func (s *ObservableStore) Observable(ctx context.Context, id string) (cases.Observable, error) {
	var d observableDoc
	if err := findOne(ctx, s.coll, byID(id), &d, cases.ErrObservableNotFound); err != nil {
		return cases.Observable{}, err
	}
	return d.observable(), nil
}

// Observables lists observables.
func (s *ObservableStore) Observables(ctx context.Context, f search.Node, p search.Page) ([]cases.Observable, int64, error) {
	var docs []observableDoc
	total, err := mongox.FindPage(ctx, s.coll, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Observable, len(docs))
	for i, d := range docs {
		out[i] = d.observable()
	}
	return out, total, nil
}

// UpdateObservable writes the named fields of o.
func (s *ObservableStore) UpdateObservable(ctx context.Context, o cases.Observable, fields []string, by string, at time.Time) (cases.Observable, error) {
	d := toObservableDoc(o)
	values := map[string]any{"ioc": d.IOC, "sighted": d.Sighted, "ignoreSimilarity": d.IgnoreSimilarity,
		"tags": d.Tags, "message": d.Message, "tlp": d.TLP}
	set := stamp(by, at)
	seen := map[string]bool{}
	for _, f := range fields {
		v, ok := values[f]
		if !ok {
			return cases.Observable{}, fmt.Errorf("update observable: unknown field %q", f)
		}
		if !seen[f] {
			seen[f] = true
			set = append(set, bson.E{Key: f, Value: v})
		}
	}
	var out observableDoc
	if err := findOneAndSet(ctx, s.coll, byID(o.ID), set, &out, cases.ErrObservableNotFound); err != nil {
		return cases.Observable{}, err
	}
	return out.observable(), nil
}

// AddObservableTags adds the tags an observable lacks.
func (s *ObservableStore) AddObservableTags(ctx context.Context, id string, tags []string, by string, at time.Time) error {
	_, err := s.coll.UpdateOne(ctx, byID(id), bson.D{
		{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$each", Value: tags}}}}},
		{Key: "$set", Value: stamp(by, at)},
	})
	if err != nil {
		return fmt.Errorf("tag observable %s: %w", id, err)
	}
	return nil
}

// MergeReport sets reports.<analyzer> (the name reduced to letters, digits, "_" and "-") to the summary,
// kept as JSON text. json.Number values keep their exact text.
func (s *ObservableStore) MergeReport(ctx context.Context, id, analyzer string, summary any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(summary); err != nil {
		return fmt.Errorf("encode report summary: %w", err)
	}
	res, err := s.coll.UpdateOne(ctx, byID(id), bson.D{{Key: "$set", Value: bson.D{
		{Key: "reports." + reportKey(analyzer), Value: strings.TrimSpace(buf.String())}}}})
	if err != nil {
		return fmt.Errorf("merge report into observable %s: %w", id, err)
	}
	if res.MatchedCount == 0 {
		return cases.ErrObservableNotFound
	}
	return nil
}

// DeleteObservable removes an observable.
func (s *ObservableStore) DeleteObservable(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete observable %s: %w", id, err)
	}
	return nil
}

func parentFilter(p cases.Parent) bson.D {
	if p.Alert != "" {
		return bson.D{{Key: cases.PathAlertID, Value: p.Alert}}
	}
	return bson.D{{Key: cases.PathCaseID, Value: p.Case}}
}

// DeleteParentObservables removes the observables of a case or an alert.
func (s *ObservableStore) DeleteParentObservables(ctx context.Context, p cases.Parent) error {
	if p.Alert == "" && p.Case == "" {
		return errors.New("delete observables: no parent")
	}
	if _, err := s.coll.DeleteMany(ctx, parentFilter(p)); err != nil {
		return fmt.Errorf("delete observables: %w", err)
	}
	return nil
}

// CountCaseObservables counts the observables of a case.
func (s *ObservableStore) CountCaseObservables(ctx context.Context, caseID string) (int64, error) {
	n, err := s.coll.CountDocuments(ctx, bson.D{{Key: cases.PathCaseID, Value: caseID}})
	if err != nil {
		return 0, fmt.Errorf("count observables of case %s: %w", caseID, err)
	}
	return n, nil
}

// SimilarObservables finds the case observables of an organisation with one of the keys (indexed by
// organisation and key on MongoDB).
func (s *ObservableStore) SimilarObservables(ctx context.Context, org string, keys []string) ([]cases.Observable, error) {
	cur, err := s.coll.Find(ctx, bson.D{
		{Key: cases.PathOrg, Value: org},
		{Key: "key", Value: bson.D{{Key: "$in", Value: keys}}},
		{Key: cases.PathCaseID, Value: bson.D{{Key: "$exists", Value: true}}},
		{Key: "ignoreSimilarity", Value: false},
	}, options.Find().SetProjection(bson.D{{Key: cases.PathCaseID, Value: 1}, {Key: "dataType", Value: 1},
		{Key: "ioc", Value: 1}, {Key: "key", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find similar observables: %w", err)
	}
	var docs []observableDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("find similar observables: %w", err)
	}
	out := make([]cases.Observable, len(docs))
	for i, d := range docs {
		out[i] = cases.Observable{ID: d.ID, CaseID: d.CaseID, DataType: d.DataType, IOC: d.IOC, Key: d.Key}
	}
	return out, nil
}

// CaseObservableCounts counts the observables and IOCs of cases, ignoreSimilarity ones excluded.
func (s *ObservableStore) CaseObservableCounts(ctx context.Context, caseIDs []string) (map[string]cases.ObservableCount, error) {
	out := map[string]cases.ObservableCount{}
	if len(caseIDs) == 0 {
		return out, nil
	}
	cur, err := s.coll.Find(ctx, bson.D{
		{Key: cases.PathCaseID, Value: bson.D{{Key: "$in", Value: caseIDs}}},
		{Key: "ignoreSimilarity", Value: false},
	}, options.Find().SetProjection(bson.D{{Key: cases.PathCaseID, Value: 1}, {Key: "ioc", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("count observables of cases: %w", err)
	}
	var docs []observableDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("count observables of cases: %w", err)
	}
	for _, d := range docs {
		c := out[d.CaseID]
		c.Observables++
		if d.IOC {
			c.IOCs++
		}
		out[d.CaseID] = c
	}
	return out, nil
}

// HeldFile finds the organisation's grant to a file.
func (s *ObservableStore) HeldFile(ctx context.Context, org, fileID string) (cases.Attachment, error) {
	var g grantDoc
	if err := findOne(ctx, s.grants, byID(org+":"+fileID), &g, cases.ErrAttachmentNotFound); err != nil {
		return cases.Attachment{}, err
	}
	return cases.Attachment{ID: fileID, Name: g.Name, ContentType: g.ContentType, Size: g.Size, Hashes: g.Hashes}, nil
}
