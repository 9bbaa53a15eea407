package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// planCase is one list or search the API offers, as the domain hands it to the store (filter and sort) and
// as docstore.FindPage runs it (the sort then _id, a page of 50).
type planCase struct {
	name string
	coll string
	f    search.Node
	sort []search.SortKey
	// ordered: the index must also give the order (no temp B-tree): the list's default or main sort.
	ordered bool
	// unscoped: a superadmin's list of everything (no equality filter); it must read an index in order
	// (stopping at the page's end) instead of sorting the whole collection.
	unscoped bool
	// bare: not a page but one of the store's own reads or deletes, run with exactly this sort and limit.
	bare  bool
	limit int
}

// parse reads a client query as the API does (search.Parse on the decoded JSON, numbers as json.Number).
func parse(t *testing.T, q string, fields search.Fields) search.Node {
	t.Helper()
	var v any
	if q != "" {
		dec := json.NewDecoder(strings.NewReader(q))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := search.Parse(v, fields)
	if err != nil {
		t.Fatalf("parse %s: %v", q, err)
	}
	return n
}

// jobSearch is the filter analysis.Jobs.Search hands the store: the client's filter, the organization, and
// Deleted hidden unless the query names status.
func jobSearch(f search.Node, org string) search.Node {
	parts := []search.Node{f, {Op: search.OpEq, Path: "organization", Value: org}}
	if !namesPath(f, "status") {
		parts = append(parts, search.Node{Op: search.OpNot, Children: []search.Node{{Op: search.OpEq, Path: "status", Value: analysis.JobDeleted}}})
	}
	return search.Node{Op: search.OpAnd, Children: parts}
}

func namesPath(n search.Node, path string) bool {
	if n.Path == path {
		return true
	}
	for _, c := range n.Children {
		if namesPath(c, path) {
			return true
		}
	}
	return false
}

// workerList is analysis.Workers.List's filter: the client's, the organization and the kind.
func workerList(f search.Node, org string, kind analysis.Kind) search.Node {
	return search.Node{Op: search.OpAnd, Children: []search.Node{f,
		{Op: search.OpEq, Path: "organization", Value: org}, {Op: search.OpEq, Path: "kind", Value: string(kind)}}}
}

// orgUsers is identity.Service.OrgUsers's filter.
func orgUsers(f search.Node, org string) search.Node {
	return search.Node{Op: search.OpAnd, Children: []search.Node{f, {Op: search.OpEq, Path: "organization", Value: org}}}
}

// TestSpecs_PlansUseIndexes fills every listed collection with a few thousand documents and checks SQLite's
// plan of each list and search the API offers (and of the queue's claim, the sweeper and Prune): no full scan
// of the collection's table, and the default order read from the index.
func TestSpecs_PlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	if db.Engine() != "sqlite" {
		t.Skip("query plans are SQLite's")
	}
	fill(t, ctx, db)

	jobFilters := map[string]string{
		"everything":           ``,
		"status":               `{"status":"Success"}`,
		"status+dataType":      `{"_and":[{"status":"Success"},{"dataType":"ip"}]}`,
		"dataType":             `{"dataType":"domain"}`,
		"analyzer":             `{"analyzerId":"w-3"}`,
		"data prefix (like)":   `{"_like":{"_field":"data","_value":"10.1"}}`,
		"tlp range":            `{"_between":{"_field":"tlp","_from":1,"_to":3}}`,
		"createdAt since":      `{"_gte":{"createdAt":1700000000000}}`,
		"analyzerFilter (or)":  `{"_or":[{"workerId":"w-3"},{"workerName":"w-3"}]}`,
		"status in (waitlist)": `{"_in":{"_field":"status","_values":["Waiting","InProgress"]}}`,
	}
	var cases []planCase
	for name, q := range jobFilters {
		f := jobSearch(parse(t, q, analysis.JobFields), "org-1")
		for _, coll := range []string{jobsName, queueName} {
			// Default sort: -createdAt (analysis.Jobs.Search), from the index for the equality filters it
			// has one for (the queue is small: its one org index serves every filter).
			ordered := map[string]bool{"everything": true, "status": true, "status+dataType": true, "dataType": true,
				"analyzer": true, "data prefix (like)": true, "tlp range": true, "createdAt since": true}[name]
			if coll == queueName {
				ordered = name == "everything"
			}
			cases = append(cases, planCase{name: "job search " + name, coll: coll, f: f,
				sort: docstore.Sort("-createdAt"), ordered: ordered})
		}
	}
	// Every sort a job search allows, on the default filter: no scan (a sort other than createdAt sorts the
	// organization's matches).
	for field, spec := range analysis.JobFields {
		for _, dir := range []string{"", "-"} {
			cases = append(cases, planCase{name: "job search sorted by " + dir + field, coll: jobsName,
				f: jobSearch(parse(t, "", analysis.JobFields), "org-1"), sort: docstore.Sort(dir + spec.Path),
				ordered: spec.Path == "createdAt" && dir == "-"})
		}
	}
	for _, kind := range []analysis.Kind{analysis.KindAnalyzer, analysis.KindResponder} {
		k := string(kind)
		cases = append(cases,
			planCase{name: k + " list", coll: workersName, f: workerList(parse(t, "", analysis.WorkerFields), "org-1", kind), ordered: true},
			planCase{name: k + " list by name", coll: workersName, f: workerList(parse(t, "", analysis.WorkerFields), "org-1", kind),
				sort: docstore.Sort("name"), ordered: true},
			planCase{name: k + " list by -createdAt", coll: workersName, f: workerList(parse(t, "", analysis.WorkerFields), "org-1", kind),
				sort: docstore.Sort("-createdAt")},
			planCase{name: k + " search name", coll: workersName,
				f: workerList(parse(t, `{"_like":{"_field":"name","_value":"w-1"}}`, analysis.WorkerFields), "org-1", kind), ordered: true},
			planCase{name: k + "s for a data type", coll: workersName,
				f: workerList(search.Node{Op: search.OpEq, Path: "dataTypeList", Value: "ip"}, "org-1", kind), ordered: true},
		)
	}
	cases = append(cases,
		planCase{name: "organization users", coll: usersName, f: orgUsers(parse(t, "", identity.UserFields), "org-1"), ordered: true},
		planCase{name: "organization users by createdAt", coll: usersName, f: orgUsers(parse(t, "", identity.UserFields), "org-1"),
			sort: docstore.Sort("createdAt"), ordered: true},
		planCase{name: "organization users by name", coll: usersName, f: orgUsers(parse(t, "", identity.UserFields), "org-1"),
			sort: docstore.Sort("name")},
		planCase{name: "organization users with a role", coll: usersName,
			f: orgUsers(parse(t, `{"roles":"analyze"}`, identity.UserFields), "org-1"), ordered: true},
		planCase{name: "organization users by status", coll: usersName,
			f: orgUsers(parse(t, `{"status":"Locked"}`, identity.UserFields), "org-1"), ordered: true},
		planCase{name: "users of an organization (superadmin search)", coll: usersName,
			f: parse(t, `{"organization":"org-2"}`, identity.UserFields), ordered: true},
		planCase{name: "all users", coll: usersName, f: parse(t, "", identity.UserFields), unscoped: true},
		planCase{name: "all users by createdAt", coll: usersName, f: parse(t, "", identity.UserFields),
			sort: docstore.Sort("createdAt"), unscoped: true},
		planCase{name: "all organizations", coll: orgsName, f: parse(t, "", identity.OrgFields), unscoped: true},
		planCase{name: "organization by name", coll: orgsName, f: parse(t, `{"name":"org-7"}`, identity.OrgFields), ordered: true},
		// The queue's own reads and Prune's deletes.
		// Claim (pickOrg): the first organization with Waiting jobs, the next one after an organization, then
		// the chosen organization's oldest Waiting job; the running jobs and their slots.
		planCase{name: "claim: first organization waiting", coll: queueName, f: docstore.Eq("status", analysis.JobWaiting),
			sort: docstore.Sort("organization", "createdAt", "_id"), ordered: true, bare: true, limit: 1},
		planCase{name: "claim: next organization waiting", coll: queueName,
			f:    docstore.And(docstore.Eq("status", analysis.JobWaiting), docstore.Gt("organization", "org-1")),
			sort: docstore.Sort("organization", "createdAt", "_id"), ordered: true, bare: true, limit: 1},
		planCase{name: "claim: an organization's oldest waiting job", coll: queueName,
			f:    docstore.And(docstore.Eq("status", analysis.JobWaiting), docstore.Eq("organization", "org-2")),
			sort: docstore.Sort("createdAt", "_id"), ordered: true, bare: true, limit: 1},
		planCase{name: "claim: running jobs", coll: queueName, f: docstore.Eq("status", analysis.JobInProgress), bare: true},
		planCase{name: "expired leases", coll: queueName, bare: true,
			f: docstore.And(docstore.Eq("status", analysis.JobInProgress), docstore.Lt("leaseUntil", int64(1_700_000_500_000)))},
		planCase{name: "prune cache", coll: cacheName, f: docstore.Lt("at", int64(1_700_000_500_000)), bare: true},
		planCase{name: "prune idempotency keys", coll: idemName, f: docstore.Lt("at", int64(1_700_000_500_000)), bare: true},
		planCase{name: "prune rate windows", coll: ratesName, f: docstore.Lt("expires", int64(1_700_000_500_000)), bare: true},
		// pkg/events: the stream tailers' read, the repair's held events, the retention; the webhooks' outbox
		planCase{name: "events since", coll: eventsName, f: docstore.And(docstore.Gte("date", int64(1_700_000_500_000)), docstore.Not(docstore.Exists("held"))),
			sort: docstore.Sort("date", "_id"), limit: 500, bare: true, ordered: true},
		planCase{name: "held events", coll: eventsName, f: docstore.And(docstore.Eq("held", 1), docstore.Lt("date", int64(1_700_000_500_000))),
			sort: docstore.Sort("date", "_id"), limit: 100, bare: true, ordered: true},
		planCase{name: "event retention", coll: eventsName, f: docstore.Lt("date", int64(1_700_000_500_000)), bare: true},
		planCase{name: "webhooks of an organization", coll: "webhook_endpoint", f: docstore.Eq("organisation", "org-1"),
			sort: docstore.Sort("_id"), bare: true, ordered: true},
		planCase{name: "every webhook (the sender's round)", coll: "webhook_endpoint", f: docstore.All(),
			sort: docstore.Sort("_id"), bare: true, unscoped: true},
		planCase{name: "head of a webhook's deliveries", coll: "webhook_delivery", bare: true, ordered: true, limit: 1,
			f: docstore.And(docstore.Eq("endpoint", "e-1"), docstore.Eq("status", "Pending")), sort: docstore.Sort("seq")},
		planCase{name: "deliveries of a webhook", coll: "webhook_delivery", ordered: true,
			f: docstore.And(docstore.Eq("organisation", "org-1"), docstore.Eq("endpoint", "e-1")), sort: docstore.Sort("-createdAt")},
		planCase{name: "oldest pending delivery", coll: "webhook_delivery", f: docstore.Eq("status", "Pending"),
			sort: docstore.Sort("createdAt"), limit: 1, bare: true, ordered: true},
	)

	for _, tc := range cases {
		t.Run(tc.coll+"/"+tc.name, func(t *testing.T) {
			c, err := Collection(ctx, db, tc.coll)
			if err != nil {
				t.Fatal(err)
			}
			q := docstore.Query{Filter: tc.f, Sort: docstore.StableSort(tc.sort), Limit: 50}
			if tc.bare {
				q = docstore.Query{Filter: tc.f, Sort: tc.sort, Limit: tc.limit}
			}
			plan, err := c.Explain(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			scan := regexp.MustCompile(`(?m)^SCAN "?` + regexp.QuoteMeta(tc.coll) + `"?( |$)`)
			indexed := regexp.MustCompile(`(?m)^SCAN "?` + regexp.QuoteMeta(tc.coll) + `"? USING (COVERING )?INDEX `)
			switch {
			case tc.unscoped && scan.MatchString(plan) && !indexed.MatchString(plan):
				t.Errorf("a full scan of %s:\n%s", tc.coll, plan)
			case !tc.unscoped && scan.MatchString(plan):
				t.Errorf("a full scan of %s:\n%s", tc.coll, plan)
			}
			if (tc.ordered || tc.unscoped) && strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("the order is not read from an index:\n%s", plan)
			}
			// The query itself runs (a page through FindPage, as the stores run it).
			var docs []map[string]any
			if tc.bare {
				err = c.Find(ctx, q, &docs)
			} else {
				_, err = c.FindPage(ctx, tc.f, search.Page{Sort: tc.sort, Limit: 50}, &docs)
			}
			if err != nil {
				t.Fatal(err)
			}
			if testing.Verbose() {
				t.Logf("%d documents; plan:\n%s", len(docs), plan)
			}
		})
	}
}

// fill stores a few thousand documents shaped as the stores write them in each collection the plans read.
func fill(t *testing.T, ctx context.Context, db *docstore.DB) {
	t.Helper()
	if _, err := NewIdentityStore(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorkerStore(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := NewJobStore(ctx, db); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000)
	statuses := []string{analysis.JobSuccess, analysis.JobSuccess, analysis.JobFailure, analysis.JobDeleted}
	dataTypes := []string{"ip", "domain", "hash", "url", "mail"}
	insert := func(coll string, n int, doc func(i int) any) {
		c, err := Collection(ctx, db, coll)
		if err != nil {
			t.Fatal(err)
		}
		docs := make([]any, n)
		for i := range docs {
			docs[i] = doc(i)
		}
		res, err := c.InsertMany(ctx, docs)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range res {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	job := func(i int, status string) jobDoc {
		d, err := toJobDoc(analysis.Job{ID: fmt.Sprintf("J%07d", i), Kind: analysis.KindAnalyzer,
			Organization: fmt.Sprintf("org-%d", i%5), WorkerID: fmt.Sprintf("w-%d", i/5%20), WorkerName: fmt.Sprintf("w-%d", i/5%20),
			DataType: dataTypes[i/5%len(dataTypes)], Data: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256),
			TLP: i % 4, PAP: i % 4, Status: status, Parameters: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		d.CreatedAt, d.UpdatedAt = base+int64(i)*1000, base+int64(i)*1000+50
		return d
	}
	insert(jobsName, 5000, func(i int) any { return job(i, statuses[i/3%len(statuses)]) })
	insert(queueName, 2000, func(i int) any {
		d := job(100_000+i, analysis.JobWaiting)
		d.Slot = d.ID
		if i%3 == 0 {
			d.Status, d.Owner, d.LeaseUntil = analysis.JobInProgress, "worker", base+int64(i)*1000
		}
		return d
	})
	roles := [][]string{{"read"}, {"read", "analyze"}, {"read", "analyze", "orgadmin"}}
	insert(usersName, 3000, func(i int) any {
		status := "Active"
		if i%7 == 0 {
			status = "Locked"
		}
		return userDoc{ID: fmt.Sprintf("user-%05d", i), Name: fmt.Sprintf("User %d", i), Roles: roles[i%3], Status: status,
			Organization: fmt.Sprintf("org-%d", i%5), CreatedAt: base + int64(i), UpdatedAt: base + int64(i)}
	})
	insert(eventsName, 3000, func(i int) any {
		d := map[string]any{"_id": fmt.Sprintf("%011x-J%07d", base+int64(i), i), "operation": "Update", "objectType": "job",
			"objectId": fmt.Sprintf("J%07d", i), "organisation": fmt.Sprintf("org-%d", i%5), "date": base + int64(i)*1000}
		if i%50 == 0 {
			d["held"] = 1
		}
		return d
	})
	insert("webhook_endpoint", 200, func(i int) any {
		return map[string]any{"_id": fmt.Sprintf("e-%d", i), "organisation": fmt.Sprintf("org-%d", i%5), "enabled": true}
	})
	insert("webhook_delivery", 3000, func(i int) any {
		status := "Delivered"
		if i%10 == 0 {
			status = "Pending"
		}
		return map[string]any{"_id": fmt.Sprintf("d-%d", i), "organisation": fmt.Sprintf("org-%d", i%5),
			"endpoint": fmt.Sprintf("e-%d", i%200), "status": status, "seq": fmt.Sprintf("%08d", i), "createdAt": base + int64(i)}
	})
	insert(orgsName, 2000, func(i int) any {
		return orgDoc{ID: fmt.Sprintf("org-%d", i), Status: "Active", CreatedAt: base + int64(i)}
	})
	insert(workersName, 2000, func(i int) any {
		kind := analysis.KindAnalyzer
		if i%2 == 1 {
			kind = analysis.KindResponder
		}
		d, err := toWorkerDoc(analysis.Worker{ID: fmt.Sprintf("w-%d", i), Kind: kind, Organization: fmt.Sprintf("org-%d", i%5),
			Name: fmt.Sprintf("w-%d", i), DataTypeList: dataTypes[:1+i%len(dataTypes)], Configuration: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
	insert(cacheName, 2000, func(i int) any { return cacheDoc{ID: fmt.Sprintf("tag-%d", i), JobID: "J", At: base + int64(i)*1000} })
	insert(idemName, 2000, func(i int) any { return idemDoc{ID: fmt.Sprintf("key-%d", i), JobID: "J", At: base + int64(i)*1000} })
	insert(ratesName, 2000, func(i int) any {
		return json.RawMessage(fmt.Appendf(nil, `{"_id":"rate-%d","n":1,"expires":%d}`, i, base+int64(i)*1000))
	})
}
