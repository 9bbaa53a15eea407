package api

import "github.com/openir/platform/pkg/apperr"

// ExtraDataMax is the most records one query renders with extraData. Each record's extraData costs queries
// of its own (seen, similar cases, case statistics…), so a query without a page over thousands of records made
// one request hold the database for a minute (issue 15). A query whose result has more records and asks for
// extraData is refused (400), not truncated: the client pages (a page step with to - from ≤ ExtraDataMax) as
// TheHive's UI does; results within the bound are unchanged.
const ExtraDataMax = 100

// boundExtraData refuses extraData over more than ExtraDataMax records.
func boundExtraData(records int, extras []string) error {
	if len(extras) == 0 || records <= ExtraDataMax {
		return nil
	}
	return apperr.Errorf(apperr.BadRequest,
		"extraData is computed for at most %d records per query and this one has %d: ask a page of at most %d (page step with to - from ≤ %d)",
		ExtraDataMax, records, ExtraDataMax, ExtraDataMax)
}
