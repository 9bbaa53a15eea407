// Package identitytest builds, for the domain tests, the identity service on a test database with the callers
// they work as: the platform administrator, and in the organisation soc an org-admin, an analyst and a
// read-only user; in the organisation other an analyst. Each caller is made by the service itself.
package identitytest

import (
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
)

// Fixture is the identity service and its callers.
type Fixture struct {
	Service  *identity.Service
	Admin    identity.Caller // admin profile in the admin organisation
	OrgAdmin identity.Caller // soc
	Analyst  identity.Caller // soc
	Reader   identity.Caller // soc, read-only
	Other    identity.Caller // analyst of other
}

// New builds the identity service on db, bootstraps the platform administrator and creates the organisations
// soc and other and their users.
func New(t testing.TB, db *docstore.DB) *Fixture {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	idStore, err := store.NewIdentityStore(ctx, db)
	must(err)
	keys, err := auth.NewKeyring("test-secret-0123456789")
	must(err)
	cred, err := auth.NewCredentials(keys)
	must(err)
	f := &Fixture{Service: identity.New(idStore, cred, time.Now)}
	const rootKey = "root-key-0123456789-abcdefghijklmnop"
	_, err = f.Service.Bootstrap(ctx, "root", "", rootKey)
	must(err)
	rootUser, err := f.Service.ByKey(ctx, rootKey)
	must(err)
	f.Admin, err = f.Service.CallerOf(rootUser, identity.AdminOrg)
	must(err)
	user := func(login, org, profile string) identity.Caller {
		t.Helper()
		_, err := f.Service.CreateUser(ctx, f.Admin, identity.NewUser{Login: login, Name: login, Org: org, Profile: profile})
		must(err)
		u, err := f.Service.User(ctx, f.Admin, login)
		must(err)
		c, err := f.Service.CallerOf(u, org)
		must(err)
		return c
	}
	for _, org := range []string{"soc", "other"} {
		_, err = f.Service.CreateOrg(ctx, f.Admin, identity.NewOrg{Name: org, Description: org})
		must(err)
	}
	f.OrgAdmin = user("soc-admin", "soc", identity.ProfileOrgAdmin)
	f.Analyst = user("soc-analyst", "soc", identity.ProfileAnalyst)
	f.Reader = user("soc-reader", "soc", identity.ProfileReadOnly)
	f.Other = user("other-analyst", "other", identity.ProfileAnalyst)
	return f
}
