package store

import (
	"context"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// TemplateStore keeps case templates; a unique index holds the (organisation, name) pair.
type TemplateStore struct {
	coll *docstore.Collection
}

var _ template.Store = (*TemplateStore)(nil)

// templateSpec: the unique name per organisation (also the lookup by name), and the organisation's template
// list in its default order (_id).
var templateSpec = docstore.Spec{Name: "caseTemplates", Arrays: []string{"tags", "tasks"}, Indexes: []docstore.Index{
	{Name: "organisation_name", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("name")}, Unique: true},
	{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
}}

// NewTemplateStore returns the store and creates its indexes.
func NewTemplateStore(ctx context.Context, db *docstore.DB) (*TemplateStore, error) {
	coll, err := db.Collection(ctx, templateSpec)
	if err != nil {
		return nil, err
	}
	return &TemplateStore{coll: coll}, nil
}

type templateTaskDoc struct {
	Title       string `json:"title"`
	Group       string `json:"group"`
	Description string `json:"description"`
	Owner       string `json:"owner,omitempty"`
	Flag        bool   `json:"flag"`
	Order       int    `json:"order"`
}

type templateDoc struct {
	ID           string            `json:"_id"`
	Org          string            `json:"organisation"`
	Name         string            `json:"name"`
	DisplayName  string            `json:"displayName"`
	TitlePrefix  string            `json:"titlePrefix"`
	Description  string            `json:"description"`
	Summary      string            `json:"summary"`
	Severity     *int              `json:"severity"`
	TLP          *int              `json:"tlp"`
	PAP          *int              `json:"pap"`
	Tags         []string          `json:"tags"`
	Flag         bool              `json:"flag"`
	Tasks        []templateTaskDoc `json:"tasks"`
	CustomFields customDoc         `json:"customFields"`
	CreatedAt    int64             `json:"createdAt"`
	CreatedBy    string            `json:"createdBy"`
	UpdatedAt    *int64            `json:"updatedAt"`
	UpdatedBy    string            `json:"updatedBy,omitempty"`
}

func toTemplateDoc(t template.Template) templateDoc {
	tasks := make([]templateTaskDoc, len(t.Tasks))
	for i, k := range t.Tasks {
		tasks[i] = templateTaskDoc{Title: k.Title, Group: k.Group, Description: k.Description, Owner: k.Owner,
			Flag: k.Flag, Order: k.Order}
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return templateDoc{ID: t.ID, Org: t.Org, Name: t.Name, DisplayName: t.DisplayName, TitlePrefix: t.TitlePrefix,
		Description: t.Description, Summary: t.Summary, Severity: t.Severity, TLP: t.TLP, PAP: t.PAP, Tags: tags,
		Flag: t.Flag, Tasks: tasks, CustomFields: encodeCustom(t.CustomFields),
		CreatedAt: docstore.Millis(t.CreatedAt), CreatedBy: t.CreatedBy}
}

func (d templateDoc) template() template.Template {
	tasks := make([]template.Task, len(d.Tasks))
	for i, k := range d.Tasks {
		tasks[i] = template.Task{Title: k.Title, Group: k.Group, Description: k.Description, Owner: k.Owner,
			Flag: k.Flag, Order: k.Order}
	}
	return template.Template{ID: d.ID, Org: d.Org, Name: d.Name, DisplayName: d.DisplayName, TitlePrefix: d.TitlePrefix,
		Description: d.Description, Summary: d.Summary, Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, Tags: d.Tags,
		Flag: d.Flag, Tasks: tasks, CustomFields: decodeCustom(d.CustomFields),
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateTemplate inserts a template; the unique index refuses a name the organisation already uses.
func (s *TemplateStore) CreateTemplate(ctx context.Context, t template.Template) error {
	err := s.coll.Insert(ctx, toTemplateDoc(t))
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create template %s: %w", t.Name, template.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create template %s: %w", t.Name, err)
	}
	return nil
}

// Template finds a template by id.
func (s *TemplateStore) Template(ctx context.Context, id string) (template.Template, error) {
	var d templateDoc
	if err := get(ctx, s.coll, id, &d, template.ErrNotFound); err != nil {
		return template.Template{}, err
	}
	return d.template(), nil
}

// TemplateByName finds a template by organisation and name.
func (s *TemplateStore) TemplateByName(ctx context.Context, org, name string) (template.Template, error) {
	var d templateDoc
	err := findOne(ctx, s.coll, docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("name", name)), &d,
		template.ErrNotFound)
	if err != nil {
		return template.Template{}, err
	}
	return d.template(), nil
}

// Templates lists templates.
func (s *TemplateStore) Templates(ctx context.Context, f search.Node, p search.Page) ([]template.Template, int64, error) {
	return page(ctx, s.coll, f, p, templateDoc.template)
}

// UpdateTemplate writes every mutable field of t.
func (s *TemplateStore) UpdateTemplate(ctx context.Context, t template.Template, by string, at time.Time) (template.Template, error) {
	d := toTemplateDoc(t)
	u := stamp(by, at).Set("name", d.Name).Set("displayName", d.DisplayName).Set("titlePrefix", d.TitlePrefix).
		Set("description", d.Description).Set("summary", d.Summary).Set("severity", d.Severity).Set("tlp", d.TLP).
		Set("pap", d.PAP).Set("tags", d.Tags).Set("flag", d.Flag).Set("tasks", d.Tasks).Set("customFields", d.CustomFields)
	var out templateDoc
	err := findOneAndUpdate(ctx, s.coll, docstore.And(docstore.ID(t.ID), docstore.Eq(record.PathOrg, t.Org)), u, &out,
		template.ErrNotFound)
	if docstore.IsDuplicate(err) {
		return template.Template{}, fmt.Errorf("update template %s: %w", t.Name, template.ErrExists)
	}
	if err != nil {
		return template.Template{}, err
	}
	return out.template(), nil
}

// DeleteTemplate removes a template.
func (s *TemplateStore) DeleteTemplate(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, docstore.ID(id)); err != nil {
		return fmt.Errorf("delete template %s: %w", id, err)
	}
	return nil
}
