// Package customfield owns case-svc's custom fields: their definitions, which every organisation shares and
// only a platform administrator changes, the interface of their store, and the rules of the values that
// cases, alerts and templates hold (a defined field, a value of its type, one of its options, the mandatory
// fields, their order).
package customfield

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

// Type is the type of a custom field's values.
type Type string

// The custom field types.
const (
	TypeString  Type = "string"
	TypeInteger Type = "integer"
	TypeFloat   Type = "float"
	TypeBoolean Type = "boolean"
	TypeDate    Type = "date"
)

// Types lists the custom field types.
func Types() []Type {
	return []Type{TypeString, TypeInteger, TypeFloat, TypeBoolean, TypeDate}
}

func validType(t Type) bool { return slices.Contains(Types(), t) }

// Field is the definition of a custom field. Definitions are global, as in the reference system: every
// organisation uses the same catalogue. Name (also called reference) is the key under which cases and
// templates hold values; it never changes.
type Field struct {
	ID          string
	Name        string
	DisplayName string
	Description string
	Type        Type
	Options     []any // allowed values, of Type (string, int64, float64, bool); empty = any value
	Mandatory   bool  // every new case must have a value for it, and no case may clear it
	record.Meta
}

// Value is the value of a custom field on a case or a template: Value is nil (null) or of the field's
// type: string, int64 (integer, and date in epoch milliseconds), float64 or bool.
type Value struct {
	Type  Type
	Value any
	Order int
	ID    string // templates only: the id of the entry, shown as _id
}

// Values are a record's custom field values by field name.
type Values map[string]Value

// Input is a custom field value as a client sends it: either {"<type>": value, "order": n} (Type set)
// or a bare value (Type ""). Value is what encoding/json produced with UseNumber.
type Input struct {
	Type  string
	Value any
	Order *int
}

// Update holds the changes to a definition.
type Update struct {
	DisplayName record.Change[string]
	Description record.Change[string]
	Options     record.Change[[]any]
	Mandatory   record.Change[bool]
	Type        record.Change[string] // refused when it differs: the type never changes
}

// Store persists custom field definitions.
type Store interface {
	// CreateCustomField fails with ErrExists when the name is taken.
	CreateCustomField(ctx context.Context, f Field) error
	// CustomField finds a definition by id; CustomFieldByName by name. Both fail with ErrNotFound.
	CustomField(ctx context.Context, id string) (Field, error)
	CustomFieldByName(ctx context.Context, name string) (Field, error)
	CustomFields(ctx context.Context, f search.Node, p search.Page) ([]Field, int64, error)
	// AllCustomFields returns every definition (a small collection) by name.
	AllCustomFields(ctx context.Context) (map[string]Field, error)
	UpdateCustomField(ctx context.Context, f Field, by string, at time.Time) (Field, error)
	DeleteCustomField(ctx context.Context, id string) error
}

// Errors of the definitions.
var (
	ErrNotFound = apperr.New(apperr.NotFound, "CustomField not found")
	ErrExists   = apperr.New(apperr.Conflict, "a custom field with this name already exists")
)

// Fields is the allow-list of custom field searches.
var Fields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "name": {Path: "name"}, "reference": {Path: "name"},
	"displayName": {Path: "displayName"}, "description": {Path: "description"}, "type": {Path: "type"},
	"mandatory": {Path: "mandatory", Type: search.Bool},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
}

var fieldNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// NewField is a request to define a custom field.
type NewField struct {
	Name        string
	DisplayName string
	Description string
	Type        string
	Options     []any
	Mandatory   bool
}

// Service holds the rules of the definitions.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns the custom field service; now is its clock (time.Now but in tests).
func NewService(st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now}
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// RequireManager allows a change to a definition every organisation shares (custom fields; profiles are
// fixed and observable types are not definitions here) to a platform administrator only, as in the
// reference system: an org-admin's manageCustomField lets it set values of any field on its cases, never
// define, make mandatory or delete a field for every organisation (issue 15).
func RequireManager(c identity.Caller) error {
	if c.PlatformAdmin() {
		return nil
	}
	return apperr.Errorf(apperr.Forbidden,
		"missing permission %s as a platform administrator (admin profile of the admin organisation): custom fields are shared by every organisation", identity.ManageCustomField)
}

// Create defines a custom field (a platform administrator: see RequireManager).
func (s *Service) Create(ctx context.Context, c identity.Caller, n NewField) (Field, error) {
	if err := RequireManager(c); err != nil {
		return Field{}, err
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
	t := Type(n.Type)
	if !validType(t) {
		p.Add("type", "one of string, integer, float, boolean, date")
	}
	var opts []any
	if validType(t) {
		opts = checkOptions(&p, t, n.Options)
	}
	if err := p.Err(); err != nil {
		return Field{}, err
	}
	f := Field{ID: record.NewID(s.clock()), Name: n.Name, DisplayName: n.DisplayName, Description: n.Description,
		Type: t, Options: opts, Mandatory: n.Mandatory, Meta: record.Meta{CreatedAt: s.clock(), CreatedBy: c.Login}}
	if err := s.store.CreateCustomField(ctx, f); err != nil {
		return Field{}, err
	}
	return f, nil
}

func checkOptions(p *record.Problems, t Type, in []any) []any {
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

// Field returns a definition by id or name (any authenticated user).
func (s *Service) Field(ctx context.Context, _ identity.Caller, idOrName string) (Field, error) {
	if len(idOrName) > 0 && idOrName[0] == '~' {
		return s.store.CustomField(ctx, idOrName)
	}
	return s.store.CustomFieldByName(ctx, idOrName)
}

// List lists the definitions (any authenticated user).
func (s *Service) List(ctx context.Context, _ identity.Caller, f search.Node, p search.Page) ([]Field, int64, error) {
	return s.store.CustomFields(ctx, f, p)
}

// Update changes a definition's display name, description, options or mandatory flag
// (a platform administrator). Values already on cases are kept as they are.
func (s *Service) Update(ctx context.Context, c identity.Caller, id string, u Update) (Field, error) {
	if err := RequireManager(c); err != nil {
		return Field{}, err
	}
	f, err := s.Field(ctx, c, id)
	if err != nil {
		return Field{}, err
	}
	var p record.Problems
	if u.Type.Set && Type(u.Type.V) != f.Type {
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
	p.ChangeFlag(nil, "mandatory", u.Mandatory, &f.Mandatory)
	if err := p.Err(); err != nil {
		return Field{}, err
	}
	return s.store.UpdateCustomField(ctx, f, c.Login, s.clock())
}

// Delete removes a definition (a platform administrator). Values on cases and templates stay as
// they are, but can no longer be set.
func (s *Service) Delete(ctx context.Context, c identity.Caller, id string) error {
	if err := RequireManager(c); err != nil {
		return err
	}
	f, err := s.Field(ctx, c, id)
	if err != nil {
		return err
	}
	return s.store.DeleteCustomField(ctx, f.ID)
}

// convert checks that v (from encoding/json with UseNumber, or already converted) is a value of type t and
// returns it in its stored form; nil stays nil.
func convert(t Type, v any) (any, error) {
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

// ParseValues validates the values a client sends against the definitions: the field must be defined, the
// value of its type (a typed object must name that type), and one of its options when it has some.
func ParseValues(p *record.Problems, defs map[string]Field, in map[string]Input) Values {
	out := Values{}
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
		if ci.Type != "" && Type(ci.Type) != def.Type {
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
		cv := Value{Type: def.Type, Value: v, Order: -1}
		if ci.Order != nil {
			cv.Order = *ci.Order
		}
		out[name] = cv
	}
	return out
}

// NumberOrders gives the values without an order the next orders after the highest one, by name.
func NumberOrders(vals Values) {
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

// CheckMandatory reports the mandatory fields that vals lacks or leaves null.
func CheckMandatory(p *record.Problems, defs map[string]Field, vals Values) {
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
