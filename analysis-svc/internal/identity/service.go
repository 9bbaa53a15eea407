package identity

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/search"
)

// Service holds the rules of organizations, users, credentials and roles.
type Service struct {
	store Store
	cred  *auth.Credentials
	now   func() time.Time
}

// New returns the identity service over the credential rules of the operator's secret; now is its
// clock (time.Now but in tests).
func New(store Store, cred *auth.Credentials, now func() time.Time) *Service {
	return &Service{store: store, cred: cred, now: now}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

const systemUser = "system"

// Bootstrap makes sure the admin organization exists and, when no user exists yet and a login is given,
// creates the first superadmin with the given password and/or API key. It reports whether it created one.
func (s *Service) Bootstrap(ctx context.Context, login, password, key string) (bool, error) {
	now := s.clock()
	err := s.store.CreateOrg(ctx, Organization{ID: AdminOrg, Description: "Superadmins", Status: StatusActive,
		CreatedAt: now, CreatedBy: systemUser, UpdatedAt: now, UpdatedBy: systemUser})
	if err != nil && !errors.Is(err, ErrOrgExists) {
		return false, err
	}
	exists, err := s.store.AnyUser(ctx)
	if err != nil || exists || login == "" {
		return false, err
	}
	if err := auth.CheckLogin(login); err != nil {
		return false, fmt.Errorf("bootstrap.login: %w", err)
	}
	hash, k, err := s.cred.FirstUser(password, key)
	if err != nil {
		return false, err
	}
	u := User{Login: login, Name: login, Roles: []Role{RoleSuperAdmin}, Status: StatusActive, PasswordHash: hash,
		Organization: AdminOrg, CreatedAt: now, CreatedBy: systemUser, UpdatedAt: now, UpdatedBy: systemUser}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return false, err
	}
	if k.Hash != "" {
		if err := s.store.SetKey(ctx, login, k.Sealed, k.Hash, systemUser, now); err != nil {
			return false, err
		}
	}
	return true, nil
}

// --- authentication ---

var errAuth = auth.ErrAuthentication

// ByKey authenticates an API key.
func (s *Service) ByKey(ctx context.Context, key string) (Caller, error) {
	u, err := s.store.UserByKeyHash(ctx, s.cred.LookupHash(key))
	if err != nil {
		return Caller{}, authErr(err)
	}
	return s.active(ctx, u)
}

// ByPassword authenticates a login and password (basic auth and /api/login).
func (s *Service) ByPassword(ctx context.Context, login, password string) (Caller, error) {
	u, err := s.Login(ctx, login, password)
	if err != nil {
		return Caller{}, err
	}
	return callerOf(u), nil
}

// BySession authenticates the user of a valid session and returns its current session version.
func (s *Service) BySession(ctx context.Context, login string) (Caller, int64, error) {
	u, err := s.store.User(ctx, login)
	if err != nil {
		return Caller{}, 0, authErr(err)
	}
	c, err := s.active(ctx, u)
	return c, u.SessionVersion, err
}

// Logout ends every session of the user (all its browsers, not only the one logging out).
func (s *Service) Logout(ctx context.Context, login string) error {
	return s.store.EndSessions(ctx, "", login)
}

// Login checks a password and returns the user. Unknown login, wrong password, no password, locked user and
// locked organization all give the same Unauthenticated error.
func (s *Service) Login(ctx context.Context, login, password string) (User, error) {
	u, err := s.store.User(ctx, login)
	if err != nil {
		s.cred.CheckLogin("", password)
		return User{}, authErr(err)
	}
	if !s.cred.CheckLogin(u.PasswordHash, password) {
		return User{}, errAuth
	}
	if _, err := s.active(ctx, u); err != nil {
		return User{}, err
	}
	return u, nil
}

func authErr(err error) error {
	if errors.Is(err, ErrUserNotFound) {
		return errAuth
	}
	return err
}

func (s *Service) active(ctx context.Context, u User) (Caller, error) {
	if u.Status == StatusLocked {
		return Caller{}, errAuth
	}
	o, err := s.store.Org(ctx, u.Organization)
	if errors.Is(err, ErrOrgNotFound) || (err == nil && o.Status == StatusLocked) {
		return Caller{}, errAuth
	}
	if err != nil {
		return Caller{}, err
	}
	return callerOf(u), nil
}

func callerOf(u User) Caller { return Caller{Login: u.Login, Org: u.Organization, Roles: u.Roles} }

// --- organizations ---

var orgName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// NewOrg is a request to create an organization.
type NewOrg struct {
	Name        string
	Description string
	Status      string
}

// CreateOrg creates an organization (superadmin).
func (s *Service) CreateOrg(ctx context.Context, c Caller, n NewOrg) (Organization, error) {
	if err := c.Require(RoleSuperAdmin); err != nil {
		return Organization{}, err
	}
	var probs []apperr.FieldError
	if !orgName.MatchString(n.Name) {
		probs = append(probs, apperr.FieldError{Name: "name",
			Message: "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"})
	}
	status, ok := orgStatus(n.Status)
	if !ok {
		probs = append(probs, apperr.FieldError{Name: "status", Message: "Active or Locked"})
	}
	if utf8.RuneCountInString(n.Description) > 4096 {
		probs = append(probs, apperr.FieldError{Name: "description", Message: "at most 4096 characters"})
	}
	if probs != nil {
		return Organization{}, apperr.Fields(probs...)
	}
	now := s.clock()
	o := Organization{ID: n.Name, Description: n.Description, Status: status,
		CreatedAt: now, CreatedBy: c.Login, UpdatedAt: now, UpdatedBy: c.Login}
	if err := s.store.CreateOrg(ctx, o); err != nil {
		return Organization{}, err
	}
	return o, nil
}

// StatusFilter brings the status words of a user or organization search to the stored ones: Cortex's Ok (any
// case) and active are Active, locked is Locked, wherever the filter compares the status field.
func StatusFilter(n search.Node) search.Node {
	if n.Path == "status" {
		if v, ok := n.Value.(string); ok {
			if st, ok := orgStatus(v); ok && v != "" {
				n.Value = st
			}
		}
		if n.Values != nil {
			vals := make([]any, len(n.Values))
			for i, v := range n.Values {
				vals[i] = v
				if sv, ok := v.(string); ok && sv != "" {
					if st, ok := orgStatus(sv); ok {
						vals[i] = st
					}
				}
			}
			n.Values = vals
		}
	}
	if n.Children != nil {
		ch := make([]search.Node, len(n.Children))
		for i, c := range n.Children {
			ch[i] = StatusFilter(c)
		}
		n.Children = ch
	}
	return n
}

func orgStatus(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "", "active", "ok":
		return StatusActive, true
	case "locked":
		return StatusLocked, true
	}
	return "", false
}

// Org returns an organization: any of them to a superadmin, the caller's own to others (404 otherwise).
func (s *Service) Org(ctx context.Context, c Caller, id string) (Organization, error) {
	if !c.Superadmin() && id != c.Org {
		return Organization{}, ErrOrgNotFound
	}
	return s.store.Org(ctx, id)
}

// Orgs lists and searches organizations (superadmin).
func (s *Service) Orgs(ctx context.Context, c Caller, f search.Node, p search.Page) ([]Organization, int64, error) {
	if err := c.Require(RoleSuperAdmin); err != nil {
		return nil, 0, err
	}
	return s.store.Orgs(ctx, f, p)
}

// UpdateOrg changes an organization's description and/or status (superadmin).
func (s *Service) UpdateOrg(ctx context.Context, c Caller, id string, u OrgUpdate) (Organization, error) {
	if err := c.Require(RoleSuperAdmin); err != nil {
		return Organization{}, err
	}
	if u.Status != nil {
		st, ok := orgStatus(*u.Status)
		if !ok || *u.Status == "" {
			return Organization{}, apperr.Fields(apperr.FieldError{Name: "status", Message: "Active or Locked"})
		}
		u.Status = &st
	}
	if u.Description != nil && utf8.RuneCountInString(*u.Description) > 4096 {
		return Organization{}, apperr.Fields(apperr.FieldError{Name: "description", Message: "at most 4096 characters"})
	}
	if _, err := s.store.Org(ctx, id); err != nil {
		return Organization{}, err
	}
	if id == AdminOrg && u.Status != nil && *u.Status != StatusActive {
		return Organization{}, apperr.New(apperr.BadRequest, "the admin organization cannot be locked")
	}
	o, err := s.store.UpdateOrg(ctx, id, u, c.Login, s.clock())
	if err == nil && u.Status != nil && *u.Status == StatusLocked {
		// Ended, not only refused while locked: unlocking does not bring the sessions back.
		err = s.store.EndSessions(ctx, id, "")
	}
	return o, err
}

// LockOrg is DELETE on an organization: it is locked, its data kept (superadmin).
func (s *Service) LockOrg(ctx context.Context, c Caller, id string) error {
	locked := StatusLocked
	_, err := s.UpdateOrg(ctx, c, id, OrgUpdate{Status: &locked})
	return err
}

// --- users ---

// NewUser is a request to create a user.
type NewUser struct {
	Login        string
	Name         string
	Roles        []string
	Organization string
	Password     string
	Status       string // Active (also Ok, Cortex's word; the default) or Locked
}

// ParseRoles checks that roles (any case, any order) form one of the contract's role sets and returns it in
// canonical order.
func ParseRoles(in []string) ([]Role, error) {
	bad := apperr.Fields(apperr.FieldError{Name: "roles",
		Message: `one of ["read"], ["read","analyze"], ["read","analyze","orgadmin"], ["superadmin"]`})
	if len(in) > 16 { // no valid set is longer; refuse before any work
		return nil, bad
	}
	set := make([]Role, 0, len(in))
	for _, r := range in {
		role := Role(strings.ToLower(strings.TrimSpace(r)))
		if !slices.Contains(set, role) {
			set = append(set, role)
		}
	}
	for _, valid := range validRoleSets {
		if len(valid) == len(set) && !slices.ContainsFunc(set, func(r Role) bool { return !slices.Contains(valid, r) }) {
			return slices.Clone(valid), nil
		}
	}
	return nil, bad
}

// checkAdminOrg enforces that the admin organization holds superadmins and only it does.
func checkAdminOrg(org string, roles []Role) error {
	super := slices.Contains(roles, RoleSuperAdmin)
	if org == AdminOrg && !super {
		return apperr.Fields(apperr.FieldError{Name: "roles", Message: `the admin organization holds only superadmins`})
	}
	if org != AdminOrg && super {
		return apperr.Fields(apperr.FieldError{Name: "roles", Message: `superadmins belong to the admin organization`})
	}
	return nil
}

// CreateUser creates a user: a superadmin in any organization, an orgadmin in its own only.
func (s *Service) CreateUser(ctx context.Context, c Caller, n NewUser) (User, error) {
	if err := c.Require(RoleSuperAdmin, RoleOrgAdmin); err != nil {
		return User{}, err
	}
	if n.Organization == "" {
		n.Organization = c.Org
	}
	if !c.Superadmin() && n.Organization != c.Org {
		return User{}, apperr.New(apperr.Forbidden, "an orgadmin may create users only in its own organization")
	}
	var probs []apperr.FieldError
	if err := auth.CheckLogin(n.Login); err != nil {
		probs = append(probs, apperr.As(err).Fields...)
	}
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" {
		n.Name = n.Login
	}
	if utf8.RuneCountInString(n.Name) > 256 {
		probs = append(probs, apperr.FieldError{Name: "name", Message: "at most 256 characters"})
	}
	roles, err := ParseRoles(n.Roles)
	if err != nil {
		probs = append(probs, apperr.As(err).Fields...)
	}
	if n.Password != "" {
		if err := auth.CheckNewPassword("password", n.Password); err != nil {
			probs = append(probs, apperr.As(err).Fields...)
		}
	}
	if probs != nil {
		return User{}, apperr.Fields(probs...)
	}
	if slices.Contains(roles, RoleSuperAdmin) && !c.Superadmin() {
		return User{}, apperr.New(apperr.Forbidden, "only a superadmin may create a superadmin")
	}
	if err := checkAdminOrg(n.Organization, roles); err != nil {
		return User{}, err
	}
	if _, err := s.store.Org(ctx, n.Organization); errors.Is(err, ErrOrgNotFound) {
		return User{}, apperr.Fields(apperr.FieldError{Name: "organization", Message: "no such organization"})
	} else if err != nil {
		return User{}, err
	}
	status, ok := orgStatus(n.Status)
	if !ok {
		return User{}, apperr.Fields(apperr.FieldError{Name: "status", Message: "must be Active (or Ok) or Locked"})
	}
	now := s.clock()
	u := User{Login: n.Login, Name: n.Name, Roles: roles, Status: status, Organization: n.Organization,
		CreatedAt: now, CreatedBy: c.Login, UpdatedAt: now, UpdatedBy: c.Login}
	if n.Password != "" {
		if u.PasswordHash, err = auth.HashPassword(n.Password); err != nil {
			return User{}, err
		}
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, err
	}
	return u, nil
}

// visible returns the user if the caller may see it: superadmins see everyone, others their organization.
func (s *Service) visible(ctx context.Context, c Caller, login string) (User, error) {
	u, err := s.store.User(ctx, login)
	if err != nil {
		return User{}, err
	}
	if !c.Superadmin() && u.Organization != c.Org {
		return User{}, ErrUserNotFound
	}
	return u, nil
}

// manageable returns the user if the caller administers it: a superadmin, or an orgadmin of its organization.
func (s *Service) manageable(ctx context.Context, c Caller, login string) (User, error) {
	u, err := s.visible(ctx, c, login)
	if err != nil {
		return User{}, err
	}
	if err := c.Require(RoleSuperAdmin, RoleOrgAdmin); err != nil {
		return User{}, err
	}
	return u, nil
}

// User returns a user to a superadmin, to users of its organization, and to itself.
func (s *Service) User(ctx context.Context, c Caller, login string) (User, error) {
	return s.visible(ctx, c, login)
}

// Current returns the caller's own user.
func (s *Service) Current(ctx context.Context, c Caller) (User, error) {
	return s.store.User(ctx, c.Login)
}

// Users lists and searches all users (superadmin).
func (s *Service) Users(ctx context.Context, c Caller, f search.Node, p search.Page) ([]User, int64, error) {
	if err := c.Require(RoleSuperAdmin); err != nil {
		return nil, 0, err
	}
	return s.store.Users(ctx, f, p)
}

// OrgUsers lists and searches the users of one organization (superadmin, or orgadmin of that organization).
func (s *Service) OrgUsers(ctx context.Context, c Caller, org string, f search.Node, p search.Page) ([]User, int64, error) {
	if err := c.Require(RoleSuperAdmin, RoleOrgAdmin); err != nil {
		return nil, 0, err
	}
	if _, err := s.Org(ctx, c, org); err != nil {
		return nil, 0, err
	}
	scoped := search.Node{Op: search.OpAnd, Children: []search.Node{
		f, {Op: search.OpEq, Path: "organization", Value: org},
	}}
	return s.store.Users(ctx, scoped, p)
}

// UpdateUser changes name, roles and status: superadmins and orgadmins (own organization), and any user its
// own name (a user never changes its own roles or status).
func (s *Service) UpdateUser(ctx context.Context, c Caller, login string, upd UserUpdate) (User, error) {
	u, err := s.visible(ctx, c, login)
	if err != nil {
		return User{}, err
	}
	self := u.Login == c.Login
	if !self {
		if err := c.Require(RoleSuperAdmin, RoleOrgAdmin); err != nil {
			return User{}, err
		}
	}
	if upd.Name != nil {
		name := strings.TrimSpace(*upd.Name)
		upd.Name = &name
	}
	if upd.Name != nil && (*upd.Name == "" || utf8.RuneCountInString(*upd.Name) > 256) {
		return User{}, apperr.Fields(apperr.FieldError{Name: "name", Message: "1 to 256 characters"})
	}
	if upd.Status != nil {
		st, ok := orgStatus(*upd.Status)
		if !ok || *upd.Status == "" {
			return User{}, apperr.Fields(apperr.FieldError{Name: "status", Message: "Active or Locked"})
		}
		upd.Status = &st
	}
	if upd.Roles != nil {
		// The set is checked here, whoever calls (the API parses it too): one of the contract's, canonical order.
		names := make([]string, len(upd.Roles))
		for i, r := range upd.Roles {
			names[i] = string(r)
		}
		roles, err := ParseRoles(names)
		if err != nil {
			return User{}, err
		}
		upd.Roles = roles
		if err := checkAdminOrg(u.Organization, upd.Roles); err != nil {
			return User{}, err
		}
	}
	if self && ((upd.Roles != nil && !slices.Equal(upd.Roles, u.Roles)) || (upd.Status != nil && *upd.Status != u.Status)) {
		return User{}, apperr.New(apperr.Forbidden, "a user cannot change its own roles or status")
	}
	if upd.Roles != nil && slices.Contains(upd.Roles, RoleSuperAdmin) && !c.Superadmin() {
		return User{}, apperr.New(apperr.Forbidden, "only a superadmin may grant superadmin")
	}
	out, err := s.store.UpdateUser(ctx, login, upd, c.Login, s.clock())
	if err == nil && upd.Status != nil && *upd.Status == StatusLocked {
		err = s.store.EndSessions(ctx, "", login)
	}
	return out, err
}

// SetPassword sets a user's password (superadmin, or orgadmin of its organization).
func (s *Service) SetPassword(ctx context.Context, c Caller, login, password string) error {
	if _, err := s.manageable(ctx, c, login); err != nil {
		return err
	}
	h, err := auth.NewPassword("password", password)
	if err != nil {
		return err
	}
	return s.setPassword(ctx, login, h, c.Login)
}

// setPassword stores the hash and ends the user's sessions.
func (s *Service) setPassword(ctx context.Context, login, hash, by string) error {
	if err := s.store.SetPassword(ctx, login, hash, by, s.clock()); err != nil {
		return err
	}
	return s.store.EndSessions(ctx, "", login)
}

// ChangePassword changes the caller's own password after checking the current one.
func (s *Service) ChangePassword(ctx context.Context, c Caller, login, current, password string) error {
	u, err := s.visible(ctx, c, login)
	if err != nil {
		return err
	}
	if u.Login != c.Login {
		return apperr.New(apperr.Forbidden, "only the user itself may change its password")
	}
	h, err := auth.ChangePassword("password", u.PasswordHash, current, password)
	if err != nil {
		return err
	}
	return s.setPassword(ctx, login, h, c.Login)
}

// keyHolder returns the user whose key the caller may read or renew: itself, or a user it administers.
func (s *Service) keyHolder(ctx context.Context, c Caller, login string) (User, error) {
	u, err := s.visible(ctx, c, login)
	if err != nil {
		return User{}, err
	}
	if u.Login == c.Login {
		return u, nil
	}
	if err := c.Require(RoleSuperAdmin, RoleOrgAdmin); err != nil {
		return User{}, err
	}
	return u, nil
}

// RenewKey gives the user a new API key, invalidating the old one, and returns it.
func (s *Service) RenewKey(ctx context.Context, c Caller, login string) (string, error) {
	if _, err := s.keyHolder(ctx, c, login); err != nil {
		return "", err
	}
	k, err := s.cred.NewAPIKey()
	if err != nil {
		return "", err
	}
	if err := s.store.SetKey(ctx, login, k.Sealed, k.Hash, c.Login, s.clock()); err != nil {
		return "", err
	}
	return k.Plain, nil
}

// Key reveals the user's API key.
func (s *Service) Key(ctx context.Context, c Caller, login string) (string, error) {
	u, err := s.keyHolder(ctx, c, login)
	if err != nil {
		return "", err
	}
	return s.cred.RevealKey(login, u.KeySealed)
}

// RevokeKey removes the user's API key and ends the user's sessions (superadmin, or orgadmin of its
// organization).
func (s *Service) RevokeKey(ctx context.Context, c Caller, login string) error {
	if _, err := s.manageable(ctx, c, login); err != nil {
		return err
	}
	if err := s.store.SetKey(ctx, login, "", "", c.Login, s.clock()); err != nil {
		return err
	}
	return s.store.EndSessions(ctx, "", login)
}
