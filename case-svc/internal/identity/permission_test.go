package identity_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/store/identitytest"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// TestProfiles: the four profiles of the reference system and their permissions.
func TestProfiles(t *testing.T) {
	orgPerms := []identity.Permission{identity.ManageCase, identity.ManageTask, identity.ManageObservable, identity.ManageAlert,
		identity.ManageAction, identity.ManageAnalyse, identity.ManageShare, identity.ManagePage, identity.ManageProcedure,
		identity.AccessServiceFS}
	want := map[string]struct {
		admin bool
		perms []identity.Permission
	}{
		identity.ProfileAdmin: {true, []identity.Permission{identity.ManageOrganisation, identity.ManageUser, identity.ManageCustomField,
			identity.ManageConfig, identity.ManageProfile, identity.ManagePlatform, identity.ManageObservableTemplate,
			identity.ManageAnalyzerTemplate, identity.ManageTaxonomy, identity.ManagePattern}},
		identity.ProfileOrgAdmin: {false, append(slices.Clone(orgPerms), identity.ManageTag, identity.ManageUser,
			identity.ManageCaseTemplate, identity.ManageCustomField, identity.ManageConfig, identity.ManageAutomation)},
		identity.ProfileAnalyst:  {false, orgPerms},
		identity.ProfileReadOnly: {false, nil},
	}
	ps := identity.Profiles()
	if len(ps) != len(want) {
		t.Fatalf("%d profiles, want %d", len(ps), len(want))
	}
	for _, p := range ps {
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected profile %s", p.Name)
			continue
		}
		if !slices.IsSorted(p.Permissions) {
			t.Errorf("%s: permissions not sorted: %v", p.Name, p.Permissions)
		}
		exp := slices.Clone(w.perms)
		slices.Sort(exp)
		if p.Admin != w.admin || !slices.Equal(p.Permissions, exp) {
			t.Errorf("%s: admin %v %v, want admin %v %v", p.Name, p.Admin, p.Permissions, w.admin, exp)
		}
		for _, name := range []string{p.Name, "~" + p.Name} {
			if got, ok := identity.ProfileNamed(name); !ok || got.Name != p.Name {
				t.Errorf("ProfileNamed(%q) = %v, %v", name, got.Name, ok)
			}
		}
	}
	for _, name := range []string{"", "root", "Analyst", "~"} {
		if _, ok := identity.ProfileNamed(name); ok {
			t.Errorf("ProfileNamed(%q) found a profile", name)
		}
	}
}

// TestCaller_Require: the callers the identity service makes hold their profile's permissions in their
// current organisation; a missing one is a 403 naming it. Platform administration needs the admin profile in
// the admin organisation.
func TestCaller_Require(t *testing.T) {
	d := identitytest.New(t, docstoretest.New(t))
	callers := map[string]identity.Caller{"admin": d.Admin, "org-admin": d.OrgAdmin, "analyst": d.Analyst, "reader": d.Reader}
	for _, tc := range []struct {
		perm    identity.Permission
		allowed []string
	}{
		{identity.ManageCase, []string{"org-admin", "analyst"}},
		{identity.ManageAlert, []string{"org-admin", "analyst"}},
		{identity.ManageAction, []string{"org-admin", "analyst"}},
		{identity.ManageCaseTemplate, []string{"org-admin"}},
		{identity.ManageTag, []string{"org-admin"}},
		{identity.ManageUser, []string{"admin", "org-admin"}},
		{identity.ManageConfig, []string{"admin", "org-admin"}},
		{identity.ManageCustomField, []string{"admin", "org-admin"}},
		{identity.ManageAutomation, []string{"org-admin"}},
		{identity.ManageOrganisation, []string{"admin"}},
		{identity.ManagePlatform, []string{"admin"}},
	} {
		for who, c := range callers {
			err := c.Require(tc.perm)
			if slices.Contains(tc.allowed, who) {
				if err != nil || !c.Can(tc.perm) {
					t.Errorf("%s lacks %s: %v", who, tc.perm, err)
				}
				continue
			}
			if c.Can(tc.perm) || apperr.KindOf(err) != apperr.Forbidden ||
				!strings.Contains(apperr.SafeMessage(err, ""), string(tc.perm)) {
				t.Errorf("%s with %s: %v, want a 403 naming it", who, tc.perm, err)
			}
		}
	}
	for who, c := range callers {
		if got := c.PlatformAdmin(); got != (who == "admin") {
			t.Errorf("%s: PlatformAdmin %v", who, got)
		}
	}
	// The admin profile's permissions outside the admin organisation administer nothing.
	elsewhere := d.Admin
	elsewhere.Org = "soc"
	if elsewhere.PlatformAdmin() {
		t.Error("the admin profile administers the platform from soc")
	}
	if !d.Analyst.Member("soc") || d.Analyst.Member("other") || d.Analyst.Org != "soc" {
		t.Errorf("analyst of soc: org %s, orgs %v", d.Analyst.Org, d.Analyst.Orgs)
	}
}

// TestIdentity_CallerOf: a user works in an organisation it belongs to, with the profile it has there.
func TestIdentity_CallerOf(t *testing.T) {
	d := identitytest.New(t, docstoretest.New(t))
	u, err := d.Service.User(t.Context(), d.Admin, "soc-reader")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		org      string
		wantOrg  string
		wantKind apperr.Kind // 0: none
	}{
		{"", "soc", 0},
		{"soc", "soc", 0},
		{"other", "", apperr.Forbidden},
		{identity.AdminOrg, "", apperr.Forbidden},
	} {
		c, err := d.Service.CallerOf(u, tc.org)
		if tc.wantKind != 0 {
			if apperr.KindOf(err) != tc.wantKind {
				t.Errorf("org %q: %+v, %v; want kind %v", tc.org, c, err, tc.wantKind)
			}
			continue
		}
		if err != nil || c.Org != tc.wantOrg || c.Profile != identity.ProfileReadOnly || len(c.Permissions) != 0 {
			t.Errorf("org %q: %+v, %v", tc.org, c, err)
		}
	}
}

// TestIdentity_CreateUserProfiles: the admin organisation holds the admin profile and only it; an org-admin
// creates users in its own organisation only; an analyst creates none.
func TestIdentity_CreateUserProfiles(t *testing.T) {
	d := identitytest.New(t, docstoretest.New(t))
	for i, tc := range []struct {
		as       func(d *identitytest.Fixture) identity.Caller
		org      string
		profile  string
		wantKind apperr.Kind // 0: created
	}{
		{func(d *identitytest.Fixture) identity.Caller { return d.Admin }, identity.AdminOrg, identity.ProfileAdmin, 0},
		{func(d *identitytest.Fixture) identity.Caller { return d.Admin }, identity.AdminOrg, identity.ProfileAnalyst, apperr.Invalid},
		{func(d *identitytest.Fixture) identity.Caller { return d.Admin }, "soc", identity.ProfileAdmin, apperr.Invalid},
		{func(d *identitytest.Fixture) identity.Caller { return d.Admin }, "soc", "root", apperr.Invalid},
		{func(d *identitytest.Fixture) identity.Caller { return d.Admin }, "other", identity.ProfileReadOnly, 0},
		{func(d *identitytest.Fixture) identity.Caller { return d.OrgAdmin }, "soc", "~" + identity.ProfileAnalyst, 0},
		{func(d *identitytest.Fixture) identity.Caller { return d.OrgAdmin }, "", identity.ProfileOrgAdmin, 0},
		{func(d *identitytest.Fixture) identity.Caller { return d.OrgAdmin }, "soc", identity.ProfileAdmin, apperr.Invalid},
		{func(d *identitytest.Fixture) identity.Caller { return d.OrgAdmin }, "other", identity.ProfileAnalyst, apperr.Forbidden},
		{func(d *identitytest.Fixture) identity.Caller { return d.Analyst }, "soc", identity.ProfileReadOnly, apperr.Forbidden},
		{func(d *identitytest.Fixture) identity.Caller { return d.Reader }, "soc", identity.ProfileReadOnly, apperr.Forbidden},
	} {
		login := "user-" + string(rune('a'+i))
		_, err := d.Service.CreateUser(t.Context(), tc.as(d), identity.NewUser{Login: login, Org: tc.org, Profile: tc.profile})
		if tc.wantKind == 0 && err != nil || tc.wantKind != 0 && apperr.KindOf(err) != tc.wantKind {
			t.Errorf("row %d (%s in %q): %v, want kind %v", i, tc.profile, tc.org, err, tc.wantKind)
		}
		_, lookup := d.Service.User(t.Context(), d.Admin, login)
		if created := lookup == nil; created != (tc.wantKind == 0) {
			t.Errorf("row %d: user created %v", i, created)
		}
	}
}
