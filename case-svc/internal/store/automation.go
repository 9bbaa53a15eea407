package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// AutomationStore keeps the automation records: analyzer sets (a unique index holds the (organisation, name)
// pair).
type AutomationStore struct {
	sets *docstore.Collection
}

var _ automation.SetStore = (*AutomationStore)(nil)

// setSpec: the unique name per organisation (also the lookup by name), and the organisation's set list in its
// default order (_id).
var setSpec = docstore.Spec{Name: "analyzerSets", Arrays: []string{automation.PathSetDataTypes}, Indexes: []docstore.Index{
	{Name: "organisation_name", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("name")}, Unique: true},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
}}

// NewAutomationStore returns the store and creates its indexes.
func NewAutomationStore(ctx context.Context, db *docstore.DB) (*AutomationStore, error) {
	sets, err := db.Collection(ctx, setSpec)
	if err != nil {
		return nil, err
	}
	return &AutomationStore{sets: sets}, nil
}

// setAnalyzerDoc is one analyzer of a set. Parameters are JSON text: their keys may hold "." or "$", which
// documents may not.
type setAnalyzerDoc struct {
	DataType   string  `json:"dataType"`
	AnalysisID string  `json:"analysisId"`
	Name       string  `json:"name"`
	Parameters *string `json:"parameters"`
}

type setDoc struct {
	ID          string           `json:"_id"`
	Org         string           `json:"organisation"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	DataTypes   []string         `json:"dataTypes"`
	Analyzers   []setAnalyzerDoc `json:"analyzers"`
	CreatedAt   int64            `json:"createdAt"`
	CreatedBy   string           `json:"createdBy"`
	UpdatedAt   *int64           `json:"updatedAt"`
	UpdatedBy   string           `json:"updatedBy,omitempty"`
}

func toSetDoc(s automation.Set) (setDoc, error) {
	d := setDoc{ID: s.ID, Org: s.Org, Name: s.Name, Description: s.Description, DataTypes: []string{},
		Analyzers: []setAnalyzerDoc{}, CreatedAt: docstore.Millis(s.CreatedAt), CreatedBy: s.CreatedBy}
	for dt := range s.Analyzers {
		d.DataTypes = append(d.DataTypes, dt)
	}
	sort.Strings(d.DataTypes)
	for _, dt := range d.DataTypes {
		for _, a := range s.Analyzers[dt] {
			ad := setAnalyzerDoc{DataType: dt, AnalysisID: a.AnalysisID, Name: a.Name}
			if a.Parameters != nil {
				txt, err := encodeJSON(a.Parameters)
				if err != nil {
					return setDoc{}, fmt.Errorf("encode parameters of set %s: %w", s.ID, err)
				}
				ad.Parameters = &txt
			}
			d.Analyzers = append(d.Analyzers, ad)
		}
	}
	return d, nil
}

func (d setDoc) set() automation.Set {
	s := automation.Set{ID: d.ID, Org: d.Org, Name: d.Name, Description: d.Description, Analyzers: map[string][]automation.Analyzer{},
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
	for _, a := range d.Analyzers {
		an := automation.Analyzer{AnalysisID: a.AnalysisID, Name: a.Name}
		if a.Parameters != nil {
			if v, err := decodeJSON(*a.Parameters); err == nil {
				an.Parameters, _ = docstore.Normalize(v).(map[string]any)
			}
		}
		s.Analyzers[a.DataType] = append(s.Analyzers[a.DataType], an)
	}
	return s
}

// CreateSet inserts a set; the unique index refuses a name the organisation already uses.
func (s *AutomationStore) CreateSet(ctx context.Context, set automation.Set) error {
	d, err := toSetDoc(set)
	if err != nil {
		return err
	}
	err = s.sets.Insert(ctx, d)
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create analyzer set %s: %w", set.Name, automation.ErrSetExists)
	}
	if err != nil {
		return fmt.Errorf("create analyzer set %s: %w", set.Name, err)
	}
	return nil
}

// Set finds a set by id.
func (s *AutomationStore) Set(ctx context.Context, id string) (automation.Set, error) {
	var d setDoc
	if err := get(ctx, s.sets, id, &d, automation.ErrSetNotFound); err != nil {
		return automation.Set{}, err
	}
	return d.set(), nil
}

// SetByName finds a set by organisation and name.
func (s *AutomationStore) SetByName(ctx context.Context, org, name string) (automation.Set, error) {
	var d setDoc
	err := findOne(ctx, s.sets, docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("name", name)), &d, automation.ErrSetNotFound)
	if err != nil {
		return automation.Set{}, err
	}
	return d.set(), nil
}

// Sets lists sets.
func (s *AutomationStore) Sets(ctx context.Context, f search.Node, p search.Page) ([]automation.Set, int64, error) {
	return page(ctx, s.sets, f, p, setDoc.set)
}

// UpdateSet writes the name, description and analyzers of set.
func (s *AutomationStore) UpdateSet(ctx context.Context, set automation.Set, by string, at time.Time) (automation.Set, error) {
	d, err := toSetDoc(set)
	if err != nil {
		return automation.Set{}, err
	}
	u := stamp(by, at).Set("name", d.Name).Set("description", d.Description).Set("dataTypes", d.DataTypes).Set("analyzers", d.Analyzers)
	var out setDoc
	err = findOneAndUpdate(ctx, s.sets, docstore.And(docstore.ID(set.ID), docstore.Eq(record.PathOrg, set.Org)), u, &out, automation.ErrSetNotFound)
	if docstore.IsDuplicate(err) {
		return automation.Set{}, fmt.Errorf("update analyzer set %s: %w", set.Name, automation.ErrSetExists)
	}
	if err != nil {
		return automation.Set{}, err
	}
	return out.set(), nil
}

// DeleteSet removes a set.
func (s *AutomationStore) DeleteSet(ctx context.Context, id string) error {
	if _, err := s.sets.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete analyzer set %s: %w", id, err)
	}
	return nil
}
