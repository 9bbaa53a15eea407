package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// Custom values are stored in the shape the API shows, {"<type>": value, "order": n} under the field's name
// (plus "_id" on templates), so a search can later address customFields.<name>.<type>.

func encodeCustom(vals cases.CustomValues) map[string]bson.M {
	out := map[string]bson.M{}
	for name, v := range vals {
		d := bson.M{string(v.Type): v.Value, "order": int64(v.Order)}
		if v.ID != "" {
			d["_id"] = v.ID
		}
		out[name] = d
	}
	return out
}

func decodeCustom(m map[string]bson.M) cases.CustomValues {
	out := cases.CustomValues{}
	for name, d := range m {
		v := cases.CustomValue{}
		for _, t := range cases.FieldTypes() {
			if x, ok := d[string(t)]; ok {
				v.Type, v.Value = t, normalize(x)
			}
		}
		if o, ok := toInt(d["order"]); ok {
			v.Order = int(o)
		}
		if id, ok := d["_id"].(string); ok {
			v.ID = id
		}
		out[name] = v
	}
	return out
}

// CustomFieldStore keeps the custom field definitions (a small, global collection).
type CustomFieldStore struct {
	coll *mongo.Collection
}

var _ cases.CustomFieldStore = (*CustomFieldStore)(nil)

// NewCustomFieldStore returns the store and creates its unique name index.
func NewCustomFieldStore(ctx context.Context, db *mongox.DB) (*CustomFieldStore, error) {
	s := &CustomFieldStore{coll: db.Collection("customFields")}
	if err := mongox.EnsureIndexes(ctx, s.coll,
		mongox.Index{Name: "name", Keys: bson.D{{Key: "name", Value: 1}}, Unique: true}); err != nil {
		return nil, err
	}
	return s, nil
}

type customFieldDoc struct {
	ID          string `bson:"_id"`
	Name        string `bson:"name"`
	DisplayName string `bson:"displayName"`
	Description string `bson:"description"`
	Type        string `bson:"type"`
	Options     []any  `bson:"options"`
	Mandatory   bool   `bson:"mandatory"`
	CreatedAt   int64  `bson:"createdAt"`
	CreatedBy   string `bson:"createdBy"`
	UpdatedAt   *int64 `bson:"updatedAt"`
	UpdatedBy   string `bson:"updatedBy,omitempty"`
}

func (d customFieldDoc) field() cases.CustomField {
	opts := make([]any, len(d.Options))
	for i, o := range d.Options {
		opts[i] = normalize(o)
	}
	return cases.CustomField{ID: d.ID, Name: d.Name, DisplayName: d.DisplayName, Description: d.Description,
		Type: cases.FieldType(d.Type), Options: opts, Mandatory: d.Mandatory, Meta: cases.Meta{
			CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

func options0(o []any) []any {
	if o == nil {
		return []any{}
	}
	return o
}

// CreateCustomField inserts a definition; the unique index refuses a taken name.
func (s *CustomFieldStore) CreateCustomField(ctx context.Context, f cases.CustomField) error {
	_, err := s.coll.InsertOne(ctx, customFieldDoc{ID: f.ID, Name: f.Name, DisplayName: f.DisplayName,
		Description: f.Description, Type: string(f.Type), Options: options0(f.Options), Mandatory: f.Mandatory,
		CreatedAt: mongox.Millis(f.CreatedAt), CreatedBy: f.CreatedBy})
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create custom field %s: %w", f.Name, cases.ErrCustomFieldExists)
	}
	if err != nil {
		return fmt.Errorf("create custom field %s: %w", f.Name, err)
	}
	return nil
}

// CustomField finds a definition by id.
func (s *CustomFieldStore) CustomField(ctx context.Context, id string) (cases.CustomField, error) {
	var d customFieldDoc
	if err := findOne(ctx, s.coll, byID(id), &d, cases.ErrCustomFieldNotFound); err != nil {
		return cases.CustomField{}, err
	}
	return d.field(), nil
}

// CustomFieldByName finds a definition by name.
func (s *CustomFieldStore) CustomFieldByName(ctx context.Context, name string) (cases.CustomField, error) {
	var d customFieldDoc
	if err := findOne(ctx, s.coll, bson.D{{Key: "name", Value: name}}, &d, cases.ErrCustomFieldNotFound); err != nil {
		return cases.CustomField{}, err
	}
	return d.field(), nil
}

// CustomFields lists definitions.
func (s *CustomFieldStore) CustomFields(ctx context.Context, f search.Node, p search.Page) ([]cases.CustomField, int64, error) {
	var docs []customFieldDoc
	total, err := mongox.FindPage(ctx, s.coll, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.CustomField, len(docs))
	for i, d := range docs {
		out[i] = d.field()
	}
	return out, total, nil
}

// AllCustomFields returns every definition by name.
func (s *CustomFieldStore) AllCustomFields(ctx context.Context) (map[string]cases.CustomField, error) {
	cur, err := s.coll.Find(ctx, bson.D{}, options.Find().SetLimit(10000))
	if err != nil {
		return nil, fmt.Errorf("list custom fields: %w", err)
	}
	var docs []customFieldDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read custom fields: %w", err)
	}
	out := make(map[string]cases.CustomField, len(docs))
	for _, d := range docs {
		out[d.Name] = d.field()
	}
	return out, nil
}

// UpdateCustomField writes the mutable fields of a definition.
func (s *CustomFieldStore) UpdateCustomField(ctx context.Context, f cases.CustomField, by string, at time.Time) (cases.CustomField, error) {
	var d customFieldDoc
	set := append(stamp(by, at), bson.E{Key: "displayName", Value: f.DisplayName},
		bson.E{Key: "description", Value: f.Description}, bson.E{Key: "options", Value: options0(f.Options)},
		bson.E{Key: "mandatory", Value: f.Mandatory})
	if err := findOneAndSet(ctx, s.coll, byID(f.ID), set, &d, cases.ErrCustomFieldNotFound); err != nil {
		return cases.CustomField{}, err
	}
	return d.field(), nil
}

// DeleteCustomField removes a definition.
func (s *CustomFieldStore) DeleteCustomField(ctx context.Context, id string) error {
	res, err := s.coll.DeleteOne(ctx, byID(id))
	if err != nil {
		return fmt.Errorf("delete custom field %s: %w", id, err)
	}
	if res.DeletedCount == 0 {
		return cases.ErrCustomFieldNotFound
	}
	return nil
}
