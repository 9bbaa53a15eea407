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

// caseCounter is the _id of the case id sequence in the counters collection: one sequence for all
// organisations, so that case ids ("~" and the value) stay unique. Until case numbers became per
// organisation it was also the number sequence, which is why existing cases have id "~<number>".
const caseCounter = "caseNumber"

// CaseNumberCounter is the _id of an organisation's case number sequence in the counters collection.
func CaseNumberCounter(org string) string { return caseCounter + ":" + org }

// CaseStore keeps cases and their sequences: counter documents found by _id and incremented atomically (one
// find-one-and-update, atomic on both engines), the id sequence shared by all organisations and a number
// sequence per organisation, backed by a unique index on (organisation, number).
type CaseStore struct {
	cases    *docstore.Collection
	counters *docstore.Collection
}

var _ cases.CaseStore = (*CaseStore)(nil)

// caseSpec: the unique number; the case list of an organisation in its default order (_id), by number, by
// start date (the usual order of case lists), and by status then start date (open cases, newest first); the
// count of a search by status and severity (X-Total of the usual "open cases of severity ≥ n") reads
// (organisation, status, severity) alone, without the documents (on MongoDB; on SQLite the tally, below).
var caseSpec = docstore.Spec{Name: "cases", Arrays: []string{"tags"}, Tallies: []docstore.Tally{
	// X-Total of the usual case lists (status, severity, owner, flag within the organisation) as a sum over
	// the combinations (on SQLite), whatever the number of cases.
	{Name: "list", Paths: []string{record.PathOrg, "status", "severity", "owner", "flag"}},
}, Indexes: []docstore.Index{
	{Name: "organisation_caseId_unique", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("caseId")}, Unique: true},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
	{Name: "organisation_caseId", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Desc("caseId")}},
	{Name: "organisation_startDate", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Desc("startDate")}},
	{Name: "organisation_status_startDate", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Desc("startDate")}},
	{Name: "organisation_status__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Asc("_id")}},
	{Name: "organisation_status_severity", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Asc("severity")}},
}}

var counterSpec = docstore.Spec{Name: "counters"}

type counterDoc struct {
	ID  string `json:"_id"`
	Seq int64  `json:"seq"`
}

// NewCaseStore returns the store, creates its indexes and makes sure the sequence starts after the highest
// existing number (a restored or migrated database).
func NewCaseStore(ctx context.Context, db *docstore.DB) (*CaseStore, error) {
	cs, err := db.Collection(ctx, caseSpec)
	if err != nil {
		return nil, err
	}
	counters, err := db.Collection(ctx, counterSpec)
	if err != nil {
		return nil, err
	}
	s := &CaseStore{cases: cs, counters: counters}
	// Numbers were unique across organisations; now each organisation has its own (issue 15).
	if err := cs.DropIndex(ctx, "caseId"); err != nil {
		return nil, err
	}
	var c counterDoc
	if err := counters.Get(ctx, caseCounter, &c); errors.Is(err, docstore.ErrNotFound) {
		var top struct {
			Number int64 `json:"caseId"`
		}
		err := cs.FindOne(ctx, docstore.All(), docstore.Sort("-caseId"), &top)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return nil, fmt.Errorf("find the highest case number: %w", err)
		}
		err = counters.Insert(ctx, counterDoc{ID: caseCounter, Seq: top.Number})
		if err != nil && !docstore.IsDuplicate(err) { // another replica made it first
			return nil, fmt.Errorf("create the case number sequence: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("find the case number sequence: %w", err)
	}
	return s, nil
}

type caseDoc struct {
	ID               string    `json:"_id"`
	Org              string    `json:"organisation"`
	Number           int64     `json:"caseId"`
	Title            string    `json:"title"`
	Description      string    `json:"description"`
	Severity         int       `json:"severity"`
	TLP              int       `json:"tlp"`
	PAP              int       `json:"pap"`
	StartDate        int64     `json:"startDate"`
	EndDate          *int64    `json:"endDate"`
	ImpactStatus     *string   `json:"impactStatus"`
	ResolutionStatus *string   `json:"resolutionStatus"`
	Summary          *string   `json:"summary"`
	Tags             []string  `json:"tags"`
	Flag             bool      `json:"flag"`
	Status           string    `json:"status"`
	Owner            *string   `json:"owner"`
	CustomFields     customDoc `json:"customFields"`
	Template         *string   `json:"caseTemplate"`
	CreatedAt        int64     `json:"createdAt"`
	CreatedBy        string    `json:"createdBy"`
	UpdatedAt        *int64    `json:"updatedAt"`
	UpdatedBy        string    `json:"updatedBy,omitempty"`
}

func toCaseDoc(c cases.Case) caseDoc {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	return caseDoc{ID: c.ID, Org: c.Org, Number: c.Number, Title: c.Title, Description: c.Description,
		Severity: c.Severity, TLP: c.TLP, PAP: c.PAP, StartDate: docstore.Millis(c.StartDate), EndDate: nullMillis(c.EndDate),
		ImpactStatus: nullString(c.ImpactStatus), ResolutionStatus: nullString(c.ResolutionStatus),
		Summary: nullString(c.Summary), Tags: tags, Flag: c.Flag, Status: c.Status, Owner: nullString(c.Owner),
		CustomFields: encodeCustom(c.CustomFields), Template: nullString(c.Template),
		CreatedAt: docstore.Millis(c.CreatedAt), CreatedBy: c.CreatedBy}
}

func (d caseDoc) toCase() cases.Case {
	return cases.Case{ID: d.ID, Org: d.Org, Number: d.Number, Title: d.Title, Description: d.Description,
		Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, StartDate: docstore.Time(d.StartDate), EndDate: timeOf(d.EndDate),
		ImpactStatus: stringOf(d.ImpactStatus), ResolutionStatus: stringOf(d.ResolutionStatus),
		Summary: stringOf(d.Summary), Tags: d.Tags, Flag: d.Flag, Status: d.Status, Owner: stringOf(d.Owner),
		CustomFields: decodeCustom(d.CustomFields), Template: stringOf(d.Template),
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy,
			UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

// NextCaseNumber returns the next value of the id sequence and of org's number sequence: each one atomic
// find-one-and-update on both engines, so concurrent callers never share a value. An organisation's
// sequence is made on its first case, starting after the highest number its cases have (the numbers of
// cases made before sequences were per organisation are kept).
func (s *CaseStore) NextCaseNumber(ctx context.Context, org string) (seq, number int64, err error) {
	var d counterDoc
	err = s.counters.FindOneAndUpdate(ctx, docstore.ID(caseCounter), nil, docstore.Inc("seq", 1),
		docstore.FindAndUpdate{Upsert: true}, &d)
	if err != nil {
		return 0, 0, fmt.Errorf("next case id: %w", err)
	}
	seq = d.Seq
	key := CaseNumberCounter(org)
	for range 2 {
		err = s.counters.FindOneAndUpdate(ctx, docstore.ID(key), nil, docstore.Inc("seq", 1), docstore.FindAndUpdate{}, &d)
		if err == nil {
			return seq, d.Seq, nil
		}
		if !errors.Is(err, docstore.ErrNotFound) {
			break
		}
		var top struct {
			Number int64 `json:"caseId"`
		}
		err = s.cases.FindOne(ctx, docstore.Eq(record.PathOrg, org), docstore.Sort("-caseId"), &top)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			break
		}
		err = s.counters.Insert(ctx, counterDoc{ID: key, Seq: top.Number})
		if err != nil && !docstore.IsDuplicate(err) { // a concurrent first case made it: fine
			break
		}
	}
	return 0, 0, fmt.Errorf("next case number of %s: %w", org, err)
}

// CaseByNumber returns org's case with this number; ErrCaseNotFound when there is none.
func (s *CaseStore) CaseByNumber(ctx context.Context, org string, number int64) (cases.Case, error) {
	var d caseDoc
	err := s.cases.FindOne(ctx, docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("caseId", number)), nil, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return cases.Case{}, fmt.Errorf("case %d: %w", number, cases.ErrCaseNotFound)
	}
	if err != nil {
		return cases.Case{}, err
	}
	return d.toCase(), nil
}

// CreateCase inserts a case.
func (s *CaseStore) CreateCase(ctx context.Context, c cases.Case) error {
	if err := s.cases.Insert(ctx, toCaseDoc(c)); err != nil {
		return fmt.Errorf("create case %d: %w", c.Number, err)
	}
	return nil
}

// Case finds a case by id.
func (s *CaseStore) Case(ctx context.Context, id string) (cases.Case, error) {
	var d caseDoc
	if err := get(ctx, s.cases, id, &d, cases.ErrCaseNotFound); err != nil {
		return cases.Case{}, err
	}
	return d.toCase(), nil
}

// Cases lists cases.
func (s *CaseStore) Cases(ctx context.Context, f search.Node, p search.Page) ([]cases.Case, int64, error) {
	return page(ctx, s.cases, f, p, caseDoc.toCase)
}

// UpdateCase writes the named fields of c.
func (s *CaseStore) UpdateCase(ctx context.Context, c cases.Case, fields []string, by string, at time.Time) (cases.Case, error) {
	d := toCaseDoc(c)
	values := map[string]any{
		"title": d.Title, "description": d.Description, "severity": d.Severity, "tlp": d.TLP, "pap": d.PAP,
		"startDate": d.StartDate, "endDate": d.EndDate, "impactStatus": d.ImpactStatus,
		"resolutionStatus": d.ResolutionStatus, "summary": d.Summary, "tags": d.Tags, "flag": d.Flag,
		"status": d.Status, "owner": d.Owner, "customFields": d.CustomFields,
	}
	u, err := setFields(stamp(by, at), "case", values, fields)
	if err != nil {
		return cases.Case{}, err
	}
	var out caseDoc
	if err := findOneAndUpdate(ctx, s.cases, docstore.And(docstore.ID(c.ID), docstore.Eq(record.PathOrg, c.Org)),
		u, &out, cases.ErrCaseNotFound); err != nil {
		return cases.Case{}, err
	}
	return out.toCase(), nil
}

// DeleteCase removes a case.
func (s *CaseStore) DeleteCase(ctx context.Context, id string) error {
	deleted, err := s.cases.DeleteOne(ctx, docstore.ID(id))
	if err != nil {
		return fmt.Errorf("delete case %s: %w", id, err)
	}
	if !deleted {
		return fmt.Errorf("delete case %s: %w", id, cases.ErrCaseNotFound)
	}
	return nil
}
