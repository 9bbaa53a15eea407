// Package accounts serves who uses case-svc: sessions (login, logout), users, organisations, profiles, and
// passwords and API keys, with their JSON. The router registers its handlers with the others; the audit
// trail and the UI routes render users and organisations with UserJSON and OrgJSON.
package accounts

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// --- responses ---

type membershipResponse struct {
	Organisation string `json:"organisation"`
	Profile      string `json:"profile"`
}

// UserResponse is a user as the API renders it.
type UserResponse struct {
	route.Meta
	Login         string                `json:"login"`
	Name          string                `json:"name"`
	Organisation  string                `json:"organisation"`
	Profile       string                `json:"profile"`
	Permissions   []identity.Permission `json:"permissions"`
	Organisations []membershipResponse  `json:"organisations"`
	Status        string                `json:"status"`
	Locked        bool                  `json:"locked"`
	HasKey        bool                  `json:"hasKey"`
	HasPassword   bool                  `json:"hasPassword"`
	HasMFA        bool                  `json:"hasMFA"`
}

// UserJSON renders a user as seen from an organisation: organisation, profile and permissions are those of
// that organisation when the user belongs to it, else of the user's default organisation. Its memberships
// (organisations) list that organisation's only: members of one organisation do not learn the user's
// others (UserJSONAll lists them, for the user and the platform administrator).
func UserJSON(u identity.User, org string) UserResponse { return userJSON(u, org, false) }

// UserJSONAll is UserJSON with every membership of the user.
func UserJSONAll(u identity.User, org string) UserResponse { return userJSON(u, org, true) }

// userJSONFor renders u for the caller: every membership for the user and the platform administrator.
func userJSONFor(cl identity.Caller, u identity.User, org string) UserResponse {
	return userJSON(u, org, cl.Login == u.Login || cl.PlatformAdmin())
}

func userJSON(u identity.User, org string, all bool) UserResponse {
	r := UserResponse{Meta: route.MetaOf("~"+u.Login, "user", u.Meta), Login: u.Login, Name: u.Name,
		Permissions: []identity.Permission{}, Organisations: []membershipResponse{}, Status: "Ok", Locked: u.Locked,
		HasKey: u.HasKey(), HasPassword: u.HasPassword()}
	if u.Locked {
		r.Status = "Locked"
	}
	for _, m := range u.Memberships {
		if all || m.Org == org {
			r.Organisations = append(r.Organisations, membershipResponse{Organisation: m.Org, Profile: m.Profile})
		}
		if r.Organisation == "" || m.Org == org {
			r.Organisation, r.Profile = m.Org, m.Profile
		}
	}
	if p, ok := identity.ProfileNamed(r.Profile); ok {
		r.Permissions = p.Permissions
	}
	return r
}

func (h *Handler) usersJSON(c echo.Context, us []identity.User) []UserResponse {
	cl := route.Caller(c)
	return route.MapSlice(us, func(u identity.User) UserResponse { return userJSONFor(cl, u, cl.Org) })
}

// OrgResponse is an organisation as the API renders it.
type OrgResponse struct {
	route.Meta
	Name        string `json:"name"`
	Description string `json:"description"`
}

// OrgJSON renders an organisation.
func OrgJSON(o identity.Organisation) OrgResponse {
	return OrgResponse{Meta: route.MetaOf("~"+o.Name, "organisation", o.Meta), Name: o.Name, Description: o.Description}
}

// ProfileResponse is a profile as the API renders it.
type ProfileResponse struct {
	route.Meta
	Name        string                `json:"name"`
	Permissions []identity.Permission `json:"permissions"`
	Editable    bool                  `json:"editable"`
	IsAdmin     bool                  `json:"isAdmin"`
}

// ProfileJSON renders a profile.
func ProfileJSON(p identity.Profile) ProfileResponse {
	return ProfileResponse{Meta: route.MetaOf("~"+p.Name, "profile", record.Meta{CreatedBy: "system"}), Name: p.Name,
		Permissions: p.Permissions, IsAdmin: p.Admin}
}

// Handler serves the routes of accounts.
type Handler struct {
	ids    *identity.Service
	auth   web.AuthConfig
	secure web.SecureConfig
	max    int
}

// New returns the handlers over the identity service: auth is the router's authentication (its transport
// rule set), secure the HTTPS rule of the password and key routes, max the largest page of a search.
func New(ids *identity.Service, auth web.AuthConfig, secure web.SecureConfig, max int) *Handler {
	return &Handler{ids: ids, auth: auth, secure: secure, max: max}
}

// --- session ---

type loginRequest struct {
	User         string `json:"user"`
	Password     string `json:"password"`
	Organisation string `json:"organisation"`
}

// Login is POST /login: a password checked, a session started.
func (h *Handler) Login(c echo.Context) error {
	var req loginRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.User == "" || req.Password == "" {
		return web.ErrAuthentication
	}
	u, err := web.CheckLogin(c, h.auth, req.User, func() (identity.User, error) {
		return h.ids.Login(c.Request().Context(), req.User, req.Password)
	})
	if err != nil {
		return err
	}
	cl, err := h.ids.CallerOf(u, req.Organisation)
	if err != nil {
		return err
	}
	if err := web.StartSession(c, h.auth, u.Login, u.SessionVersion); err != nil {
		return err
	}
	// The organisation asked for at login is kept in a cookie, which X-Organisation overrides per request;
	// without one, the session follows the user's default organisation.
	ck := &http.Cookie{Name: route.OrgHeader, Value: cl.Org, Path: "/", Secure: h.auth.Secure, SameSite: http.SameSiteLaxMode}
	if req.Organisation == "" {
		ck.Value, ck.MaxAge = "", -1
	}
	c.SetCookie(ck)
	return c.JSON(http.StatusOK, UserJSONAll(u, cl.Org))
}

// Logout ends the user's sessions server-side (a copy of the cookie no longer works either) and clears the
// cookies.
func (h *Handler) Logout(c echo.Context) error {
	if err := web.Logout[identity.User](c, h.ids, h.auth, h.ids.Logout); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: route.OrgHeader, Value: "", Path: "/", MaxAge: -1, Secure: h.auth.Secure,
		SameSite: http.SameSiteLaxMode})
	return c.NoContent(http.StatusNoContent)
}

// CurrentUser is GET /user/current.
func (h *Handler) CurrentUser(c echo.Context) error {
	u, err := h.ids.Current(c.Request().Context(), route.Caller(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, UserJSONAll(u, route.Caller(c).Org))
}

// --- users ---

// ListUsers is GET /user and POST /user/_search.
func (h *Handler) ListUsers(c echo.Context) error {
	f, p, err := web.Search(c, identity.UserFields, h.max)
	if err != nil {
		return err
	}
	us, total, err := h.ids.Users(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, h.usersJSON(c, us))
}

type createUserRequest struct {
	Login        string `json:"login"`
	Name         string `json:"name"`
	Organisation string `json:"organisation"`
	Profile      string `json:"profile"`
	Password     string `json:"password"`
}

// CreateUser is POST /user.
func (h *Handler) CreateUser(c echo.Context) error {
	var req createUserRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Password != "" {
		if err := h.requireSecure(c); err != nil {
			return err
		}
	}
	u, err := h.ids.CreateUser(c.Request().Context(), route.Caller(c), identity.NewUser{Login: req.Login, Name: req.Name,
		Org: req.Organisation, Profile: req.Profile, Password: req.Password})
	if err != nil {
		return err
	}
	org := route.Caller(c).Org
	if req.Organisation != "" {
		org = identity.IDName(req.Organisation)
	}
	return c.JSON(http.StatusCreated, userJSONFor(route.Caller(c), u, org))
}

// requireSecure applies the HTTPS rule of the password and key routes to a request that carries a password.
func (h *Handler) requireSecure(c echo.Context) error {
	return web.RequireSecure(h.secure)(func(echo.Context) error { return nil })(c)
}

// GetUser is GET /user/{id}.
func (h *Handler) GetUser(c echo.Context) error {
	u, err := h.ids.User(c.Request().Context(), route.Caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSONFor(route.Caller(c), u, route.Caller(c).Org))
}

type membershipRequest struct {
	Organisation string `json:"organisation"`
	Profile      string `json:"profile"`
}

type updateUserRequest struct {
	Name          web.Opt[string]              `json:"name"`
	Locked        web.Opt[bool]                `json:"locked"`
	Status        web.Opt[string]              `json:"status"` // "Ok" or "Locked", the v0 spelling of locked
	Profile       web.Opt[string]              `json:"profile"`
	Organisation  string                       `json:"organisation"` // the organisation of profile
	Organisations web.Opt[[]membershipRequest] `json:"organisations"`
	// Fields a PATCH may never set: refused rather than silently ignored.
	Password web.Opt[any] `json:"password"`
	Key      web.Opt[any] `json:"key"`
	Login    web.Opt[any] `json:"login"`
}

// UpdateUser is PATCH /user/{id}.
func (h *Handler) UpdateUser(c echo.Context) error {
	var req updateUserRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Password.Set || req.Key.Set {
		return apperr.New(apperr.Forbidden, "password and key are set through their own endpoints")
	}
	if req.Login.Set {
		return apperr.Fields(apperr.FieldError{Name: "login", Message: "read-only"})
	}
	u := identity.UserUpdate{Name: route.Change(req.Name), Locked: route.Change(req.Locked), Profile: route.Change(req.Profile),
		ProfileOrg: req.Organisation}
	if req.Status.Set {
		switch req.Status.V {
		case "Ok", "Active":
			u.Locked = record.Change[bool]{Set: true, V: false}
		case "Locked":
			u.Locked = record.Change[bool]{Set: true, V: true}
		default:
			return apperr.Fields(apperr.FieldError{Name: "status", Message: "Ok or Locked"})
		}
	}
	if req.Organisations.Set {
		ms := make([]identity.Membership, len(req.Organisations.V))
		for i, m := range req.Organisations.V {
			ms[i] = identity.Membership{Org: m.Organisation, Profile: m.Profile}
		}
		u.Memberships = record.Change[[]identity.Membership]{Set: true, Null: req.Organisations.Null, V: ms}
	}
	user, err := h.ids.UpdateUser(c.Request().Context(), route.Caller(c), userParam(c), u)
	if err != nil {
		return err
	}
	org := route.Caller(c).Org
	if req.Organisation != "" {
		org = identity.IDName(req.Organisation)
	}
	return c.JSON(http.StatusOK, userJSONFor(route.Caller(c), user, org))
}

// LockUser is DELETE /user/{id}.
func (h *Handler) LockUser(c echo.Context) error {
	if err := h.ids.LockUser(c.Request().Context(), route.Caller(c), userParam(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// ForceDeleteUser removes a user from the organisation of the request (or ?organisation=), deleting the account
// with its last organisation (the reference system's DELETE /api/v1/user/{id}/force).
func (h *Handler) ForceDeleteUser(c echo.Context) error {
	if err := h.ids.DeleteUser(c.Request().Context(), route.Caller(c), userParam(c), c.QueryParam("organisation")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type setPasswordRequest struct {
	Password string `json:"password"`
}

// SetPassword is POST /user/{id}/password/set.
func (h *Handler) SetPassword(c echo.Context) error {
	var req setPasswordRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if err := h.ids.SetPassword(c.Request().Context(), route.Caller(c), userParam(c), req.Password); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type changePasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	Password        string `json:"password"`
}

// ChangePassword is POST /user/{id}/password/change.
func (h *Handler) ChangePassword(c echo.Context) error {
	var req changePasswordRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	err := h.ids.ChangePassword(c.Request().Context(), route.Caller(c), userParam(c), req.CurrentPassword, req.Password)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// RenewKey is POST /user/{id}/key/renew.
func (h *Handler) RenewKey(c echo.Context) error {
	key, err := h.ids.RenewKey(c.Request().Context(), route.Caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

// GetKey is GET /user/{id}/key.
func (h *Handler) GetKey(c echo.Context) error {
	key, err := h.ids.Key(c.Request().Context(), route.Caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

// RevokeKey is DELETE /user/{id}/key.
func (h *Handler) RevokeKey(c echo.Context) error {
	if err := h.ids.RevokeKey(c.Request().Context(), route.Caller(c), userParam(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// --- organisations ---

type createOrgRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// CreateOrg is POST /organisation.
func (h *Handler) CreateOrg(c echo.Context) error {
	var req createOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	o, err := h.ids.CreateOrg(c.Request().Context(), route.Caller(c), identity.NewOrg{Name: req.Name, Description: req.Description})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, OrgJSON(o))
}

// GetOrg is GET /organisation/{id}.
func (h *Handler) GetOrg(c echo.Context) error {
	o, err := h.ids.Org(c.Request().Context(), route.Caller(c), c.Param("orgId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, OrgJSON(o))
}

// ListOrgs is GET /organisation and POST /organisation/_search.
func (h *Handler) ListOrgs(c echo.Context) error {
	f, p, err := web.Search(c, identity.OrgFields, h.max)
	if err != nil {
		return err
	}
	orgs, total, err := h.ids.Orgs(c.Request().Context(), route.Caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(orgs, OrgJSON))
}

type updateOrgRequest struct {
	Description web.Opt[string] `json:"description"`
	Name        web.Opt[string] `json:"name"`
}

// UpdateOrg is PATCH /organisation/{id}.
func (h *Handler) UpdateOrg(c echo.Context) error {
	var req updateOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Name.Set && identity.IDName(req.Name.V) != identity.IDName(c.Param("orgId")) {
		return apperr.Fields(apperr.FieldError{Name: "name", Message: "read-only"})
	}
	o, err := h.ids.UpdateOrg(c.Request().Context(), route.Caller(c), c.Param("orgId"),
		identity.OrgUpdate{Description: route.Change(req.Description)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, OrgJSON(o))
}

// --- profiles ---

// ListProfiles lists the four fixed profiles. They are not stored, so a query may only compare the name
// (`{"name": "analyst"}`); sort by name and range apply as usual.
func (h *Handler) ListProfiles(c echo.Context) error {
	f, p, err := web.Search(c, search.Fields{"name": {Path: "name"}}, h.max)
	if err != nil {
		return err
	}
	want, filtered, err := route.NamesIn(f) // names to keep, when filtered
	if err != nil {
		return err
	}
	var all []identity.Profile
	for _, pr := range identity.Profiles() {
		if !filtered || slices.Contains(want, pr.Name) {
			all = append(all, pr)
		}
	}
	if len(p.Sort) > 0 {
		slices.SortFunc(all, func(a, b identity.Profile) int { return strings.Compare(a.Name, b.Name) })
		if p.Sort[0].Desc {
			slices.Reverse(all)
		}
	}
	from := min(p.Offset, len(all))
	to := min(from+p.Limit, len(all))
	return web.List(c, int64(len(all)), route.MapSlice(all[from:to], ProfileJSON))
}

// GetProfile is GET /profile/{id}.
func (h *Handler) GetProfile(c echo.Context) error {
	p, ok := identity.ProfileNamed(c.Param("profileId"))
	if !ok {
		return apperr.New(apperr.NotFound, "Profile not found")
	}
	return c.JSON(http.StatusOK, ProfileJSON(p))
}

// userParam is the user of the route's {userId}: the caller for "current" (auth.UserRef).
func userParam(c echo.Context) string { return auth.UserRef(c.Param("userId"), route.Caller(c).Login) }
