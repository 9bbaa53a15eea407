package cases

import (
	"context"
	"errors"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
)

// Template is a case template of one organisation: what a case created from it starts with.
type Template struct {
	ID          string
	Org         string
	Name        string // unique in the organisation
	DisplayName string
	TitlePrefix string
	Description string
	Summary     string
	Severity    *int // nil = no default
	TLP         *int
	PAP         *int
	Tags        []string
	Flag        bool
	Tasks       []TemplateTask
	// CustomFields are the fields a case from the template gets, with their default values (or null).
	CustomFields customfield.Values
	record.Meta
}

// TemplateTask is a task a case from the template starts with.
type TemplateTask struct {
	Title       string
	Group       string
	Description string
	Owner       string
	Flag        bool
	Order       int
}

// TemplateStore persists case templates.
type TemplateStore interface {
	// CreateTemplate fails with ErrTemplateExists when the organisation has a template with that name.
	CreateTemplate(ctx context.Context, t Template) error
	// Template finds a template by id, TemplateByName by organisation and name; both fail with
	// ErrTemplateNotFound.
	Template(ctx context.Context, id string) (Template, error)
	TemplateByName(ctx context.Context, org, name string) (Template, error)
	Templates(ctx context.Context, f search.Node, p search.Page) ([]Template, int64, error)
	// UpdateTemplate replaces the template; it fails with ErrTemplateExists when the new name is taken.
	UpdateTemplate(ctx context.Context, t Template, by string, at time.Time) (Template, error)
	DeleteTemplate(ctx context.Context, id string) error
}

// TemplateFields is the allow-list of case template searches.
var TemplateFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "displayName": {Path: "displayName"},
	"titlePrefix": {Path: "titlePrefix"}, "description": {Path: "description"},
	"severity": {Path: "severity", Type: search.Number}, "tlp": {Path: "tlp", Type: search.Number},
	"pap": {Path: "pap", Type: search.Number}, "tags": {Path: "tags"}, "flag": {Path: "flag", Type: search.Bool},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
}

// TemplateInput is a template as a client writes it, on create (every field) and update (Set fields only).
type TemplateInput struct {
	Name         record.Change[string]
	DisplayName  record.Change[string]
	TitlePrefix  record.Change[string]
	Description  record.Change[string]
	Summary      record.Change[string]
	Severity     record.Change[int]
	TLP          record.Change[int]
	PAP          record.Change[int]
	Tags         record.Change[[]string]
	Flag         record.Change[bool]
	Tasks        record.Change[[]NewTask]
	CustomFields record.Change[map[string]customfield.Input]
}

// CreateTemplate creates a case template in the caller's organisation (manageCaseTemplate).
func (s *Service) CreateTemplate(ctx context.Context, c identity.Caller, in TemplateInput) (Template, error) {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return Template{}, err
	}
	now := s.clock()
	t := Template{ID: record.NewID(now), Org: c.Org, CustomFields: customfield.Values{}, Tags: []string{},
		Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	in.Name.Set = true // required: an absent name is checked like an empty one
	if err := s.applyTemplate(ctx, c, &t, in); err != nil {
		return Template{}, err
	}
	if err := s.templates.CreateTemplate(ctx, t); err != nil {
		return Template{}, err
	}
	return t, nil
}

// applyTemplate validates the input and writes it into t.
func (s *Service) applyTemplate(ctx context.Context, c identity.Caller, t *Template, in TemplateInput) error {
	var p record.Problems
	if in.Name.Set {
		if in.Name.Null {
			p.Add("name", "required")
		} else {
			p.Text("name", in.Name.V, true, record.MaxShort)
		}
		t.Name = in.Name.V
	}
	str := func(name string, ch record.Change[string], dst *string, max int) {
		if ch.Set {
			p.Text(name, ch.V, false, max)
			*dst = ch.V
		}
	}
	str("displayName", in.DisplayName, &t.DisplayName, record.MaxShort)
	str("titlePrefix", in.TitlePrefix, &t.TitlePrefix, record.MaxShort)
	str("description", in.Description, &t.Description, record.MaxDescription)
	str("summary", in.Summary, &t.Summary, record.MaxDescription)
	lvl := func(name string, ch record.Change[int], dst **int, lo, hi int) {
		switch {
		case ch.Null:
			*dst = nil
		case ch.Set:
			p.Level(name, ch.V, lo, hi)
			v := ch.V
			*dst = &v
		}
	}
	lvl("severity", in.Severity, &t.Severity, 1, 4)
	lvl("tlp", in.TLP, &t.TLP, 0, 3)
	lvl("pap", in.PAP, &t.PAP, 0, 3)
	if in.Tags.Set {
		t.Tags = record.CleanTags(&p, "tags", in.Tags.V)
	}
	if in.Flag.Set {
		t.Flag = in.Flag.V
	}
	if in.Tasks.Set {
		t.Tasks = make([]TemplateTask, 0, len(in.Tasks.V))
		for i, nt := range in.Tasks.V {
			tk := checkNewTask(&p, "tasks", nt)
			order := i
			if nt.Order != nil {
				order = *nt.Order
			}
			t.Tasks = append(t.Tasks, TemplateTask{Title: tk.Title, Group: tk.Group, Description: tk.Description,
				Owner: tk.Owner, Flag: tk.Flag, Order: order})
		}
	}
	if in.CustomFields.Set {
		defs, err := s.fields.AllCustomFields(ctx)
		if err != nil {
			return err
		}
		vals := customfield.ParseValues(&p, defs, in.CustomFields.V)
		customfield.NumberOrders(vals)
		for n, v := range vals {
			if old, ok := t.CustomFields[n]; ok && old.ID != "" {
				v.ID = old.ID
			} else {
				v.ID = record.NewID(s.clock())
			}
			vals[n] = v
		}
		t.CustomFields = vals
	}
	if err := p.Err(); err != nil {
		return err
	}
	if err := s.checkOwners(ctx, c.Org, t.Tasks); err != nil {
		return err
	}
	return nil
}

func (s *Service) checkOwners(ctx context.Context, org string, tasks []TemplateTask) error {
	for _, tk := range tasks {
		if err := s.checkOwner(ctx, "tasks", org, tk.Owner); err != nil {
			return err
		}
	}
	return nil
}

// Template returns a template of the caller's organisation by id or name.
func (s *Service) Template(ctx context.Context, c identity.Caller, idOrName string) (Template, error) {
	var t Template
	var err error
	if len(idOrName) > 0 && idOrName[0] == '~' {
		t, err = s.templates.Template(ctx, idOrName)
		if err == nil && t.Org != c.Org {
			err = ErrTemplateNotFound
		}
	} else {
		t, err = s.templates.TemplateByName(ctx, c.Org, idOrName)
	}
	return t, err
}

// Templates lists the templates of the caller's organisation.
func (s *Service) Templates(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Template, int64, error) {
	return s.templates.Templates(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// UpdateTemplate changes a template (manageCaseTemplate). Tasks and customFields, when given, replace the
// template's.
func (s *Service) UpdateTemplate(ctx context.Context, c identity.Caller, id string, in TemplateInput) (Template, error) {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return Template{}, err
	}
	t, err := s.Template(ctx, c, id)
	if err != nil {
		return Template{}, err
	}
	if err := s.applyTemplate(ctx, c, &t, in); err != nil {
		return Template{}, err
	}
	if in.Name.Set {
		other, err := s.templates.TemplateByName(ctx, c.Org, t.Name)
		if err == nil && other.ID != t.ID {
			return Template{}, ErrTemplateExists
		}
		if err != nil && !errors.Is(err, ErrTemplateNotFound) {
			return Template{}, err
		}
	}
	return s.templates.UpdateTemplate(ctx, t, c.Login, s.clock())
}

// DeleteTemplate removes a template (manageCaseTemplate); cases made from it keep what they got.
func (s *Service) DeleteTemplate(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return err
	}
	t, err := s.Template(ctx, c, id)
	if err != nil {
		return err
	}
	return s.templates.DeleteTemplate(ctx, t.ID)
}
