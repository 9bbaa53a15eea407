// Package template owns the case templates of an organisation, what a case created from one starts with: the
// types, the rules (validation, unique names, who may manage them) and the interface of the store it
// consumes. Package cases creates cases from them (Find).
package template

import (
	"context"
	"errors"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
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
	Tasks       []Task
	// CustomFields are the fields a case from the template gets, with their default values (or null).
	CustomFields customfield.Values
	record.Meta
}

// Task is a task a case from the template starts with.
type Task struct {
	Title       string
	Group       string
	Description string
	Owner       string
	Flag        bool
	Order       int
}

// Errors of case templates.
var (
	ErrNotFound = apperr.New(apperr.NotFound, "CaseTemplate not found")
	ErrExists   = apperr.New(apperr.Conflict, "a case template with this name already exists")
)

// Store persists case templates.
type Store interface {
	// CreateTemplate fails with ErrExists when the organisation has a template with that name.
	CreateTemplate(ctx context.Context, t Template) error
	// Template finds a template by id, TemplateByName by organisation and name; both fail with
	// ErrNotFound.
	Template(ctx context.Context, id string) (Template, error)
	TemplateByName(ctx context.Context, org, name string) (Template, error)
	Templates(ctx context.Context, f search.Node, p search.Page) ([]Template, int64, error)
	// UpdateTemplate replaces the template; it fails with ErrExists when the new name is taken.
	UpdateTemplate(ctx context.Context, t Template, by string, at time.Time) (Template, error)
	DeleteTemplate(ctx context.Context, id string) error
}

// Fields is the allow-list of case template searches.
var Fields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "displayName": {Path: "displayName"},
	"titlePrefix": {Path: "titlePrefix"}, "description": {Path: "description"},
	"severity": {Path: "severity", Type: search.Number}, "tlp": {Path: "tlp", Type: search.Number},
	"pap": {Path: "pap", Type: search.Number}, "tags": {Path: "tags"}, "flag": {Path: "flag", Type: search.Bool},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
}

// Input is a template as a client writes it, on create (every field) and update (Set fields only).
type Input struct {
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
	Tasks        record.Change[[]task.Input]
	CustomFields record.Change[map[string]customfield.Input]
}

// Stores are what the template service consumes.
type Stores struct {
	Templates Store
	Fields    customfield.Store
	Members   identity.Members
}

// Service holds the rules of case templates. Every method takes the caller and works in its organisation:
// another organisation's templates are not found (404).
type Service struct {
	templates Store
	fields    customfield.Store
	members   identity.Members
	now       func() time.Time
}

// NewService returns the case template service.
func NewService(st Stores, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{templates: st.Templates, fields: st.Fields, members: st.Members, now: now}
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// Create creates a case template in the caller's organisation (manageCaseTemplate).
func (s *Service) Create(ctx context.Context, c identity.Caller, in Input) (Template, error) {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return Template{}, err
	}
	now := s.clock()
	t := Template{ID: record.NewID(now), Org: c.Org, CustomFields: customfield.Values{}, Tags: []string{},
		Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	in.Name.Set = true // required: an absent name is checked like an empty one
	if err := s.apply(ctx, c, &t, in); err != nil {
		return Template{}, err
	}
	if err := s.templates.CreateTemplate(ctx, t); err != nil {
		return Template{}, err
	}
	return t, nil
}

// apply validates the input and writes it into t.
func (s *Service) apply(ctx context.Context, c identity.Caller, t *Template, in Input) error {
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
	p.ChangeFlag(nil, "flag", in.Flag, &t.Flag)
	if in.Tasks.Set {
		t.Tasks = make([]Task, 0, len(in.Tasks.V))
		for i, nt := range in.Tasks.V {
			tk := task.Check(&p, "tasks", nt)
			order := i
			if nt.Order != nil {
				order = *nt.Order
			}
			t.Tasks = append(t.Tasks, Task{Title: tk.Title, Group: tk.Group, Description: tk.Description,
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

func (s *Service) checkOwners(ctx context.Context, org string, tasks []Task) error {
	for _, tk := range tasks {
		if err := identity.CheckOwner(ctx, s.members, "tasks", org, tk.Owner); err != nil {
			return err
		}
	}
	return nil
}

// Template returns a template of the caller's organisation by id or name.
func (s *Service) Template(ctx context.Context, c identity.Caller, idOrName string) (Template, error) {
	return Find(ctx, s.templates, c.Org, idOrName)
}

// Find returns a template of the organisation by id ("~…") or name from the store; it fails with ErrNotFound.
// Cases created from a template find it so.
func Find(ctx context.Context, st Store, org, idOrName string) (Template, error) {
	var t Template
	var err error
	if len(idOrName) > 0 && idOrName[0] == '~' {
		t, err = st.Template(ctx, idOrName)
		if err == nil && t.Org != org {
			err = ErrNotFound
		}
	} else {
		t, err = st.TemplateByName(ctx, org, idOrName)
	}
	return t, err
}

// List lists the templates of the caller's organisation.
func (s *Service) List(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Template, int64, error) {
	return s.templates.Templates(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// Update changes a template (manageCaseTemplate). Tasks and customFields, when given, replace the
// template's.
func (s *Service) Update(ctx context.Context, c identity.Caller, id string, in Input) (Template, error) {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return Template{}, err
	}
	t, err := s.Template(ctx, c, id)
	if err != nil {
		return Template{}, err
	}
	if err := s.apply(ctx, c, &t, in); err != nil {
		return Template{}, err
	}
	if in.Name.Set {
		other, err := s.templates.TemplateByName(ctx, c.Org, t.Name)
		if err == nil && other.ID != t.ID {
			return Template{}, ErrExists
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Template{}, err
		}
	}
	return s.templates.UpdateTemplate(ctx, t, c.Login, s.clock())
}

// Delete removes a template (manageCaseTemplate); cases made from it keep what they got.
func (s *Service) Delete(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageCaseTemplate); err != nil {
		return err
	}
	t, err := s.Template(ctx, c, id)
	if err != nil {
		return err
	}
	return s.templates.DeleteTemplate(ctx, t.ID)
}
