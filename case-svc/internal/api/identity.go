package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// --- responses ---

type membershipResponse struct {
	Organisation string `json:"organisation"`
	Profile      string `json:"profile"`
}

type userResponse struct {
	meta
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

// userJSON renders a user as seen from an organisation: organisation, profile and permissions are those of
// that organisation when the user belongs to it, else of the user's default organisation.
func userJSON(u identity.User, org string) userResponse {
	r := userResponse{meta: metaOf("~"+u.Login, "user", u.Meta), Login: u.Login, Name: u.Name,
		Permissions: []identity.Permission{}, Organisations: []membershipResponse{}, Status: "Ok", Locked: u.Locked,
		HasKey: u.HasKey(), HasPassword: u.HasPassword()}
	if u.Locked {
		r.Status = "Locked"
	}
	for _, m := range u.Memberships {
		r.Organisations = append(r.Organisations, membershipResponse{Organisation: m.Org, Profile: m.Profile})
		if r.Organisation == "" || m.Org == org {
			r.Organisation, r.Profile = m.Org, m.Profile
		}
	}
	if p, ok := identity.ProfileNamed(r.Profile); ok {
		r.Permissions = p.Permissions
	}
	return r
}

func (h *handler) usersJSON(c echo.Context, us []identity.User) []userResponse {
	org := caller(c).Org
	return mapSlice(us, func(u identity.User) userResponse { return userJSON(u, org) })
}

type orgResponse struct {
	meta
	Name        string `json:"name"`
	Description string `json:"description"`
}

func orgJSON(o identity.Organisation) orgResponse {
	return orgResponse{meta: metaOf("~"+o.Name, "organisation", o.Meta), Name: o.Name, Description: o.Description}
}

type profileResponse struct {
	meta
	Name        string                `json:"name"`
	Permissions []identity.Permission `json:"permissions"`
	Editable    bool                  `json:"editable"`
	IsAdmin     bool                  `json:"isAdmin"`
}

func profileJSON(p identity.Profile) profileResponse {
	return profileResponse{meta: metaOf("~"+p.Name, "profile", record.Meta{CreatedBy: "system"}), Name: p.Name,
		Permissions: p.Permissions, IsAdmin: p.Admin}
}

// --- session ---

type loginRequest struct {
	User         string `json:"user"`
	Password     string `json:"password"`
	Organisation string `json:"organisation"`
}

func (h *handler) login(c echo.Context) error {
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
	ck := &http.Cookie{Name: orgHeader, Value: cl.Org, Path: "/", Secure: h.auth.Secure, SameSite: http.SameSiteLaxMode}
	if req.Organisation == "" {
		ck.Value, ck.MaxAge = "", -1
	}
	c.SetCookie(ck)
	return c.JSON(http.StatusOK, userJSON(u, cl.Org))
}

// logout ends the user's sessions server-side (a copy of the cookie no longer works either) and clears the
// cookies.
func (h *handler) logout(c echo.Context) error {
	if err := web.Logout[identity.User](c, h.ids, h.auth, h.ids.Logout); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: orgHeader, Value: "", Path: "/", MaxAge: -1, Secure: h.auth.Secure,
		SameSite: http.SameSiteLaxMode})
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) currentUser(c echo.Context) error {
	u, err := h.ids.Current(c.Request().Context(), caller(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u, caller(c).Org))
}

// --- users ---

func (h *handler) listUsers(c echo.Context) error {
	f, p, err := web.Search(c, identity.UserFields, h.max)
	if err != nil {
		return err
	}
	us, total, err := h.ids.Users(c.Request().Context(), caller(c), f, p)
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

func (h *handler) createUser(c echo.Context) error {
	var req createUserRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Password != "" {
		if err := h.requireSecure(c); err != nil {
			return err
		}
	}
	u, err := h.ids.CreateUser(c.Request().Context(), caller(c), identity.NewUser{Login: req.Login, Name: req.Name,
		Org: req.Organisation, Profile: req.Profile, Password: req.Password})
	if err != nil {
		return err
	}
	org := caller(c).Org
	if req.Organisation != "" {
		org = identity.IDName(req.Organisation)
	}
	return c.JSON(http.StatusCreated, userJSON(u, org))
}

// requireSecure applies the HTTPS rule of the password and key routes to a request that carries a password.
func (h *handler) requireSecure(c echo.Context) error {
	return web.RequireSecure(h.cfg.Secure)(func(echo.Context) error { return nil })(c)
}

func (h *handler) getUser(c echo.Context) error {
	u, err := h.ids.User(c.Request().Context(), caller(c), c.Param("userId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u, caller(c).Org))
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

func (h *handler) updateUser(c echo.Context) error {
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
	u := identity.UserUpdate{Name: change(req.Name), Locked: change(req.Locked), Profile: change(req.Profile),
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
	user, err := h.ids.UpdateUser(c.Request().Context(), caller(c), c.Param("userId"), u)
	if err != nil {
		return err
	}
	org := caller(c).Org
	if req.Organisation != "" {
		org = identity.IDName(req.Organisation)
	}
	return c.JSON(http.StatusOK, userJSON(user, org))
}

func (h *handler) lockUser(c echo.Context) error {
	if err := h.ids.LockUser(c.Request().Context(), caller(c), c.Param("userId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// forceDeleteUser removes a user from the organisation of the request (or ?organisation=), deleting the account
// with its last organisation (the reference system's DELETE /api/v1/user/{id}/force).
func (h *handler) forceDeleteUser(c echo.Context) error {
	if err := h.ids.DeleteUser(c.Request().Context(), caller(c), c.Param("userId"), c.QueryParam("organisation")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type setPasswordRequest struct {
	Password string `json:"password"`
}

func (h *handler) setPassword(c echo.Context) error {
	var req setPasswordRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if err := h.ids.SetPassword(c.Request().Context(), caller(c), c.Param("userId"), req.Password); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type changePasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	Password        string `json:"password"`
}

func (h *handler) changePassword(c echo.Context) error {
	var req changePasswordRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	err := h.ids.ChangePassword(c.Request().Context(), caller(c), c.Param("userId"), req.CurrentPassword, req.Password)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) renewKey(c echo.Context) error {
	key, err := h.ids.RenewKey(c.Request().Context(), caller(c), c.Param("userId"))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

func (h *handler) getKey(c echo.Context) error {
	key, err := h.ids.Key(c.Request().Context(), caller(c), c.Param("userId"))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

func (h *handler) revokeKey(c echo.Context) error {
	if err := h.ids.RevokeKey(c.Request().Context(), caller(c), c.Param("userId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// --- organisations ---

type createOrgRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (h *handler) createOrg(c echo.Context) error {
	var req createOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	o, err := h.ids.CreateOrg(c.Request().Context(), caller(c), identity.NewOrg{Name: req.Name, Description: req.Description})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, orgJSON(o))
}

func (h *handler) getOrg(c echo.Context) error {
	o, err := h.ids.Org(c.Request().Context(), caller(c), c.Param("orgId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orgJSON(o))
}

func (h *handler) listOrgs(c echo.Context) error {
	f, p, err := web.Search(c, identity.OrgFields, h.max)
	if err != nil {
		return err
	}
	orgs, total, err := h.ids.Orgs(c.Request().Context(), caller(c), f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(orgs, orgJSON))
}

type updateOrgRequest struct {
	Description web.Opt[string] `json:"description"`
	Name        web.Opt[string] `json:"name"`
}

func (h *handler) updateOrg(c echo.Context) error {
	var req updateOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Name.Set && identity.IDName(req.Name.V) != identity.IDName(c.Param("orgId")) {
		return apperr.Fields(apperr.FieldError{Name: "name", Message: "read-only"})
	}
	o, err := h.ids.UpdateOrg(c.Request().Context(), caller(c), c.Param("orgId"),
		identity.OrgUpdate{Description: change(req.Description)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orgJSON(o))
}

// --- profiles ---

// listProfiles lists the four fixed profiles. They are not stored, so a query may only compare the name
// (`{"name": "analyst"}`); sort by name and range apply as usual.
func (h *handler) listProfiles(c echo.Context) error {
	f, p, err := web.Search(c, search.Fields{"name": {Path: "name"}}, h.max)
	if err != nil {
		return err
	}
	want, filtered, err := namesIn(f) // names to keep, when filtered (ui.go)
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
	return web.List(c, int64(len(all)), mapSlice(all[from:to], profileJSON))
}

func (h *handler) getProfile(c echo.Context) error {
	p, ok := identity.ProfileNamed(c.Param("profileId"))
	if !ok {
		return apperr.New(apperr.NotFound, "Profile not found")
	}
	return c.JSON(http.StatusOK, profileJSON(p))
}
