package cases_test

import (
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// searchAll and pageAll ask a list for everything (a few records in these tests).
func searchAll() search.Node { return search.Node{Op: search.OpAll} }
func pageAll() search.Page   { return search.Page{Limit: 100} }

// domain is the case service on a fresh SQLite database, with real stores and real callers made by the
// identity service: the platform admin, and in soc an org-admin, an analyst and a read-only user; in other an
// analyst. The service's clock is now, which the test moves.
type domain struct {
	now      time.Time
	db       *docstore.DB
	svc      *cases.Service
	ids      *cases.Identity
	analyses *store.AnalysisStore
	admin    cases.Caller // admin profile in the admin organisation
	orgAdmin cases.Caller // soc
	analyst  cases.Caller // soc
	reader   cases.Caller // soc, read-only
	other    cases.Caller // analyst of other
	stores   cases.Stores // the real stores, as the service has them before wrap
}

// newDomain builds the domain; wrap, when given, wraps the real stores the service uses (a test provoking
// failures of the real database at chosen calls: merge_test.go).
func newDomain(t *testing.T, wrap ...func(cases.Stores) cases.Stores) *domain {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	d := &domain{db: docstoretest.New(t), now: time.Date(2026, 1, 5, 10, 30, 0, 0, time.UTC)}
	idStore, err := store.NewIdentityStore(ctx, d.db)
	must(err)
	keys, err := auth.NewKeyring("test-secret-0123456789")
	must(err)
	cred, err := auth.NewCredentials(keys)
	must(err)
	d.ids = cases.NewIdentity(idStore, cred, time.Now)
	const rootKey = "root-key-0123456789-abcdefghijklmnop"
	_, err = d.ids.Bootstrap(ctx, "root", "", rootKey)
	must(err)
	rootUser, err := d.ids.ByKey(ctx, rootKey)
	must(err)
	d.admin, err = d.ids.CallerOf(rootUser, cases.AdminOrg)
	must(err)
	user := func(login, org, profile string) cases.Caller {
		t.Helper()
		_, err := d.ids.CreateUser(ctx, d.admin, cases.NewUser{Login: login, Name: login, Org: org, Profile: profile})
		must(err)
		u, err := d.ids.User(ctx, d.admin, login)
		must(err)
		c, err := d.ids.CallerOf(u, org)
		must(err)
		return c
	}
	for _, org := range []string{"soc", "other"} {
		_, err = d.ids.CreateOrg(ctx, d.admin, cases.NewOrg{Name: org, Description: org})
		must(err)
	}
	d.orgAdmin = user("soc-admin", "soc", cases.ProfileOrgAdmin)
	d.analyst = user("soc-analyst", "soc", cases.ProfileAnalyst)
	d.reader = user("soc-reader", "soc", cases.ProfileReadOnly)
	d.other = user("other-analyst", "other", cases.ProfileAnalyst)

	st := cases.Stores{Members: d.ids}
	st.Cases, err = store.NewCaseStore(ctx, d.db)
	must(err)
	st.Tasks, err = store.NewTaskStore(ctx, d.db)
	must(err)
	st.Templates, err = store.NewTemplateStore(ctx, d.db)
	must(err)
	st.Fields, err = store.NewCustomFieldStore(ctx, d.db)
	must(err)
	st.Files, err = store.NewFiles(ctx, d.db)
	must(err)
	st.Observables, err = store.NewObservableStore(ctx, d.db)
	must(err)
	st.Alerts, err = store.NewAlertStore(ctx, d.db)
	must(err)
	st.Jobs, err = store.NewJobStore(ctx, d.db)
	must(err)
	d.analyses, err = store.NewAnalysisStore(ctx, d.db)
	must(err)
	d.stores = st
	for _, w := range wrap {
		st = w(st)
	}
	d.svc = cases.NewService(st, func() time.Time { return d.now })
	return d
}
