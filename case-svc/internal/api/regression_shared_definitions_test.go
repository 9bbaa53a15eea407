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
	fld := tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "shared", "type": "string"}).
		Want(t, 201).Object(t)
	cert := tm.other // cert's analyst
	certAdmin := tm.user(t, "certadmin", "cert", "org-admin")

	for _, oa := range []*client{tm.orgAdmin, certAdmin} {
		oa.Call(t, http.MethodPatch, "/api/customField/"+fld.Str(t, "id"), map[string]any{"mandatory": true}).
			WantError(t, 403, "AuthorizationError")
		oa.Call(t, http.MethodPatch, "/api/customField/shared", map[string]any{"mandatory": true}).
			WantError(t, 403, "AuthorizationError")
		oa.Call(t, http.MethodDelete, "/api/customField/"+fld.Str(t, "id"), nil).WantError(t, 403, "AuthorizationError")
		oa.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "mine", "type": "string", "mandatory": true}).
			WantError(t, 403, "AuthorizationError")
	}
	// Nothing changed: the other organisation still creates cases without the field.
	got := tm.admin.Call(t, http.MethodGet, "/api/customField/"+fld.Str(t, "id"), nil).Want(t, 200).Object(t)
	if got["mandatory"] != false {
		t.Fatalf("field after the refused changes: %v", got)
	}
	cert.newCase(t, nil)
	tm.analyst.newCase(t, nil)
	// An org-admin still sets values of shared fields on its own cases (manageCustomField).
	tm.orgAdmin.newCase(t, map[string]any{"customFields": map[string]any{"shared": map[string]any{"string": "x"}}})
}
