package identity_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

var all = search.Page{Limit: 100}

// TestIdentity_Bootstrap: the admin organization always exists after Bootstrap; the first superadmin is
// created once, only on an empty database and only with a valid login and a credential.
func TestIdentity_Bootstrap(t *testing.T) {
	ctx := t.Context()
	st, err := store.NewIdentityStore(ctx, docstoretest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.NewKeyring("test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := auth.NewCredentials(keys)
	if err != nil {
		t.Fatal(err)
	}
	svc := identity.New(st, cred, func() time.Time { return epoch })

	if created, err := svc.Bootstrap(ctx, "", "", ""); created || err != nil {
		t.Fatalf("Bootstrap without a login: %v, %v", created, err)
	}
	o, err := st.Org(ctx, identity.AdminOrg)
	if err != nil || o.Status != identity.StatusActive || o.CreatedBy != "system" || !o.CreatedAt.Equal(epoch) {
		t.Fatalf("admin organization %+v, %v", o, err)
	}
	for _, tc := range []struct{ login, password, key string }{
		{"current", "", rootKey},  // reserved
		{"-root", "", rootKey},    // not a login
		{"root", "", ""},          // no credential
		{"root", "", "too-short"}, // a configured key has at least 32 characters
	} {
		if created, err := svc.Bootstrap(ctx, tc.login, tc.password, tc.key); created || err == nil {
			t.Errorf("Bootstrap(%q, %q, %q): %v, %v; want an error", tc.login, tc.password, tc.key, created, err)
		}
	}
	if exists, err := st.AnyUser(ctx); exists || err != nil {
		t.Fatalf("a refused bootstrap left a user: %v, %v", exists, err)
	}
	if created, err := svc.Bootstrap(ctx, "root", "", rootKey); !created || err != nil {
		t.Fatalf("Bootstrap: %v, %v", created, err)
	}
	c, err := svc.ByKey(ctx, rootKey)
	if err != nil || c.Login != "root" || c.Org != identity.AdminOrg || !c.Superadmin() {
		t.Fatalf("ByKey(root's key) = %+v, %v", c, err)
	}
	// Once a user exists, a second bootstrap (a restart, or another login) creates nobody.
	if created, err := svc.Bootstrap(ctx, "root2", "", rootKey+"2"); created || err != nil {
		t.Errorf("second Bootstrap: %v, %v", created, err)
	}
	if _, err := st.User(ctx, "root2"); !errors.Is(err, identity.ErrUserNotFound) {
		t.Errorf("second bootstrap created root2: %v", err)
	}
}

// TestIdentity_CreateOrg: only a superadmin creates organizations; the name is checked, unique, and the
// status is Active unless Locked is asked for.
func TestIdentity_CreateOrg(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		as       member
		n        identity.NewOrg
		wantKind apperr.Kind // 0: created
		status   string
	}{
		{f.root, identity.NewOrg{Name: "blue.team_1-x", Description: "d"}, 0, identity.StatusActive},
		{f.root, identity.NewOrg{Name: "okorg", Status: "ok"}, 0, identity.StatusActive},
		{f.root, identity.NewOrg{Name: "frozen", Status: "Locked"}, 0, identity.StatusLocked},
		{f.root, identity.NewOrg{Name: "soc"}, apperr.Conflict, ""},
		{f.root, identity.NewOrg{Name: identity.AdminOrg}, apperr.Conflict, ""},
		{f.root, identity.NewOrg{Name: ""}, apperr.Invalid, ""},
		{f.root, identity.NewOrg{Name: "-dash"}, apperr.Invalid, ""},
		{f.root, identity.NewOrg{Name: "a b"}, apperr.Invalid, ""},
		{f.root, identity.NewOrg{Name: strings.Repeat("a", 65)}, apperr.Invalid, ""},
		{f.root, identity.NewOrg{Name: "bad-status", Status: "Closed"}, apperr.Invalid, ""},
		{f.root, identity.NewOrg{Name: "long", Description: strings.Repeat("é", 4097)}, apperr.Invalid, ""},
		{f.admin, identity.NewOrg{Name: "by-orgadmin"}, apperr.Forbidden, ""},
		{f.reader, identity.NewOrg{Name: "by-reader"}, apperr.Forbidden, ""},
	} {
		o, err := f.svc.CreateOrg(t.Context(), tc.as.Caller, tc.n)
		wantKind(t, "CreateOrg "+tc.n.Name+" as "+tc.as.Login, err, tc.wantKind)
		if tc.wantKind != 0 {
			continue
		}
		got, err := f.svc.Org(t.Context(), f.root.Caller, tc.n.Name)
		if err != nil || got.ID != o.ID || got.Description != o.Description || got.Status != o.Status || got.Status != tc.status || got.CreatedBy != "root" || !got.CreatedAt.Equal(epoch) {
			t.Errorf("%s: stored %+v, %v; returned %+v", tc.n.Name, got, err, o)
		}
	}
	if _, err := f.svc.CreateOrg(t.Context(), f.root.Caller, identity.NewOrg{Name: strings.Repeat("a", 64),
		Description: strings.Repeat("é", 4096)}); err != nil {
		t.Errorf("64-character name, 4096-character description: %v", err)
	}
	if _, err := f.svc.Org(t.Context(), f.root.Caller, "by-orgadmin"); !errors.Is(err, identity.ErrOrgNotFound) {
		t.Errorf("a refused creation created the organization: %v", err)
	}
}

// TestIdentity_CreateUser: a superadmin creates users in any organization, an orgadmin in its own only; the
// admin organization holds the superadmins and only them; logins are unique across organizations.
func TestIdentity_CreateUser(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name     string
		as       member
		n        identity.NewUser
		wantKind apperr.Kind // 0: created
		want     identity.User
	}{
		{"superadmin in admin", f.root, identity.NewUser{Login: "root2", Organization: identity.AdminOrg,
			Roles: []string{"superadmin"}}, 0,
			identity.User{Organization: identity.AdminOrg, Roles: []identity.Role{identity.RoleSuperAdmin}}},
		{"admin org defaults to the caller's", f.root, identity.NewUser{Login: "root3", Roles: []string{"SuperAdmin"}}, 0,
			identity.User{Organization: identity.AdminOrg, Roles: []identity.Role{identity.RoleSuperAdmin}}},
		{"superadmin anywhere", f.root, identity.NewUser{Login: "o1", Organization: "other", Roles: []string{"read"},
			Name: "  Olga  ", Status: "locked"}, 0,
			identity.User{Name: "Olga", Organization: "other", Roles: []identity.Role{identity.RoleRead}, Status: identity.StatusLocked}},
		{"orgadmin in its own org", f.admin, identity.NewUser{Login: "s1", Roles: []string{"analyze", "read"}, Status: "Ok"}, 0,
			identity.User{Organization: "soc", Roles: []identity.Role{identity.RoleRead, identity.RoleAnalyze}}},
		{"orgadmin makes an orgadmin", f.admin, identity.NewUser{Login: "s2@x.org", Organization: "soc",
			Roles: []string{"orgadmin", "analyze", "read"}}, 0,
			identity.User{Organization: "soc", Roles: []identity.Role{identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin}}},

		{"non-superadmin in admin", f.root, identity.NewUser{Login: "x1", Organization: identity.AdminOrg,
			Roles: []string{"read"}}, apperr.Invalid, identity.User{}},
		{"superadmin outside admin", f.root, identity.NewUser{Login: "x2", Organization: "soc",
			Roles: []string{"superadmin"}}, apperr.Invalid, identity.User{}},
		{"bad role set", f.root, identity.NewUser{Login: "x3", Organization: "soc",
			Roles: []string{"read", "orgadmin"}}, apperr.Invalid, identity.User{}},
		{"no roles", f.root, identity.NewUser{Login: "x4", Organization: "soc"}, apperr.Invalid, identity.User{}},
		{"unknown org", f.root, identity.NewUser{Login: "x5", Organization: "nowhere",
			Roles: []string{"read"}}, apperr.Invalid, identity.User{}},
		{"bad status", f.root, identity.NewUser{Login: "x6", Organization: "soc", Roles: []string{"read"},
			Status: "Closed"}, apperr.Invalid, identity.User{}},
		{"reserved login", f.root, identity.NewUser{Login: "current", Organization: "soc",
			Roles: []string{"read"}}, apperr.Invalid, identity.User{}},
		{"reserved search login", f.root, identity.NewUser{Login: "_search", Organization: "soc",
			Roles: []string{"read"}}, apperr.Invalid, identity.User{}},
		{"empty login", f.root, identity.NewUser{Organization: "soc", Roles: []string{"read"}}, apperr.Invalid, identity.User{}},
		{"bad login", f.root, identity.NewUser{Login: "a/b", Organization: "soc", Roles: []string{"read"}},
			apperr.Invalid, identity.User{}},
		{"long name", f.root, identity.NewUser{Login: "x7", Organization: "soc", Roles: []string{"read"},
			Name: strings.Repeat("n", 257)}, apperr.Invalid, identity.User{}},
		{"short password", f.root, identity.NewUser{Login: "x8", Organization: "soc", Roles: []string{"read"},
			Password: "short"}, apperr.Invalid, identity.User{}},
		{"duplicate login", f.root, identity.NewUser{Login: "soc-reader", Organization: "soc",
			Roles: []string{"read"}}, apperr.Conflict, identity.User{}},
		{"duplicate login of another org", f.other, identity.NewUser{Login: "soc-analyst",
			Roles: []string{"read"}}, apperr.Conflict, identity.User{}},
		{"duplicate of the superadmin", f.root, identity.NewUser{Login: "root", Roles: []string{"superadmin"}},
			apperr.Conflict, identity.User{}},

		{"orgadmin in another org", f.admin, identity.NewUser{Login: "y1", Organization: "other",
			Roles: []string{"read"}}, apperr.Forbidden, identity.User{}},
		{"orgadmin in admin", f.admin, identity.NewUser{Login: "y2", Organization: identity.AdminOrg,
			Roles: []string{"superadmin"}}, apperr.Forbidden, identity.User{}},
		{"orgadmin makes a superadmin", f.admin, identity.NewUser{Login: "y3", Roles: []string{"superadmin"}},
			apperr.Forbidden, identity.User{}},
		{"analyst", f.analyst, identity.NewUser{Login: "y4", Roles: []string{"read"}}, apperr.Forbidden, identity.User{}},
		{"reader", f.reader, identity.NewUser{Login: "y5", Roles: []string{"read"}}, apperr.Forbidden, identity.User{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _, err := f.svc.Users(t.Context(), f.root.Caller, docstore.All(), all)
			if err != nil {
				t.Fatal(err)
			}
			u, err := f.svc.CreateUser(t.Context(), tc.as.Caller, tc.n)
			wantKind(t, "CreateUser", err, tc.wantKind)
			after, _, err := f.svc.Users(t.Context(), f.root.Caller, docstore.All(), all)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantKind != 0 {
				if len(after) != len(before) {
					t.Errorf("refused, yet %d users became %d", len(before), len(after))
				}
				return
			}
			w := tc.want
			w.Login = tc.n.Login
			if w.Name == "" {
				w.Name = tc.n.Login
			}
			if w.Status == "" {
				w.Status = identity.StatusActive
			}
			got, err := f.svc.User(t.Context(), f.root.Caller, tc.n.Login)
			if err != nil || got.Login != w.Login || got.Name != w.Name || got.Organization != w.Organization ||
				got.Status != w.Status || !slices.Equal(got.Roles, w.Roles) || got.HasPassword() || got.HasKey() ||
				got.CreatedBy != tc.as.Login || !got.CreatedAt.Equal(epoch) {
				t.Errorf("stored %+v, %v; want %+v", got, err, w)
			}
			if u.Login != got.Login || !slices.Equal(u.Roles, got.Roles) || u.Status != got.Status {
				t.Errorf("returned %+v, stored %+v", u, got)
			}
		})
	}
}

// TestIdentity_OrgIsolation: outside its organization an orgadmin (or any user) finds no user and no
// organization: every read and every change answers not found, as for a login that does not exist, and
// changes nothing. A superadmin sees everyone.
func TestIdentity_OrgIsolation(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	name := "Renamed"
	active, locked := identity.StatusActive, identity.StatusLocked
	ops := map[string]func(c identity.Caller, login string) error{
		"User": func(c identity.Caller, login string) error { _, err := f.svc.User(ctx, c, login); return err },
		"UpdateUser name": func(c identity.Caller, login string) error {
			_, err := f.svc.UpdateUser(ctx, c, login, identity.UserUpdate{Name: &name})
			return err
		},
		"UpdateUser lock": func(c identity.Caller, login string) error {
			_, err := f.svc.UpdateUser(ctx, c, login, identity.UserUpdate{Status: &locked})
			return err
		},
		"UpdateUser roles": func(c identity.Caller, login string) error {
			_, err := f.svc.UpdateUser(ctx, c, login, identity.UserUpdate{Roles: []identity.Role{identity.RoleRead}})
			return err
		},
		// The password is refused by the rule if the user is found: the not-found answer comes first, and
		// no hash is computed.
		"SetPassword": func(c identity.Caller, login string) error { return f.svc.SetPassword(ctx, c, login, "short") },
		"ChangePassword": func(c identity.Caller, login string) error {
			return f.svc.ChangePassword(ctx, c, login, "whatever", "short")
		},
		"RenewKey":  func(c identity.Caller, login string) error { _, err := f.svc.RenewKey(ctx, c, login); return err },
		"Key":       func(c identity.Caller, login string) error { _, err := f.svc.Key(ctx, c, login); return err },
		"RevokeKey": func(c identity.Caller, login string) error { return f.svc.RevokeKey(ctx, c, login) },
	}
	for op, call := range ops {
		for _, as := range []member{f.admin, f.analyst, f.reader} {
			for _, login := range []string{"other-admin", "other-reader", "root", "ghost"} {
				if err := call(as.Caller, login); !errors.Is(err, identity.ErrUserNotFound) {
					t.Errorf("%s of %s as %s: %v, want user not found", op, login, as.Login, err)
				}
			}
		}
	}
	// Nothing changed in other: its users are as created, their keys still work, their sessions live on.
	for _, m := range []member{f.other, f.otherRd} {
		u, err := f.svc.User(ctx, f.root.Caller, m.Login)
		if err != nil || u.Name != m.Login || u.Status != active || len(u.Roles) != len(m.Roles) || u.SessionVersion != 0 ||
			u.HasPassword() || u.UpdatedBy != "root" {
			t.Errorf("%s changed: %+v, %v", m.Login, u, err)
		}
		f.byKey(t, m.Key)
	}

	for _, id := range []string{"other", identity.AdminOrg, "ghost"} {
		if _, err := f.svc.Org(ctx, f.admin.Caller, id); !errors.Is(err, identity.ErrOrgNotFound) {
			t.Errorf("Org(%s) as soc's orgadmin: %v, want not found", id, err)
		}
		if _, _, err := f.svc.OrgUsers(ctx, f.admin.Caller, id, docstore.All(), all); !errors.Is(err, identity.ErrOrgNotFound) {
			t.Errorf("OrgUsers(%s) as soc's orgadmin: %v, want not found", id, err)
		}
	}
	if o, err := f.svc.Org(ctx, f.reader.Caller, "soc"); err != nil || o.ID != "soc" {
		t.Errorf("Org(soc) as its reader: %+v, %v", o, err)
	}
	// Within its organization, a user sees the others; only an orgadmin lists them.
	for _, as := range []member{f.admin, f.analyst, f.reader} {
		if u, err := f.svc.User(ctx, as.Caller, "soc-analyst"); err != nil || u.Login != "soc-analyst" {
			t.Errorf("User(soc-analyst) as %s: %+v, %v", as.Login, u, err)
		}
	}
	wantLogins := func(what string, us []identity.User, n int64, err error, want ...string) {
		t.Helper()
		var got []string
		for _, u := range us {
			got = append(got, u.Login)
		}
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) || n != int64(len(want)) {
			t.Errorf("%s: %v (%d), %v; want %v", what, got, n, err, want)
		}
	}
	us, n, err := f.svc.OrgUsers(ctx, f.admin.Caller, "soc", docstore.All(), all)
	wantLogins("OrgUsers(soc) as its orgadmin", us, n, err, "soc-admin", "soc-analyst", "soc-reader")
	// The organization's scope holds whatever the filter says.
	us, n, err = f.svc.OrgUsers(ctx, f.admin.Caller, "soc", docstore.Eq("organization", "other"), all)
	wantLogins("OrgUsers(soc) filtered on other", us, n, err)
	us, n, err = f.svc.OrgUsers(ctx, f.root.Caller, "other", docstore.All(), all)
	wantLogins("OrgUsers(other) as superadmin", us, n, err, "other-admin", "other-reader")
	us, n, err = f.svc.Users(ctx, f.root.Caller, docstore.All(), all)
	wantLogins("Users as superadmin", us, n, err, "other-admin", "other-reader", "root", "soc-admin", "soc-analyst", "soc-reader")
	orgs, n, err := f.svc.Orgs(ctx, f.root.Caller, docstore.All(), all)
	if err != nil || len(orgs) != 3 || n != 3 {
		t.Errorf("Orgs as superadmin: %v (%d), %v", orgs, n, err)
	}
	for _, as := range []member{f.admin, f.reader} {
		_, _, err := f.svc.Users(ctx, as.Caller, docstore.All(), all)
		wantKind(t, "Users as "+as.Login, err, apperr.Forbidden)
		_, _, err = f.svc.Orgs(ctx, as.Caller, docstore.All(), all)
		wantKind(t, "Orgs as "+as.Login, err, apperr.Forbidden)
	}
	for _, as := range []member{f.analyst, f.reader} {
		_, _, err := f.svc.OrgUsers(ctx, as.Caller, "soc", docstore.All(), all)
		wantKind(t, "OrgUsers(soc) as "+as.Login, err, apperr.Forbidden)
	}
	for _, m := range []member{f.root, f.admin, f.reader} {
		u, err := f.svc.Current(ctx, m.Caller)
		if err != nil || u.Login != m.Login || u.Organization != m.Org {
			t.Errorf("Current as %s: %+v, %v", m.Login, u, err)
		}
	}
}

// TestIdentity_UpdateUser: an orgadmin (or a superadmin) changes name, roles and status of its organization's
// users; any user its own name, never its own roles or status; the admin organization's rule holds.
func TestIdentity_UpdateUser(t *testing.T) {
	f := newFixture(t)
	str := func(s string) *string { return &s }
	read := []identity.Role{identity.RoleRead}
	analyst := []identity.Role{identity.RoleRead, identity.RoleAnalyze}
	super := []identity.Role{identity.RoleSuperAdmin}
	for _, tc := range []struct {
		name     string
		as       member
		login    string
		upd      identity.UserUpdate
		wantKind apperr.Kind // 0: changed
	}{
		{"self name", f.reader, "soc-reader", identity.UserUpdate{Name: str("  Rita ")}, 0},
		{"self same roles and status", f.analyst, "soc-analyst",
			identity.UserUpdate{Roles: analyst, Status: str("ok")}, 0},
		{"orgadmin renames", f.admin, "soc-analyst", identity.UserUpdate{Name: str("Ana")}, 0},
		{"orgadmin demotes", f.admin, "soc-analyst", identity.UserUpdate{Roles: read}, 0},
		{"superadmin promotes", f.root, "soc-analyst", identity.UserUpdate{Roles: analyst}, 0},
		{"superadmin in admin", f.root, "root", identity.UserUpdate{Roles: super, Name: str("Root")}, 0},

		{"self roles", f.reader, "soc-reader", identity.UserUpdate{Roles: analyst}, apperr.Forbidden},
		{"self lock", f.reader, "soc-reader", identity.UserUpdate{Status: str("Locked")}, apperr.Forbidden},
		{"orgadmin self demote", f.admin, "soc-admin", identity.UserUpdate{Roles: read}, apperr.Forbidden},
		{"superadmin self lock", f.root, "root", identity.UserUpdate{Status: str("Locked")}, apperr.Forbidden},
		{"reader renames another", f.reader, "soc-analyst", identity.UserUpdate{Name: str("x")}, apperr.Forbidden},
		{"analyst locks another", f.analyst, "soc-reader", identity.UserUpdate{Status: str("Locked")}, apperr.Forbidden},

		{"roles in another order", f.admin, "soc-reader", identity.UserUpdate{Roles: []identity.Role{identity.RoleAnalyze, identity.RoleRead}}, 0},
		{"not a role set", f.admin, "soc-reader", identity.UserUpdate{Roles: []identity.Role{identity.RoleAnalyze}}, apperr.Invalid},
		{"unknown role", f.admin, "soc-reader", identity.UserUpdate{Roles: []identity.Role{"read", "owner"}}, apperr.Invalid},
		{"no role", f.admin, "soc-reader", identity.UserUpdate{Roles: []identity.Role{}}, apperr.Invalid},
		{"superadmin outside admin", f.root, "soc-reader", identity.UserUpdate{Roles: super}, apperr.Invalid},
		{"orgadmin grants superadmin", f.admin, "soc-reader", identity.UserUpdate{Roles: super}, apperr.Invalid},
		{"non-superadmin in admin", f.root, "root", identity.UserUpdate{Roles: read}, apperr.Invalid},
		{"empty name", f.admin, "soc-reader", identity.UserUpdate{Name: str("  ")}, apperr.Invalid},
		{"long name", f.admin, "soc-reader", identity.UserUpdate{Name: str(strings.Repeat("n", 257))}, apperr.Invalid},
		{"empty status", f.admin, "soc-reader", identity.UserUpdate{Status: str("")}, apperr.Invalid},
		{"bad status", f.admin, "soc-reader", identity.UserUpdate{Status: str("Closed")}, apperr.Invalid},
		{"unknown user", f.root, "ghost", identity.UserUpdate{Name: str("x")}, apperr.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := f.svc.User(t.Context(), f.root.Caller, tc.login)
			if err != nil && tc.wantKind != apperr.NotFound {
				t.Fatal(err)
			}
			got, err := f.svc.UpdateUser(t.Context(), tc.as.Caller, tc.login, tc.upd)
			wantKind(t, "UpdateUser", err, tc.wantKind)
			after, _ := f.svc.User(t.Context(), f.root.Caller, tc.login)
			if tc.wantKind != 0 {
				if after.Name != before.Name || !slices.Equal(after.Roles, before.Roles) || after.Status != before.Status ||
					after.UpdatedBy != before.UpdatedBy {
					t.Errorf("refused, yet %+v became %+v", before, after)
				}
				return
			}
			want := before
			if tc.upd.Name != nil {
				want.Name = strings.TrimSpace(*tc.upd.Name)
			}
			if tc.upd.Roles != nil {
				want.Roles, _ = identity.ParseRoles(roleNames(tc.upd.Roles)) // stored as the canonical set
			}
			if after.Name != want.Name || !slices.Equal(after.Roles, want.Roles) || after.Status != identity.StatusActive ||
				after.UpdatedBy != tc.as.Login || after.SessionVersion != before.SessionVersion {
				t.Errorf("stored %+v, want %+v updated by %s", after, want, tc.as.Login)
			}
			if got.Name != after.Name || !slices.Equal(got.Roles, after.Roles) {
				t.Errorf("returned %+v, stored %+v", got, after)
			}
		})
	}
}

// TestIdentity_LockUser: a locked user is refused by every authentication (key, session), its sessions are
// ended; unlocked, its key works again but its old sessions stay ended. A user created locked cannot
// authenticate either.
func TestIdentity_LockUser(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	locked, ok := identity.StatusLocked, "Ok"
	v := f.sessions(t, "soc-analyst")
	u, err := f.svc.UpdateUser(ctx, f.admin.Caller, "soc-analyst", identity.UserUpdate{Status: &locked})
	if err != nil || u.Status != identity.StatusLocked {
		t.Fatalf("lock: %+v, %v", u, err)
	}
	if got := f.sessions(t, "soc-analyst"); got != v+1 {
		t.Errorf("session version %d after the lock, want %d", got, v+1)
	}
	_, err = f.svc.ByKey(ctx, f.analyst.Key)
	refused(t, "ByKey of a locked user", err)
	_, _, err = f.svc.BySession(ctx, "soc-analyst")
	refused(t, "BySession of a locked user", err)
	// The lock is the user's own: its organization's other users work.
	f.byKey(t, f.reader.Key)
	// Its orgadmin still administers it: a new key is issued, and refused as well.
	key, err := f.svc.RenewKey(ctx, f.admin.Caller, "soc-analyst")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ByKey(ctx, key)
	refused(t, "ByKey of a locked user's new key", err)

	if _, err := f.svc.UpdateUser(ctx, f.admin.Caller, "soc-analyst", identity.UserUpdate{Status: &ok}); err != nil {
		t.Fatal(err)
	}
	if c := f.byKey(t, key); c.Login != "soc-analyst" {
		t.Errorf("unlocked: %+v", c)
	}
	if _, got, err := f.svc.BySession(ctx, "soc-analyst"); err != nil || got != v+1 {
		t.Errorf("BySession after the unlock: version %d, %v; want %d (the old sessions stay ended)", got, err, v+1)
	}

	if _, err := f.svc.CreateUser(ctx, f.admin.Caller, identity.NewUser{Login: "frozen", Roles: []string{"read"},
		Status: "Locked"}); err != nil {
		t.Fatal(err)
	}
	key, err = f.svc.RenewKey(ctx, f.admin.Caller, "frozen")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ByKey(ctx, key)
	refused(t, "ByKey of a user created locked", err)
}

// TestIdentity_LockOrg: only a superadmin locks an organization (never the admin one); its users are then
// refused by every authentication and their sessions ended, other organizations' untouched; unlocked, keys
// work again.
func TestIdentity_LockOrg(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, as := range []member{f.admin, f.other, f.reader} {
		wantKind(t, "LockOrg(soc) as "+as.Login, f.svc.LockOrg(ctx, as.Caller, "soc"), apperr.Forbidden)
	}
	wantKind(t, "LockOrg(admin)", f.svc.LockOrg(ctx, f.root.Caller, identity.AdminOrg), apperr.BadRequest)
	if err := f.svc.LockOrg(ctx, f.root.Caller, "ghost"); !errors.Is(err, identity.ErrOrgNotFound) {
		t.Errorf("LockOrg(ghost): %v, want not found", err)
	}
	for _, st := range []string{"", "Closed"} {
		_, err := f.svc.UpdateOrg(ctx, f.root.Caller, "soc", identity.OrgUpdate{Status: &st})
		wantKind(t, "UpdateOrg status "+st, err, apperr.Invalid)
	}
	long := strings.Repeat("d", 4097)
	_, err := f.svc.UpdateOrg(ctx, f.root.Caller, "soc", identity.OrgUpdate{Description: &long})
	wantKind(t, "UpdateOrg long description", err, apperr.Invalid)
	f.byKey(t, f.reader.Key) // nothing above locked soc
	active := "active"
	if _, err := f.svc.UpdateOrg(ctx, f.root.Caller, identity.AdminOrg, identity.OrgUpdate{Status: &active}); err != nil {
		t.Errorf("admin organization set active: %v", err)
	}

	if err := f.svc.LockOrg(ctx, f.root.Caller, "soc"); err != nil {
		t.Fatal(err)
	}
	if o, err := f.svc.Org(ctx, f.root.Caller, "soc"); err != nil || o.Status != identity.StatusLocked || o.UpdatedBy != "root" {
		t.Errorf("soc after LockOrg: %+v, %v", o, err)
	}
	for _, m := range []member{f.admin, f.analyst, f.reader} {
		_, err := f.svc.ByKey(ctx, m.Key)
		refused(t, "ByKey of "+m.Login, err)
		_, _, err = f.svc.BySession(ctx, m.Login)
		refused(t, "BySession of "+m.Login, err)
		if v := f.sessions(t, m.Login); v != 1 {
			t.Errorf("%s: session version %d, want 1", m.Login, v)
		}
	}
	for _, m := range []member{f.other, f.otherRd, f.root} {
		f.byKey(t, m.Key)
		if v := f.sessions(t, m.Login); v != 0 {
			t.Errorf("%s: session version %d, want 0", m.Login, v)
		}
	}

	desc := "unlocked"
	ok := "OK"
	o, err := f.svc.UpdateOrg(ctx, f.root.Caller, "soc", identity.OrgUpdate{Status: &ok, Description: &desc})
	if err != nil || o.Status != identity.StatusActive || o.Description != desc {
		t.Fatalf("unlock: %+v, %v", o, err)
	}
	for _, m := range []member{f.admin, f.analyst, f.reader} {
		f.byKey(t, m.Key)
		if v := f.sessions(t, m.Login); v != 1 {
			t.Errorf("%s: session version %d after the unlock, want 1 (the old sessions stay ended)", m.Login, v)
		}
	}
}

// TestIdentity_Keys: a user renews and reads its own key, an orgadmin its organization's users' keys; a
// renewed key replaces the old one at once; only an administrator revokes, which also ends the sessions.
func TestIdentity_Keys(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	reveal := func(as member, login, want string) {
		t.Helper()
		if got, err := f.svc.Key(ctx, as.Caller, login); err != nil || got != want {
			t.Errorf("Key(%s) as %s: %q, %v; want %q", login, as.Login, got, err, want)
		}
	}
	for _, as := range []member{f.reader, f.admin, f.root} {
		reveal(as, "soc-reader", f.reader.Key)
	}

	// Renewed by the user itself: the old key stops working, the new one works and is the one revealed.
	k1, err := f.svc.RenewKey(ctx, f.reader.Caller, "soc-reader")
	if err != nil || k1 == f.reader.Key || len(k1) < 32 {
		t.Fatalf("RenewKey as self: %q, %v", k1, err)
	}
	_, err = f.svc.ByKey(ctx, f.reader.Key)
	refused(t, "the key before the renewal", err)
	if c := f.byKey(t, k1); c.Login != "soc-reader" {
		t.Errorf("the renewed key is %s's", c.Login)
	}
	reveal(f.admin, "soc-reader", k1)
	// Renewed by its orgadmin: the same.
	k2, err := f.svc.RenewKey(ctx, f.admin.Caller, "soc-reader")
	if err != nil || k2 == k1 {
		t.Fatalf("RenewKey as orgadmin: %q, %v", k2, err)
	}
	_, err = f.svc.ByKey(ctx, k1)
	refused(t, "the key before the second renewal", err)
	f.byKey(t, k2)
	reveal(f.reader, "soc-reader", k2)

	// A user neither reads, renews nor revokes another's key, nor revokes its own.
	for _, as := range []member{f.reader, f.analyst} {
		login := "soc-admin"
		_, err := f.svc.Key(ctx, as.Caller, login)
		wantKind(t, "Key as "+as.Login, err, apperr.Forbidden)
		_, err = f.svc.RenewKey(ctx, as.Caller, login)
		wantKind(t, "RenewKey as "+as.Login, err, apperr.Forbidden)
		wantKind(t, "RevokeKey as "+as.Login, f.svc.RevokeKey(ctx, as.Caller, login), apperr.Forbidden)
	}
	wantKind(t, "RevokeKey of one's own", f.svc.RevokeKey(ctx, f.reader.Caller, "soc-reader"), apperr.Forbidden)
	f.byKey(t, k2)
	f.byKey(t, f.admin.Key)

	// Revoked by its orgadmin: the key stops working, there is none to reveal, the sessions end.
	v := f.sessions(t, "soc-reader")
	if err := f.svc.RevokeKey(ctx, f.admin.Caller, "soc-reader"); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ByKey(ctx, k2)
	refused(t, "a revoked key", err)
	if _, err := f.svc.Key(ctx, f.root.Caller, "soc-reader"); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("Key after the revocation: %v, want not found", err)
	}
	if u, err := f.svc.User(ctx, f.root.Caller, "soc-reader"); err != nil || u.HasKey() || u.KeySealed != "" {
		t.Errorf("after the revocation: %+v, %v", u, err)
	}
	if got := f.sessions(t, "soc-reader"); got != v+1 {
		t.Errorf("session version %d after the revocation, want %d", got, v+1)
	}
	if err := f.svc.RevokeKey(ctx, f.root.Caller, "soc-reader"); err != nil {
		t.Errorf("revoking no key: %v", err)
	}
	// A new key after a revocation works.
	k3, err := f.svc.RenewKey(ctx, f.root.Caller, "soc-reader")
	if err != nil {
		t.Fatal(err)
	}
	f.byKey(t, k3)
	for _, k := range []string{f.reader.Key, k1, k2} {
		_, err = f.svc.ByKey(ctx, k)
		refused(t, "an old key after a new one", err)
	}
}

// TestIdentity_Passwords: an administrator sets a password (the rule first), the user changes its own with
// the current one; every password change ends the sessions; a password login is refused, with the one
// authentication failure, for an unknown login, a wrong password, a user without password, a locked user and a
// user of a locked organization. Few cases: each check is an argon2id computation.
func TestIdentity_Passwords(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	const pw1, pw2 = "first-password", "second-password"

	// Refusals that compute no hash: the rule, the roles, the caller.
	wantKind(t, "SetPassword too short", f.svc.SetPassword(ctx, f.admin.Caller, "soc-reader", "short"), apperr.Invalid)
	wantKind(t, "SetPassword too long", f.svc.SetPassword(ctx, f.admin.Caller, "soc-reader", strings.Repeat("p", 1025)),
		apperr.Invalid)
	wantKind(t, "SetPassword of one's own", f.svc.SetPassword(ctx, f.reader.Caller, "soc-reader", pw1), apperr.Forbidden)
	wantKind(t, "SetPassword as analyst", f.svc.SetPassword(ctx, f.analyst.Caller, "soc-reader", pw1), apperr.Forbidden)
	wantKind(t, "ChangePassword too short", f.svc.ChangePassword(ctx, f.reader.Caller, "soc-reader", pw1, "short"),
		apperr.Invalid)
	if u, _ := f.svc.User(ctx, f.root.Caller, "soc-reader"); u.HasPassword() || u.SessionVersion != 0 {
		t.Fatalf("a refused change changed %+v", u)
	}
	// Without a password, the current password never matches (no hash computed either).
	if err := f.svc.ChangePassword(ctx, f.reader.Caller, "soc-reader", "", pw1); !errors.Is(err, auth.ErrWrongPassword) {
		t.Errorf("ChangePassword without a password: %v, want the wrong password", err)
	}
	_, err := f.svc.ByPassword(ctx, "soc-reader", "")
	refused(t, "ByPassword of a user without password", err)

	if err := f.svc.SetPassword(ctx, f.admin.Caller, "soc-reader", pw1); err != nil {
		t.Fatal(err)
	}
	if v := f.sessions(t, "soc-reader"); v != 1 {
		t.Errorf("session version %d after SetPassword, want 1", v)
	}
	// Not even its orgadmin changes a user's password with the current one (that is SetPassword's work).
	err = f.svc.ChangePassword(ctx, f.admin.Caller, "soc-reader", pw1, pw2)
	if apperr.KindOf(err) != apperr.Forbidden || errors.Is(err, auth.ErrWrongPassword) {
		t.Errorf("ChangePassword of another: %v, want a 403", err)
	}
	c, err := f.svc.ByPassword(ctx, "soc-reader", pw1)
	if err != nil || c.Login != "soc-reader" || c.Org != "soc" || !slices.Equal(c.Roles, f.reader.Roles) {
		t.Errorf("ByPassword: %+v, %v", c, err)
	}
	_, err = f.svc.ByPassword(ctx, "soc-reader", pw2)
	refused(t, "ByPassword with a wrong password", err)
	_, err = f.svc.ByPassword(ctx, "ghost", pw1)
	refused(t, "ByPassword of an unknown login", err)

	err = f.svc.ChangePassword(ctx, f.reader.Caller, "soc-reader", pw2, pw2)
	if !errors.Is(err, auth.ErrWrongPassword) || apperr.KindOf(err) != apperr.Forbidden {
		t.Errorf("ChangePassword with a wrong current password: %v", err)
	}
	if err := f.svc.ChangePassword(ctx, f.reader.Caller, "soc-reader", pw1, pw2); err != nil {
		t.Fatal(err)
	}
	if v := f.sessions(t, "soc-reader"); v != 2 {
		t.Errorf("session version %d after ChangePassword, want 2", v)
	}
	_, err = f.svc.ByPassword(ctx, "soc-reader", pw1)
	refused(t, "ByPassword with the old password", err)
	if u, err := f.svc.Login(ctx, "soc-reader", pw2); err != nil || u.Login != "soc-reader" {
		t.Errorf("Login with the new password: %+v, %v", u, err)
	}

	locked, active := identity.StatusLocked, identity.StatusActive
	if _, err := f.svc.UpdateUser(ctx, f.admin.Caller, "soc-reader", identity.UserUpdate{Status: &locked}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ByPassword(ctx, "soc-reader", pw2)
	refused(t, "ByPassword of a locked user", err)
	if _, err := f.svc.UpdateUser(ctx, f.admin.Caller, "soc-reader", identity.UserUpdate{Status: &active}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.LockOrg(ctx, f.root.Caller, "soc"); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ByPassword(ctx, "soc-reader", pw2)
	refused(t, "ByPassword of a user of a locked organization", err)
}

func roleNames(rs []identity.Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}
