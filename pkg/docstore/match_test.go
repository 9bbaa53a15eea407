package docstore_test

// The in-memory Matcher held to the engines: every filter row of the conformance suite, and the rows below (the
// shapes the search language gives, on documents like the services' records), is run as a query on each engine
// and as a Matcher on the same documents, and the two must select the same documents.

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

// matchIDs returns the sorted _ids of the documents (JSON text) m matches.
func matchIDs(t *testing.T, m *docstore.Matcher, docs []string) []string {
	t.Helper()
	var out []string
	for _, d := range docs {
		doc, err := docstore.DecodeDocument([]byte(d))
		if err != nil {
			t.Fatalf("decode %s: %v", d, err)
		}
		if m.Match(doc) {
			out = append(out, doc["_id"].(string))
		}
	}
	sort.Strings(out)
	return out
}

// matchDocs are records as the services store them: strings, numbers, booleans, tags (an array), nested
// objects, missing and null fields.
var matchDocs = []string{
	`{"_id":"o1","organisation":"acme","dataType":"ip","data":"10.0.0.1","tags":["auto","tlp:amber"],"tlp":2,"ioc":true,"sighted":false,"reports":{"Echo":"{}"},"createdAt":1700000000000}`,
	`{"_id":"o2","organisation":"acme","dataType":"domain","data":"Example.COM","tags":["x"],"tlp":0,"ioc":false,"message":"from the mail gateway","createdAt":1700000000500}`,
	`{"_id":"o3","organisation":"other","dataType":"ip","data":"10.0.0.2","tags":[],"tlp":3,"ioc":true,"createdAt":1700000001000.5}`,
	`{"_id":"o4","organisation":"acme","dataType":"hash","data":"d41d8cd98f00b204e9800998ecf8427e","tlp":1,"ioc":null,"attachment":{"name":"a.txt","size":0}}`,
	`{"_id":"o5","organisation":"acme","dataType":"mail","data":"bob@example.com","tags":null,"tlp":2.0,"message":""}`,
}

var matchSpec = docstore.Spec{Name: "matchdocs", Arrays: []string{"tags"}}

// matchFields are fields as a service's allow-list declares them, for search.Parse.
var matchFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "dataType": {Path: "dataType"}, "data": {Path: "data"}, "tags": {Path: "tags"},
	"tlp": {Path: "tlp", Type: search.Number}, "ioc": {Path: "ioc", Type: search.Bool}, "sighted": {Path: "sighted", Type: search.Bool},
	"message": {Path: "message"}, "createdAt": {Path: "createdAt", Type: search.Number}, "organisation": {Path: "organisation"},
	"attachment.name": {Path: "attachment.name"}, "attachment.size": {Path: "attachment.size", Type: search.Number},
}

// matchQueries are rules' conditions in the search language, with the documents they select.
var matchQueries = []struct {
	query string
	want  []string
}{
	{`{"tags": "auto"}`, strs("o1")},
	{`{"_and": [{"tags": "auto"}, {"_in": {"_field": "dataType", "_values": ["ip", "domain"]}}]}`, strs("o1")},
	{`{"_and": [{"dataType": "domain"}, {"tags": "x"}]}`, strs("o2")},
	{`{"ioc": true}`, strs("o1", "o3")},
	{`{"_not": {"ioc": true}}`, strs("o2", "o4", "o5")},
	{`{"_gte": {"tlp": 2}}`, strs("o1", "o3", "o5")},
	{`{"_between": {"_field": "tlp", "_from": 1, "_to": 3}}`, strs("o1", "o4", "o5")},
	{`{"_lt": {"createdAt": 1700000001000}}`, strs("o1", "o2")},
	{`{"_gt": {"createdAt": 1700000001000}}`, strs("o3")},
	{`{"_like": {"_field": "data", "_value": "example"}}`, strs("o2", "o5")},
	{`{"_wildcard": {"_field": "data", "_value": "10.0.0.*"}}`, strs("o1", "o3")},
	{`{"_startsWith": {"_field": "data", "_value": "10."}}`, strs("o1", "o3")},
	{`{"_endsWith": {"_field": "data", "_value": ".com"}}`, strs("o5")},
	{`{"_contains": "message"}`, strs("o2", "o5")},
	{`{"_not": {"_contains": "tags"}}`, strs("o4", "o5")},
	{`{"_or": [{"dataType": "hash"}, {"_not": {"tags": "auto"}}]}`, strs("o2", "o3", "o4", "o5")},
	{`{"attachment.name": "a.txt"}`, strs("o4")},
	{`{"attachment.size": 0}`, strs("o4")},
	{`{"_and": [{"organisation": "acme"}, {"_id": "o3"}]}`, nil},
	{`{"tags": "AUTO"}`, nil},
	{`{"_in": {"_field": "tlp", "_values": [0, 3]}}`, strs("o2", "o3")},
	{`{"sighted": false}`, strs("o1")},
}

func TestConformanceMatcher(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		conf := confColl(t, db, confSpec, confDocs...)
		for _, r := range confFilters {
			t.Run(r.name, func(t *testing.T) {
				m, err := conf.Matcher(r.f)
				if err != nil {
					t.Fatalf("matcher %s: %v", confNode(r.f), err)
				}
				got := matchIDs(t, m, confDocs)
				if !slices.Equal(got, r.want) {
					t.Errorf("matcher %s: got %q, want %q", confNode(r.f), got, r.want)
				}
				if !onFerretDB(e) || r.ferret == "" {
					if eng := confIDs(t, conf, r.f); !slices.Equal(got, eng) {
						t.Errorf("matcher %s: got %q, the engine %q", confNode(r.f), got, eng)
					}
				}
			})
		}
		recs := confColl(t, db, matchSpec, matchDocs...)
		for _, r := range matchQueries {
			t.Run(r.query, func(t *testing.T) {
				f, err := search.ParseJSON([]byte(r.query), matchFields)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				m, err := recs.Matcher(f)
				if err != nil {
					t.Fatalf("matcher: %v", err)
				}
				got := matchIDs(t, m, matchDocs)
				if eng := confIDs(t, recs, f); !slices.Equal(got, eng) {
					t.Errorf("matcher %s: got %q, the engine %q", confNode(f), got, eng)
				}
				if !slices.Equal(got, r.want) {
					t.Errorf("matcher %s: got %q, want %q", confNode(f), got, r.want)
				}
			})
		}
	})
}

func TestMatcherRefusals(t *testing.T) {
	for _, f := range []search.Node{
		{Op: search.OpEq, Path: "o", Value: map[string]any{"k": "x"}},
		{Op: search.OpIn, Path: "tags", Values: []any{"a", []any{"b"}}},
	} {
		if _, err := docstore.NewMatcher(f); !errors.Is(err, docstore.ErrMatcherOperand) {
			t.Errorf("NewMatcher(%s) = %v, want ErrMatcherOperand", confNode(f), err)
		}
	}
	for _, p := range []string{"", "a..b", "$where", `a"b`} {
		if _, err := docstore.NewMatcher(docstore.Eq(p, 1)); !errors.Is(err, docstore.ErrBadPath) {
			t.Errorf("NewMatcher on path %q = %v, want ErrBadPath", p, err)
		}
	}
	db := docstoretest.New(t)
	c := confColl(t, db, confSpec)
	if _, err := c.Matcher(docstore.Eq("tags.0", "red")); !errors.Is(err, docstore.ErrBadPath) {
		t.Errorf("a path through a declared array: %v, want ErrBadPath", err)
	}
	m, err := docstore.NewMatcher(docstore.Eq("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`[1]`, `1`, `{"a":`, ``} {
		if _, err := m.MatchJSON(json.RawMessage(raw)); err == nil {
			t.Errorf("MatchJSON(%q): no error", raw)
		}
	}
	if ok, err := m.MatchJSON([]byte(`{"a":1.0}`)); err != nil || !ok {
		t.Errorf(`MatchJSON({"a":1.0}) = %v, %v; want true`, ok, err)
	}
}
