package store

import (
	"context"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/authstore"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// IdentityStore keeps organisations, users and the API-key lookup table. Authentication reads by _id only:
// the key lookup is its own collection keyed by the key's keyed hash.
type IdentityStore struct {
	orgs  *docstore.Collection
	users *docstore.Collection
	keys  *authstore.KeyIndex
}

var _ identity.Store = (*IdentityStore)(nil)

var (
	orgSpec = docstore.Spec{Name: "organisations"}
	// userSpec: the users of an organisation (organisations holds each membership's organisation) in the
	// default order (_id).
	userSpec = docstore.Spec{Name: "users", Arrays: []string{identity.PathUserOrgs, "memberships"}, Indexes: []docstore.Index{
		{Name: "organisations__id", Keys: []docstore.Key{docstore.Asc(identity.PathUserOrgs), docstore.Asc("_id")}},
	}}
	apiKeySpec = docstore.Spec{Name: "apikeys"}
)

// NewIdentityStore returns the store and creates the indexes its lists use.
func NewIdentityStore(ctx context.Context, db *docstore.DB) (*IdentityStore, error) {
	s := &IdentityStore{}
	var keys *docstore.Collection
	for _, c := range []struct {
		dst  **docstore.Collection
		spec docstore.Spec
	}{{&s.orgs, orgSpec}, {&s.users, userSpec}, {&keys, apiKeySpec}} {
		coll, err := db.Collection(ctx, c.spec)
		if err != nil {
			return nil, err
		}
		*c.dst = coll
	}
	s.keys = authstore.NewKeyIndex(keys)
	return s, nil
}

type orgDoc struct {
	ID          string `json:"_id"`
	Description string `json:"description"`
	CreatedAt   int64  `json:"createdAt"`
	CreatedBy   string `json:"createdBy"`
	UpdatedAt   *int64 `json:"updatedAt"`
	UpdatedBy   string `json:"updatedBy,omitempty"`
}

func (d orgDoc) org() identity.Organisation {
	return identity.Organisation{Name: d.ID, Description: d.Description, Meta: record.Meta{
		CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

type membershipDoc struct {
	Org     string `json:"organisation"`
	Profile string `json:"profile"`
}

type userDoc struct {
	ID          string          `json:"_id"`
	Name        string          `json:"name"`
	Locked      bool            `json:"locked"`
	Memberships []membershipDoc `json:"memberships"`
	Orgs        []string        `json:"organisations"` // the memberships' organisations, for searches
	Password    string          `json:"password,omitempty"`
	Key         string          `json:"key,omitempty"`
	KeyHash     string          `json:"keyHash,omitempty"`
	Sessions    int64           `json:"sessionVersion,omitempty"`
	CreatedAt   int64           `json:"createdAt"`
	CreatedBy   string          `json:"createdBy"`
	UpdatedAt   *int64          `json:"updatedAt"`
	UpdatedBy   string          `json:"updatedBy,omitempty"`
}

func (d userDoc) user() identity.User {
	ms := make([]identity.Membership, len(d.Memberships))
	for i, m := range d.Memberships {
		ms[i] = identity.Membership{Org: m.Org, Profile: m.Profile}
	}
	return identity.User{Login: d.ID, Name: d.Name, Locked: d.Locked, Memberships: ms, PasswordHash: d.Password,
		KeySealed: d.Key, KeyHash: d.KeyHash, SessionVersion: d.Sessions, Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt),
			CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt), UpdatedBy: d.UpdatedBy}}
}

func membershipDocs(ms []identity.Membership) ([]membershipDoc, []string) {
	docs := make([]membershipDoc, len(ms))
	orgs := make([]string, len(ms))
	for i, m := range ms {
		docs[i] = membershipDoc{Org: m.Org, Profile: m.Profile}
		orgs[i] = m.Org
	}
	return docs, orgs
}

// CreateOrg inserts an organisation; its name is its _id, so a duplicate fails at once.
func (s *IdentityStore) CreateOrg(ctx context.Context, o identity.Organisation) error {
	err := s.orgs.Insert(ctx, orgDoc{ID: o.Name, Description: o.Description,
		CreatedAt: docstore.Millis(o.CreatedAt), CreatedBy: o.CreatedBy})
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create organisation %s: %w", o.Name, identity.ErrOrgExists)
	}
	if err != nil {
		return fmt.Errorf("create organisation %s: %w", o.Name, err)
	}
	return nil
}

// Org finds an organisation by name.
func (s *IdentityStore) Org(ctx context.Context, name string) (identity.Organisation, error) {
	var d orgDoc
	if err := get(ctx, s.orgs, name, &d, identity.ErrOrgNotFound); err != nil {
		return identity.Organisation{}, err
	}
	return d.org(), nil
}

// Orgs lists organisations.
func (s *IdentityStore) Orgs(ctx context.Context, f search.Node, p search.Page) ([]identity.Organisation, int64, error) {
	return page(ctx, s.orgs, f, p, orgDoc.org)
}

// UpdateOrg sets the description.
func (s *IdentityStore) UpdateOrg(ctx context.Context, name, description, by string, at time.Time) (identity.Organisation, error) {
	var d orgDoc
	if err := findOneAndUpdate(ctx, s.orgs, docstore.ID(name), stamp(by, at).Set("description", description), &d,
		identity.ErrOrgNotFound); err != nil {
		return identity.Organisation{}, err
	}
	return d.org(), nil
}

// CreateUser inserts a user; the login is its _id.
func (s *IdentityStore) CreateUser(ctx context.Context, u identity.User) error {
	ms, orgs := membershipDocs(u.Memberships)
	err := s.users.Insert(ctx, userDoc{ID: u.Login, Name: u.Name, Locked: u.Locked, Memberships: ms, Orgs: orgs,
		Password: u.PasswordHash, CreatedAt: docstore.Millis(u.CreatedAt), CreatedBy: u.CreatedBy})
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create user %s: %w", u.Login, identity.ErrUserExists)
	}
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.Login, err)
	}
	return nil
}

// User finds a user by login.
func (s *IdentityStore) User(ctx context.Context, login string) (identity.User, error) {
	var d userDoc
	if err := get(ctx, s.users, login, &d, identity.ErrUserNotFound); err != nil {
		return identity.User{}, err
	}
	return d.user(), nil
}

// Users lists users.
func (s *IdentityStore) Users(ctx context.Context, f search.Node, p search.Page) ([]identity.User, int64, error) {
	return page(ctx, s.users, f, p, userDoc.user)
}

func (s *IdentityStore) update(ctx context.Context, login string, u docstore.Update) (identity.User, error) {
	var d userDoc
	if err := findOneAndUpdate(ctx, s.users, docstore.ID(login), u, &d, identity.ErrUserNotFound); err != nil {
		return identity.User{}, err
	}
	return d.user(), nil
}

// UpdateUser writes the name, lock state and memberships.
func (s *IdentityStore) UpdateUser(ctx context.Context, u identity.User, by string, at time.Time) (identity.User, error) {
	ms, orgs := membershipDocs(u.Memberships)
	return s.update(ctx, u.Login, stamp(by, at).Set("name", u.Name).Set("locked", u.Locked).
		Set("memberships", ms).Set(identity.PathUserOrgs, orgs))
}

// SetPassword stores a password hash.
func (s *IdentityStore) SetPassword(ctx context.Context, login, hash, by string, at time.Time) error {
	_, err := s.update(ctx, login, stamp(by, at).Set("password", hash))
	return err
}

// EndSessions raises the session version in one atomic increment, so concurrent ends never cancel out and
// no other write puts an older version back (UpdateUser and the others never write it).
func (s *IdentityStore) EndSessions(ctx context.Context, login string) error {
	found, err := s.users.UpdateOne(ctx, docstore.ID(login), docstore.Update{}.Inc("sessionVersion", 1), false)
	if err != nil {
		return fmt.Errorf("end sessions of %s: %w", login, err)
	}
	if !found {
		return identity.ErrUserNotFound
	}
	return nil
}

// SetKey replaces the user's key ("" hash: removes it) in the order of authstore.KeyIndex.Rotate, safe at every
// crash point; UserByKeyHash checks the user's current hash, so a stale entry never authenticates.
func (s *IdentityStore) SetKey(ctx context.Context, login, sealed, hash, by string, at time.Time) error {
	old, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	u := stamp(by, at).Set("key", sealed).Set("keyHash", hash)
	if hash == "" {
		u = stamp(by, at).Unset("key").Unset("keyHash")
	}
	return s.keys.Rotate(ctx, login, old.KeyHash, hash, func(ctx context.Context) error {
		found, err := s.users.UpdateOne(ctx, docstore.ID(login), u, false)
		if err != nil {
			return fmt.Errorf("set key of %s: %w", login, err)
		}
		if !found {
			return identity.ErrUserNotFound
		}
		return nil
	})
}

// DeleteUser removes the user's key lookup entry, then the user: a crash between the two leaves a user
// without a working key, never a key without its user.
func (s *IdentityStore) DeleteUser(ctx context.Context, login string) error {
	u, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	if err := s.keys.Remove(ctx, login, u.KeyHash); err != nil {
		return err
	}
	ok, err := s.users.DeleteOne(ctx, docstore.ID(login))
	if err != nil {
		return fmt.Errorf("delete user %s: %w", login, err)
	}
	if !ok {
		return identity.ErrUserNotFound
	}
	return nil
}

// UserByKeyHash finds the user holding the key with this hash.
func (s *IdentityStore) UserByKeyHash(ctx context.Context, hash string) (identity.User, error) {
	return authstore.KeyHolder(ctx, s.keys, hash, s.User, func(u identity.User) string { return u.KeyHash },
		identity.ErrUserNotFound)
}

// AnyUser reports whether at least one user exists.
func (s *IdentityStore) AnyUser(ctx context.Context) (bool, error) {
	return s.users.Exists(ctx, docstore.All())
}
