package store

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/events"
	"github.com/openir/platform/pkg/search"
)

// Rules' conditions evaluated in memory on the stored objects (RuleObjects.Match) select, on both engines,
// exactly the objects the search of their list selects with the same query: the rules' engine and a user's
// search cannot disagree.
func TestRuleObjects_MatchAgreesWithSearch(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			obs, err := NewObservableStore(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			alerts, err := NewAlertStore(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := NewCaseStore(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := NewTaskStore(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			objs := NewRuleObjects(obs, alerts, cs, tasks)
			at := time.UnixMilli(1_700_000_000_000).UTC()
			meta := func(i int) record.Meta {
				return record.Meta{CreatedAt: at.Add(time.Duration(i) * time.Second), CreatedBy: "alice"}
			}
			o := []cases.Observable{
				{ID: "~o1", Org: "soc", CaseID: "~c1", DataType: "ip", Data: "10.0.0.1", Key: "k1", TLP: 2, Tags: []string{"auto", "tlp:amber"}, IOC: true, StartDate: at, Meta: meta(1)},
				{ID: "~o2", Org: "soc", CaseID: "~c1", DataType: "domain", Data: "Example.COM", Key: "k2", TLP: 0, Tags: []string{"x"}, Message: "from the gateway", StartDate: at, Meta: meta(2)},
				{ID: "~o3", Org: "cert", CaseID: "~c9", DataType: "ip", Data: "10.0.0.2", Key: "k3", TLP: 3, IOC: true, Sighted: true, StartDate: at, Meta: meta(3)},
				{ID: "~o4", Org: "soc", AlertID: "~a1", DataType: "file", Key: "k4", TLP: 1, Attachment: &record.Attachment{ID: "f1", Name: "a.txt", Size: 0,
					ContentType: "text/plain", Hashes: []string{"h1", "h2"}}, StartDate: at, Meta: meta(4)},
			}
			if _, err := obs.CreateObservables(ctx, o); err != nil {
				t.Fatal(err)
			}
			for _, a := range []cases.Alert{
				{ID: "~a1", Org: "soc", Type: "mail", Source: "gateway", SourceRef: "r1", Title: "phish", Severity: 3, TLP: 2, PAP: 2, Tags: []string{"phishing"}, Date: at, Meta: meta(5)},
				{ID: "~a2", Org: "soc", Type: "edr", Source: "sensor", SourceRef: "r2", Title: "malware", Severity: 1, TLP: 0, PAP: 0, Read: true, Date: at, Meta: meta(6)},
			} {
				if err := alerts.CreateAlert(ctx, a); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []cases.Case{
				{ID: "~c1", Org: "soc", Number: 1, Title: "one", Severity: 2, TLP: 2, PAP: 2, Status: cases.CaseOpen, Owner: "alice", Tags: []string{"phishing"}, StartDate: at, Meta: meta(7)},
				{ID: "~c2", Org: "soc", Number: 2, Title: "two", Severity: 4, TLP: 3, PAP: 1, Status: cases.CaseResolved, Owner: "bob", Flag: true, StartDate: at, Meta: meta(8)},
			} {
				if err := cs.CreateCase(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := tasks.CreateTasks(ctx, []task.Task{
				{ID: "~t1", Org: "soc", CaseID: "~c1", Title: "triage", Group: "default", Status: task.Completed, Owner: "alice", StartDate: at, Meta: meta(9)},
				{ID: "~t2", Org: "soc", CaseID: "~c2", Title: "contain", Group: "ir", Status: task.Waiting, Flag: true, Meta: meta(10)},
			}); err != nil {
				t.Fatal(err)
			}

			type list func(f search.Node) []string
			ids := func(n int, err error, get func(int) string) []string {
				if err != nil {
					t.Fatal(err)
				}
				out := []string{}
				for i := range n {
					out = append(out, get(i))
				}
				sort.Strings(out)
				return out
			}
			pg := search.Page{Limit: 100}
			kinds := []struct {
				objectType string
				fields     search.Fields
				all        []string
				search     list
				queries    []string
			}{
				{"case_artifact", cases.ObservableFields, []string{"~o1", "~o2", "~o3", "~o4", "~none"}, func(f search.Node) []string {
					l, _, err := obs.Observables(ctx, f, pg)
					return ids(len(l), err, func(i int) string { return l[i].ID })
				}, []string{`{"tags": "auto"}`, `{"_and": [{"tags": "auto"}, {"_in": {"_field": "dataType", "_values": ["ip", "domain"]}}]}`,
					`{"ioc": true}`, `{"_not": {"ioc": true}}`, `{"_gte": {"tlp": 2}}`, `{"_like": {"_field": "data", "_value": "example"}}`,
					`{"_wildcard": {"_field": "data", "_value": "10.0.*"}}`, `{"attachment.hashes": "h2"}`, `{"attachment.size": 0}`,
					`{"_contains": "message"}`, `{"alert": "~a1"}`, `{"case": "~c1"}`, `{"sighted": true}`, `{"_string": "dataType:ip AND tlp:2"}`, `null`}},
				{"alert", cases.AlertFields, []string{"~a1", "~a2"}, func(f search.Node) []string {
					l, _, err := alerts.Alerts(ctx, f, pg)
					return ids(len(l), err, func(i int) string { return l[i].ID })
				}, []string{`{"source": "gateway"}`, `{"_gt": {"severity": 2}}`, `{"tags": "phishing"}`, `{"read": true}`, `{"_startsWith": {"_field": "title", "_value": "mal"}}`}},
				{"case", cases.CaseFields, []string{"~c1", "~c2"}, func(f search.Node) []string {
					l, _, err := cs.Cases(ctx, f, pg)
					return ids(len(l), err, func(i int) string { return l[i].ID })
				}, []string{`{"owner": "bob"}`, `{"_lte": {"pap": 1}}`, `{"flag": true}`, `{"_or": [{"tags": "phishing"}, {"severity": 4}]}`, `{"status": "Resolved"}`}},
				{"case_task", task.Fields, []string{"~t1", "~t2"}, func(f search.Node) []string {
					l, _, err := tasks.Tasks(ctx, f, pg)
					return ids(len(l), err, func(i int) string { return l[i].ID })
				}, []string{`{"status": "Completed"}`, `{"group": "ir"}`, `{"_contains": "startDate"}`, `{"_endsWith": {"_field": "title", "_value": "age"}}`}},
			}
			for _, k := range kinds {
				for _, org := range []string{"soc", "cert"} {
					var filters []search.Node
					for _, q := range k.queries {
						f := search.Node{Op: search.OpAll}
						if q != "null" {
							if f, err = search.ParseJSON([]byte(q), k.fields); err != nil {
								t.Fatalf("%s: %v", q, err)
							}
						}
						filters = append(filters, record.And(f, record.InOrg(org)))
					}
					got, err := objs.Match(ctx, k.objectType, k.all, filters)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := got["~none"]; ok {
						t.Errorf("%s: an id with no object has a result", k.objectType)
					}
					for i, f := range filters {
						var matched []string
						for id, res := range got {
							if res[i] {
								matched = append(matched, id)
							}
						}
						sort.Strings(matched)
						if matched == nil {
							matched = []string{}
						}
						if want := k.search(f); !slices.Equal(matched, want) {
							t.Errorf("%s %s in %s: matched %v, the search %v", k.objectType, k.queries[i], org, matched, want)
						}
					}
				}
			}
			if _, err := objs.Match(ctx, "user", []string{"x"}, nil); err == nil {
				t.Error("an object type without a collection: no error")
			}
		})
	}
}

// The event heads: the released events since a date without their details and object, and the whole events
// by id (held ones too), on both engines.
func TestAuditStore_HeadsSince(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := NewAuditStore(ctx, open(t))
			if err != nil {
				t.Fatal(err)
			}
			at := time.UnixMilli(1_700_000_000_000).UTC()
			ev := func(id string, d time.Duration) events.Event {
				return events.Event{ID: id, Operation: events.Update, ObjectType: "case", ObjectID: "~c" + id, RootID: "~c" + id,
					Details: map[string]any{"status": "Resolved"}, Object: map[string]any{"title": "t " + id}, User: "alice",
					RequestID: "req-" + id, Org: "soc", Date: at.Add(d)}
			}
			if err := s.InsertEvents(ctx, []events.Event{ev("b", 2*time.Millisecond), ev("a", time.Millisecond), ev("z", -time.Second)}, false); err != nil {
				t.Fatal(err)
			}
			if err := s.InsertEvents(ctx, []events.Event{ev("h", time.Millisecond)}, true); err != nil {
				t.Fatal(err)
			}
			heads, err := s.HeadsSince(ctx, at, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(heads) != 2 || heads[0].ID != "a" || heads[1].ID != "b" {
				t.Fatalf("heads %+v, want a and b (z before, h held)", heads)
			}
			h := heads[0]
			want := ev("a", time.Millisecond)
			if h.Operation != want.Operation || h.ObjectType != want.ObjectType || h.ObjectID != want.ObjectID || h.RootID != want.RootID ||
				h.User != want.User || h.RequestID != want.RequestID || h.Org != want.Org || !h.Date.Equal(want.Date) {
				t.Errorf("head %+v, want the fields of %+v", h, want)
			}
			if h.Details != nil || h.Object != nil {
				t.Errorf("head with details %v and object %v", h.Details, h.Object)
			}
			if heads, err := s.HeadsSince(ctx, at, 1); err != nil || len(heads) != 1 || heads[0].ID != "a" {
				t.Errorf("limit 1: %+v %v", heads, err)
			}
			whole, err := s.EventsByID(ctx, []string{"b", "h", "none"})
			if err != nil {
				t.Fatal(err)
			}
			if len(whole) != 2 || whole[0].ID != "h" || whole[1].ID != "b" || whole[1].Details["status"] != "Resolved" || whole[1].Object["title"] != "t b" {
				t.Errorf("by id: %+v", whole)
			}
			if none, err := s.EventsByID(ctx, nil); err != nil || len(none) != 0 {
				t.Errorf("no ids: %v %v", none, err)
			}
		})
	}
}
