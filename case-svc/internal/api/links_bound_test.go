package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/docstore"
)

// Issue 28: the links of a case of 22k observables took 14.6 s (quadratic comparisons) and four at once 648
// MiB. The work is bounded: past cases.LinksCompareMax observables of the case, the answer compares the first
// ones and says it was cut (X-Links-Truncated); within the bounds it is whole and says nothing.
func TestCase_LinksBound(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	a := tm.analyst.newCase(t, map[string]any{"title": "big"}).Str(t, "id")
	seed := tm.analyst.observables(t, "/api/case/"+a+"/artifact", map[string]any{"dataType": "ip", "data": "10.6.6.6"})[0]
	b := tm.analyst.newCase(t, map[string]any{"title": "shares"}).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+b+"/artifact", map[string]any{"dataType": "ip", "data": "10.6.6.6"})

	resp := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+a+"/links", nil).Want(t, 200)
	if h := resp.Header.Get(api.LinksTruncatedHeader); h != "" {
		t.Fatalf("within the bounds: %s %q", api.LinksTruncatedHeader, h)
	}
	if l := resp.List(t); len(l) != 1 || l[0].Str(t, "id") != b {
		t.Fatalf("links within the bounds: %v", l)
	}

	// cases.LinksCompareMax more observables in case a (copies of the seed, stored directly).
	ctx := context.Background()
	coll, err := tm.db.Collection(ctx, docstore.Spec{Name: "observables", Arrays: []string{"tags", "attachment.hashes"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := coll.Get(ctx, seed.Str(t, "id"), &doc); err != nil {
		t.Fatal(err)
	}
	copies := make([]any, cases.LinksCompareMax)
	for i := range copies {
		d := map[string]any{}
		for k, v := range doc {
			d[k] = v
		}
		d["_id"] = fmt.Sprintf("linkcopy-%05d", i)
		raw, _ := json.Marshal(d)
		copies[i] = json.RawMessage(raw)
	}
	res, err := coll.InsertMany(ctx, copies)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range res {
		if err != nil {
			t.Fatal(err)
		}
	}
	resp = tm.readOnly.Call(t, http.MethodGet, "/api/case/"+a+"/links", nil).Want(t, 200)
	if h := resp.Header.Get(api.LinksTruncatedHeader); h != "true" {
		t.Errorf("over cases.LinksCompareMax observables: %s %q, want true", api.LinksTruncatedHeader, h)
	}
	l := resp.List(t)
	if len(l) != 1 || l[0].Str(t, "id") != b {
		t.Fatalf("links over the bound: %d cases", len(l))
	}
	if n := l[0].Num(t, "linksCount"); n != cases.LinksCompareMax {
		t.Errorf("linksCount %v, want the %d observables compared", n, cases.LinksCompareMax)
	}
}
