package analysis

// Scan re-reads the definition folders of kind (analyzer.paths or responder.paths) and replaces the
// catalog's loaded definitions at once (orgadmin or superadmin, as listing definitions). Workers enabled on
// a definition that is gone stay, but their jobs fail until it comes back.
func (s *Workers) Scan(c Caller, kind Kind) (ScanReport, error) {
	if err := require(c, RoleOrgAdmin, RoleSuperAdmin); err != nil {
		return ScanReport{}, err
	}
	return s.catalog.Rescan(kind), nil
}
