package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// Custom values are stored in the shape the API shows, {"<type>": value, "order": n} under the field's name
// (plus "_id" on templates), so a search can later address customFields.<name>.<type>. Each entry is kept as
// raw JSON in the document type, so numbers come back in the form of the field's type (a float 5.0 is the JSON
// number 5).

type customDoc map[string]map[string]json.RawMessage

func encodeCustom(vals customfield.Values) customDoc {
	out := customDoc{}
	for name, v := range vals {
		d := map[string]json.RawMessage{}
		b, err := json.Marshal(v.Value)
		if err != nil {
			b = []byte("null")
		}
		d[string(v.Type)] = b
		d["order"] = json.RawMessage(fmt.Sprint(v.Order))
		if v.ID != "" {
			id, _ := json.Marshal(v.ID)
			d["_id"] = id
		}
		out[name] = d
	}
	return out
}

func decodeCustom(m customDoc) customfield.Values {
	out := customfield.Values{}
	for name, d := range m {
		v := customfield.Value{}
		for _, t := range customfield.Types() {
			if x, ok := d[string(t)]; ok {
				v.Type, v.Value = t, typed(t, decodeValue(x))
			}
		}
		if o, ok := decodeValue(d["order"]).(int64); ok {
			v.Order = int(o)
		}
		if id, ok := decodeValue(d["_id"]).(string); ok {
			v.ID = id
		}
		out[name] = v
	}
	return out
}

// typed gives a decoded number the form of its field's type: float64 for float, int64 for integer and date.
func typed(t customfield.Type, v any) any {
	switch t {
	case customfield.TypeFloat:
		if n, ok := v.(int64); ok {
			return float64(n)
		}
	case customfield.TypeInteger, customfield.TypeDate:
		if f, ok := v.(float64); ok && f == math.Trunc(f) {
			return int64(f)
		}
	}
	return v
}

// CustomFieldStore keeps the custom field definitions (a small, global collection).
type CustomFieldStore struct {
	coll *docstore.Collection
}

var _ customfield.Store = (*CustomFieldStore)(nil)

// customFieldSpec: the unique name, and the default order of the list (_id).
var customFieldSpec = docstore.Spec{Name: "customFields", Arrays: []string{"options"}, Indexes: []docstore.Index{
	{Name: "name", Keys: []docstore.Key{docstore.Asc("name")}, Unique: true},
}}

// NewCustomFieldStore returns the store and creates its unique name index.
func NewCustomFieldStore(ctx context.Context, db *docstore.DB) (*CustomFieldStore, error) {
	coll, err := db.Collection(ctx, customFieldSpec)
	if err != nil {
		return nil, err
	}
	return &CustomFieldStore{coll: coll}, nil
}

type customFieldDoc struct {
	ID          string            `json:"_id"`
	Name        string            `json:"name"`
	DisplayName string            `json:"displayName"`
	Description string            `json:"description"`
	Type        string            `json:"type"`
	Options     []json.RawMessage `json:"options"`
	Mandatory   bool              `json:"mandatory"`
	CreatedAt   int64             `json:"createdAt"`
	CreatedBy   string            `json:"createdBy"`
	UpdatedAt   *int64            `json:"updatedAt"`
	UpdatedBy   string            `json:"updatedBy,omitempty"`
}

func (d customFieldDoc) field() customfield.Field {
	t := customfield.Type(d.Type)
	opts := make([]any, len(d.Options))
	for i, o := range d.Options {
		opts[i] = typed(t, decodeValue(o))
	}
	return customfield.Field{ID: d.ID, Name: d.Name, DisplayName: d.DisplayName, Description: d.Description,
		Type: t, Options: opts, Mandatory: d.Mandatory, Meta: record.Meta{
			CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

// options0 encodes the options, never as null.
func options0(o []any) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(o))
	for _, v := range o {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out
}

// CreateCustomField inserts a definition; the unique index refuses a taken name.
func (s *CustomFieldStore) CreateCustomField(ctx context.Context, f customfield.Field) error {
	err := s.coll.Insert(ctx, customFieldDoc{ID: f.ID, Name: f.Name, DisplayName: f.DisplayName,
		Description: f.Description, Type: string(f.Type), Options: options0(f.Options), Mandatory: f.Mandatory,
		CreatedAt: docstore.Millis(f.CreatedAt), CreatedBy: f.CreatedBy})
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create custom field %s: %w", f.Name, customfield.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create custom field %s: %w", f.Name, err)
	}
	return nil
}

// CustomField finds a definition by id.
func (s *CustomFieldStore) CustomField(ctx context.Context, id string) (customfield.Field, error) {
	var d customFieldDoc
	if err := get(ctx, s.coll, id, &d, customfield.ErrNotFound); err != nil {
		return customfield.Field{}, err
	}
	return d.field(), nil
}

// CustomFieldByName finds a definition by name.
func (s *CustomFieldStore) CustomFieldByName(ctx context.Context, name string) (customfield.Field, error) {
	var d customFieldDoc
	if err := findOne(ctx, s.coll, docstore.Eq("name", name), &d, customfield.ErrNotFound); err != nil {
		return customfield.Field{}, err
	}
	return d.field(), nil
}

// CustomFields lists definitions.
func (s *CustomFieldStore) CustomFields(ctx context.Context, f search.Node, p search.Page) ([]customfield.Field, int64, error) {
	return page(ctx, s.coll, f, p, customFieldDoc.field)
}

// AllCustomFields returns every definition by name.
func (s *CustomFieldStore) AllCustomFields(ctx context.Context) (map[string]customfield.Field, error) {
	var docs []customFieldDoc
	if err := s.coll.Find(ctx, docstore.Query{Filter: docstore.All(), Limit: 10000}, &docs); err != nil {
		return nil, fmt.Errorf("list custom fields: %w", err)
	}
	out := make(map[string]customfield.Field, len(docs))
	for _, d := range docs {
		out[d.Name] = d.field()
	}
	return out, nil
}

// UpdateCustomField writes the mutable fields of a definition.
func (s *CustomFieldStore) UpdateCustomField(ctx context.Context, f customfield.Field, by string, at time.Time) (customfield.Field, error) {
	var d customFieldDoc
	u := stamp(by, at).Set("displayName", f.DisplayName).Set("description", f.Description).
		Set("options", options0(f.Options)).Set("mandatory", f.Mandatory)
	if err := findOneAndUpdate(ctx, s.coll, docstore.ID(f.ID), u, &d, customfield.ErrNotFound); err != nil {
		return customfield.Field{}, err
	}
	return d.field(), nil
}

// DeleteCustomField removes a definition.
func (s *CustomFieldStore) DeleteCustomField(ctx context.Context, id string) error {
	ok, err := s.coll.DeleteOne(ctx, docstore.ID(id))
	if err != nil {
		return fmt.Errorf("delete custom field %s: %w", id, err)
	}
	if !ok {
		return customfield.ErrNotFound
	}
	return nil
}
