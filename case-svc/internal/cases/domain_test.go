package cases_test

import (
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/case-svc/internal/store/identitytest"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// searchAll and pageAll ask a list for everything (a few records in these tests).
func searchAll() search.Node { return search.Node{Op: search.OpAll} }
func pageAll() search.Page   { return search.Page{Limit: 100} }

// domain is the case service (with the task service beside it) on a fresh SQLite database, with real stores and real callers made by the
// identity service: the platform admin, and in soc an org-admin, an analyst and a read-only user; in other an
// analyst. The service's clock is now, which the test moves.
type domain struct {
	now      time.Time
	db       *docstore.DB
	svc      *cases.Service
	tasks    *task.Service
	fields   *customfield.Service
	ids      *identity.Service
	admin    identity.Caller // admin profile in the admin organisation
	orgAdmin identity.Caller // soc
	analyst  identity.Caller // soc
	reader   identity.Caller // soc, read-only
	other    identity.Caller // analyst of other
	stores   cases.Stores    // the real stores, as the service has them before wrap
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
	ids := identitytest.New(t, d.db)
	d.ids, d.admin, d.orgAdmin, d.analyst, d.reader, d.other = ids.Service, ids.Admin, ids.OrgAdmin, ids.Analyst, ids.Reader, ids.Other

	st := cases.Stores{Members: d.ids}
	var err error
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
	d.stores = st
	for _, w := range wrap {
		st = w(st)
	}
	now := func() time.Time { return d.now }
	d.svc = cases.NewService(st, now)
	d.tasks = task.NewService(d.svc, task.Stores{Tasks: st.Tasks, Files: st.Files, Members: st.Members}, now)
	d.fields = customfield.NewService(st.Fields, func() time.Time { return d.now })
	return d
}
