package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

type orgResponse struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
	CreatedAt   int64  `json:"createdAt"`
	CreatedBy   string `json:"createdBy"`
	UpdatedAt   int64  `json:"updatedAt,omitempty"`
	UpdatedBy   string `json:"updatedBy,omitempty"`
}

func orgJSON(o identity.Organization) orgResponse {
	return orgResponse{ID: o.ID, Name: o.ID, Description: o.Description, Status: o.Status,
		CreatedAt: ms(o.CreatedAt), CreatedBy: o.CreatedBy, UpdatedAt: ms(o.UpdatedAt), UpdatedBy: o.UpdatedBy}
}

type userResponse struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	Status       string   `json:"status"`
	Organization string   `json:"organization"`
	CreatedAt    int64    `json:"createdAt"`
	CreatedBy    string   `json:"createdBy"`
	UpdatedAt    int64    `json:"updatedAt,omitempty"`
	UpdatedBy    string   `json:"updatedBy,omitempty"`
	HasKey       bool     `json:"hasKey"`
	HasPassword  bool     `json:"hasPassword"`
}

func userJSON(u identity.User) userResponse {
	roles := make([]string, len(u.Roles))
	for i, r := range u.Roles {
		roles[i] = string(r)
	}
	return userResponse{ID: u.Login, Name: u.Name, Roles: roles, Status: u.Status, Organization: u.Organization,
		CreatedAt: ms(u.CreatedAt), CreatedBy: u.CreatedBy, UpdatedAt: ms(u.UpdatedAt),
		UpdatedBy: u.UpdatedBy, HasKey: u.HasKey(), HasPassword: u.HasPassword()}
}

// ms is a timestamp as the contract writes it: epoch milliseconds, 0 for none.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func mapSlice[T, R any](in []T, f func(T) R) []R {
	out := make([]R, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// --- session ---

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
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
	if err := web.StartSession(c, h.auth, u.Login, u.SessionVersion); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

// logout ends the user's sessions server-side (a copy of the cookie no longer works either) and clears the
// cookies.
func (h *handler) logout(c echo.Context) error {
	if err := web.Logout[identity.Caller](c, h.ids, h.auth, h.ids.Logout); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) currentUser(c echo.Context) error {
	u, err := h.ids.Current(c.Request().Context(), caller(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

// --- organizations ---

type createOrgRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
}

func (h *handler) createOrg(c echo.Context) error {
	var req createOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	o, err := h.ids.CreateOrg(c.Request().Context(), caller(c),
		identity.NewOrg{Name: req.Name, Description: req.Description, Status: req.Status})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, orgJSON(o))
}

func (h *handler) getOrg(c echo.Context) error {
	o, err := h.ids.Org(c.Request().Context(), caller(c), web.Param(c, "orgId"))
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
	orgs, total, err := h.ids.Orgs(c.Request().Context(), caller(c), identity.StatusFilter(f), p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(orgs, orgJSON))
}

// orgStats is POST /api/organization/_stats, what cortex4py's organizations.count() sends:
// {query, stats: [{_agg: "count"}]} → {"count": n} (superadmin, as the organization list). Other aggregations
// are a 400.
func (h *handler) orgStats(c echo.Context) error {
	f, _, err := web.Search(c, identity.OrgFields, h.max)
	if err != nil {
		return err
	}
	fields, err := web.Fields(c)
	if err != nil {
		return err
	}
	switch st := fields["stats"].(type) {
	case nil:
	case []any:
		for _, e := range st {
			if m, ok := e.(map[string]any); !ok || m["_agg"] != "count" {
				return apperr.Fields(apperr.FieldError{Name: "stats", Message: `only {"_agg": "count"} is supported`})
			}
		}
	default:
		return apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of aggregations"})
	}
	_, total, err := h.ids.Orgs(c.Request().Context(), caller(c), identity.StatusFilter(f), search.Page{Limit: 1})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"count": total})
}

type updateOrgRequest struct {
	Description web.Opt[string] `json:"description"`
	Status      web.Opt[string] `json:"status"`
}

func (h *handler) updateOrg(c echo.Context) error {
	var req updateOrgRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	var u identity.OrgUpdate
	if req.Description.Set {
		u.Description = &req.Description.V
	}
	if req.Status.Set {
		u.Status = &req.Status.V
	}
	o, err := h.ids.UpdateOrg(c.Request().Context(), caller(c), web.Param(c, "orgId"), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orgJSON(o))
}

func (h *handler) deleteOrg(c echo.Context) error {
	if err := h.ids.LockOrg(c.Request().Context(), caller(c), web.Param(c, "orgId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) listOrgUsers(c echo.Context) error {
	f, p, err := web.Search(c, identity.UserFields, h.max)
	if err != nil {
		return err
	}
	users, total, err := h.ids.OrgUsers(c.Request().Context(), caller(c), web.Param(c, "orgId"), identity.StatusFilter(f), p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(users, userJSON))
}

// --- users ---

func (h *handler) listUsers(c echo.Context) error {
	f, p, err := web.Search(c, identity.UserFields, h.max)
	if err != nil {
		return err
	}
	users, total, err := h.ids.Users(c.Request().Context(), caller(c), identity.StatusFilter(f), p)
	if err != nil {
		return err
	}
	return web.List(c, total, mapSlice(users, userJSON))
}

type createUserRequest struct {
	Login        string      `json:"login"`
	Name         string      `json:"name"`
	Roles        web.Strings `json:"roles"`
	Organization string      `json:"organization"`
	Password     string      `json:"password"`
	Status       string      `json:"status"` // Active, Ok (Cortex's word) or Locked
}

func (h *handler) createUser(c echo.Context) error {
	var req createUserRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Password != "" {
		if err := web.CheckSecure(c, h.cfg.Secure); err != nil {
			return err
		}
	}
	u, err := h.ids.CreateUser(c.Request().Context(), caller(c), identity.NewUser{Login: req.Login, Name: req.Name,
		Roles: req.Roles, Organization: req.Organization, Password: req.Password, Status: req.Status})
	if err != nil {
		return err
	}
	resp := userJSON(u)
	if u.Status == identity.StatusActive {
		resp.Status = "Ok" // spec §2: a freshly created user is returned with status Ok
	}
	return c.JSON(http.StatusCreated, resp)
}

func (h *handler) getUser(c echo.Context) error {
	u, err := h.ids.User(c.Request().Context(), caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

type updateUserRequest struct {
	Name   web.Opt[string]      `json:"name"`
	Roles  web.Opt[web.Strings] `json:"roles"`
	Status web.Opt[string]      `json:"status"`
	// Fields a PATCH may never set: refused rather than silently ignored.
	Password     web.Opt[any] `json:"password"`
	Key          web.Opt[any] `json:"key"`
	Organization web.Opt[any] `json:"organization"`
}

func (h *handler) updateUser(c echo.Context) error {
	var req updateUserRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if req.Password.Set || req.Key.Set {
		return apperr.New(apperr.Forbidden, "password and key are set through their own endpoints")
	}
	if req.Organization.Set {
		return apperr.Fields(apperr.FieldError{Name: "organization", Message: "read-only"})
	}
	var u identity.UserUpdate
	if req.Name.Set {
		u.Name = &req.Name.V
	}
	if req.Status.Set {
		u.Status = &req.Status.V
	}
	if req.Roles.Set {
		roles, err := identity.ParseRoles(req.Roles.V)
		if err != nil {
			return err
		}
		u.Roles = roles
	}
	user, err := h.ids.UpdateUser(c.Request().Context(), caller(c), userParam(c), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(user))
}

type setPasswordRequest struct {
	Password string `json:"password"`
}

func (h *handler) setPassword(c echo.Context) error {
	var req setPasswordRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if err := h.ids.SetPassword(c.Request().Context(), caller(c), userParam(c), req.Password); err != nil {
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
	err := h.ids.ChangePassword(c.Request().Context(), caller(c), userParam(c), req.CurrentPassword, req.Password)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) renewKey(c echo.Context) error {
	key, err := h.ids.RenewKey(c.Request().Context(), caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

func (h *handler) getKey(c echo.Context) error {
	key, err := h.ids.Key(c.Request().Context(), caller(c), userParam(c))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, key)
}

func (h *handler) revokeKey(c echo.Context) error {
	if err := h.ids.RevokeKey(c.Request().Context(), caller(c), userParam(c)); err != nil {
		return err
	}
	return c.String(http.StatusOK, "")
}

// userParam is the user of the route's {login}: the caller for "current" (auth.UserRef).
func userParam(c echo.Context) string { return auth.UserRef(web.Param(c, "login"), caller(c).Login) }
