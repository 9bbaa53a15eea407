package identity

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/search"
)

// Service holds the rules of organisations, users, profiles and credentials.
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

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// systemUser is the author of what the service creates by itself.
const systemUser = "system"

// Bootstrap makes sure the admin organisation exists and, when no user exists yet and a login is given,
// creates the first platform administrator (profile admin in the admin organisation) with the given password
// and/or API key. It reports whether it created one.
func (s *Service) Bootstrap(ctx context.Context, login, password, key string) (bool, error) {
	now := s.clock()
	err := s.store.CreateOrg(ctx, Organisation{Name: AdminOrg, Description: "Platform administrators",
		Meta: record.Meta{CreatedAt: now, CreatedBy: systemUser}})
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
	u := User{Login: login, Name: login, Memberships: []Membership{{Org: AdminOrg, Profile: ProfileAdmin}},
		PasswordHash: hash, Meta: record.Meta{CreatedAt: now, CreatedBy: systemUser}}
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
func (s *Service) ByKey(ctx context.Context, key string) (User, error) {
	u, err := s.store.UserByKeyHash(ctx, s.cred.LookupHash(key))
	if err != nil {
		return User{}, authErr(err)
	}
	return active(u)
}

// ByPassword authenticates a login and password (HTTP basic).
func (s *Service) ByPassword(ctx context.Context, login, password string) (User, error) {
	return s.Login(ctx, login, password)
}

// BySession authenticates the user of a valid session and returns its current session version.
func (s *Service) BySession(ctx context.Context, login string) (User, int64, error) {
	u, err := s.store.User(ctx, login)
	if err != nil {
		return User{}, 0, authErr(err)
	}
	u, err = active(u)
	return u, u.SessionVersion, err
}

// Logout ends every session of the user (all its browsers, not only the one logging out).
func (s *Service) Logout(ctx context.Context, login string) error {
	return s.store.EndSessions(ctx, login)
}

// Login checks a password and returns the user. Unknown login, wrong password, no password and a locked user
// all give the same Unauthenticated error.
func (s *Service) Login(ctx context.Context, login, password string) (User, error) {
	u, err := s.store.User(ctx, login)
	if err != nil {
		s.cred.CheckLogin("", password)
		return User{}, authErr(err)
	}
	if !s.cred.CheckLogin(u.PasswordHash, password) {
		return User{}, errAuth
	}
	return active(u)
}

func authErr(err error) error {
	if errors.Is(err, ErrUserNotFound) {
		return errAuth
	}
	return err
}

func active(u User) (User, error) {
	if u.Locked || len(u.Memberships) == 0 {
		return User{}, errAuth
	}
	return u, nil
}

// CallerOf returns the caller that the user is in the organisation a request asks for (name or "~name"; ""
// = the user's default organisation). Asking for an organisation the user does not belong to is a 403.
func (s *Service) CallerOf(u User, org string) (Caller, error) {
	if len(u.Memberships) == 0 {
		return Caller{}, errAuth
	}
	m := u.Memberships[0]
	if org != "" {
		name := idName(org)
		p, ok := u.ProfileIn(name)
		if !ok {
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			return Caller{}, apperr.Errorf(apperr.Forbidden, "you are not a member of the organisation %q", name)
		}
		m = Membership{Org: name, Profile: p}
	}
	prof, ok := ProfileNamed(m.Profile)
	if !ok {
		return Caller{}, fmt.Errorf("user %s has the unknown profile %q", u.Login, m.Profile)
	}
	return Caller{Login: u.Login, Name: u.Name, Org: m.Org, Orgs: u.Orgs(), Profile: prof.Name,
		Permissions: prof.Permissions}, nil
}

// --- organisations ---

var orgNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// NewOrg is a request to create an organisation.
type NewOrg struct {
	Name        string
	Description string
}

// CreateOrg creates an organisation (manageOrganisation: platform administrators).
func (s *Service) CreateOrg(ctx context.Context, c Caller, n NewOrg) (Organisation, error) {
	if err := c.Require(ManageOrganisation); err != nil {
		return Organisation{}, err
	}
	var p record.Problems
	if !orgNameRe.MatchString(n.Name) {
		p.Add("name", "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	p.Text("description", n.Description, false, 4096)
	if err := p.Err(); err != nil {
		return Organisation{}, err
	}
	o := Organisation{Name: n.Name, Description: n.Description, Meta: record.Meta{CreatedAt: s.clock(), CreatedBy: c.Login}}
	if err := s.store.CreateOrg(ctx, o); err != nil {
		return Organisation{}, err
	}
	return o, nil
}

// Org returns an organisation: any of them to a platform administrator, the caller's own to others (404
// otherwise).
func (s *Service) Org(ctx context.Context, c Caller, id string) (Organisation, error) {
	name := idName(id)
	if !c.PlatformAdmin() && !c.Member(name) {
		return Organisation{}, ErrOrgNotFound
	}
	return s.store.Org(ctx, name)
}

// Orgs lists organisations: all of them to a platform administrator, the caller's own to others.
func (s *Service) Orgs(ctx context.Context, c Caller, f search.Node, p search.Page) ([]Organisation, int64, error) {
	if !c.PlatformAdmin() {
		vals := make([]any, len(c.Orgs))
		for i, o := range c.Orgs {
			vals[i] = o
		}
		f = record.And(f, search.Node{Op: search.OpIn, Path: "_id", Values: vals})
	}
	return s.store.Orgs(ctx, f, p)
}

// UpdateOrg changes an organisation's description (manageOrganisation).
func (s *Service) UpdateOrg(ctx context.Context, c Caller, id string, u OrgUpdate) (Organisation, error) {
	if err := c.Require(ManageOrganisation); err != nil {
		return Organisation{}, err
	}
	o, err := s.store.Org(ctx, idName(id))
	if err != nil {
		return Organisation{}, err
	}
	if !u.Description.Set {
		return o, nil
	}
	var p record.Problems
	p.Text("description", u.Description.V, false, 4096)
	if err := p.Err(); err != nil {
		return Organisation{}, err
	}
	return s.store.UpdateOrg(ctx, o.Name, u.Description.V, c.Login, s.clock())
}

// --- users ---

// NewUser is a request to create a user.
type NewUser struct {
	Login    string
	Name     string
	Org      string // "" = the caller's organisation
	Profile  string
	Password string
}

// CreateUser creates a user in an organisation (manageUser there: an org-admin in its own organisation, a
// platform administrator in any). A login that exists is ErrUserExists (400 CreateError) for everyone.
func (s *Service) CreateUser(ctx context.Context, c Caller, n NewUser) (User, error) {
	if err := c.Require(ManageUser); err != nil {
		return User{}, err
	}
	org := c.Org
	if n.Org != "" {
		org = idName(n.Org)
	}
	if org != c.Org && !c.PlatformAdmin() {
		return User{}, apperr.Errorf(apperr.Forbidden, "missing permission %s in the organisation", ManageUser)
	}
	var p record.Problems
	if err := auth.CheckLogin(n.Login); err != nil {
		p = append(p, apperr.As(err).Fields...)
	}
	if n.Name == "" {
		n.Name = n.Login
	}
	p.Text("name", n.Name, true, record.MaxShort)
	if err := checkProfile("profile", org, n.Profile); err != nil {
		p = append(p, apperr.As(err).Fields...)
	}
	if n.Password != "" {
		if err := auth.CheckNewPassword("password", n.Password); err != nil {
			p = append(p, apperr.As(err).Fields...)
		}
	}
	if err := p.Err(); err != nil {
		return User{}, err
	}
	if _, err := s.store.Org(ctx, org); errors.Is(err, ErrOrgNotFound) {
		return User{}, apperr.Fields(apperr.FieldError{Name: "organisation", Message: "no such organisation"})
	} else if err != nil {
		return User{}, err
	}
	now := s.clock()
	// A login that exists is refused whoever asks: creating a user never grants an existing account another
	// organisation (an org-admin could otherwise register a future member's login in its own organisation
	// and take over the account there). A platform administrator adds an organisation to an account through
	// PATCH /api/user/{id} {"organisations": …}, which also ends its sessions and revokes its key.
	if _, err := s.store.User(ctx, n.Login); err == nil {
		return User{}, ErrUserExists
	} else if !errors.Is(err, ErrUserNotFound) {
		return User{}, err
	}
	u := User{Login: n.Login, Name: n.Name, Memberships: []Membership{{Org: org, Profile: n.Profile}},
		Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	if n.Password != "" {
		h, err := auth.HashPassword(n.Password)
		if err != nil {
			return User{}, err
		}
		u.PasswordHash = h
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, err
	}
	return u, nil
}

// visible returns the user if the caller may see it: platform administrators see everyone, others the users
// of their current organisation and themselves.
func (s *Service) visible(ctx context.Context, c Caller, id string) (User, error) {
	u, err := s.store.User(ctx, idName(id))
	if err != nil {
		return User{}, err
	}
	if _, member := u.ProfileIn(c.Org); !member && !c.PlatformAdmin() && u.Login != c.Login {
		return User{}, ErrUserNotFound
	}
	return u, nil
}

// administers reports whether the caller may act on the user's account (name, lock, password, key): a
// platform administrator, or a holder of manageUser in every organisation of the user. So an org-admin never
// takes over an account that also works in another organisation.
func administers(c Caller, u User) bool {
	if c.PlatformAdmin() {
		return true
	}
	if !c.Can(ManageUser) || len(u.Memberships) == 0 {
		return false
	}
	for _, m := range u.Memberships {
		if m.Org != c.Org {
			return false
		}
	}
	return true
}

// manageable returns the user if the caller administers it.
func (s *Service) manageable(ctx context.Context, c Caller, id string) (User, error) {
	if err := c.Require(ManageUser); err != nil {
		return User{}, err
	}
	u, err := s.visible(ctx, c, id)
	if err != nil {
		return User{}, err
	}
	if !administers(c, u) {
		return User{}, notAdministered(u)
	}
	return u, nil
}

func notAdministered(u User) error {
	return apperr.Errorf(apperr.Forbidden,
		"missing permission %s in every organisation of the user %s (only a platform administrator manages it)", ManageUser, u.Login)
}

// User returns a user the caller may see.
func (s *Service) User(ctx context.Context, c Caller, id string) (User, error) {
	return s.visible(ctx, c, id)
}

// Current returns the caller's own user.
func (s *Service) Current(ctx context.Context, c Caller) (User, error) {
	return s.store.User(ctx, c.Login)
}

// Users lists users: all of them to a platform administrator, those of the current organisation to others.
func (s *Service) Users(ctx context.Context, c Caller, f search.Node, p search.Page) ([]User, int64, error) {
	if !c.PlatformAdmin() {
		f = record.And(f, search.Node{Op: search.OpEq, Path: PathUserOrgs, Value: c.Org})
	}
	return s.store.Users(ctx, f, p)
}

// UpdateUser changes a user: its name (itself, or whoever administers it), its lock (whoever administers it,
// never itself), its profile in one organisation (manageUser there), or all its memberships (platform
// administrators).
func (s *Service) UpdateUser(ctx context.Context, c Caller, id string, upd UserUpdate) (User, error) {
	u, err := s.visible(ctx, c, id)
	if err != nil {
		return User{}, err
	}
	self := u.Login == c.Login
	next := u
	next.Memberships = append([]Membership(nil), u.Memberships...)
	changed := false
	if upd.Name.Set {
		if !self && !administers(c, u) {
			return User{}, nameOrPermission(c, u)
		}
		var p record.Problems
		if upd.Name.Null {
			p.Add("name", "required")
		}
		p.Text("name", upd.Name.V, true, record.MaxShort)
		if err := p.Err(); err != nil {
			return User{}, err
		}
		next.Name, changed = upd.Name.V, true
	}
	if upd.Locked.Set {
		if upd.Locked.Null {
			return User{}, record.FieldError("locked", "expected a boolean") // as every flag (record.ChangeFlag)
		}
		if err := c.Require(ManageUser); err != nil {
			return User{}, err
		}
		if self {
			return User{}, apperr.New(apperr.Forbidden, "a user cannot lock or unlock itself")
		}
		if !administers(c, u) {
			return User{}, notAdministered(u)
		}
		next.Locked, changed = upd.Locked.V, true
	}
	if upd.Profile.Set {
		org := c.Org
		if upd.ProfileOrg != "" {
			org = idName(upd.ProfileOrg)
		}
		if !c.PlatformAdmin() && (org != c.Org || !c.Can(ManageUser)) {
			return User{}, apperr.Errorf(apperr.Forbidden, "missing permission %s in the organisation", ManageUser)
		}
		if self {
			return User{}, apperr.New(apperr.Forbidden, "a user cannot change its own profile")
		}
		i := -1
		for k, m := range next.Memberships {
			if m.Org == org {
				i = k
			}
		}
		if i < 0 {
			return User{}, apperr.Fields(apperr.FieldError{Name: "organisation", Message: "the user is not a member of this organisation"})
		}
		if err := checkProfile("profile", org, upd.Profile.V); err != nil {
			return User{}, err
		}
		next.Memberships[i].Profile, changed = upd.Profile.V, true
	}
	if upd.Memberships.Set {
		if !c.PlatformAdmin() {
			return User{}, c.Require(ManageOrganisation)
		}
		if self {
			return User{}, apperr.New(apperr.Forbidden, "a user cannot change its own organisations")
		}
		ms, err := s.checkMemberships(ctx, upd.Memberships.V)
		if err != nil {
			return User{}, err
		}
		next.Memberships, changed = ms, true
	}
	if !changed {
		return u, nil
	}
	// An account given an organisation it did not have starts over there: its sessions end, and its key and
	// password are removed (whoever knew them before, e.g. the org-admin who created the account elsewhere,
	// must not reach the new organisation with them); a platform administrator sets new ones.
	joined := false
	for _, m := range next.Memberships {
		if _, was := u.ProfileIn(m.Org); !was {
			joined = true
		}
	}
	if joined {
		if err := s.store.SetKey(ctx, u.Login, "", "", c.Login, s.clock()); err != nil {
			return User{}, err
		}
		if err := s.store.SetPassword(ctx, u.Login, "", c.Login, s.clock()); err != nil {
			return User{}, err
		}
		if err := s.store.EndSessions(ctx, u.Login); err != nil {
			return User{}, err
		}
	}
	out, err := s.store.UpdateUser(ctx, next, c.Login, s.clock())
	if err != nil {
		return User{}, err
	}
	if next.Locked && !u.Locked {
		if err := s.store.EndSessions(ctx, u.Login); err != nil {
			return User{}, err
		}
	}
	return out, nil
}

func nameOrPermission(c Caller, u User) error {
	if err := c.Require(ManageUser); err != nil {
		return err
	}
	return notAdministered(u)
}

// checkMemberships validates a full list of memberships.
func (s *Service) checkMemberships(ctx context.Context, in []Membership) ([]Membership, error) {
	if len(in) == 0 {
		return nil, apperr.Fields(apperr.FieldError{Name: "organisations", Message: "at least one organisation"})
	}
	seen := map[string]bool{}
	out := make([]Membership, 0, len(in))
	for _, m := range in {
		m.Org = idName(m.Org)
		if seen[m.Org] {
			return nil, apperr.Fields(apperr.FieldError{Name: "organisations", Message: "an organisation is listed twice"})
		}
		seen[m.Org] = true
		if err := checkProfile("organisations", m.Org, m.Profile); err != nil {
			return nil, err
		}
		if _, err := s.store.Org(ctx, m.Org); errors.Is(err, ErrOrgNotFound) {
			return nil, apperr.Fields(apperr.FieldError{Name: "organisations", Message: "no such organisation"})
		} else if err != nil {
			return nil, err
		}
		p, _ := ProfileNamed(m.Profile)
		out = append(out, Membership{Org: m.Org, Profile: p.Name})
	}
	return out, nil
}

// LockUser locks a user (DELETE on a user): it can no longer authenticate; its data is kept.
func (s *Service) LockUser(ctx context.Context, c Caller, id string) error {
	_, err := s.UpdateUser(ctx, c, id, UserUpdate{Locked: record.Change[bool]{Set: true, V: true}})
	return err
}

// DeleteUser is the reference system's force-delete: it removes the user from an organisation (org: "" = the
// caller's) and, when that was its last one, deletes the account (its key stops working, its sessions with
// it). manageUser in that organisation is needed (a platform administrator: in any); a user never deletes
// itself.
func (s *Service) DeleteUser(ctx context.Context, c Caller, id, org string) error {
	if err := c.Require(ManageUser); err != nil {
		return err
	}
	u, err := s.visible(ctx, c, id)
	if err != nil {
		return err
	}
	if u.Login == c.Login {
		return apperr.New(apperr.Forbidden, "a user cannot delete itself")
	}
	if org = idName(org); org == "" {
		org = c.Org
	}
	if !c.PlatformAdmin() && org != c.Org {
		return apperr.Errorf(apperr.Forbidden, "missing permission %s in organisation %s", ManageUser, org)
	}
	if _, member := u.ProfileIn(org); !member {
		return ErrUserNotFound
	}
	if len(u.Memberships) > 1 {
		next := u
		next.Memberships = nil
		for _, m := range u.Memberships {
			if m.Org != org {
				next.Memberships = append(next.Memberships, m)
			}
		}
		_, err := s.store.UpdateUser(ctx, next, c.Login, s.clock())
		return err
	}
	return s.store.DeleteUser(ctx, u.Login)
}

// SetPassword sets a user's password (whoever administers it) and ends the user's sessions.
func (s *Service) SetPassword(ctx context.Context, c Caller, id, password string) error {
	u, err := s.manageable(ctx, c, id)
	if err != nil {
		return err
	}
	h, err := auth.NewPassword("password", password)
	if err != nil {
		return err
	}
	return s.setPassword(ctx, u.Login, h, c.Login)
}

// setPassword stores the hash and ends the user's sessions.
func (s *Service) setPassword(ctx context.Context, login, hash, by string) error {
	if err := s.store.SetPassword(ctx, login, hash, by, s.clock()); err != nil {
		return err
	}
	return s.store.EndSessions(ctx, login)
}

// ChangePassword changes the caller's own password after checking the current one.
func (s *Service) ChangePassword(ctx context.Context, c Caller, id, current, password string) error {
	u, err := s.visible(ctx, c, id)
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
	return s.setPassword(ctx, u.Login, h, c.Login)
}

// keyHolder returns the user whose key the caller may read, renew or revoke: itself, or a user it administers.
func (s *Service) keyHolder(ctx context.Context, c Caller, id string) (User, error) {
	if idName(id) == c.Login {
		return s.store.User(ctx, c.Login)
	}
	return s.manageable(ctx, c, id)
}

// RenewKey gives the user a new API key, invalidating the old one, and returns it.
func (s *Service) RenewKey(ctx context.Context, c Caller, id string) (string, error) {
	u, err := s.keyHolder(ctx, c, id)
	if err != nil {
		return "", err
	}
	k, err := s.cred.NewAPIKey()
	if err != nil {
		return "", err
	}
	if err := s.store.SetKey(ctx, u.Login, k.Sealed, k.Hash, c.Login, s.clock()); err != nil {
		return "", err
	}
	return k.Plain, nil
}

// Key reveals the user's API key.
func (s *Service) Key(ctx context.Context, c Caller, id string) (string, error) {
	u, err := s.keyHolder(ctx, c, id)
	if err != nil {
		return "", err
	}
	return s.cred.RevealKey(u.Login, u.KeySealed)
}

// RevokeKey removes the user's API key and ends the user's sessions.
func (s *Service) RevokeKey(ctx context.Context, c Caller, id string) error {
	u, err := s.keyHolder(ctx, c, id)
	if err != nil {
		return err
	}
	if err := s.store.SetKey(ctx, u.Login, "", "", c.Login, s.clock()); err != nil {
		return err
	}
	return s.store.EndSessions(ctx, u.Login)
}

// Members answers whether a login is a user of an organisation; *Service implements it.
type Members interface {
	Member(ctx context.Context, login, org string) (bool, error)
}

// CheckOwner accepts an empty owner or the login of a user of the organisation (m); field names the problem.
func CheckOwner(ctx context.Context, m Members, field, org, owner string) error {
	if owner == "" {
		return nil
	}
	ok, err := m.Member(ctx, owner, org)
	if err != nil {
		return err
	}
	if !ok {
		return record.FieldError(field, "no such user in the organisation")
	}
	return nil
}

// Member reports whether the login names a user of the organisation (an assignable owner).
func (s *Service) Member(ctx context.Context, login, org string) (bool, error) {
	u, err := s.store.User(ctx, login)
	if errors.Is(err, ErrUserNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, ok := u.ProfileIn(org)
	return ok, nil
}
