package cases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// FieldType is the type of a custom field's values.
type FieldType string

// The custom field types.
const (
	TypeString  FieldType = "string"
	TypeInteger FieldType = "integer"
	TypeFloat   FieldType = "float"
	TypeBoolean FieldType = "boolean"
	TypeDate    FieldType = "date"
)

// FieldTypes lists the custom field types.
func FieldTypes() []FieldType {
	return []FieldType{TypeString, TypeInteger, TypeFloat, TypeBoolean, TypeDate}
}

func validType(t FieldType) bool { return slices.Contains(FieldTypes(), t) }

// CustomField is the definition of a custom field. Definitions are global, as in the reference system: every
// organisation uses the same catalogue. Name (also called reference) is the key under which cases and
// templates hold values; it never changes.
type CustomField struct {
	ID          string
	Name        string
	DisplayName string
	Description string
	Type        FieldType
	Options     []any // allowed values, of Type (string, int64, float64, bool); empty = any value
	Mandatory   bool  // every new case must have a value for it, and no case may clear it
	record.Meta
}

// CustomValue is the value of a custom field on a case or a template: Value is nil (null) or of the field's
// type: string, int64 (integer, and date in epoch milliseconds), float64 or bool.
type CustomValue struct {
	Type  FieldType
	Value any
	Order int
	ID    string // templates only: the id of the entry, shown as _id
}

// CustomValues are a record's custom field values by field name.
type CustomValues map[string]CustomValue

// CustomInput is a custom field value as a client sends it: either {"<type>": value, "order": n} (Type set)
// or a bare value (Type ""). Value is what encoding/json produced with UseNumber.
type CustomInput struct {
	Type  string
	Value any
	Order *int
}

// CustomFieldUpdate holds the changes to a definition.
type CustomFieldUpdate struct {
	DisplayName record.Change[string]
	Description record.Change[string]
	Options     record.Change[[]any]
	Mandatory   record.Change[bool]
	Type        record.Change[string] // refused when it differs: the type never changes
}

// CustomFieldStore persists custom field definitions.
type CustomFieldStore interface {
	// CreateCustomField fails with ErrCustomFieldExists when the name is taken.
	CreateCustomField(ctx context.Context, f CustomField) error
	// CustomField finds a definition by id; CustomFieldByName by name. Both fail with ErrCustomFieldNotFound.
	CustomField(ctx context.Context, id string) (CustomField, error)
	CustomFieldByName(ctx context.Context, name string) (CustomField, error)
	CustomFields(ctx context.Context, f search.Node, p search.Page) ([]CustomField, int64, error)
	// AllCustomFields returns every definition (a small collection) by name.
	AllCustomFields(ctx context.Context) (map[string]CustomField, error)
	UpdateCustomField(ctx context.Context, f CustomField, by string, at time.Time) (CustomField, error)
	DeleteCustomField(ctx context.Context, id string) error
}

// CustomFieldFields is the allow-list of custom field searches.
var CustomFieldFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "reference": {Path: "name"},
	"displayName": {Path: "displayName"}, "description": {Path: "description"}, "type": {Path: "type"},
	"mandatory": {Path: "mandatory", Type: search.Bool},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
}

var fieldNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// NewCustomField is a request to define a custom field.
type NewCustomField struct {
	Name        string
	DisplayName string
	Description string
	Type        string
	Options     []any
	Mandatory   bool
}

// sharedDefinition allows a change to a definition every organisation shares (custom fields; profiles are
// fixed and observable types are not definitions here) to a platform administrator only, as in the
// reference system: an org-admin's manageCustomField lets it set values of any field on its cases, never
// define, make mandatory or delete a field for every organisation (issue 15).
func sharedDefinition(c identity.Caller) error {
	if c.PlatformAdmin() {
		return nil
	}
	return apperr.Errorf(apperr.Forbidden,
		"missing permission %s as a platform administrator (admin profile of the admin organisation): custom fields are shared by every organisation", identity.ManageCustomField)
}

// CreateCustomField defines a custom field (a platform administrator: see sharedDefinition).
func (s *Service) CreateCustomField(ctx context.Context, c identity.Caller, n NewCustomField) (CustomField, error) {
	if err := sharedDefinition(c); err != nil {
		return CustomField{}, err
	}
	var p record.Problems
	if !fieldNameRe.MatchString(n.Name) {
		p.Add("name", "1 to 64 letters, digits, '_' or '-', starting with a letter")
	}
	if n.DisplayName == "" {
		n.DisplayName = n.Name
	}
	p.Text("displayName", n.DisplayName, false, record.MaxShort)
	p.Text("description", n.Description, false, 4096)
	t := FieldType(n.Type)
	if !validType(t) {
		p.Add("type", "one of string, integer, float, boolean, date")
	}
	var opts []any
	if validType(t) {
		opts = checkOptions(&p, t, n.Options)
	}
	if err := p.Err(); err != nil {
		return CustomField{}, err
	}
	f := CustomField{ID: record.NewID(s.clock()), Name: n.Name, DisplayName: n.DisplayName, Description: n.Description,
		Type: t, Options: opts, Mandatory: n.Mandatory, Meta: record.Meta{CreatedAt: s.clock(), CreatedBy: c.Login}}
	if err := s.fields.CreateCustomField(ctx, f); err != nil {
		return CustomField{}, err
	}
	return f, nil
}

func checkOptions(p *record.Problems, t FieldType, in []any) []any {
	if len(in) > 1000 { // before any work: the deduplication below is quadratic
		p.Add("options", "at most 1000 options")
		return nil
	}
	out := make([]any, 0, len(in))
	for _, o := range in {
		v, err := convert(t, o)
		if err != nil || v == nil {
			p.Add("options", "every option must be a %s", t)
			return nil
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) > 1000 {
		p.Add("options", "at most 1000 options")
	}
	return out
}

// CustomField returns a definition by id or name (any authenticated user).
func (s *Service) CustomField(ctx context.Context, _ identity.Caller, idOrName string) (CustomField, error) {
	if len(idOrName) > 0 && idOrName[0] == '~' {
		return s.fields.CustomField(ctx, idOrName)
	}
	return s.fields.CustomFieldByName(ctx, idOrName)
}

// CustomFields lists the definitions (any authenticated user).
func (s *Service) CustomFields(ctx context.Context, _ identity.Caller, f search.Node, p search.Page) ([]CustomField, int64, error) {
	return s.fields.CustomFields(ctx, f, p)
}

// UpdateCustomField changes a definition's display name, description, options or mandatory flag
// (a platform administrator). Values already on cases are kept as they are.
func (s *Service) UpdateCustomField(ctx context.Context, c identity.Caller, id string, u CustomFieldUpdate) (CustomField, error) {
	if err := sharedDefinition(c); err != nil {
		return CustomField{}, err
	}
	f, err := s.CustomField(ctx, c, id)
	if err != nil {
		return CustomField{}, err
	}
	var p record.Problems
	if u.Type.Set && FieldType(u.Type.V) != f.Type {
		p.Add("type", "read-only")
	}
	if u.DisplayName.Set {
		p.Text("displayName", u.DisplayName.V, true, record.MaxShort)
		f.DisplayName = u.DisplayName.V
	}
	if u.Description.Set {
		p.Text("description", u.Description.V, false, 4096)
		f.Description = u.Description.V
	}
	if u.Options.Set {
		f.Options = checkOptions(&p, f.Type, u.Options.V)
	}
	if u.Mandatory.Set {
		f.Mandatory = u.Mandatory.V
	}
	if err := p.Err(); err != nil {
		return CustomField{}, err
	}
	return s.fields.UpdateCustomField(ctx, f, c.Login, s.clock())
}

// DeleteCustomField removes a definition (a platform administrator). Values on cases and templates stay as
// they are, but can no longer be set.
func (s *Service) DeleteCustomField(ctx context.Context, c identity.Caller, id string) error {
	if err := sharedDefinition(c); err != nil {
		return err
	}
	f, err := s.CustomField(ctx, c, id)
	if err != nil {
		return err
	}
	return s.fields.DeleteCustomField(ctx, f.ID)
}

// convert checks that v (from encoding/json with UseNumber, or already converted) is a value of type t and
// returns it in its stored form; nil stays nil.
func convert(t FieldType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := fmt.Errorf("expected a %s", t)
	switch t {
	case TypeString:
		if s, ok := v.(string); ok {
			if len(s) > record.MaxDescription {
				return nil, errors.New("too long")
			}
			return s, nil
		}
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case TypeInteger, TypeDate:
		switch n := v.(type) {
		case json.Number:
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return i, nil
			}
			if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return int64(f), nil
			}
		case int64:
			return n, nil
		case int:
			return int64(n), nil
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int64(n), nil
			}
		}
	case TypeFloat:
		switch n := v.(type) {
		case json.Number:
			if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) {
				return f, nil
			}
		case float64:
			return n, nil
		case int64:
			return float64(n), nil
		case int:
			return float64(n), nil
		}
	}
	return nil, bad
}

// customValues validates the values a client sends against the definitions: the field must be defined, the
// value of its type (a typed object must name that type), and one of its options when it has some.
func customValues(p *record.Problems, defs map[string]CustomField, in map[string]CustomInput) CustomValues {
	out := CustomValues{}
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ci := in[name]
		field := "customFields." + name
		if len(name) > 64 {
			field = "customFields"
		}
		def, ok := defs[name]
		if !ok {
			p.Add(field, "unknown custom field")
			continue
		}
		if ci.Type != "" && FieldType(ci.Type) != def.Type {
			p.Add(field, "the field is of type %s", def.Type)
			continue
		}
		v, err := convert(def.Type, ci.Value)
		if err != nil {
			p.Add(field, "%v", err)
			continue
		}
		if v != nil && len(def.Options) > 0 && !slices.Contains(def.Options, v) {
			p.Add(field, "not one of the field's options")
			continue
		}
		cv := CustomValue{Type: def.Type, Value: v, Order: -1}
		if ci.Order != nil {
			cv.Order = *ci.Order
		}
		out[name] = cv
	}
	return out
}

// numberOrders gives the values without an order the next orders after the highest one, by name.
func numberOrders(vals CustomValues) {
	next := 0
	var names []string
	for n, v := range vals {
		if v.Order >= next {
			next = v.Order + 1
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if v := vals[n]; v.Order < 0 {
			v.Order = next
			vals[n] = v
			next++
		}
	}
}

// checkMandatory reports the mandatory fields that vals lacks or leaves null.
func checkMandatory(p *record.Problems, defs map[string]CustomField, vals CustomValues) {
	var names []string
	for n, d := range defs {
		if d.Mandatory {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if v, ok := vals[n]; !ok || v.Value == nil {
			p.Add("customFields."+n, "mandatory custom field without a value")
		}
	}
}
