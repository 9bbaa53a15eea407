package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// IdentityStore keeps organisations, users and the API-key lookup table. Authentication reads by _id only:
// the key lookup is its own collection keyed by the key's keyed hash.
type IdentityStore struct {
	orgs  *mongo.Collection
	users *mongo.Collection
	keys  *mongo.Collection
}

var _ cases.IdentityStore = (*IdentityStore)(nil)

// NewIdentityStore returns the store and creates the indexes its lists use.
func NewIdentityStore(ctx context.Context, db *mongox.DB) (*IdentityStore, error) {
	s := &IdentityStore{orgs: db.Collection("organisations"), users: db.Collection("users"), keys: db.Collection("apikeys")}
	err := mongox.EnsureIndexes(ctx, s.users,
		mongox.Index{Name: "organisations", Keys: bson.D{{Key: cases.PathUserOrgs, Value: 1}}},
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
	CreatedAt   int64  `bson:"createdAt"`
	CreatedBy   string `bson:"createdBy"`
	UpdatedAt   *int64 `bson:"updatedAt"`
	UpdatedBy   string `bson:"updatedBy,omitempty"`
}

func (d orgDoc) org() cases.Organisation {
	return cases.Organisation{Name: d.ID, Description: d.Description, Meta: cases.Meta{
		CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

type membershipDoc struct {
	Org     string `bson:"organisation"`
	Profile string `bson:"profile"`
}

type userDoc struct {
	ID          string          `bson:"_id"`
	Name        string          `bson:"name"`
	Locked      bool            `bson:"locked"`
	Memberships []membershipDoc `bson:"memberships"`
	Orgs        []string        `bson:"organisations"` // the memberships' organisations, for searches
	Password    string          `bson:"password,omitempty"`
	Key         string          `bson:"key,omitempty"`
	KeyHash     string          `bson:"keyHash,omitempty"`
	CreatedAt   int64           `bson:"createdAt"`
	CreatedBy   string          `bson:"createdBy"`
	UpdatedAt   *int64          `bson:"updatedAt"`
	UpdatedBy   string          `bson:"updatedBy,omitempty"`
}

func (d userDoc) user() cases.User {
	ms := make([]cases.Membership, len(d.Memberships))
	for i, m := range d.Memberships {
		ms[i] = cases.Membership{Org: m.Org, Profile: m.Profile}
	}
	return cases.User{Login: d.ID, Name: d.Name, Locked: d.Locked, Memberships: ms, PasswordHash: d.Password,
		KeySealed: d.Key, KeyHash: d.KeyHash, Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt),
			CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

func membershipDocs(ms []cases.Membership) ([]membershipDoc, []string) {
	docs := make([]membershipDoc, len(ms))
	orgs := make([]string, len(ms))
	for i, m := range ms {
		docs[i] = membershipDoc{Org: m.Org, Profile: m.Profile}
		orgs[i] = m.Org
	}
	return docs, orgs
}

// CreateOrg inserts an organisation; its name is its _id, so a duplicate fails at once.
func (s *IdentityStore) CreateOrg(ctx context.Context, o cases.Organisation) error {
	_, err := s.orgs.InsertOne(ctx, orgDoc{ID: o.Name, Description: o.Description,
		CreatedAt: mongox.Millis(o.CreatedAt), CreatedBy: o.CreatedBy})
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create organisation %s: %w", o.Name, cases.ErrOrgExists)
	}
	if err != nil {
		return fmt.Errorf("create organisation %s: %w", o.Name, err)
	}
	return nil
}

// Org finds an organisation by name.
func (s *IdentityStore) Org(ctx context.Context, name string) (cases.Organisation, error) {
	var d orgDoc
	if err := findOne(ctx, s.orgs, byID(name), &d, cases.ErrOrgNotFound); err != nil {
		return cases.Organisation{}, err
	}
	return d.org(), nil
}

// Orgs lists organisations.
func (s *IdentityStore) Orgs(ctx context.Context, f search.Node, p search.Page) ([]cases.Organisation, int64, error) {
	var docs []orgDoc
	total, err := mongox.FindPage(ctx, s.orgs, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Organisation, len(docs))
	for i, d := range docs {
		out[i] = d.org()
	}
	return out, total, nil
}

// UpdateOrg sets the description.
func (s *IdentityStore) UpdateOrg(ctx context.Context, name, description, by string, at time.Time) (cases.Organisation, error) {
	var d orgDoc
	set := append(stamp(by, at), bson.E{Key: "description", Value: description})
	if err := findOneAndSet(ctx, s.orgs, byID(name), set, &d, cases.ErrOrgNotFound); err != nil {
		return cases.Organisation{}, err
	}
	return d.org(), nil
}

// CreateUser inserts a user; the login is its _id.
func (s *IdentityStore) CreateUser(ctx context.Context, u cases.User) error {
	ms, orgs := membershipDocs(u.Memberships)
	_, err := s.users.InsertOne(ctx, userDoc{ID: u.Login, Name: u.Name, Locked: u.Locked, Memberships: ms, Orgs: orgs,
		Password: u.PasswordHash, CreatedAt: mongox.Millis(u.CreatedAt), CreatedBy: u.CreatedBy})
	if mongox.IsDuplicate(err) {
		return fmt.Errorf("create user %s: %w", u.Login, cases.ErrUserExists)
	}
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.Login, err)
	}
	return nil
}

// User finds a user by login.
func (s *IdentityStore) User(ctx context.Context, login string) (cases.User, error) {
	var d userDoc
	if err := findOne(ctx, s.users, byID(login), &d, cases.ErrUserNotFound); err != nil {
		return cases.User{}, err
	}
	return d.user(), nil
}

// Users lists users.
func (s *IdentityStore) Users(ctx context.Context, f search.Node, p search.Page) ([]cases.User, int64, error) {
	var docs []userDoc
	total, err := mongox.FindPage(ctx, s.users, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.User, len(docs))
	for i, d := range docs {
		out[i] = d.user()
	}
	return out, total, nil
}

func (s *IdentityStore) update(ctx context.Context, login string, set bson.D) (cases.User, error) {
	var d userDoc
	if err := findOneAndSet(ctx, s.users, byID(login), set, &d, cases.ErrUserNotFound); err != nil {
		return cases.User{}, err
	}
	return d.user(), nil
}

// UpdateUser writes the name, lock state and memberships.
func (s *IdentityStore) UpdateUser(ctx context.Context, u cases.User, by string, at time.Time) (cases.User, error) {
	ms, orgs := membershipDocs(u.Memberships)
	return s.update(ctx, u.Login, append(stamp(by, at), bson.E{Key: "name", Value: u.Name},
		bson.E{Key: "locked", Value: u.Locked}, bson.E{Key: "memberships", Value: ms},
		bson.E{Key: cases.PathUserOrgs, Value: orgs}))
}

// SetPassword stores a password hash.
func (s *IdentityStore) SetPassword(ctx context.Context, login, hash, by string, at time.Time) error {
	_, err := s.update(ctx, login, append(stamp(by, at), bson.E{Key: "password", Value: hash}))
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
	res, err := s.users.UpdateOne(ctx, byID(login), update)
	if err != nil {
		return fmt.Errorf("set key of %s: %w", login, err)
	}
	if res.MatchedCount == 0 {
		return cases.ErrUserNotFound
	}
	if old.KeyHash != "" && old.KeyHash != hash {
		if _, err := s.keys.DeleteOne(ctx, byID(old.KeyHash)); err != nil {
			return fmt.Errorf("remove old key of %s: %w", login, err)
		}
	}
	return nil
}

// UserByKeyHash finds the user holding the key with this hash.
func (s *IdentityStore) UserByKeyHash(ctx context.Context, hash string) (cases.User, error) {
	var k keyDoc
	if err := findOne(ctx, s.keys, byID(hash), &k, cases.ErrUserNotFound); err != nil {
		return cases.User{}, err
	}
	u, err := s.User(ctx, k.User)
	if err != nil {
		return cases.User{}, err
	}
	if u.KeyHash != hash {
		return cases.User{}, cases.ErrUserNotFound
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
