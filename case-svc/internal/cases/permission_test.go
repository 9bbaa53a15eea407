package cases_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
)

// TestService_PermissionChecks: the service's operations check the caller's permission before anything
// else, and a refusal creates nothing.
func TestService_PermissionChecks(t *testing.T) {
	d := newDomain(t)
	ctx := t.Context()
	callers := map[string]identity.Caller{"admin": d.admin, "org-admin": d.orgAdmin, "analyst": d.analyst, "reader": d.reader}
	for _, tc := range []struct {
		name    string
		allowed []string
		run     func(c identity.Caller, who string) error
	}{
		{"create a case (manageCase)", []string{"org-admin", "analyst"}, func(c identity.Caller, who string) error {
			_, _, err := d.svc.CreateCase(ctx, c, cases.NewCase{Title: "case of " + who, Description: "d"})
			return err
		}},
		{"create an alert (manageAlert)", []string{"org-admin", "analyst"}, func(c identity.Caller, who string) error {
			_, _, err := d.svc.CreateAlert(ctx, c, cases.NewAlert{Type: "t", Source: "s", SourceRef: who, Title: "a", Description: "d"})
			return err
		}},
		{"define a custom field (platform administrator)", []string{"admin"}, func(c identity.Caller, who string) error {
			_, err := d.fields.Create(ctx, c, customfield.NewField{Name: "f" + strings.ReplaceAll(who, "-", ""),
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
