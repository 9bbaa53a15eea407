package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openir/platform/case-svc/internal/api"
	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/docstore"
)

// Issue 15: a query with extraData over ~11k observables held the database for 78 s. extraData is computed
// for at most api.ExtraDataMax records: over it the query is a 400 in the error shape; within it the records
// and their extraData are what they were (seen is an index count of the organisation's other observables).
func TestQuery_ExtraDataBound(t *testing.T) {
	tm := newTeam(t)
	c1 := tm.analyst.newCase(t, map[string]any{"title": "many"}).Str(t, "id")
	var data []string
	for i := range api.ExtraDataMax + 1 {
		data = append(data, fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	tm.analyst.observables(t, "/api/case/"+c1+"/artifact", map[string]any{"dataType": "ip", "data": data})
	c2 := tm.analyst.newCase(t, map[string]any{"title": "few"}).Str(t, "id")
	tm.analyst.observables(t, "/api/case/"+c2+"/artifact", map[string]any{"dataType": "ip", "data": []string{"10.1.0.0", "10.1.0.1"}})
	// Another organisation's observable of the same value is not seen.
	theirs := tm.other.newCase(t, nil).Str(t, "id")
	tm.other.observables(t, "/api/case/"+theirs+"/artifact", map[string]any{"dataType": "ip", "data": "10.1.0.2"})

	listed := func(from, to int) *resp {
		return tm.readOnly.query(t, "/api/v1/query", q{"_name": "listObservable"}, q{"_name": "sort", "_fields": []any{q{"data": "asc"}}},
			q{"_name": "page", "from": from, "to": to, "extraData": []string{"seen", "total"}})
	}
	t.Run("over the bound", func(t *testing.T) {
		msg := listed(0, 1000).WantError(t, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(msg, fmt.Sprintf("at most %d records", api.ExtraDataMax)) {
			t.Fatalf("message %q", msg)
		}
		// The v0 search and a query without extraData are not bounded by it.
		r := tm.readOnly.query(t, "/api/v1/query", q{"_name": "listObservable"}, q{"_name": "page", "from": 0, "to": 1000}).Want(t, 200)
		if n := len(r.List(t)); n != api.ExtraDataMax+3 {
			t.Fatalf("%d records without extraData", n)
		}
	})
	t.Run("within the bound", func(t *testing.T) {
		r := listed(0, api.ExtraDataMax).Want(t, 200)
		l := r.List(t)
		if len(l) != api.ExtraDataMax || r.Total(t) != fmt.Sprint(api.ExtraDataMax+3) {
			t.Fatalf("%d records, total %s", len(l), r.Total(t))
		}
		for _, o := range l {
			want := 0.0
			if d := o.Str(t, "data"); d == "10.1.0.0" || d == "10.1.0.1" {
				want = 1 // the other case's observable of the same value
			}
			if got := o.Obj(t, "extraData").Num(t, "seen"); got != want {
				t.Fatalf("%s seen %v, want %v", o.Str(t, "data"), got, want)
			}
		}
		// A page larger than the bound whose result is within it is answered.
		r = tm.readOnly.query(t, "/api/v1/query", q{"_name": "getCase", "idOrName": c2}, q{"_name": "observables"},
			q{"_name": "page", "from": 0, "to": 1000, "extraData": []string{"seen"}}).Want(t, 200)
		for _, o := range r.List(t) {
			if o.Obj(t, "extraData").Num(t, "seen") != 1 {
				t.Fatalf("seen %v", o)
			}
		}
	})
}

// Similar cases are computed only when the alert's values occur in at most cases.SimilarMax observables of
// cases (counted on the index first); beyond it the alert's similarity is a 400, in each way of asking for it.
func TestAlert_SimilarityBound(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, nil).Str(t, "id")
	seed := tm.analyst.observables(t, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "ip", "data": "9.9.9.9"})[0]
	tm.analyst.observables(t, "/api/case/"+cs+"/artifact", map[string]any{"dataType": "ip", "data": "8.8.8.8"})
	// cases.SimilarMax copies of the seed observable, stored directly (as many creations over HTTP would).
	ctx := context.Background()
	coll, err := tm.db.Collection(ctx, docstore.Spec{Name: "observables", Arrays: []string{"tags", "attachment.hashes"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := coll.Get(ctx, seed.Str(t, "id"), &doc); err != nil {
		t.Fatal(err)
	}
	copies := make([]any, cases.SimilarMax)
	for i := range copies {
		d := map[string]any{}
		for k, v := range doc {
			d[k] = v
		}
		d["_id"] = fmt.Sprintf("copy-%05d", i)
		b, _ := json.Marshal(d)
		copies[i] = json.RawMessage(b)
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
	common := tm.analyst.newAlert(t, "common", []map[string]any{{"dataType": "ip", "data": "9.9.9.9"}}).Str(t, "id")
	rare := tm.analyst.newAlert(t, "rare", []map[string]any{{"dataType": "ip", "data": "8.8.8.8"}}).Str(t, "id")

	msg := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+common+"?similarity=1", nil).WantError(t, http.StatusBadRequest, "BadRequest")
	if !strings.Contains(msg, fmt.Sprintf("more than %d observables", cases.SimilarMax)) {
		t.Fatalf("message %q", msg)
	}
	tm.analyst.query(t, "/api/v1/query", q{"_name": "getAlert", "idOrName": common}, q{"_name": "similarCases"}).
		WantError(t, http.StatusBadRequest, "BadRequest")
	tm.analyst.query(t, "/api/v1/query", q{"_name": "listAlert"}, q{"_name": "filter", "_field": "sourceRef", "_value": "common"},
		q{"_name": "page", "from": 0, "to": 5, "extraData": []string{"similarCases"}}).WantError(t, http.StatusBadRequest, "BadRequest")
	// Within the bound, unchanged: the rare value's case is similar.
	sims := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+rare+"?similarity=1", nil).Want(t, 200).Object(t)["similarCases"].([]any)
	if len(sims) != 1 || obj(sims[0].(map[string]any)).Obj(t, "case").Str(t, "id") != cs {
		t.Fatalf("similar cases %v", sims)
	}
	// The bound is the organisation's: another organisation's alert of the common value has no similar case.
	other := tm.other.newAlert(t, "common", []map[string]any{{"dataType": "ip", "data": "9.9.9.9"}}).Str(t, "id")
	if sims := tm.other.Call(t, http.MethodGet, "/api/alert/"+other+"?similarity=1", nil).Want(t, 200).Object(t)["similarCases"].([]any); len(sims) != 0 {
		t.Fatalf("other organisation: %v", sims)
	}
}
