package identity

import (
	"slices"
	"strings"

	"github.com/openir/platform/pkg/apperr"
)

// Permission is a named right; the contract (spec §5.3) names the organisation-level ones.
type Permission string

// The permissions of the contract (spec §5.3).
const (
	ManageShare        Permission = "manageShare"
	ManageAnalyse      Permission = "manageAnalyse"
	ManageTask         Permission = "manageTask"
	ManageCaseTemplate Permission = "manageCaseTemplate"
	ManageCase         Permission = "manageCase"
	ManageUser         Permission = "manageUser"
	ManageProcedure    Permission = "manageProcedure"
	ManagePage         Permission = "managePage"
	ManageObservable   Permission = "manageObservable"
	ManageTag          Permission = "manageTag"
	ManageConfig       Permission = "manageConfig"
	ManageAlert        Permission = "manageAlert"
	AccessServiceFS    Permission = "accessServiceFS"
	ManageAction       Permission = "manageAction"
	ManageCustomField  Permission = "manageCustomField"
)

// ManageAutomation manages the organisation's analyzer sets and automation rules (docs/automation.md). It is
// not in the contract's list: the org-admin profile holds it.
const ManageAutomation Permission = "manageAutomation"

// The platform permissions of the reference system's admin profile, beyond the contract's list. Only the
// admin profile holds them, and only in the admin organisation.
const (
	ManageOrganisation       Permission = "manageOrganisation"
	ManageProfile            Permission = "manageProfile"
	ManagePlatform           Permission = "managePlatform"
	ManageObservableTemplate Permission = "manageObservableTemplate"
	ManageAnalyzerTemplate   Permission = "manageAnalyzerTemplate"
	ManageTaxonomy           Permission = "manageTaxonomy"
	ManagePattern            Permission = "managePattern"
)

// The four profiles of the reference system.
const (
	ProfileAdmin    = "admin"
	ProfileOrgAdmin = "org-admin"
	ProfileAnalyst  = "analyst"
	ProfileReadOnly = "read-only"
)

// AdminOrg is the organisation of the platform administrators: it holds the admin profile and only it.
const AdminOrg = "admin"

// Profile is a named set of permissions a user holds in an organisation.
type Profile struct {
	Name        string
	Permissions []Permission // sorted
	// Admin is true for the profile of the admin organisation (platform administration).
	Admin bool
}

// Profiles returns the four fixed profiles. They follow the reference system: admin administers the platform
// (organisations, users, custom fields) from the admin organisation; org-admin holds every organisation
// permission; analyst works on cases without administering; read-only holds none.
func Profiles() []Profile {
	ps := []Profile{
		{Name: ProfileAdmin, Admin: true, Permissions: []Permission{
			ManageOrganisation, ManageUser, ManageCustomField, ManageConfig, ManageProfile, ManagePlatform,
			ManageObservableTemplate, ManageAnalyzerTemplate, ManageTaxonomy, ManagePattern,
		}},
		{Name: ProfileOrgAdmin, Permissions: []Permission{
			ManageCase, ManageTask, ManageObservable, ManageAlert, ManageAction, ManageAnalyse, ManageShare,
			ManagePage, ManageProcedure, AccessServiceFS, ManageTag, ManageUser, ManageCaseTemplate,
			ManageCustomField, ManageConfig, ManageAutomation,
		}},
		{Name: ProfileAnalyst, Permissions: []Permission{
			ManageCase, ManageTask, ManageObservable, ManageAlert, ManageAction, ManageAnalyse, ManageShare,
			ManagePage, ManageProcedure, AccessServiceFS,
		}},
		{Name: ProfileReadOnly, Permissions: []Permission{}},
	}
	for i := range ps {
		slices.Sort(ps[i].Permissions)
	}
	return ps
}

// ProfileNamed returns the profile with this name (or "~name" id).
func ProfileNamed(name string) (Profile, bool) {
	name = strings.TrimPrefix(name, "~")
	for _, p := range Profiles() {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// checkProfile enforces that the admin organisation holds the admin profile and nothing else does.
func checkProfile(field, org, profile string) error {
	p, ok := ProfileNamed(profile)
	switch {
	case !ok:
		return apperr.Fields(apperr.FieldError{Name: field, Message: "one of admin, org-admin, analyst, read-only"})
	case org == AdminOrg && !p.Admin:
		return apperr.Fields(apperr.FieldError{Name: field, Message: "the admin organisation holds only the admin profile"})
	case org != AdminOrg && p.Admin:
		return apperr.Fields(apperr.FieldError{Name: field, Message: "the admin profile exists only in the admin organisation"})
	}
	return nil
}

// Caller is the authenticated user of a request, in the organisation the request works in.
type Caller struct {
	Login       string
	Name        string
	Org         string   // the organisation of this request (X-Organisation, else the user's first)
	Orgs        []string // every organisation of the user
	Profile     string
	Permissions []Permission // of Profile, sorted
}

// Can reports whether the caller holds the permission in its current organisation.
func (c Caller) Can(p Permission) bool { return slices.Contains(c.Permissions, p) }

// Require returns a 403 AuthorizationError naming the permission unless the caller holds it.
func (c Caller) Require(p Permission) error {
	if c.Can(p) {
		return nil
	}
	return apperr.Errorf(apperr.Forbidden, "missing permission %s", p)
}

// PlatformAdmin reports whether the caller works as a platform administrator: the admin profile in the admin
// organisation. Platform administrators manage organisations and every user.
func (c Caller) PlatformAdmin() bool { return c.Org == AdminOrg && c.Can(ManageOrganisation) }

// Member reports whether the caller belongs to the organisation.
func (c Caller) Member(org string) bool { return slices.Contains(c.Orgs, org) }
