package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/authstore"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// IdentityStore keeps organizations, users and the API-key lookup table. Every hot path (authentication)
// reads by _id: the key lookup is its own collection keyed by the key's keyed hash.
type IdentityStore struct {
	orgs  *docstore.Collection
	users *docstore.Collection
	keys  *authstore.KeyIndex
}

var _ identity.Store = (*IdentityStore)(nil)

// NewIdentityStore returns the store, opening its collections and their indexes.
func NewIdentityStore(ctx context.Context, db *docstore.DB) (*IdentityStore, error) {
	c, err := open(ctx, db, orgsName, usersName, keysName)
	if err != nil {
		return nil, err
	}
	return &IdentityStore{orgs: c[0], users: c[1], keys: authstore.NewKeyIndex(c[2])}, nil
}

type orgDoc struct {
	ID          string `json:"_id"`
	Description string `json:"description"`
	Status      string `json:"status"`
	CreatedAt   int64  `json:"createdAt"`
	CreatedBy   string `json:"createdBy"`
	UpdatedAt   int64  `json:"updatedAt"`
	UpdatedBy   string `json:"updatedBy"`
}

func (d orgDoc) org() identity.Organization {
	return identity.Organization{ID: d.ID, Description: d.Description, Status: d.Status,
		CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: docstore.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

type userDoc struct {
	ID           string   `json:"_id"`
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	Status       string   `json:"status"`
	Organization string   `json:"organization"`
	Password     string   `json:"password,omitempty"`
	Key          string   `json:"key,omitempty"`
	KeyHash      string   `json:"keyHash,omitempty"`
	Sessions     int64    `json:"sessionVersion,omitempty"`
	CreatedAt    int64    `json:"createdAt"`
	CreatedBy    string   `json:"createdBy"`
	UpdatedAt    int64    `json:"updatedAt"`
	UpdatedBy    string   `json:"updatedBy"`
}

func (d userDoc) user() identity.User {
	roles := make([]identity.Role, len(d.Roles))
	for i, r := range d.Roles {
		roles[i] = identity.Role(r)
	}
	return identity.User{Login: d.ID, Name: d.Name, Roles: roles, Status: d.Status, Organization: d.Organization,
		PasswordHash: d.Password, KeySealed: d.Key, KeyHash: d.KeyHash, SessionVersion: d.Sessions,
		CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: docstore.Time(d.UpdatedAt), UpdatedBy: d.UpdatedBy}
}

func roleStrings(rs []identity.Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// CreateOrg inserts an organization; its name is its _id, so a duplicate fails at once.
func (s *IdentityStore) CreateOrg(ctx context.Context, o identity.Organization) error {
	err := s.orgs.Insert(ctx, orgDoc{ID: o.ID, Description: o.Description, Status: o.Status,
		CreatedAt: docstore.Millis(o.CreatedAt), CreatedBy: o.CreatedBy, UpdatedAt: docstore.Millis(o.UpdatedAt), UpdatedBy: o.UpdatedBy})
	if docstore.IsDuplicate(err) {
		return fmt.Errorf("create organization %s: %w", o.ID, identity.ErrOrgExists)
	}
	if err != nil {
		return fmt.Errorf("create organization %s: %w", o.ID, err)
	}
	return nil
}

// Org finds an organization by name.
func (s *IdentityStore) Org(ctx context.Context, id string) (identity.Organization, error) {
	var d orgDoc
	err := s.orgs.Get(ctx, id, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return identity.Organization{}, fmt.Errorf("find organization %s: %w", id, identity.ErrOrgNotFound)
	}
	if err != nil {
		return identity.Organization{}, fmt.Errorf("find organization %s: %w", id, err)
	}
	return d.org(), nil
}

// Orgs lists organizations.
func (s *IdentityStore) Orgs(ctx context.Context, f search.Node, p search.Page) ([]identity.Organization, int64, error) {
	var docs []orgDoc
	total, err := s.orgs.FindPage(ctx, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]identity.Organization, len(docs))
	for i, d := range docs {
		out[i] = d.org()
	}
	return out, total, nil
}

// UpdateOrg sets the given fields and returns the organization as updated.
func (s *IdentityStore) UpdateOrg(ctx context.Context, id string, u identity.OrgUpdate, by string, at time.Time) (identity.Organization, error) {
	set := stamp(by, at)
	if u.Description != nil {
		set = set.Set("description", *u.Description)
	}
	if u.Status != nil {
		set = set.Set("status", *u.Status)
	}
	var d orgDoc
	err := s.orgs.FindOneAndUpdate(ctx, docstore.ID(id), nil, set, docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return identity.Organization{}, fmt.Errorf("update organization %s: %w", id, identity.ErrOrgNotFound)
	}
	if err != nil {
		return identity.Organization{}, fmt.Errorf("update organization %s: %w", id, err)
	}
	return d.org(), nil
}

// CreateUser inserts a user; the login is its _id.
func (s *IdentityStore) CreateUser(ctx context.Context, u identity.User) error {
	err := s.users.Insert(ctx, userDoc{ID: u.Login, Name: u.Name, Roles: roleStrings(u.Roles), Status: u.Status,
		Organization: u.Organization, Password: u.PasswordHash,
		CreatedAt: docstore.Millis(u.CreatedAt), CreatedBy: u.CreatedBy, UpdatedAt: docstore.Millis(u.UpdatedAt), UpdatedBy: u.UpdatedBy})
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
	err := s.users.Get(ctx, login, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return identity.User{}, fmt.Errorf("find user %s: %w", login, identity.ErrUserNotFound)
	}
	if err != nil {
		return identity.User{}, fmt.Errorf("find user %s: %w", login, err)
	}
	return d.user(), nil
}

// Users lists users.
func (s *IdentityStore) Users(ctx context.Context, f search.Node, p search.Page) ([]identity.User, int64, error) {
	var docs []userDoc
	total, err := s.users.FindPage(ctx, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]identity.User, len(docs))
	for i, d := range docs {
		out[i] = d.user()
	}
	return out, total, nil
}

func (s *IdentityStore) update(ctx context.Context, login string, update docstore.Update) (identity.User, error) {
	var d userDoc
	err := s.users.FindOneAndUpdate(ctx, docstore.ID(login), nil, update, docstore.FindAndUpdate{}, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return identity.User{}, fmt.Errorf("update user %s: %w", login, identity.ErrUserNotFound)
	}
	if err != nil {
		return identity.User{}, fmt.Errorf("update user %s: %w", login, err)
	}
	return d.user(), nil
}

// stamp is the update every change makes: who changed the document, and when.
func stamp(by string, at time.Time) docstore.Update {
	return docstore.Set("updatedAt", docstore.Millis(at)).Set("updatedBy", by)
}

// UpdateUser sets the given fields.
func (s *IdentityStore) UpdateUser(ctx context.Context, login string, u identity.UserUpdate, by string, at time.Time) (identity.User, error) {
	set := stamp(by, at)
	if u.Name != nil {
		set = set.Set("name", *u.Name)
	}
	if u.Roles != nil {
		set = set.Set("roles", roleStrings(u.Roles))
	}
	if u.Status != nil {
		set = set.Set("status", *u.Status)
	}
	return s.update(ctx, login, set)
}

// SetPassword stores a password hash.
func (s *IdentityStore) SetPassword(ctx context.Context, login, hash, by string, at time.Time) error {
	_, err := s.update(ctx, login, stamp(by, at).Set("password", hash))
	return err
}

// EndSessions raises the session version of one user, or of all the organization's users, in one atomic
// increment per user, so no concurrent write puts an older version back (the other updates never write it).
func (s *IdentityStore) EndSessions(ctx context.Context, org, login string) error {
	inc := docstore.Update{}.Inc("sessionVersion", 1)
	if login != "" {
		found, err := s.users.UpdateOne(ctx, docstore.ID(login), inc, false)
		if err != nil {
			return fmt.Errorf("end sessions of %s: %w", login, err)
		}
		if !found {
			return identity.ErrUserNotFound
		}
		return nil
	}
	if _, err := s.users.UpdateMany(ctx, search.Node{Op: search.OpEq, Path: "organization", Value: org}, inc); err != nil {
		return fmt.Errorf("end sessions of organization %s: %w", org, err)
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
	update := stamp(by, at).Set("key", sealed).Set("keyHash", hash)
	if hash == "" {
		update = stamp(by, at).Unset("key").Unset("keyHash")
	}
	return s.keys.Rotate(ctx, login, old.KeyHash, hash, func(ctx context.Context) error {
		_, err := s.update(ctx, login, update)
		return err
	})
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
