package api_test

import (
	"net/http"
	"testing"
)

// Issue 15: custom fields are shared by every organisation, and an org-admin could make one mandatory (or
// delete it), after which every other organisation's case creation failed (400). Only the platform
// administrator changes them now; org-admins of any organisation get 403.
func TestRegressionOrgAdminCannotChangeSharedCustomFields(t *testing.T) {
	tm := newTeam(t)
	fld := tm.admin.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "shared", "type": "string"}).
		want(t, 201).object(t)
	cert := tm.other // cert's analyst
	certAdmin := tm.user(t, "certadmin", "cert", "org-admin")

	for _, oa := range []*client{tm.orgAdmin, certAdmin} {
		oa.call(t, http.MethodPatch, "/api/customField/"+fld.str(t, "id"), map[string]any{"mandatory": true}).
			wantError(t, 403, "AuthorizationError")
		oa.call(t, http.MethodPatch, "/api/customField/shared", map[string]any{"mandatory": true}).
			wantError(t, 403, "AuthorizationError")
		oa.call(t, http.MethodDelete, "/api/customField/"+fld.str(t, "id"), nil).wantError(t, 403, "AuthorizationError")
		oa.call(t, http.MethodPost, "/api/customField", map[string]any{"name": "mine", "type": "string", "mandatory": true}).
			wantError(t, 403, "AuthorizationError")
	}
	// Nothing changed: the other organisation still creates cases without the field.
	got := tm.admin.call(t, http.MethodGet, "/api/customField/"+fld.str(t, "id"), nil).want(t, 200).object(t)
	if got["mandatory"] != false {
		t.Fatalf("field after the refused changes: %v", got)
	}
	cert.newCase(t, nil)
	tm.analyst.newCase(t, nil)
	// An org-admin still sets values of shared fields on its own cases (manageCustomField).
	tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"shared": map[string]any{"string": "x"}}})
}
