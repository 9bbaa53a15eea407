package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// TemplateStore keeps case templates; a unique index holds the (organisation, name) pair.
type TemplateStore struct {
	coll *mongo.Collection
}

var _ cases.TemplateStore = (*TemplateStore)(nil)

// NewTemplateStore returns the store and creates its unique index.
func NewTemplateStore(ctx context.Context, db *mongox.DB) (*TemplateStore, error) {
	s := &TemplateStore{coll: db.Collection("caseTemplates")}
	if err := mongox.EnsureIndexes(ctx, s.coll, mongox.Index{Name: "organisation_name",
		Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "name", Value: 1}}, Unique: true}); err != nil {
		return nil, err
	}
	return s, nil
}

type templateTaskDoc struct {
	Title       string `bson:"title"`
	Group       string `bson:"group"`
	Description string `bson:"description"`
	Owner       string `bson:"owner,omitempty"`
	Flag        bool   `bson:"flag"`
	Order       int    `bson:"order"`
}

type templateDoc struct {
	ID           string            `bson:"_id"`
	Org          string            `bson:"organisation"`
	Name         string            `bson:"name"`
	DisplayName  string            `bson:"displayName"`
	TitlePrefix  string            `bson:"titlePrefix"`
	Description  string            `bson:"description"`
	Summary      string            `bson:"summary"`
	Severity     *int              `bson:"severity"`
	TLP          *int              `bson:"tlp"`
	PAP          *int              `bson:"pap"`
	Tags         []string          `bson:"tags"`
	Flag         bool              `bson:"flag"`
	Tasks        []templateTaskDoc `bson:"tasks"`
	CustomFields map[string]bson.M `bson:"customFields"`
	CreatedAt    int64             `bson:"createdAt"`
	CreatedBy    string            `bson:"createdBy"`
	UpdatedAt    *int64            `bson:"updatedAt"`
	UpdatedBy    string            `bson:"updatedBy,omitempty"`
}

func toTemplateDoc(t cases.Template) templateDoc {
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
		CreatedAt: mongox.Millis(t.CreatedAt), CreatedBy: t.CreatedBy}
}

func (d templateDoc) template() cases.Template {
	tasks := make([]cases.TemplateTask, len(d.Tasks))
	for i, k := range d.Tasks {
		tasks[i] = cases.TemplateTask{Title: k.Title, Group: k.Group, Description: k.Description, Owner: k.Owner,
			Flag: k.Flag, Order: k.Order}
	}
	return cases.Template{ID: d.ID, Org: d.Org, Name: d.Name, DisplayName: d.DisplayName, TitlePrefix: d.TitlePrefix,
		Description: d.Description, Summary: d.Summary, Severity: d.Severity, TLP: d.TLP, PAP: d.PAP, Tags: d.Tags,
		Flag: d.Flag, Tasks: tasks, CustomFields: decodeCustom(d.CustomFields),
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateTemplate inserts a template; the unique index refuses a name the organisation already uses.
func (s *TemplateStore) CreateTemplate(ctx context.Context, t cases.Template) error {
	_, err := s.coll.InsertOne(ctx, toTemplateDoc(t))
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create template %s: %w", t.Name, cases.ErrTemplateExists)
	}
	if err != nil {
		return fmt.Errorf("create template %s: %w", t.Name, err)
	}
	return nil
}

// Template finds a template by id.
func (s *TemplateStore) Template(ctx context.Context, id string) (cases.Template, error) {
	var d templateDoc
	if err := findOne(ctx, s.coll, byID(id), &d, cases.ErrTemplateNotFound); err != nil {
		return cases.Template{}, err
	}
	return d.template(), nil
}

// TemplateByName finds a template by organisation and name.
func (s *TemplateStore) TemplateByName(ctx context.Context, org, name string) (cases.Template, error) {
	var d templateDoc
	err := findOne(ctx, s.coll, bson.D{{Key: cases.PathOrg, Value: org}, {Key: "name", Value: name}}, &d, cases.ErrTemplateNotFound)
	if err != nil {
		return cases.Template{}, err
	}
	return d.template(), nil
}

// Templates lists templates.
func (s *TemplateStore) Templates(ctx context.Context, f search.Node, p search.Page) ([]cases.Template, int64, error) {
	var docs []templateDoc
	total, err := mongox.FindPage(ctx, s.coll, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Template, len(docs))
	for i, d := range docs {
		out[i] = d.template()
	}
	return out, total, nil
}

// UpdateTemplate writes every mutable field of t.
func (s *TemplateStore) UpdateTemplate(ctx context.Context, t cases.Template, by string, at time.Time) (cases.Template, error) {
	d := toTemplateDoc(t)
	set := append(stamp(by, at),
		bson.E{Key: "name", Value: d.Name}, bson.E{Key: "displayName", Value: d.DisplayName},
		bson.E{Key: "titlePrefix", Value: d.TitlePrefix}, bson.E{Key: "description", Value: d.Description},
		bson.E{Key: "summary", Value: d.Summary}, bson.E{Key: "severity", Value: d.Severity},
		bson.E{Key: "tlp", Value: d.TLP}, bson.E{Key: "pap", Value: d.PAP}, bson.E{Key: "tags", Value: d.Tags},
		bson.E{Key: "flag", Value: d.Flag}, bson.E{Key: "tasks", Value: d.Tasks},
		bson.E{Key: "customFields", Value: d.CustomFields})
	var out templateDoc
	err := findOneAndSet(ctx, s.coll, bson.D{{Key: "_id", Value: t.ID}, {Key: cases.PathOrg, Value: t.Org}}, set, &out,
		cases.ErrTemplateNotFound)
	if mongox.IsDuplicate(err) {
		return cases.Template{}, fmt.Errorf("update template %s: %w", t.Name, cases.ErrTemplateExists)
	}
	if err != nil {
		return cases.Template{}, err
	}
	return out.template(), nil
}

// DeleteTemplate removes a template.
func (s *TemplateStore) DeleteTemplate(ctx context.Context, id string) error {
	if _, err := s.coll.DeleteOne(ctx, byID(id)); err != nil {
		return fmt.Errorf("delete template %s: %w", id, err)
	}
	return nil
}
