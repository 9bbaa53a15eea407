package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
)

// TestPlans runs EXPLAIN QUERY PLAN (SQLite) for every list and search the API offers, with the filters the
// domain builds (organisation scope, parent, status…) and the default sort (none given: _id) plus the other
// usual orders, on collections holding a few thousand documents. A plan must not read the whole table (a
// bare "SCAN <table>"), and must not sort outside an index ("USE TEMP B-TREE FOR ORDER BY"), except where a
// case says why (allowScan: a list of the whole collection read in index order; sorted: a sort the API allows
// but does not default to, and no index serves).
func TestPlans(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	colls := map[string]*docstore.Collection{}
	for _, s := range Specs() {
		c, err := db.Collection(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		colls[s.Name] = c
	}
	fill(t, db, colls)

	org := docstore.Eq(record.PathOrg, "org1")
	all := search.Node{Op: search.OpAll}
	// scoped is what the domain hands the store: the client's filter (all when none), then the scope.
	scoped := func(f search.Node, scope ...search.Node) search.Node {
		return docstore.And(append([]search.Node{f}, scope...)...)
	}
	tests := []struct {
		name, coll string
		filter     search.Node
		sort       []search.SortKey
		allowScan  bool   // the whole collection in index order (an unscoped list)
		unsorted   bool   // a lookup the store runs without a sort (not a page)
		index      string // the index the plan must use, where a less selective one would also serve
	}{
		// cases: /api/case/_search, the query API's listCase, similar cases (cases by id)
		{name: "cases of an organisation", coll: "cases", filter: scoped(all, org)},
		{name: "cases by start date", coll: "cases", filter: scoped(all, org), sort: docstore.Sort("-startDate")},
		{name: "cases by number", coll: "cases", filter: scoped(all, org), sort: docstore.Sort("-caseId")},
		{name: "case by number (CaseByNumber)", coll: "cases", filter: docstore.And(org, docstore.Eq("caseId", 7)), unsorted: true,
			index: "cases_organisation_caseId_unique"},
		{name: "highest number of an organisation (NextCaseNumber)", coll: "cases", filter: org, sort: docstore.Sort("-caseId")},
		{name: "open cases by start date", coll: "cases", sort: docstore.Sort("-startDate"),
			filter: scoped(docstore.And(docstore.Eq("status", "Open"), docstore.Gte("severity", 3)), org),
			index:  "cases_organisation_status_startDate"},
		{name: "open cases of severity ≥ 3 counted (X-Total)", coll: "cases", unsorted: true,
			filter: scoped(docstore.And(docstore.Eq("status", "Open"), docstore.Gte("severity", 3)), org),
			index:  "cases_organisation_status_severity"},
		{name: "open cases", coll: "cases", filter: scoped(docstore.Eq("status", "Open"), org)},
		{name: "similar cases by id", coll: "cases", filter: scoped(all, docstore.In("_id", "~1", "~2", "~3"), org)},
		// tasks: waitingTasks, /api/case/task/_search, /api/case/{id}/task/_search
		{name: "waiting tasks", coll: "tasks", filter: scoped(docstore.Eq("status", task.Waiting), org)},
		{name: "waiting tasks newest first", coll: "tasks", filter: scoped(docstore.Eq("status", task.Waiting), org),
			sort: docstore.Sort("-startDate"), index: "tasks_organisation_status_startDate"},
		// X-Total of waitingTasks: a range of the (organisation, status) entries, without the documents
		{name: "waiting tasks counted (X-Total)", coll: "tasks", unsorted: true,
			filter: scoped(docstore.Eq("status", task.Waiting), org), index: "tasks_organisation_status_"},
		{name: "tasks of an organisation", coll: "tasks", filter: scoped(all, org)},
		{name: "tasks of a case", coll: "tasks", filter: scoped(all, org, docstore.Eq(cases.PathCaseID, "~7")),
			index: "tasks_case_organisation__id"},
		{name: "tasks of a case by order", coll: "tasks", filter: scoped(all, org, docstore.Eq(cases.PathCaseID, "~7")),
			sort: docstore.Sort("order"), index: "tasks_case_organisation_order"},
		// The query API's traversals (tasks of a list of cases, jobs of a list of observables): SQLite, which
		// keeps no statistics, reads the organisation's index in _id order rather than probing the parent
		// index for each id and sorting; no full scan either way.
		{name: "tasks of the query API's cases", coll: "tasks", filter: scoped(docstore.In(cases.PathCaseID, "~1", "~2"), org)},
		// logs: /api/case/task/{id}/log/_search, /api/case/task/log/_search, attachments
		{name: "logs of a task", coll: "logs", filter: scoped(all, org, docstore.Eq(task.PathTaskID, "t7")),
			index: "logs_task_organisation__id"},
		{name: "logs of a task by date", coll: "logs", filter: scoped(all, org, docstore.Eq(task.PathTaskID, "t7")),
			sort: docstore.Sort("date"), index: "logs_task_organisation_date"},
		{name: "logs of an organisation", coll: "logs", filter: scoped(all, org)},
		{name: "log holding a file", coll: "logs", filter: docstore.And(org, docstore.Eq("attachment.id", "f1"))},
		// alerts: /api/alert/_search, the alerts of a case
		{name: "alerts of an organisation", coll: "alerts", filter: scoped(all, org)},
		{name: "alerts by date", coll: "alerts", filter: scoped(all, org), sort: docstore.Sort("-date")},
		{name: "new alerts", coll: "alerts", filter: scoped(docstore.Eq("status", "New"), org)},
		{name: "new alerts by date", coll: "alerts", filter: scoped(docstore.Eq("status", "New"), org), sort: docstore.Sort("-date")},
		{name: "alerts of a case", coll: "alerts", filter: docstore.And(org, docstore.Eq(cases.PathCaseID, "~7")),
			index: "alerts_case_organisation__id"},
		// observables: of a case, of an alert, the organisation's searches, similarity, by data
		{name: "observables of a case", coll: "observables", filter: scoped(all, org, docstore.Eq(cases.PathCaseID, "~7")),
			index: "observables_case_organisation__id"},
		{name: "observables of a case newest first", coll: "observables", sort: docstore.Sort("-startDate"),
			filter: scoped(all, org, docstore.Eq(cases.PathCaseID, "~7")), index: "observables_case_organisation_startDate"},
		{name: "observables of an alert", coll: "observables", filter: scoped(all, org, docstore.Eq(cases.PathAlertID, "a7")),
			index: "observables_alert_organisation__id"},
		{name: "case observable search", coll: "observables", filter: scoped(docstore.And(all, docstore.Exists(cases.PathCaseID)), org)},
		{name: "similar observables", coll: "observables", filter: similarFilter("org1", []string{"k1", "k2", "k3"}),
			unsorted: true, index: "observables_organisation_key"},
		// an observable's seen (CountSimilar): the same lookup, counted, without the observable itself
		{name: "seen count", coll: "observables", filter: docstore.And(similarFilter("org1", []string{"k1"}), docstore.Ne("_id", "o7")),
			unsorted: true, index: "observables_organisation_key"},
		{name: "observables by data across cases", coll: "observables",
			filter: scoped(docstore.And(docstore.Eq("data", "10.0.0.7"), docstore.Exists(cases.PathCaseID)), org),
			index:  "observables_organisation_data"},
		// a case's links (LinkedCases): its own observables, then the similar lookup above, then cases by id;
		// an observable's similar ones (ObservableSimilar): the similar lookup, then observables by id
		{name: "observables of a case for its links", coll: "observables", filter: scoped(docstore.And(
			docstore.Eq(cases.PathCaseID, "~7"), docstore.Eq("ignoreSimilarity", false)), org), index: "observables_case_organisation__id"},
		{name: "observables by id", coll: "observables", filter: docstore.In("_id", "o1", "o2")},
		{name: "observable counts of cases", coll: "observables",
			filter: docstore.And(docstore.In(cases.PathCaseID, "~1", "~2"), docstore.Eq("ignoreSimilarity", false)), unsorted: true,
			index: "observables_case_organisation_"},
		{name: "IOC counts of cases", coll: "observables", filter: docstore.And(docstore.In(cases.PathCaseID, "~1", "~2"),
			docstore.Eq("ignoreSimilarity", false), docstore.Eq("ioc", true)), unsorted: true, index: "observables_case_organisation_"},
		// actions: the responder history of an object (ActionsOf), newest first
		{name: "actions of an object", coll: "actions", filter: docstore.And(docstore.Eq("objectId", "~7"), org, docstore.Eq("objectType", "case")),
			sort: docstore.Sort("-startDate"), index: "actions_objectId_organisation_startDate"},
		{name: "actions of an organisation (listAction)", coll: "actions", filter: scoped(all, org), index: "actions_organisation__id"},
		{name: "actions of records (query step actions)", coll: "actions",
			filter: scoped(docstore.And(docstore.In("objectId", "~1", "~2"), docstore.Eq("objectType", "case")), org)},
		// jobs: the jobs of an observable, /api/connector/cortex/job/_search-like lists
		{name: "jobs of an observable", coll: "jobs", filter: scoped(docstore.Eq(connector.PathObservableID, "o7"), org),
			sort: docstore.Sort("-startDate"), index: "jobs_observable_organisation_startDate"},
		{name: "jobs of the query API's observables", coll: "jobs", filter: scoped(docstore.In(connector.PathObservableID, "o1", "o2"), org)},
		{name: "jobs of an organisation", coll: "jobs", filter: scoped(all, org)},
		{name: "jobs by status", coll: "jobs", filter: scoped(docstore.Eq("status", "Success"), org)},
		// statistics (Tally: _stats, the query API's count… steps and aggregations): counts and group counts run
		// with these filters, the WHERE of the lists above; myTasks is a list of the caller's tasks
		{name: "unread alerts", coll: "alerts", filter: scoped(docstore.Eq("read", false), org), unsorted: true},
		{name: "imported alerts", coll: "alerts", filter: scoped(docstore.Eq("status", cases.AlertImported), org), unsorted: true,
			index: "alerts_organisation_status"},
		{name: "alerts with a case", coll: "alerts", filter: scoped(docstore.Exists(cases.PathCaseID), org), unsorted: true},
		{name: "alert observables", coll: "observables", filter: scoped(docstore.Exists(cases.PathAlertID), org), unsorted: true},
		{name: "case observables of a type", coll: "observables", unsorted: true,
			filter: scoped(docstore.And(docstore.Eq("dataType", "ip"), docstore.Exists(cases.PathCaseID)), org)},
		{name: "my tasks", coll: "tasks", filter: scoped(docstore.Eq("owner", "u"), org)},
		{name: "cases in a time range", coll: "cases", unsorted: true,
			filter: scoped(docstore.And(docstore.Gte("createdAt", int64(1)), docstore.Lt("createdAt", int64(2))), org)},
		// identity, templates, custom fields, the connector's pending records
		{name: "users of an organisation", coll: "users", filter: scoped(all, docstore.Eq(identity.PathUserOrgs, "org1")),
			allowScan: true}, // see TestPlans_UsersScanInIndexOrder
		{name: "all users", coll: "users", filter: all, allowScan: true},
		{name: "organisations of a member", coll: "organisations", filter: scoped(all, docstore.In("_id", "org1", "org2"))},
		{name: "all organisations", coll: "organisations", filter: all, allowScan: true},
		{name: "templates of an organisation", coll: "caseTemplates", filter: scoped(all, org)},
		{name: "template by name", coll: "caseTemplates", filter: docstore.And(org, docstore.Eq("name", "tpl7"))},
		// analyzer sets: /api/automation/set, by name
		{name: "analyzer sets of an organisation", coll: "analyzerSets", filter: scoped(all, org)},
		{name: "analyzer set by name", coll: "analyzerSets", filter: docstore.And(org, docstore.Eq("name", "set7")), unsorted: true},
		// rules: the organisation's list, the enabled rules of an event, a rule's history, the unfinished firings,
		// the budget's count of a rule's jobs
		{name: "rules of an organisation", coll: "rules", filter: scoped(all, org)},
		{name: "enabled rules of an event", coll: "rules", filter: docstore.And(org, docstore.Eq("event", "observableCreated"), docstore.Eq("enabled", true)),
			unsorted: true, index: "rules_organisation_event_enabled"},
		{name: "history of a rule", coll: "firings", filter: scoped(all, org, docstore.Eq("rule", "r7")), sort: docstore.Sort("-date"),
			index: "firings_organisation_rule_date"},
		{name: "held firings", coll: "firings", filter: docstore.Eq("status", "Held"), sort: docstore.Sort("date"), index: "firings_status_date"},
		{name: "jobs of a rule in the last hour", coll: "jobs", filter: docstore.And(org, docstore.Eq("rule", "r7"), docstore.Gte("createdAt", 5)),
			unsorted: true, index: "jobs_organisation_rule_createdAt"},
		// bulk runs: the recent equal job of an observable
		{name: "recent equal job", coll: "jobs", filter: scoped(docstore.And(docstore.Eq("analysisId", "a"), docstore.Eq("analyzerName", "Echo"),
			docstore.Gte("createdAt", 5), docstore.Not(docstore.Eq("status", "Failure"))), org, docstore.Eq(connector.PathObservableID, "o7")),
			sort: docstore.Sort("-startDate"), index: "jobs_observable_organisation_startDate"},
		{name: "custom fields", coll: "customFields", filter: all, allowScan: true},
		{name: "custom field by name", coll: "customFields", filter: docstore.Eq("name", "field7")},
		{name: "pending of a server", coll: "pending", filter: docstore.Eq("server", "s1"), unsorted: true},
		// audit: /api/audit (default -date), /api/flow?rootId=, the stream's tail of every replica
		{name: "audit of an organisation", coll: "audit", filter: scoped(all, org), sort: docstore.Sort("-date")},
		{name: "flow of a case", coll: "audit", filter: scoped(docstore.Eq("rootId", "~7"), org), sort: docstore.Sort("-date"),
			index: "audit_rootId_date"},
		{name: "events since", coll: "audit", filter: docstore.And(docstore.Gte("date", int64(1)), docstore.Not(docstore.Exists("held"))), sort: docstore.Sort("date", "_id")},
		{name: "deliveries of an endpoint", coll: "webhook_delivery",
			filter: docstore.And(org, docstore.Eq("endpoint", "e1")), sort: docstore.Sort("-createdAt")},
		// pkg/events: the repair's held events, an endpoint's next delivery, the backlog gauge
		{name: "held events", coll: "audit", filter: docstore.And(docstore.Eq("held", 1), docstore.Lt("date", int64(1e15))),
			sort: docstore.Sort("date", "_id"), index: "audit_held_date"},
		{name: "head of an endpoint", coll: "webhook_delivery", filter: docstore.And(docstore.Eq("endpoint", "e1"),
			docstore.Eq("status", "Pending")), sort: docstore.Sort("seq")},
		{name: "oldest pending delivery", coll: "webhook_delivery", filter: docstore.Eq("status", "Pending"),
			sort: docstore.Sort("createdAt")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := colls[tc.coll]
			q := docstore.Query{Filter: tc.filter, Sort: docstore.StableSort(tc.sort), Limit: 50}
			if tc.unsorted {
				q = docstore.Query{Filter: tc.filter}
			}
			plan, err := c.Explain(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if bare := regexp.MustCompile(`(?m)^SCAN "?` + tc.coll + `"?$`); bare.MatchString(plan) {
				t.Errorf("full scan of %s:\n%s", tc.coll, plan)
			}
			if strings.Contains(plan, "SCAN") && !tc.allowScan {
				t.Errorf("scan of %s:\n%s", tc.coll, plan)
			}
			if tc.index != "" && !strings.Contains(plan, "USING INDEX "+tc.index) {
				t.Errorf("not the index %s:\n%s", tc.index, plan)
			}
			if strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
				t.Errorf("sort outside an index:\n%s", plan)
			}
			// The query runs, and the count too.
			if _, err := c.FindRaw(ctx, q); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Count(ctx, tc.filter); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The users of an organisation are filtered on an array (each membership's organisation), which SQLite
// matches with json_each, out of reach of an expression index: the list reads users in _id order (no sort)
// until its page is full. Users are few (people of the platform), and lists of them stay cheap.
func TestPlans_UsersScanInIndexOrder(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	c, err := db.Collection(ctx, userSpec)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.Explain(ctx, docstore.Query{Filter: docstore.Eq(identity.PathUserOrgs, "org1"),
		Sort: docstore.StableSort(nil), Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("users sorted outside an index:\n%s", plan)
	}
}

// fill inserts a few thousand documents into the listed collections, shaped as the stores write them (the
// audit trail's by pkg/events's event log).
func fill(t *testing.T, db *docstore.DB, colls map[string]*docstore.Collection) {
	t.Helper()
	ctx := context.Background()
	trail, err := events.NewEventLog(ctx, db, auditSpec)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	orgs := []string{"org1", "org2", "org3"}
	docs := map[string][]any{}
	for i := range n {
		org := orgs[i%len(orgs)]
		at := now.Add(time.Duration(i) * time.Minute)
		caseID := fmt.Sprintf("~%d", i)
		docs["cases"] = append(docs["cases"], toCaseDoc(cases.Case{ID: caseID, Org: org, Number: int64(i), Title: "c",
			Status: []string{"Open", "Resolved"}[i%2], Severity: 1 + i%4, StartDate: at, Tags: []string{"t"},
			Meta: record.Meta{CreatedAt: at, CreatedBy: "u"}}))
		docs["tasks"] = append(docs["tasks"], toTaskDoc(task.Task{ID: fmt.Sprintf("t%d", i), Org: org,
			CaseID: fmt.Sprintf("~%d", i/3), Title: "t", Status: []string{task.Waiting, task.InProgress, task.Completed}[i%3],
			StartDate: at, Order: i % 5, Meta: record.Meta{CreatedAt: at}}))
		docs["logs"] = append(docs["logs"], logDoc{ID: fmt.Sprintf("l%d", i), Org: org, CaseID: fmt.Sprintf("~%d", i/9),
			TaskID: fmt.Sprintf("t%d", i/3), Message: "m", Date: at.UnixMilli(), CreatedAt: at.UnixMilli(),
			Attachment: &attachmentDoc{ID: fmt.Sprintf("f%d", i)}})
		docs["alerts"] = append(docs["alerts"], toAlertDoc(cases.Alert{ID: fmt.Sprintf("a%d", i), Org: org, Type: "t",
			Source: "s", SourceRef: fmt.Sprint(i), Title: "a", Date: at, Read: i%2 == 0, CaseID: []string{"", fmt.Sprintf("~%d", i)}[i%2],
			Meta: record.Meta{CreatedAt: at}}))
		o := cases.Observable{ID: fmt.Sprintf("o%d", i), Org: org, DataType: "ip", Data: fmt.Sprintf("10.0.0.%d", i%500),
			Key: fmt.Sprintf("k%d", i%500), StartDate: at, Meta: record.Meta{CreatedAt: at}}
		if i%4 == 0 {
			o.AlertID = fmt.Sprintf("a%d", i/4)
		} else {
			o.CaseID = fmt.Sprintf("~%d", i/10)
		}
		docs["observables"] = append(docs["observables"], toObservableDoc(o))
		j, _ := toJobDoc(connector.Job{ID: fmt.Sprintf("j%d", i), Org: org, ObservableID: fmt.Sprintf("o%d", i/3),
			Status: []string{"Success", "Failure", "InProgress"}[i%3], StartDate: at, Meta: record.Meta{CreatedAt: at}})
		docs["jobs"] = append(docs["jobs"], j)
		docs["users"] = append(docs["users"], userDoc{ID: fmt.Sprintf("user%d", i), Name: "u",
			Memberships: []membershipDoc{{Org: org, Profile: "analyst"}}, Orgs: []string{org}, CreatedAt: at.UnixMilli()})
		docs["organisations"] = append(docs["organisations"], orgDoc{ID: fmt.Sprintf("org%d", i+1), CreatedAt: at.UnixMilli()})
		docs["caseTemplates"] = append(docs["caseTemplates"], toTemplateDoc(template.Template{ID: fmt.Sprintf("tp%d", i),
			Org: org, Name: fmt.Sprintf("tpl%d", i), Meta: record.Meta{CreatedAt: at}}))
		docs["rules"] = append(docs["rules"], toRuleDoc(automation.Rule{ID: fmt.Sprintf("r%d", i), Org: org, Name: fmt.Sprintf("rule%d", i),
			Enabled: i%2 == 0, Event: []string{"observableCreated", "caseCreated"}[i%2], Meta: record.Meta{CreatedAt: at}}))
		docs["firings"] = append(docs["firings"], toFiringDoc(automation.Firing{ID: fmt.Sprintf("f%d", i), Org: org, Rule: fmt.Sprintf("r%d", i%50),
			Status: []string{"Fired", "SkippedByCondition", "Held"}[i%3], Date: at}))
		sd, _ := toSetDoc(automation.Set{ID: fmt.Sprintf("as%d", i), Org: org, Name: fmt.Sprintf("set%d", i), Meta: record.Meta{CreatedAt: at}})
		docs["analyzerSets"] = append(docs["analyzerSets"], sd)
		docs["customFields"] = append(docs["customFields"], customFieldDoc{ID: fmt.Sprintf("cf%d", i),
			Name: fmt.Sprintf("field%d", i), Type: "string", Options: options0(nil), CreatedAt: at.UnixMilli()})
		ev, err := trail.Insertions([]events.Event{{ID: fmt.Sprintf("ev%d", i), Operation: "Update", ObjectType: "case",
			ObjectID: fmt.Sprintf("~%d", i/5), RootID: fmt.Sprintf("~%d", i/5), Org: org, Date: at}}, false)
		if err != nil {
			t.Fatal(err)
		}
		docs["audit"] = append(docs["audit"], ev[0].Doc)
		docs["webhook_delivery"] = append(docs["webhook_delivery"], map[string]any{"_id": fmt.Sprintf("d%d", i),
			"organisation": org, "endpoint": fmt.Sprintf("e%d", i%7), "status": "Delivered", "seq": i, "createdAt": at.UnixMilli()})
		docs["pending"] = append(docs["pending"], pendingDoc{ID: fmt.Sprintf("p%d", i), Kind: "job",
			Server: fmt.Sprintf("s%d", i%3), Org: org, Since: at.UnixMilli()})
	}
	for name, ds := range docs {
		res, err := colls[name].InsertMany(ctx, ds)
		if err != nil {
			t.Fatalf("fill %s: %v", name, err)
		}
		for i, e := range res {
			if e != nil {
				t.Fatalf("fill %s: document %d: %v", name, i, e)
			}
		}
	}
}
