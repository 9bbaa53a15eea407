package analysis

import "github.com/openir/platform/analysis-svc/internal/identity"

// Scan re-reads the definition folders of kind (analyzer.paths or responder.paths) and replaces the
// catalog's loaded definitions at once (orgadmin or superadmin, as listing definitions). Workers enabled on
// a definition that is gone stay, but their jobs fail until it comes back.
func (s *Workers) Scan(c identity.Caller, kind Kind) (ScanReport, error) {
	if err := c.Require(identity.RoleOrgAdmin, identity.RoleSuperAdmin); err != nil {
		return ScanReport{}, err
	}
	return s.catalog.Rescan(kind), nil
}
