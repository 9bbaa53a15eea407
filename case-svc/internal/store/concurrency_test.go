package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// concurrently calls f(i) for i in [0, n) from n goroutines started together and returns the errors by i.
func concurrently(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = f(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// Case ids and numbers come from counter documents incremented atomically: 200 concurrent callers of two
// organisations get 200 distinct ids, 1 to 200, and each organisation its own numbers, 1 to 100, even on
// the first case of the organisation (its sequence is made by one of the racing callers).
func TestCaseStore_NextCaseNumberConcurrent(t *testing.T) {
	ctx := context.Background()
	s, err := NewCaseStore(ctx, docstoretest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	seqs, nums := make([]int64, n), make([]int64, n)
	orgs := []string{"a", "b"}
	for i, err := range concurrently(n, func(i int) (err error) {
		seqs[i], nums[i], err = s.NextCaseNumber(ctx, orgs[i%2])
		return err
	}) {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	seen := map[int64]bool{}
	for _, v := range seqs {
		if v < 1 || v > n || seen[v] {
			t.Fatalf("ids %v", seqs)
		}
		seen[v] = true
	}
	perOrg := map[string]map[int64]bool{"a": {}, "b": {}}
	for i, v := range nums {
		o := orgs[i%2]
		if v < 1 || v > n/2 || perOrg[o][v] {
			t.Fatalf("numbers of %s: %v", o, nums)
		}
		perOrg[o][v] = true
	}
}

// A new store continues the sequence after the highest stored number (a database copied without its
// counter).
func TestCaseStore_SequenceStartsAfterStoredCases(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	cs, err := Collection(ctx, db, "cases")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{41, 7} {
		if err := cs.Insert(ctx, toCaseDoc(cases.Case{ID: fmt.Sprint("~", n), Org: "o", Number: n})); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewCaseStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if seq, n, err := s.NextCaseNumber(ctx, "o"); err != nil || seq != 42 || n != 42 {
		t.Fatalf("next id %d, number %d, %v; want 42, 42", seq, n, err)
	}
	// Another organisation's numbers start at 1; ids go on.
	if seq, n, err := s.NextCaseNumber(ctx, "p"); err != nil || seq != 43 || n != 1 {
		t.Fatalf("next id %d, number %d of another organisation, %v; want 43, 1", seq, n, err)
	}
}

// Unique keys hold under concurrency: of 20 writers of the same alert, observable or template name, one wins
// and the others get the domain's "exists" error.
func TestStores_UniqueKeysConcurrent(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	alerts, err := NewAlertStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	observables, err := NewObservableStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	templates, err := NewTemplateStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := NewCustomFieldStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		exists error
		create func(i int) error
	}{
		{"alert", cases.ErrAlertExists, func(int) error {
			return alerts.CreateAlert(ctx, cases.Alert{ID: "a1", Org: "o", Type: "t", Source: "s", SourceRef: "r", Date: now})
		}},
		{"observable", cases.ErrObservableExists, func(int) error {
			return observables.CreateObservable(ctx, cases.Observable{ID: "o1", Org: "o", CaseID: "~1", DataType: "ip", Data: "1.2.3.4"})
		}},
		{"template", template.ErrExists, func(i int) error { // distinct ids, one (organisation, name)
			return templates.CreateTemplate(ctx, template.Template{ID: fmt.Sprint("t", i), Org: "o", Name: "triage"})
		}},
		{"custom field", customfield.ErrExists, func(i int) error {
			return fields.CreateCustomField(ctx, customfield.Field{ID: fmt.Sprint("f", i), Name: "impact", Type: customfield.TypeString})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			won := 0
			for i, err := range concurrently(20, tc.create) {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, tc.exists):
					t.Errorf("writer %d: %v", i, err)
				}
			}
			if won != 1 {
				t.Errorf("%d writers succeeded, want 1", won)
			}
		})
	}
	// The template name stays unique on update too.
	if err := templates.CreateTemplate(ctx, template.Template{ID: "other", Org: "o", Name: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := templates.UpdateTemplate(ctx, template.Template{ID: "other", Org: "o", Name: "triage"}, "u", now); !errors.Is(err, template.ErrExists) {
		t.Errorf("renaming onto a taken name: %v", err)
	}
}
