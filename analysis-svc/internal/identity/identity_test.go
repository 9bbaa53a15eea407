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
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// epoch is the fixture's clock: every stamp the service writes is this instant.
var epoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// member is a user of the fixture: its caller (made by the service from its API key) and that key.
type member struct {
	identity.Caller
	Key string
}

// fixture is the identity service built as internal/app builds it (the real store on a fresh test database,
// the credential rules over a keyring), bootstrapped with the superadmin root, and the organizations soc and
// other with their users. Every caller is made by the service itself, from an API key it issued. No user has
// a password: argon2 is slow, and only the password tests need one.
type fixture struct {
	svc     *identity.Service
	root    member // superadmin, admin organization
	admin   member // read, analyze, orgadmin of soc
	analyst member // read, analyze of soc
	reader  member // read of soc
	other   member // read, analyze, orgadmin of other
	otherRd member // read of other
}

const rootKey = "root-key-0123456789-abcdefghijklmnop"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.NewIdentityStore(ctx, docstoretest.New(t))
	must(err)
	keys, err := auth.NewKeyring("test-secret-0123456789")
	must(err)
	cred, err := auth.NewCredentials(keys)
	must(err)
	f := &fixture{svc: identity.New(st, cred, func() time.Time { return epoch })}
	created, err := f.svc.Bootstrap(ctx, "root", "", rootKey)
	must(err)
	if !created {
		t.Fatal("bootstrap created no superadmin on an empty database")
	}
	f.root = f.byKey(t, rootKey)
	for _, org := range []string{"soc", "other"} {
		_, err := f.svc.CreateOrg(ctx, f.root.Caller, identity.NewOrg{Name: org, Description: org})
		must(err)
	}
	user := func(login, org string, roles ...string) member {
		t.Helper()
		_, err := f.svc.CreateUser(ctx, f.root.Caller, identity.NewUser{Login: login, Organization: org, Roles: roles})
		must(err)
		key, err := f.svc.RenewKey(ctx, f.root.Caller, login)
		must(err)
		return f.byKey(t, key)
	}
	f.admin = user("soc-admin", "soc", "read", "analyze", "orgadmin")
	f.analyst = user("soc-analyst", "soc", "read", "analyze")
	f.reader = user("soc-reader", "soc", "read")
	f.other = user("other-admin", "other", "read", "analyze", "orgadmin")
	f.otherRd = user("other-reader", "other", "read")
	return f
}

// byKey authenticates key and fails the test unless it works.
func (f *fixture) byKey(t *testing.T, key string) member {
	t.Helper()
	c, err := f.svc.ByKey(t.Context(), key)
	if err != nil {
		t.Fatalf("ByKey: %v", err)
	}
	return member{Caller: c, Key: key}
}

// refused fails the test unless err is the one authentication failure.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, auth.ErrAuthentication) || apperr.KindOf(err) != apperr.Unauthenticated {
		t.Errorf("%s: %v, want the authentication failure", what, err)
	}
}

// wantKind fails the test unless err has the kind (0: no error).
func wantKind(t *testing.T, what string, err error, kind apperr.Kind) {
	t.Helper()
	if kind == 0 && err != nil || kind != 0 && apperr.KindOf(err) != kind {
		t.Errorf("%s: %v, want kind %v", what, err, kind)
	}
}

// sessions is the user's session version (what every session token carries).
func (f *fixture) sessions(t *testing.T, login string) int64 {
	t.Helper()
	u, err := f.svc.User(t.Context(), f.root.Caller, login)
	if err != nil {
		t.Fatal(err)
	}
	return u.SessionVersion
}

// TestParseRoles: the four role sets of the contract, in any case, order or repetition, come out in canonical
// order; anything else is a field problem on roles.
func TestParseRoles(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []identity.Role // nil: refused
	}{
		{[]string{"read"}, []identity.Role{identity.RoleRead}},
		{[]string{" READ "}, []identity.Role{identity.RoleRead}},
		{[]string{"analyze", "read"}, []identity.Role{identity.RoleRead, identity.RoleAnalyze}},
		{[]string{"OrgAdmin", "read", "analyze", "read"},
			[]identity.Role{identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin}},
		{[]string{"superadmin"}, []identity.Role{identity.RoleSuperAdmin}},
		{[]string{"superadmin", "superadmin"}, []identity.Role{identity.RoleSuperAdmin}},
		{nil, nil},
		{[]string{}, nil},
		{[]string{""}, nil},
		{[]string{"analyze"}, nil},
		{[]string{"orgadmin"}, nil},
		{[]string{"read", "orgadmin"}, nil},
		{[]string{"superadmin", "read"}, nil},
		{[]string{"superadmin", "read", "analyze", "orgadmin"}, nil},
		{[]string{"read", "write"}, nil},
		{[]string{"admin"}, nil},
		{slices.Repeat([]string{"read"}, 17), nil}, // too many, even when they collapse to a valid set
	} {
		got, err := identity.ParseRoles(tc.in)
		if tc.want == nil {
			e := apperr.As(err)
			if got != nil || e == nil || e.Kind != apperr.Invalid || len(e.Fields) != 1 || e.Fields[0].Name != "roles" {
				t.Errorf("ParseRoles(%q) = %v, %v; want a field problem on roles", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRoles(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestCaller_Require: the callers the service makes hold exactly their roles; there is no hierarchy (the
// superadmin is not a reader, an orgadmin holds read and analyze only because its role set lists them). A
// missing role is a 403 naming every role the action accepts.
func TestCaller_Require(t *testing.T) {
	f := newFixture(t)
	callers := map[string]member{"root": f.root, "admin": f.admin, "analyst": f.analyst, "reader": f.reader}
	for _, tc := range []struct {
		roles   []identity.Role
		allowed []string
	}{
		{[]identity.Role{identity.RoleSuperAdmin}, []string{"root"}},
		{[]identity.Role{identity.RoleOrgAdmin}, []string{"admin"}},
		{[]identity.Role{identity.RoleAnalyze}, []string{"admin", "analyst"}},
		{[]identity.Role{identity.RoleRead}, []string{"admin", "analyst", "reader"}},
		{[]identity.Role{identity.RoleSuperAdmin, identity.RoleOrgAdmin}, []string{"root", "admin"}},
		{[]identity.Role{identity.RoleSuperAdmin, identity.RoleRead}, []string{"root", "admin", "analyst", "reader"}},
		{nil, nil}, // nothing accepted: nobody passes
	} {
		for who, c := range callers {
			err := c.Require(tc.roles...)
			if slices.Contains(tc.allowed, who) {
				if err != nil || !c.Has(tc.roles...) {
					t.Errorf("%s refused %v: %v", who, tc.roles, err)
				}
				continue
			}
			if c.Has(tc.roles...) || apperr.KindOf(err) != apperr.Forbidden {
				t.Errorf("%s with %v: %v, want a 403", who, tc.roles, err)
				continue
			}
			msg := apperr.SafeMessage(err, "")
			for _, r := range tc.roles {
				if !strings.Contains(msg, string(r)) {
					t.Errorf("%s with %v: %q does not name %s", who, tc.roles, msg, r)
				}
			}
		}
	}
	for who, c := range callers {
		if got := c.Superadmin(); got != (who == "root") {
			t.Errorf("%s: Superadmin %v", who, got)
		}
	}
	if got := apperr.SafeMessage(f.reader.Require(identity.RoleSuperAdmin, identity.RoleOrgAdmin), ""); got !=
		"this action needs the role superadmin or orgadmin" {
		t.Errorf("message %q", got)
	}
}

// TestIdentity_CallerOf: the caller ByKey makes is the user's login, organization and canonical roles.
func TestIdentity_CallerOf(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		m     member
		login string
		org   string
		roles []identity.Role
	}{
		{f.root, "root", identity.AdminOrg, []identity.Role{identity.RoleSuperAdmin}},
		{f.admin, "soc-admin", "soc", []identity.Role{identity.RoleRead, identity.RoleAnalyze, identity.RoleOrgAdmin}},
		{f.analyst, "soc-analyst", "soc", []identity.Role{identity.RoleRead, identity.RoleAnalyze}},
		{f.reader, "soc-reader", "soc", []identity.Role{identity.RoleRead}},
		{f.otherRd, "other-reader", "other", []identity.Role{identity.RoleRead}},
	} {
		if c := tc.m.Caller; c.Login != tc.login || c.Org != tc.org || !slices.Equal(c.Roles, tc.roles) {
			t.Errorf("%s: %+v, want %s of %s with %v", tc.login, c, tc.login, tc.org, tc.roles)
		}
		c, v, err := f.svc.BySession(t.Context(), tc.login)
		if err != nil || c.Login != tc.login || c.Org != tc.org || !slices.Equal(c.Roles, tc.roles) || v != 0 {
			t.Errorf("BySession(%s) = %+v, %d, %v", tc.login, c, v, err)
		}
	}
	for _, key := range []string{"", "nope", strings.Repeat("x", 32), rootKey + "x"} {
		_, err := f.svc.ByKey(t.Context(), key)
		refused(t, "ByKey("+key+")", err)
	}
	_, _, err := f.svc.BySession(t.Context(), "ghost")
	refused(t, "BySession(ghost)", err)
}

// TestStatusFilter: the status words of a search (Cortex's Ok in any case, active, locked) become the stored
// ones wherever the filter compares the status field, and nowhere else.
func TestStatusFilter(t *testing.T) {
	in := search.Node{Op: search.OpAnd, Children: []search.Node{
		{Op: search.OpEq, Path: "status", Value: "OK"},
		{Op: search.OpIn, Path: "status", Values: []any{"locked", "active", "Other", "", 3}},
		{Op: search.OpEq, Path: "status", Value: ""},
		{Op: search.OpEq, Path: "name", Value: "ok"},
		{Op: search.OpNot, Children: []search.Node{{Op: search.OpEq, Path: "status", Value: "Locked"}}},
	}}
	got := identity.StatusFilter(in)
	c := got.Children
	if c[0].Value != identity.StatusActive {
		t.Errorf("status OK: %v", c[0].Value)
	}
	if want := []any{identity.StatusLocked, identity.StatusActive, "Other", "", 3}; !slices.Equal(c[1].Values, want) {
		t.Errorf("status in: %v, want %v", c[1].Values, want)
	}
	if c[2].Value != "" {
		t.Errorf("empty status became %v", c[2].Value)
	}
	if c[3].Value != "ok" {
		t.Errorf("name ok became %v", c[3].Value)
	}
	if c[4].Children[0].Value != identity.StatusLocked {
		t.Errorf("nested status: %v", c[4].Children[0].Value)
	}
	if in.Children[0].Value != "OK" || in.Children[1].Values[0] != "locked" {
		t.Error("StatusFilter changed its argument")
	}
}
