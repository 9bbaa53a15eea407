// Package identity is who may use case-svc: organisations, their users and the profile each user holds in
// each of its organisations, the permissions of those profiles, passwords, sessions and API keys. It owns the
// types, the rules (who may administer whom, in which organisation), the caller every other package checks
// permissions on (Caller.Require), who may own a record of an organisation (Members, CheckOwner) and the
// interface of the store it consumes.
package identity

import (
	"context"
	"time"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Organisation is a tenant: cases, templates and tasks belong to one. Its name is its id and never changes.
type Organisation struct {
	Name        string
	Description string
	record.Meta
}

// Membership is a user's profile in one organisation.
type Membership struct {
	Org     string
	Profile string
}

// User is an account. It belongs to one or more organisations with one profile in each; the first one is its
// default organisation. PasswordHash and KeySealed never leave the service.
type User struct {
	Login        string
	Name         string
	Locked       bool
	Memberships  []Membership
	PasswordHash string
	KeySealed    string // the API key, encrypted with the keyring (revealable, so not hashed)
	KeyHash      string // keyed hash of the API key, to find the user by key
	// SessionVersion is carried by every session token; raising it (Store.EndSessions) ends all the
	// user's sessions at once.
	SessionVersion int64
	record.Meta
}

// HasKey reports whether the user has an API key.
func (u User) HasKey() bool { return u.KeyHash != "" }

// HasPassword reports whether the user has a password.
func (u User) HasPassword() bool { return u.PasswordHash != "" }

// Orgs returns the user's organisations, the default one first.
func (u User) Orgs() []string {
	out := make([]string, len(u.Memberships))
	for i, m := range u.Memberships {
		out[i] = m.Org
	}
	return out
}

// Tenant is the organisation whose share of the service's memory for request bodies the user's requests use
// (pkg/web.Tenant): the default one, whichever organisation a request works in, so that an account in several
// organisations cannot hold more than one share.
func (u User) Tenant() string {
	if len(u.Memberships) == 0 {
		return "user:" + u.Login
	}
	return u.Memberships[0].Org
}

// ProfileIn returns the user's profile in the organisation.
func (u User) ProfileIn(org string) (string, bool) {
	for _, m := range u.Memberships {
		if m.Org == org {
			return m.Profile, true
		}
	}
	return "", false
}

// OrgUpdate holds the changes to an organisation.
type OrgUpdate struct {
	Description record.Change[string]
}

// UserUpdate holds the changes to a user. Memberships replaces them all; Profile changes the profile in
// ProfileOrg only.
type UserUpdate struct {
	Name        record.Change[string]
	Locked      record.Change[bool]
	Profile     record.Change[string]
	ProfileOrg  string // organisation of Profile; "" = the caller's
	Memberships record.Change[[]Membership]
}

// Store persists organisations, users and the API-key lookup.
type Store interface {
	// CreateOrg fails with ErrOrgExists when the name is taken.
	CreateOrg(ctx context.Context, o Organisation) error
	// Org fails with ErrOrgNotFound.
	Org(ctx context.Context, name string) (Organisation, error)
	Orgs(ctx context.Context, f search.Node, p search.Page) ([]Organisation, int64, error)
	// UpdateOrg sets the description; it fails with ErrOrgNotFound.
	UpdateOrg(ctx context.Context, name, description, by string, at time.Time) (Organisation, error)

	// CreateUser fails with ErrUserExists when the login is taken.
	CreateUser(ctx context.Context, u User) error
	// User fails with ErrUserNotFound.
	User(ctx context.Context, login string) (User, error)
	Users(ctx context.Context, f search.Node, p search.Page) ([]User, int64, error)
	// UpdateUser writes the name, lock state and memberships of u.
	UpdateUser(ctx context.Context, u User, by string, at time.Time) (User, error)
	SetPassword(ctx context.Context, login, hash, by string, at time.Time) error
	// SetKey replaces the user's key (sealed and hash empty = revoke) and its lookup entry.
	SetKey(ctx context.Context, login, sealed, hash, by string, at time.Time) error
	// EndSessions raises the user's session version atomically, which ends every session of the user.
	EndSessions(ctx context.Context, login string) error
	// DeleteUser removes a user and its key's lookup entry; it fails with ErrUserNotFound.
	DeleteUser(ctx context.Context, login string) error
	// UserByKeyHash fails with ErrUserNotFound.
	UserByKeyHash(ctx context.Context, hash string) (User, error)
	AnyUser(ctx context.Context) (bool, error)
}

// Errors of the identity domain.
var (
	ErrOrgNotFound  = apperr.New(apperr.NotFound, "Organisation not found")
	ErrUserNotFound = apperr.New(apperr.NotFound, "User not found")
	ErrOrgExists    = apperr.New(apperr.Conflict, "an organisation with this name already exists")
	ErrUserExists   = apperr.New(apperr.Conflict, "a user with this login already exists")
)

// PathUserOrgs is the storage path of the list of a user's organisations, shared by the store and the
// scoping filters of the services.
const PathUserOrgs = "organisations"

// OrgFields and UserFields are the allow-lists of organisation and user searches. Their records are found by
// name (login), which is also what their "~name" id holds.
var (
	OrgFields = search.Fields{
		"name": {Path: "_id"}, "description": {Path: "description"},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
		"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
		"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
	}
	UserFields = search.Fields{
		"login": {Path: "_id"}, "name": {Path: "name"},
		"locked": {Path: "locked", Type: search.Bool}, "organisation": {Path: PathUserOrgs},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
		"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
		"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
	}
)

// idName turns "~name" (the rendered id of a user or an organisation) into the name; names never start
// with "~", so both spellings address the same record.
func idName(s string) string {
	if len(s) > 1 && s[0] == '~' {
		return s[1:]
	}
	return s
}

// IDName turns a user or organisation id ("~name") or name into the name.
func IDName(s string) string { return idName(s) }
