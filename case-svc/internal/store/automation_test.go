package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/automation"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/docstore/mongotest"
	"github.com/openir/platform/pkg/search"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// engines are the two engines of pkg/docstore, each with a fresh database.
var engines = map[string]func(testing.TB) *docstore.DB{"sqlite": docstoretest.New, "mongodb": mongotest.New}

// The analyzer set store on both engines: the unique name per organisation (on create and on rename),
// lookups by id and name, a search on the data types, parameters whose keys a document may not hold, delete.
func TestAutomationStore_Sets(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := NewAutomationStore(ctx, open(t))
			if err != nil {
				t.Fatal(err)
			}
			at := time.UnixMilli(1_700_000_000_000).UTC()
			params := map[string]any{"a.b": "x", "$where": int64(3), "nested": map[string]any{"k": true}}
			set := automation.Set{ID: "~s1", Org: "soc", Name: "triage", Analyzers: map[string][]automation.Analyzer{
				"ip":     {{AnalysisID: "local", Name: "Echo", Parameters: params}},
				"domain": {{AnalysisID: "local", Name: "Echo"}, {AnalysisID: "second", Name: "Whois"}},
			}, Meta: record.Meta{CreatedAt: at, CreatedBy: "u"}}
			if err := s.CreateSet(ctx, set); err != nil {
				t.Fatal(err)
			}
			dup := set
			dup.ID = "~s2"
			if err := s.CreateSet(ctx, dup); !errors.Is(err, automation.ErrSetExists) {
				t.Fatalf("duplicate name: %v", err)
			}
			dup.Org = "cert"
			if err := s.CreateSet(ctx, dup); err != nil {
				t.Fatalf("same name, other organisation: %v", err)
			}
			got, err := s.SetByName(ctx, "soc", "triage")
			if err != nil || got.ID != "~s1" || len(got.Analyzers["domain"]) != 2 || got.Analyzers["domain"][1].Name != "Whois" {
				t.Fatalf("by name: %+v %v", got, err)
			}
			p := got.Analyzers["ip"][0].Parameters
			if p["a.b"] != "x" || p["$where"] != int64(3) || p["nested"].(map[string]any)["k"] != true {
				t.Fatalf("parameters %#v", p)
			}
			if _, err := s.Set(ctx, "~none"); !errors.Is(err, automation.ErrSetNotFound) {
				t.Fatalf("unknown id: %v", err)
			}
			f := search.Node{Op: search.OpAnd, Children: []search.Node{docstore.Eq(automation.PathSetDataTypes, "domain"), docstore.Eq(record.PathOrg, "soc")}}
			list, total, err := s.Sets(ctx, f, search.Page{Limit: 10})
			if err != nil || total != 1 || len(list) != 1 {
				t.Fatalf("search by data type: %v %d %v", list, total, err)
			}
			other := automation.Set{ID: "~s3", Org: "soc", Name: "deep", Meta: record.Meta{CreatedAt: at}}
			if err := s.CreateSet(ctx, other); err != nil {
				t.Fatal(err)
			}
			other.Name = "triage"
			if _, err := s.UpdateSet(ctx, other, "u", at); !errors.Is(err, automation.ErrSetExists) {
				t.Fatalf("rename to a taken name: %v", err)
			}
			got.Description, got.Analyzers = "changed", map[string][]automation.Analyzer{"mail": {{AnalysisID: "local", Name: "M"}}}
			up, err := s.UpdateSet(ctx, got, "v", at.Add(time.Second))
			if err != nil || up.Description != "changed" || len(up.Analyzers) != 1 || up.UpdatedBy != "v" {
				t.Fatalf("update: %+v %v", up, err)
			}
			if err := s.DeleteSet(ctx, "~s1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Set(ctx, "~s1"); !errors.Is(err, automation.ErrSetNotFound) {
				t.Fatalf("after delete: %v", err)
			}
		})
	}
}

// A job keeps its parameters, rule and alert; a second job with the same id is ErrJobExists (what makes a
// keyed bulk run idempotent), on both engines.
func TestJobStore_BulkFields(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := NewJobStore(ctx, open(t))
			if err != nil {
				t.Fatal(err)
			}
			j := connector.Job{ID: "~k1", Org: "soc", ObservableID: "~o", AlertID: "~a", AnalyzerName: "Echo", Status: connector.JobWaiting,
				AnalysisID: "local", Parameters: map[string]any{"x.y": "z"}, Rule: "~r", Meta: record.Meta{CreatedAt: time.UnixMilli(5)}}
			if err := s.Create(ctx, j); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, j); !errors.Is(err, connector.ErrJobExists) {
				t.Fatalf("same id: %v", err)
			}
			got, err := s.Job(ctx, "~k1")
			if err != nil || got.AlertID != "~a" || got.Rule != "~r" || got.Parameters["x.y"] != "z" {
				t.Fatalf("job %+v %v", got, err)
			}
		})
	}
}
