package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// ObservableStore keeps the observables of cases and alerts in one collection. Their _id derives from the
// parent, the data type and the value, so the uniqueness of an observable per parent is the _id's and
// creation is a plain insert. A small collection, fileGrants (_id = "<organisation>:<sha256>"), records which
// organisation holds which file, so a download checks access by _id.
type ObservableStore struct {
	coll   *docstore.Collection
	grants *docstore.Collection
}

var _ cases.ObservableStore = (*ObservableStore)(nil)

// observableSpec: the observables of a case (default order _id, and newest first) and of an alert; the
// organisation's searches (default order _id); similar observables by key, and observables by data, across
// the organisation's cases. A parent's index holds the organisation second (see taskSpec).
var observableSpec = docstore.Spec{Name: "observables", Arrays: []string{"tags", "attachment.hashes"}, Indexes: []docstore.Index{
	{Name: "case_organisation__id", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID), docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "case_organisation_startDate", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID), docstore.Asc(record.PathOrg), docstore.Desc("startDate")}},
	{Name: "alert_organisation__id", Keys: []docstore.Key{docstore.Asc(cases.PathAlertID), docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "organisation_key", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("key")}},
	{Name: "organisation_data", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("data")}},
}}

var grantSpec = docstore.Spec{Name: "fileGrants", Arrays: []string{"hashes"}}

// NewObservableStore returns the store and creates the indexes its lists and similarity lookups use.
func NewObservableStore(ctx context.Context, db *docstore.DB) (*ObservableStore, error) {
	coll, err := db.Collection(ctx, observableSpec)
	if err != nil {
		return nil, err
	}
	grants, err := db.Collection(ctx, grantSpec)
	if err != nil {
		return nil, err
	}
	return &ObservableStore{coll: coll, grants: grants}, nil
}

type observableDoc struct {
	ID               string         `json:"_id"`
	Org              string         `json:"organisation"`
	CaseID           string         `json:"case,omitempty"`
	AlertID          string         `json:"alert,omitempty"`
	DataType         string         `json:"dataType"`
	Data             *string        `json:"data"`
	Key              string         `json:"key"`
	Attachment       *attachmentDoc `json:"attachment,omitempty"`
	StartDate        int64          `json:"startDate"`
	TLP              int            `json:"tlp"`
	Tags             []string       `json:"tags"`
	IOC              bool           `json:"ioc"`
	Sighted          bool           `json:"sighted"`
	IgnoreSimilarity bool           `json:"ignoreSimilarity"`
	Message          string         `json:"message"`
	// Reports holds, per analyzer, its summary as JSON text: reports carry keys ("." and "$") that documents
	// may not.
	Reports   map[string]string `json:"reports"`
	CreatedAt int64             `json:"createdAt"`
	CreatedBy string            `json:"createdBy"`
	UpdatedAt *int64            `json:"updatedAt"`
	UpdatedBy string            `json:"updatedBy,omitempty"`
}

func toObservableDoc(o cases.Observable) observableDoc {
	tags := o.Tags
	if tags == nil {
		tags = []string{}
	}
	d := observableDoc{ID: o.ID, Org: o.Org, CaseID: o.CaseID, AlertID: o.AlertID, DataType: o.DataType, Key: o.Key,
		StartDate: docstore.Millis(o.StartDate), TLP: o.TLP, Tags: tags, IOC: o.IOC, Sighted: o.Sighted,
		IgnoreSimilarity: o.IgnoreSimilarity, Message: o.Message, Reports: map[string]string{},
		CreatedAt: docstore.Millis(o.CreatedAt), CreatedBy: o.CreatedBy}
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
		Data: stringOf(d.Data), Key: d.Key, StartDate: docstore.Time(d.StartDate), TLP: d.TLP, Tags: d.Tags, IOC: d.IOC,
		Sighted: d.Sighted, IgnoreSimilarity: d.IgnoreSimilarity, Message: d.Message, Reports: map[string]any{},
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if a := d.Attachment; a != nil {
		o.Attachment = &record.Attachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	for name, js := range d.Reports {
		if v, err := decodeJSON(js); err == nil {
			o.Reports[name] = v
		}
	}
	return o
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
	ID          string   `json:"_id"`
	Name        string   `json:"name"`
	ContentType string   `json:"contentType"`
	Size        int64    `json:"size"`
	Hashes      []string `json:"hashes"`
}

// CreateObservable inserts an observable, and for a file the organisation's grant to it.
func (s *ObservableStore) CreateObservable(ctx context.Context, o cases.Observable) error {
	res, err := s.CreateObservables(ctx, []cases.Observable{o})
	if err != nil {
		return err
	}
	return res[0]
}

// CreateObservables inserts observables with one InsertMany, then the grants of the file observables stored
// with another.
func (s *ObservableStore) CreateObservables(ctx context.Context, obs []cases.Observable) ([]error, error) {
	docs := make([]any, len(obs))
	for i, o := range obs {
		docs[i] = toObservableDoc(o)
	}
	res, err := s.coll.InsertMany(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("create observables: %w", err)
	}
	var grants []any
	seen := map[string]bool{}
	for i, e := range res {
		switch {
		case docstore.IsDuplicate(e):
			res[i] = fmt.Errorf("create observable: %w", cases.ErrObservableExists)
			continue
		case e != nil:
			return nil, fmt.Errorf("create observable: %w", e)
		}
		if a := obs[i].Attachment; a != nil && !seen[obs[i].Org+":"+a.ID] {
			seen[obs[i].Org+":"+a.ID] = true
			grants = append(grants, grantDoc{ID: obs[i].Org + ":" + a.ID, Name: a.Name, ContentType: a.ContentType,
				Size: a.Size, Hashes: a.Hashes})
		}
	}
	gres, err := s.grants.InsertMany(ctx, grants)
	if err != nil {
		return nil, fmt.Errorf("grant files: %w", err)
	}
	for _, e := range gres {
		if e != nil && !docstore.IsDuplicate(e) {
			return nil, fmt.Errorf("grant file: %w", e)
		}
	}
	return res, nil
}

// Observable finds an observable by id.
func (s *ObservableStore) Observable(ctx context.Context, id string) (cases.Observable, error) {
	var d observableDoc
	if err := get(ctx, s.coll, id, &d, cases.ErrObservableNotFound); err != nil {
		return cases.Observable{}, err
	}
	return d.observable(), nil
}

// Observables lists observables.
func (s *ObservableStore) Observables(ctx context.Context, f search.Node, p search.Page) ([]cases.Observable, int64, error) {
	return page(ctx, s.coll, f, p, observableDoc.observable)
}

// UpdateObservable writes the named fields of o.
func (s *ObservableStore) UpdateObservable(ctx context.Context, o cases.Observable, fields []string, by string, at time.Time) (cases.Observable, error) {
	d := toObservableDoc(o)
	values := map[string]any{"ioc": d.IOC, "sighted": d.Sighted, "ignoreSimilarity": d.IgnoreSimilarity,
		"tags": d.Tags, "message": d.Message, "tlp": d.TLP}
	u, err := setFields(stamp(by, at), "observable", values, fields)
	if err != nil {
		return cases.Observable{}, err
	}
	var out observableDoc
	if err := findOneAndUpdate(ctx, s.coll, docstore.ID(o.ID), u, &out, cases.ErrObservableNotFound); err != nil {
		return cases.Observable{}, err
	}
	return out.observable(), nil
}

// AddObservableTags adds the tags an observable lacks.
func (s *ObservableStore) AddObservableTags(ctx context.Context, id string, tags []string, by string, at time.Time) error {
	items := make([]any, len(tags))
	for i, t := range tags {
		items[i] = t
	}
	if _, err := s.coll.UpdateOne(ctx, docstore.ID(id), stamp(by, at).AddToSet("tags", items...), false); err != nil {
		return fmt.Errorf("tag observable %s: %w", id, err)
	}
	return nil
}

// MergeReport sets reports.<analyzer> (the name reduced to letters, digits, "_" and "-") to the summary,
// kept as JSON text. json.Number values keep their exact text.
func (s *ObservableStore) MergeReport(ctx context.Context, id, analyzer string, summary any) error {
	js, err := encodeJSON(summary)
	if err != nil {
		return fmt.Errorf("encode report summary: %w", err)
	}
	found, err := s.coll.UpdateOne(ctx, docstore.ID(id), docstore.Set("reports."+reportKey(analyzer), js), false)
	if err != nil {
		return fmt.Errorf("merge report into observable %s: %w", id, err)
	}
	if !found {
		return cases.ErrObservableNotFound
	}
	return nil
}

// DeleteObservable removes an observable.
func (s *ObservableStore) DeleteObservable(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete observable %s: %w", id, err)
	}
	return nil
}

func parentFilter(p cases.Parent) search.Node {
	if p.Alert != "" {
		return docstore.Eq(cases.PathAlertID, p.Alert)
	}
	return docstore.Eq(cases.PathCaseID, p.Case)
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
	n, err := s.coll.Count(ctx, docstore.Eq(cases.PathCaseID, caseID))
	if err != nil {
		return 0, fmt.Errorf("count observables of case %s: %w", caseID, err)
	}
	return n, nil
}

// similarFilter selects the case observables of an organisation with one of the keys (index organisation_key).
func similarFilter(org string, keys []string) search.Node {
	return docstore.And(docstore.Eq(record.PathOrg, org), docstore.In("key", keys...), docstore.Exists(cases.PathCaseID),
		docstore.Eq("ignoreSimilarity", false))
}

// SimilarObservables finds the case observables of an organisation with one of the keys.
func (s *ObservableStore) SimilarObservables(ctx context.Context, org string, keys []string, limit int) ([]cases.Observable, error) {
	var docs []observableDoc
	if err := s.coll.Find(ctx, docstore.Query{Filter: similarFilter(org, keys),
		Fields: []string{cases.PathCaseID, "dataType", "ioc", "key"}, Limit: limit}, &docs); err != nil {
		return nil, fmt.Errorf("find similar observables: %w", err)
	}
	out := make([]cases.Observable, len(docs))
	for i, d := range docs {
		out[i] = cases.Observable{ID: d.ID, CaseID: d.CaseID, DataType: d.DataType, IOC: d.IOC, Key: d.Key}
	}
	return out, nil
}

// CountSimilar counts the case observables of an organisation with one of the keys, except the observable
// except (""), on the similarity index: no document is read.
func (s *ObservableStore) CountSimilar(ctx context.Context, org string, keys []string, except string) (int64, error) {
	f := similarFilter(org, keys)
	if except != "" {
		f = docstore.And(f, docstore.Ne("_id", except))
	}
	n, err := s.coll.Count(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("count similar observables: %w", err)
	}
	return n, nil
}

// CaseObservableCounts counts the observables and IOCs of cases, ignoreSimilarity ones excluded.
func (s *ObservableStore) CaseObservableCounts(ctx context.Context, caseIDs []string) (map[string]cases.ObservableCount, error) {
	out := map[string]cases.ObservableCount{}
	if len(caseIDs) == 0 {
		return out, nil
	}
	// Two group counts by case, side by side on two readers, evaluated in SQLite over the case index: one
	// count per case comes back instead of every observable (which took three times as long for 80 cases of
	// 10 observables).
	counted := docstore.And(docstore.In(cases.PathCaseID, caseIDs...), docstore.Eq("ignoreSimilarity", false))
	var all, iocs []docstore.Group
	var errAll, errIOCs error
	var done sync.WaitGroup
	done.Go(func() {
		iocs, errIOCs = s.coll.GroupCount(ctx, docstore.And(counted, docstore.Eq("ioc", true)), cases.PathCaseID, 0)
	})
	all, errAll = s.coll.GroupCount(ctx, counted, cases.PathCaseID, 0)
	done.Wait()
	if err := errors.Join(errAll, errIOCs); err != nil {
		return nil, fmt.Errorf("count observables of cases: %w", err)
	}
	for _, g := range all {
		if id, ok := g.Value.(string); ok {
			c := out[id]
			c.Observables = int(g.Count)
			out[id] = c
		}
	}
	for _, g := range iocs {
		if id, ok := g.Value.(string); ok {
			c := out[id]
			c.IOCs = int(g.Count)
			out[id] = c
		}
	}
	return out, nil
}

// HeldFile finds the organisation's grant to a file.
func (s *ObservableStore) HeldFile(ctx context.Context, org, fileID string) (record.Attachment, error) {
	var g grantDoc
	if err := get(ctx, s.grants, org+":"+fileID, &g, record.ErrAttachmentNotFound); err != nil {
		return record.Attachment{}, err
	}
	return record.Attachment{ID: fileID, Name: g.Name, ContentType: g.ContentType, Size: g.Size, Hashes: g.Hashes}, nil
}
