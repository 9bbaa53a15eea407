package query

// FuzzQueryParse sends request bodies through the query language's parsing without a database: the body
// decoded as JSON (numbers kept as json.Number, as web.Fields does), then each step as Engine.Build runs it
// (Start for list steps, Next for filter, sort, page and count; the checks of get…, similarCases and the
// traversals, whose database reads are left out). It never panics, every error is a BadRequest (or AttributeCheckingError) with a
// bounded message, and every filter it builds only names stored paths of the allow-lists.
//
//	go test ./internal/query -run '^$' -fuzz FuzzQueryParse -fuzztime 20s -fuzzminimizetime 200x

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// parseQuery is Engine.Build without the database.
func parseQuery(e *Engine, body []byte) (*Pipeline, Output, error) {
	var out Output
	var f map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		return nil, out, apperr.New(apperr.BadRequest, "not a JSON object")
	}
	raw, ok := f["query"].([]any)
	if !ok {
		return nil, out, apperr.New(apperr.BadRequest, "not a query")
	}
	if len(raw) == 0 || len(raw) > 64 {
		return nil, out, apperr.New(apperr.BadRequest, "bad number of steps")
	}
	gets := map[string]Kind{"getCase": KindCase, "getAlert": KindAlert, "getObservable": KindObservable,
		"getTask": KindTask, "getLog": KindLog, "getJob": KindJob}
	ctx := context.Background()
	cl := identity.Caller{Login: "fuzz", Org: "soc", Orgs: []string{"soc"}}
	var p *Pipeline
	for i, r := range raw {
		step, ok := r.(map[string]any)
		if !ok {
			return nil, out, apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
		}
		name, _ := step["_name"].(string)
		if name == "" {
			return nil, out, apperr.Errorf(apperr.BadRequest, "query step %d has no _name", i+1)
		}
		if out.Page || out.Count {
			return nil, out, BadStep(name, "nothing may follow page or count")
		}
		if p == nil {
			if k, ok := gets[name]; ok { // Start reads the record: check what it checks before
				if err := Params(name, step, "idOrName"); err != nil {
					return nil, out, err
				}
				if id, ok := step["idOrName"].(string); !ok || id == "" {
					return nil, out, BadStep(name, "idOrName must be a non-empty string")
				}
				p = &Pipeline{Kind: k, Filter: search.Node{Op: search.OpEq, Path: "_id", Value: "x"}}
				continue
			}
			var err error
			if p, err = e.Start(ctx, cl, name, step); err != nil {
				return nil, out, err
			}
			continue
		}
		switch name {
		case "filter", "sort", "page", "count":
			if err := e.Next(ctx, cl, p, &out, name, step); err != nil {
				return nil, out, err
			}
			continue
		case "similarCases": // Next reads the alert: check what it checks before and after
			if err := Params(name, step, "caseFilter"); err != nil {
				return nil, out, err
			}
			if p.Kind != KindAlert {
				return nil, out, BadStep(name, "applies to alerts, not to %ss", p.Kind)
			}
			*p = Pipeline{Kind: KindSimilar, Filter: search.Node{Op: search.OpAll}}
			if cf, ok := step["caseFilter"]; ok && cf != nil {
				n, err := ParseFilter(name, cf, cases.CaseFields)
				if err != nil {
					return nil, out, err
				}
				p.And(n)
			}
			continue
		}
		t, ok := traversals[name]
		if !ok {
			return nil, out, BadStep(name, "unknown or misplaced step")
		}
		if err := Params(name, step); err != nil {
			return nil, out, err
		}
		if !slices.Contains(t.from, p.Kind) {
			return nil, out, BadStep(name, "does not apply to %ss", p.Kind)
		}
		*p = Pipeline{Kind: t.to, Filter: search.Node{Op: search.OpIn, Path: "_id", Values: []any{}}}
	}
	return p, out, nil
}

// storedPaths are the storage paths a filter of a kind may name, besides the pipeline's own.
func storedPaths(k Kind) map[string]bool {
	m := map[string]bool{"_id": true, "status": true}
	for _, f := range kindFields[k] {
		m[f.Path] = true
	}
	return m
}

func checkFilter(t *testing.T, n search.Node, paths map[string]bool, depth int) {
	t.Helper()
	if depth > 200 {
		t.Fatalf("filter deeper than %d", depth)
	}
	switch n.Op {
	case search.OpAll, "":
	case search.OpAnd, search.OpOr, search.OpNot:
		for _, c := range n.Children {
			checkFilter(t, c, paths, depth+1)
		}
	default:
		if !paths[n.Path] {
			t.Fatalf("filter names the path %q, not of the allow-list", n.Path)
		}
		if strings.HasPrefix(n.Path, "$") {
			t.Fatalf("filter path %q", n.Path)
		}
	}
}

func FuzzQueryParse(f *testing.F) {
	for _, s := range []string{
		`{"query":[{"_name":"getObservable","idOrName":"~1"},{"_name":"jobs"},{"_name":"sort","_fields":[{"startDate":"desc"}]},{"_name":"page","from":0,"to":10}]}`,
		`{"query":[{"_name":"getAlert","idOrName":"~1"},{"_name":"similarCases","caseFilter":{"_field":"status","_value":"Open"}}]}`,
		`{"query":[{"_name":"waitingTasks"},{"_name":"sort","_fields":[{"flag":"desc"},{"startDate":"desc"}]},{"_name":"page","from":0,"to":15}]}`,
		`{"query":[{"_name":"getCase","idOrName":"42"},{"_name":"alerts"},{"_name":"sort","_fields":[{"date":"desc"}]},{"_name":"page","from":0,"to":5}]}`,
		`{"query":[{"_name":"listCase"},{"_name":"filter","_and":[{"_field":"status","_value":"Open"},{"_not":{"_in":{"_field":"tags","_values":["a","b"]}}}]},{"_name":"count"}]}`,
		`{"query":[{"_name":"listAlert"},{"_name":"filter","_or":[{"_like":{"_field":"title","_value":"a.b*"}},{"_wildcard":{"_field":"source","_value":"s?c*"}}]},{"_name":"page","from":0,"to":3,"extraData":["caseNumber","total"]}]}`,
		`{"query":[{"_name":"listObservable"},{"_name":"filter","_startsWith":{"_field":"data","_value":"(["}},{"_name":"filter","_endsWith":{"_field":"data","_value":"$"}},{"_name":"sort","_fields":["-startDate","+data"]}]}`,
		`{"query":[{"_name":"listTask"},{"_name":"filter","_between":{"_field":"startDate","_from":0,"_to":99}},{"_name":"case"},{"_name":"tasks"},{"_name":"logs"}]}`,
		`{"query":[{"_name":"listObservable"},{"_name":"filter","_is":{"ioc":true}},{"_name":"filter","_ne":{"dataType":"ip"}},{"_name":"filter","_parent":{"_type":"case","_query":{"_id":"~1"}}}]}`,
		`{"query":[{"_name":"listCase"},{"_name":"filter","_string":"status:Open AND severity:2"},{"_name":"filter","_gt":{"severity":1}},{"_name":"filter","_contains":"summary"}]}`,
		`{"query":[{"_name":"listLog"},{"_name":"page","from":"1","to":-1}]}`,
		`{"query":[{"_name":"listJob"},{"_name":"filter","$where":"1"}]}`,
		`{"query":[{"_name":"listCase"},{"_name":"filter","customFields.cf":"x"},{"_name":"page","withStats":true,"extraData":["taskStats"]}]}`,
		`{"query":[{"_name":"nope"}]}`, `{"query":[]}`, `{"query":{}}`, `{}`, `[]`, `{"query":[1,null,"x"]}`,
	} {
		f.Add([]byte(s))
	}
	e := New(nil, nil, nil, nil, 1000)
	f.Fuzz(func(t *testing.T, body []byte) {
		p, out, err := parseQuery(e, body)
		if err != nil {
			e := apperr.As(err)
			if e == nil || (e.Kind != apperr.BadRequest && e.Kind != apperr.Invalid) || e.Message == "" {
				t.Fatalf("error %v (%T) is not a BadRequest", err, err)
			}
			if len(e.Message) > 4096 || !utf8.ValidString(e.Message) {
				t.Fatalf("error message of %d bytes: %.200q", len(e.Message), e.Message)
			}
			return
		}
		checkFilter(t, p.Filter, storedPaths(p.Kind), 0)
		for _, k := range p.Sort {
			if !storedPaths(p.Kind)[k.Path] {
				t.Fatalf("sort on the path %q, not of the allow-list", k.Path)
			}
		}
		if out.Page && (out.From < 0 || out.To < out.From || out.To-out.From > e.max) {
			t.Fatalf("page %d-%d", out.From, out.To)
		}
	})
}
