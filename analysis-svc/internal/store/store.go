// Package store implements the stores of analysis-svc, written once against pkg/docstore's collection API
// (SQLite embedded, MongoDB in production; no engine is imported here). Documents are JSON-tagged structs
// private to this package; docstore errors become domain errors at its boundary.
//
// Every collection is declared once, in Specs: its indexes (created on both engines) and its array fields.
// Each list and search the API offers has an index whose leading keys are the list's equality filters (its
// organization scope first) followed by its default sort key and _id (docstore.FindPage's tie-break), so
// the embedded engine serves the filter, the order and the page from the index (plan_test.go checks it).
package store

import (
	"context"
	"fmt"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
)

// The collections of analysis-svc.
const (
	orgsName    = "organizations"
	usersName   = "users"
	keysName    = "apikeys"
	workersName = "workers"
	baseName    = "workerconfigs"
	queueName   = "queue"
	jobsName    = "jobs"
	reportsName = "reports"
	cacheName   = "jobcache"
	ratesName   = "ratelimits"
	idemName    = "idempotency"
	grantsName  = "filegrants"
)

// Specs returns the declaration of every collection the stores open (the attachment store's files and
// chunks are pkg/docstore's). Tools that reach the same data (the bench, tests, a migration) open collections
// with these, so they see the same indexes and array fields.
func Specs() []docstore.Spec {
	asc, desc := docstore.Asc, docstore.Desc
	return append([]docstore.Spec{
		// Superadmin's organization list: few documents, read by _id (primary key) and listed in _id order.
		{Name: orgsName},
		{Name: usersName, Arrays: []string{"roles"},
			Indexes: []docstore.Index{
				// An organization's users (OrgUsers), default order _id, or by creation date.
				{Name: "organization_id", Keys: []docstore.Key{asc("organization"), asc("_id")}},
				{Name: "organization_createdAt", Keys: []docstore.Key{asc("organization"), asc("createdAt"), asc("_id")}},
				// Every user (superadmin) by creation date; the default order _id is the primary key.
				{Name: "createdAt", Keys: []docstore.Key{asc("createdAt"), asc("_id")}},
			}},
		// The API-key lookup table and the file grants: read by _id only.
		{Name: keysName},
		{Name: grantsName},
		{Name: workersName, Arrays: []string{"dataTypeList"},
			Indexes: []docstore.Index{
				// The analyzers or responders of an organization (List, ForDataType), default order _id, or by name.
				{Name: "organization_kind_id", Keys: []docstore.Key{asc("organization"), asc("kind"), asc("_id")}},
				{Name: "organization_kind_name", Keys: []docstore.Key{asc("organization"), asc("kind"), asc("name"), asc("_id")}},
			}},
		// The organizations' base configurations (/api/analyzerconfig): an organization's of a kind at once.
		{Name: baseName, Indexes: []docstore.Index{
			{Name: "organization_kind", Keys: []docstore.Key{asc("organization"), asc("kind"), asc("_id")}}}},
		{Name: queueName, Arrays: []string{"attachment.hashes"},
			Indexes: []docstore.Index{
				// Claim: the organizations with Waiting jobs (one seek each) and an organization's oldest one.
				{Name: "status_organization_createdAt", Keys: []docstore.Key{asc("status"), asc("organization"), asc("createdAt"), asc("_id")}},
				// Claim under job.org_max: a running job holds one of its organization's slots, atomically.
				{Name: "slot", Keys: []docstore.Key{asc("slot")}, Unique: true},
				// The sweeper: InProgress jobs whose lease has ended.
				{Name: "status_leaseUntil", Keys: []docstore.Key{asc("status"), asc("leaseUntil")}},
				// Job searches read the queue too (an organization's jobs, newest first).
				{Name: "organization_createdAt", Keys: []docstore.Key{asc("organization"), desc("createdAt"), asc("_id")}},
			}},
		// The job search's X-Total (an exact count) of the filters clients use (status, data type, analyzer,
		// within the organization) is a sum over a tally on SQLite rather than a visit of every match.
		{Name: jobsName, Arrays: []string{"attachment.hashes"}, Indexes: jobIndexes(), Tallies: []docstore.Tally{
			{Name: "search", Paths: []string{"organization", "status", "dataType", "workerId"}}}},
		{Name: reportsName, Arrays: []string{"artifacts"}},
		// Cache tags, rate windows and idempotency keys are read by _id; Prune deletes by date.
		{Name: cacheName, Indexes: []docstore.Index{{Name: "at", Keys: []docstore.Key{asc("at")}}}},
		{Name: ratesName, Indexes: []docstore.Index{{Name: "expires", Keys: []docstore.Key{asc("expires")}}}},
		{Name: idemName, Indexes: []docstore.Index{{Name: "at", Keys: []docstore.Key{asc("at")}}}},
		EventSpec(),
	}, events.OutboxSpecs()...)
}

// jobIndexes serve the job search of an organization (analysis.Jobs.Search: organization scope, Deleted
// hidden unless status is named, default sort -createdAt) with the filters clients use: status, data type
// (dataTypeFilter), both, and the analyzer id. Other filters (analyzerFilter's id-or-name, text, ranges) and
// other sorts read the organization's index: no full scan, but the organization's matches are filtered (and
// sorted) one by one.
func jobIndexes() []docstore.Index {
	asc, desc := docstore.Asc, docstore.Desc
	byOrg := func(name string, keys ...string) docstore.Index {
		ks := []docstore.Key{asc("organization")}
		for _, k := range keys {
			ks = append(ks, asc(k))
		}
		return docstore.Index{Name: name, Keys: append(ks, desc("createdAt"), asc("_id"))}
	}
	return []docstore.Index{
		byOrg("organization_createdAt"),
		byOrg("organization_status_createdAt", "status"),
		byOrg("organization_dataType_createdAt", "dataType"),
		byOrg("organization_status_dataType_createdAt", "status", "dataType"),
		byOrg("organization_workerId_createdAt", "workerId"),
	}
}

// Spec returns the declaration of the collection name (one of Specs).
func Spec(name string) (docstore.Spec, bool) {
	for _, s := range Specs() {
		if s.Name == name {
			return s, true
		}
	}
	return docstore.Spec{}, false
}

// Collection opens the collection name of db as the stores declare it; a name the stores do not declare
// (the attachment store's, say) opens without indexes.
func Collection(ctx context.Context, db *docstore.DB, name string) (*docstore.Collection, error) {
	spec, ok := Spec(name)
	if !ok {
		spec = docstore.Spec{Name: name}
	}
	c, err := db.Collection(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("open collection %s: %w", name, err)
	}
	return c, nil
}

// open opens the collections names of db, in order.
func open(ctx context.Context, db *docstore.DB, names ...string) ([]*docstore.Collection, error) {
	out := make([]*docstore.Collection, len(names))
	for i, n := range names {
		c, err := Collection(ctx, db, n)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
