// Package identity is who may use analysis-svc: organizations, their users and roles, passwords, sessions and
// API keys. It owns the types, the rules (who may administer whom, in which organization), the caller every
// other service checks its roles on (Caller.Require), and the interface of the store it consumes.
package identity

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Role is one of the four roles of the contract.
type Role string

// The roles. A caller passes an endpoint when it holds any one of the roles the endpoint lists; there is no
// hierarchy (a superadmin is not an organization user).
const (
	RoleRead       Role = "read"
	RoleAnalyze    Role = "analyze"
	RoleOrgAdmin   Role = "orgadmin"
	RoleSuperAdmin Role = "superadmin"
)

// validRoleSets are the only role sets a user may hold (spec §2).
var validRoleSets = [][]Role{
	{RoleRead},
	{RoleRead, RoleAnalyze},
	{RoleRead, RoleAnalyze, RoleOrgAdmin},
	{RoleSuperAdmin},
}

// AdminOrg is the organization that holds the superadmins, and only them.
const AdminOrg = "admin"

// Statuses of organizations and users.
const (
	StatusActive = "Active"
	StatusLocked = "Locked"
)

// Organization is a tenant: users, enabled analyzers and jobs belong to one.
type Organization struct {
	ID          string // equal to the name
	Description string
	Status      string
	CreatedAt   time.Time
	CreatedBy   string
	UpdatedAt   time.Time
	UpdatedBy   string
}

// User is an account of one organization. PasswordHash and KeySealed never leave the service.
type User struct {
	Login        string
	Name         string
	Roles        []Role
	Status       string
	Organization string
	PasswordHash string
	KeySealed    string // the API key, encrypted with the keyring (revealable, so not hashed)
	KeyHash      string // keyed hash of the API key, to find the user by key
	// SessionVersion is carried by every session token; raising it (Store.EndSessions) ends all the
	// user's sessions at once.
	SessionVersion int64
	CreatedAt      time.Time
	CreatedBy      string
	UpdatedAt      time.Time
	UpdatedBy      string
}

// HasKey reports whether the user has an API key.
func (u User) HasKey() bool { return u.KeyHash != "" }

// HasPassword reports whether the user has a password.
func (u User) HasPassword() bool { return u.PasswordHash != "" }

// Caller is the authenticated user behind a request.
type Caller struct {
	Login string
	Org   string
	Roles []Role
}

// Tenant is the organisation whose share of the service's memory for request bodies the caller's requests use
// (pkg/web.Tenant).
func (c Caller) Tenant() string { return c.Org }

// Has reports whether the caller holds any of the roles.
func (c Caller) Has(roles ...Role) bool {
	for _, r := range roles {
		if slices.Contains(c.Roles, r) {
			return true
		}
	}
	return false
}

// Superadmin reports whether the caller is a superadmin.
func (c Caller) Superadmin() bool { return c.Has(RoleSuperAdmin) }

// Errors of the identity domain.
var (
	ErrOrgNotFound  = apperr.New(apperr.NotFound, "organization not found")
	ErrUserNotFound = apperr.New(apperr.NotFound, "user not found")
	ErrOrgExists    = apperr.New(apperr.Conflict, "an organization with this name already exists")
	ErrUserExists   = apperr.New(apperr.Conflict, "a user with this login already exists")
)

// forbidden names the roles an action needs.
func forbidden(roles ...Role) error {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return apperr.Errorf(apperr.Forbidden, "this action needs the role %s", strings.Join(names, " or "))
}

// Require returns a 403 naming the roles unless the caller holds one of them.
func (c Caller) Require(roles ...Role) error {
	if c.Has(roles...) {
		return nil
	}
	return forbidden(roles...)
}

// OrgUpdate holds the writable fields of an organization; nil means unchanged.
type OrgUpdate struct {
	Description *string
	Status      *string
}

// UserUpdate holds the writable fields of a user; nil means unchanged.
type UserUpdate struct {
	Name   *string
	Roles  []Role // nil = unchanged
	Status *string
}

// Store persists organizations, users and API-key lookups.
type Store interface {
	// CreateOrg fails with ErrOrgExists when the name is taken.
	CreateOrg(ctx context.Context, o Organization) error
	// Org fails with ErrOrgNotFound.
	Org(ctx context.Context, id string) (Organization, error)
	Orgs(ctx context.Context, f search.Node, p search.Page) ([]Organization, int64, error)
	UpdateOrg(ctx context.Context, id string, u OrgUpdate, by string, at time.Time) (Organization, error)

	// CreateUser fails with ErrUserExists when the login is taken.
	CreateUser(ctx context.Context, u User) error
	// User fails with ErrUserNotFound.
	User(ctx context.Context, login string) (User, error)
	Users(ctx context.Context, f search.Node, p search.Page) ([]User, int64, error)
	UpdateUser(ctx context.Context, login string, u UserUpdate, by string, at time.Time) (User, error)
	SetPassword(ctx context.Context, login, hash, by string, at time.Time) error
	// SetKey replaces the user's key (sealed and hash empty = revoke) and its lookup entry.
	SetKey(ctx context.Context, login, sealed, hash, by string, at time.Time) error
	// EndSessions raises the session version of the user (login), or of every user of the organization
	// (login empty), atomically: their sessions end at once.
	EndSessions(ctx context.Context, org, login string) error
	// UserByKeyHash fails with ErrUserNotFound.
	UserByKeyHash(ctx context.Context, hash string) (User, error)
	AnyUser(ctx context.Context) (bool, error)
}

// OrgFields and UserFields are the allow-lists of organization and user searches and sorts.
var (
	OrgFields = search.Fields{
		"id": {Path: "_id"}, "name": {Path: "_id"}, "status": {Path: "status"},
		"description": {Path: "description"},
		"createdAt":   {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	}
	UserFields = search.Fields{
		"id": {Path: "_id"}, "login": {Path: "_id"}, "name": {Path: "name"}, "roles": {Path: "roles"},
		"status": {Path: "status"}, "organization": {Path: "organization"},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	}
)
