package template_test

import (
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/case-svc/internal/store/identitytest"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// TestService_Create: creating a case template needs manageCaseTemplate (an org-admin's, not an analyst's
// nor a read-only user's, nor the platform administrator's in its own organisation), and a refusal creates
// nothing.
func TestService_Create(t *testing.T) {
	ctx := t.Context()
	db := docstoretest.New(t)
	ids := identitytest.New(t, db)
	templates, err := store.NewTemplateStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := store.NewCustomFieldStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	svc := template.NewService(template.Stores{Templates: templates, Fields: fields, Members: ids.Service}, time.Now)
	for _, tc := range []struct {
		who     string
		c       identity.Caller
		allowed bool
	}{
		{"admin", ids.Admin, false},
		{"org-admin", ids.OrgAdmin, true},
		{"analyst", ids.Analyst, false},
		{"reader", ids.Reader, false},
	} {
		t.Run(tc.who, func(t *testing.T) {
			_, err := svc.Create(ctx, tc.c, template.Input{Name: record.Change[string]{Set: true, V: "tpl-" + tc.who}})
			if tc.allowed && err != nil {
				t.Errorf("%s: %v", tc.who, err)
			}
			if !tc.allowed && apperr.KindOf(err) != apperr.Forbidden {
				t.Errorf("%s: %v, want 403", tc.who, err)
			}
		})
	}
	// Refusals created nothing: soc holds its org-admin's template only.
	ts, n, err := svc.List(ctx, ids.Analyst, search.Node{Op: search.OpAll}, search.Page{Limit: 100})
	if err != nil || n != 1 || ts[0].Name != "tpl-org-admin" {
		t.Errorf("soc's templates: %d %v (%v), want tpl-org-admin", n, ts, err)
	}
}
