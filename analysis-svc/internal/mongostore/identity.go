// Package mongostore implements the stores of analysis-svc on MongoDB (or the embedded FerretDB). BSON
// documents stay in this package; driver errors become domain errors at its boundary.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// IdentityStore keeps organizations, users and the API-key lookup table. Every hot path (authentication)
// reads by _id: the key lookup is its own collection keyed by the key's keyed hash.
type IdentityStore struct {
	orgs  *mongo.Collection
	users *mongo.Collection
	keys  *mongo.Collection
}

var _ analysis.IdentityStore = (*IdentityStore)(nil)

// NewIdentityStore returns the store and creates the indexes its lists use.
func NewIdentityStore(ctx context.Context, db *mongox.DB) (*IdentityStore, error) {
	s := &IdentityStore{orgs: db.Collection("organizations"), users: db.Collection("users"), keys: db.Collection("apikeys")}
	err := mongox.EnsureIndexes(ctx, s.users,
		mongox.Index{Name: "organization_createdAt", Keys: bson.D{{Key: "organization", Value: 1}, {Key: "createdAt", Value: 1}}},
		mongox.Index{Name: "createdAt", Keys: bson.D{{Key: "createdAt", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type orgDoc struct {
	ID          string `bson:"_id"`
	Description string `bson:"description"`
	Status      string `bson:"status"`
	CreatedAt   int64  `bson:"createdAt"`
	CreatedBy   string `bson:"createdBy"`
	UpdatedAt   int64  `bson:"updatedAt"`
	UpdatedBy   string `bson:"updatedBy"`
}

func (d orgDoc) org() analysis.Organization {
	return analysis.Organization{ID: d.ID, Description: d.Description, Status: d.Status,
		CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: mongox.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

type userDoc struct {
	ID           string   `bson:"_id"`
	Name         string   `bson:"name"`
	Roles        []string `bson:"roles"`
	Status       string   `bson:"status"`
	Organization string   `bson:"organization"`
	Password     string   `bson:"password,omitempty"`
	Key          string   `bson:"key,omitempty"`
	KeyHash      string   `bson:"keyHash,omitempty"`
	CreatedAt    int64    `bson:"createdAt"`
	CreatedBy    string   `bson:"createdBy"`
	UpdatedAt    int64    `bson:"updatedAt"`
	UpdatedBy    string   `bson:"updatedBy"`
}

func (d userDoc) user() analysis.User {
	roles := make([]analysis.Role, len(d.Roles))
	for i, r := range d.Roles {
		roles[i] = analysis.Role(r)
	}
	return analysis.User{Login: d.ID, Name: d.Name, Roles: roles, Status: d.Status, Organization: d.Organization,
		PasswordHash: d.Password, KeySealed: d.Key, KeyHash: d.KeyHash,
		CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: mongox.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

func roleStrings(rs []analysis.Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }

// CreateOrg inserts an organization; its name is its _id, so a duplicate fails at once.
func (s *IdentityStore) CreateOrg(ctx context.Context, o analysis.Organization) error {
	_, err := s.orgs.InsertOne(ctx, orgDoc{ID: o.ID, Description: o.Description, Status: o.Status,
		CreatedAt: mongox.Millis(o.CreatedAt), CreatedBy: o.CreatedBy, UpdatedAt: mongox.Millis(o.UpdatedAt), UpdatedBy: o.UpdatedBy})
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create organization %s: %w", o.ID, analysis.ErrOrgExists)
	}
	if err != nil {
		return fmt.Errorf("create organization %s: %w", o.ID, err)
	}
	return nil
}

// Org finds an organization by name.
func (s *IdentityStore) Org(ctx context.Context, id string) (analysis.Organization, error) {
	var d orgDoc
	err := s.orgs.FindOne(ctx, byID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.Organization{}, fmt.Errorf("find organization %s: %w", id, analysis.ErrOrgNotFound)
	}
	if err != nil {
		return analysis.Organization{}, fmt.Errorf("find organization %s: %w", id, err)
	}
	return d.org(), nil
}

// Orgs lists organizations.
func (s *IdentityStore) Orgs(ctx context.Context, f search.Node, p search.Page) ([]analysis.Organization, int64, error) {
	var docs []orgDoc
	total, err := mongox.FindPage(ctx, s.orgs, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]analysis.Organization, len(docs))
	for i, d := range docs {
		out[i] = d.org()
	}
	return out, total, nil
}

// UpdateOrg sets the given fields and returns the organization as updated.
func (s *IdentityStore) UpdateOrg(ctx context.Context, id string, u analysis.OrgUpdate, by string, at time.Time) (analysis.Organization, error) {
	set := bson.D{{Key: "updatedAt", Value: mongox.Millis(at)}, {Key: "updatedBy", Value: by}}
	if u.Description != nil {
		set = append(set, bson.E{Key: "description", Value: *u.Description})
	}
	if u.Status != nil {
		set = append(set, bson.E{Key: "status", Value: *u.Status})
	}
	var d orgDoc
	err := s.orgs.FindOneAndUpdate(ctx, byID(id), bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.Organization{}, fmt.Errorf("update organization %s: %w", id, analysis.ErrOrgNotFound)
	}
	if err != nil {
		return analysis.Organization{}, fmt.Errorf("update organization %s: %w", id, err)
	}
	return d.org(), nil
}

// CreateUser inserts a user; the login is its _id.
func (s *IdentityStore) CreateUser(ctx context.Context, u analysis.User) error {
	_, err := s.users.InsertOne(ctx, userDoc{ID: u.Login, Name: u.Name, Roles: roleStrings(u.Roles), Status: u.Status,
		Organization: u.Organization, Password: u.PasswordHash,
		CreatedAt: mongox.Millis(u.CreatedAt), CreatedBy: u.CreatedBy, UpdatedAt: mongox.Millis(u.UpdatedAt), UpdatedBy: u.UpdatedBy})
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create user %s: %w", u.Login, analysis.ErrUserExists)
	}
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.Login, err)
	}
	return nil
}

// User finds a user by login.
func (s *IdentityStore) User(ctx context.Context, login string) (analysis.User, error) {
	var d userDoc
	err := s.users.FindOne(ctx, byID(login)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.User{}, fmt.Errorf("find user %s: %w", login, analysis.ErrUserNotFound)
	}
	if err != nil {
		return analysis.User{}, fmt.Errorf("find user %s: %w", login, err)
	}
	return d.user(), nil
}

// Users lists users.
func (s *IdentityStore) Users(ctx context.Context, f search.Node, p search.Page) ([]analysis.User, int64, error) {
	var docs []userDoc
	total, err := mongox.FindPage(ctx, s.users, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]analysis.User, len(docs))
	for i, d := range docs {
		out[i] = d.user()
	}
	return out, total, nil
}

func (s *IdentityStore) update(ctx context.Context, login string, update bson.D) (analysis.User, error) {
	var d userDoc
	err := s.users.FindOneAndUpdate(ctx, byID(login), update,
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.User{}, fmt.Errorf("update user %s: %w", login, analysis.ErrUserNotFound)
	}
	if err != nil {
		return analysis.User{}, fmt.Errorf("update user %s: %w", login, err)
	}
	return d.user(), nil
}

func stamp(by string, at time.Time) bson.D {
	return bson.D{{Key: "updatedAt", Value: mongox.Millis(at)}, {Key: "updatedBy", Value: by}}
}

// UpdateUser sets the given fields.
func (s *IdentityStore) UpdateUser(ctx context.Context, login string, u analysis.UserUpdate, by string, at time.Time) (analysis.User, error) {
	set := stamp(by, at)
	if u.Name != nil {
		set = append(set, bson.E{Key: "name", Value: *u.Name})
	}
	if u.Roles != nil {
		set = append(set, bson.E{Key: "roles", Value: roleStrings(u.Roles)})
	}
	if u.Status != nil {
		set = append(set, bson.E{Key: "status", Value: *u.Status})
	}
	return s.update(ctx, login, bson.D{{Key: "$set", Value: set}})
}

// SetPassword stores a password hash.
func (s *IdentityStore) SetPassword(ctx context.Context, login, hash, by string, at time.Time) error {
	_, err := s.update(ctx, login, bson.D{{Key: "$set", Value: append(stamp(by, at), bson.E{Key: "password", Value: hash})}})
	return err
}

type keyDoc struct {
	ID   string `bson:"_id"` // keyed hash of the key
	User string `bson:"user"`
}

// SetKey replaces the user's key. Without transactions the order keeps every crash point safe: the new lookup
// entry first, then the user (which makes it valid and the old one stale), then the old entry is removed.
// UserByKeyHash also checks the user's current hash, so a stale entry never authenticates.
func (s *IdentityStore) SetKey(ctx context.Context, login, sealed, hash, by string, at time.Time) error {
	old, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	if hash != "" {
		if _, err := s.keys.InsertOne(ctx, keyDoc{ID: hash, User: login}); err != nil && !mongox.IsDuplicate(err) {
			return fmt.Errorf("store key of %s: %w", login, err)
		}
	}
	update := bson.D{{Key: "$set", Value: append(stamp(by, at), bson.E{Key: "key", Value: sealed}, bson.E{Key: "keyHash", Value: hash})}}
	if hash == "" {
		update = bson.D{{Key: "$set", Value: stamp(by, at)}, {Key: "$unset", Value: bson.D{{Key: "key", Value: ""}, {Key: "keyHash", Value: ""}}}}
	}
	if _, err := s.update(ctx, login, update); err != nil {
		return err
	}
	if old.KeyHash != "" && old.KeyHash != hash {
		if _, err := s.keys.DeleteOne(ctx, byID(old.KeyHash)); err != nil {
			return fmt.Errorf("remove old key of %s: %w", login, err)
		}
	}
	return nil
}

// UserByKeyHash finds the user holding the key with this hash.
func (s *IdentityStore) UserByKeyHash(ctx context.Context, hash string) (analysis.User, error) {
	var k keyDoc
	err := s.keys.FindOne(ctx, byID(hash)).Decode(&k)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return analysis.User{}, analysis.ErrUserNotFound
	}
	if err != nil {
		return analysis.User{}, fmt.Errorf("find key: %w", err)
	}
	u, err := s.User(ctx, k.User)
	if err != nil {
		return analysis.User{}, err
	}
	if u.KeyHash != hash {
		return analysis.User{}, analysis.ErrUserNotFound
	}
	return u, nil
}

// AnyUser reports whether at least one user exists.
func (s *IdentityStore) AnyUser(ctx context.Context) (bool, error) {
	err := s.users.FindOne(ctx, bson.D{}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find a user: %w", err)
	}
	return true, nil
}
