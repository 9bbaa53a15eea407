package cases_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
)

// TestProfiles: the four profiles of the reference system and their permissions.
func TestProfiles(t *testing.T) {
	orgPerms := []cases.Permission{cases.ManageCase, cases.ManageTask, cases.ManageObservable, cases.ManageAlert,
		cases.ManageAction, cases.ManageAnalyse, cases.ManageShare, cases.ManagePage, cases.ManageProcedure,
		cases.AccessServiceFS}
	want := map[string]struct {
		admin bool
		perms []cases.Permission
	}{
		cases.ProfileAdmin: {true, []cases.Permission{cases.ManageOrganisation, cases.ManageUser, cases.ManageCustomField,
			cases.ManageConfig, cases.ManageProfile, cases.ManagePlatform, cases.ManageObservableTemplate,
			cases.ManageAnalyzerTemplate, cases.ManageTaxonomy, cases.ManagePattern}},
		cases.ProfileOrgAdmin: {false, append(slices.Clone(orgPerms), cases.ManageTag, cases.ManageUser,
			cases.ManageCaseTemplate, cases.ManageCustomField, cases.ManageConfig)},
		cases.ProfileAnalyst:  {false, orgPerms},
		cases.ProfileReadOnly: {false, nil},
	}
	ps := cases.Profiles()
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
			if got, ok := cases.ProfileNamed(name); !ok || got.Name != p.Name {
				t.Errorf("ProfileNamed(%q) = %v, %v", name, got.Name, ok)
			}
		}
	}
	for _, name := range []string{"", "root", "Analyst", "~"} {
		if _, ok := cases.ProfileNamed(name); ok {
			t.Errorf("ProfileNamed(%q) found a profile", name)
		}
	}
}

// TestCaller_Require: the callers the identity service makes hold their profile's permissions in their
// current organisation; a missing one is a 403 naming it. Platform administration needs the admin profile in
// the admin organisation.
func TestCaller_Require(t *testing.T) {
	d := newDomain(t)
	callers := map[string]cases.Caller{"admin": d.admin, "org-admin": d.orgAdmin, "analyst": d.analyst, "reader": d.reader}
	for _, tc := range []struct {
		perm    cases.Permission
		allowed []string
	}{
		{cases.ManageCase, []string{"org-admin", "analyst"}},
		{cases.ManageAlert, []string{"org-admin", "analyst"}},
		{cases.ManageAction, []string{"org-admin", "analyst"}},
		{cases.ManageCaseTemplate, []string{"org-admin"}},
		{cases.ManageTag, []string{"org-admin"}},
		{cases.ManageUser, []string{"admin", "org-admin"}},
		{cases.ManageConfig, []string{"admin", "org-admin"}},
		{cases.ManageCustomField, []string{"admin", "org-admin"}},
		{cases.ManageOrganisation, []string{"admin"}},
		{cases.ManagePlatform, []string{"admin"}},
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
	elsewhere := d.admin
	elsewhere.Org = "soc"
	if elsewhere.PlatformAdmin() {
		t.Error("the admin profile administers the platform from soc")
	}
	if !d.analyst.Member("soc") || d.analyst.Member("other") || d.analyst.Org != "soc" {
		t.Errorf("analyst of soc: org %s, orgs %v", d.analyst.Org, d.analyst.Orgs)
	}
}

// TestIdentity_CallerOf: a user works in an organisation it belongs to, with the profile it has there.
func TestIdentity_CallerOf(t *testing.T) {
	d := newDomain(t)
	u, err := d.ids.User(t.Context(), d.admin, "soc-reader")
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
		{cases.AdminOrg, "", apperr.Forbidden},
	} {
		c, err := d.ids.CallerOf(u, tc.org)
		if tc.wantKind != 0 {
			if apperr.KindOf(err) != tc.wantKind {
				t.Errorf("org %q: %+v, %v; want kind %v", tc.org, c, err, tc.wantKind)
			}
			continue
		}
		if err != nil || c.Org != tc.wantOrg || c.Profile != cases.ProfileReadOnly || len(c.Permissions) != 0 {
			t.Errorf("org %q: %+v, %v", tc.org, c, err)
		}
	}
}

// TestIdentity_CreateUserProfiles: the admin organisation holds the admin profile and only it; an org-admin
// creates users in its own organisation only; an analyst creates none.
func TestIdentity_CreateUserProfiles(t *testing.T) {
	d := newDomain(t)
	for i, tc := range []struct {
		as       func(d *domain) cases.Caller
		org      string
		profile  string
		wantKind apperr.Kind // 0: created
	}{
		{func(d *domain) cases.Caller { return d.admin }, cases.AdminOrg, cases.ProfileAdmin, 0},
		{func(d *domain) cases.Caller { return d.admin }, cases.AdminOrg, cases.ProfileAnalyst, apperr.Invalid},
		{func(d *domain) cases.Caller { return d.admin }, "soc", cases.ProfileAdmin, apperr.Invalid},
		{func(d *domain) cases.Caller { return d.admin }, "soc", "root", apperr.Invalid},
		{func(d *domain) cases.Caller { return d.admin }, "other", cases.ProfileReadOnly, 0},
		{func(d *domain) cases.Caller { return d.orgAdmin }, "soc", "~" + cases.ProfileAnalyst, 0},
		{func(d *domain) cases.Caller { return d.orgAdmin }, "", cases.ProfileOrgAdmin, 0},
		{func(d *domain) cases.Caller { return d.orgAdmin }, "soc", cases.ProfileAdmin, apperr.Invalid},
		{func(d *domain) cases.Caller { return d.orgAdmin }, "other", cases.ProfileAnalyst, apperr.Forbidden},
		{func(d *domain) cases.Caller { return d.analyst }, "soc", cases.ProfileReadOnly, apperr.Forbidden},
		{func(d *domain) cases.Caller { return d.reader }, "soc", cases.ProfileReadOnly, apperr.Forbidden},
	} {
		login := "user-" + string(rune('a'+i))
		_, err := d.ids.CreateUser(t.Context(), tc.as(d), cases.NewUser{Login: login, Org: tc.org, Profile: tc.profile})
		if tc.wantKind == 0 && err != nil || tc.wantKind != 0 && apperr.KindOf(err) != tc.wantKind {
			t.Errorf("row %d (%s in %q): %v, want kind %v", i, tc.profile, tc.org, err, tc.wantKind)
		}
		_, lookup := d.ids.User(t.Context(), d.admin, login)
		if created := lookup == nil; created != (tc.wantKind == 0) {
			t.Errorf("row %d: user created %v", i, created)
		}
	}
}

// TestService_PermissionChecks: the service's operations check the caller's permission before anything
// else, and a refusal creates nothing.
func TestService_PermissionChecks(t *testing.T) {
	d := newDomain(t)
	ctx := t.Context()
	callers := map[string]cases.Caller{"admin": d.admin, "org-admin": d.orgAdmin, "analyst": d.analyst, "reader": d.reader}
	for _, tc := range []struct {
		name    string
		allowed []string
		run     func(c cases.Caller, who string) error
	}{
		{"create a case (manageCase)", []string{"org-admin", "analyst"}, func(c cases.Caller, who string) error {
			_, _, err := d.svc.CreateCase(ctx, c, cases.NewCase{Title: "case of " + who, Description: "d"})
			return err
		}},
		{"create an alert (manageAlert)", []string{"org-admin", "analyst"}, func(c cases.Caller, who string) error {
			_, _, err := d.svc.CreateAlert(ctx, c, cases.NewAlert{Type: "t", Source: "s", SourceRef: who, Title: "a", Description: "d"})
			return err
		}},
		{"create a case template (manageCaseTemplate)", []string{"org-admin"}, func(c cases.Caller, who string) error {
			_, err := d.svc.CreateTemplate(ctx, c, cases.TemplateInput{Name: record.Change[string]{Set: true, V: "tpl-" + who}})
			return err
		}},
		{"define a custom field (platform administrator)", []string{"admin"}, func(c cases.Caller, who string) error {
			_, err := d.svc.CreateCustomField(ctx, c, cases.NewCustomField{Name: "f" + strings.ReplaceAll(who, "-", ""),
				DisplayName: "f", Description: "f", Type: "string"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for who, c := range callers {
				err := tc.run(c, who)
				if slices.Contains(tc.allowed, who) {
					if err != nil {
						t.Errorf("%s: %v", who, err)
					}
				} else if apperr.KindOf(err) != apperr.Forbidden {
					t.Errorf("%s: %v, want 403", who, err)
				}
			}
		})
	}
	// Refusals created nothing: soc holds the cases and alerts of its org-admin and analyst only.
	if _, n, err := d.svc.Cases(ctx, d.analyst, searchAll(), pageAll()); err != nil || n != 2 {
		t.Errorf("soc's cases: %d (%v), want 2", n, err)
	}
	if _, n, err := d.svc.Alerts(ctx, d.analyst, searchAll(), pageAll()); err != nil || n != 2 {
		t.Errorf("soc's alerts: %d (%v), want 2", n, err)
	}
}
