package api

// FuzzQueryParse sends request bodies through the query API's parsing without a database: the body decoding
// of web.Fields, then each step as h.query runs it (h.start for list steps, h.next for filter, sort, page and
// count; the checks of get…, similarCases and the traversals, whose database reads are left out), and the
// extraData check of h.finish. It never panics, every error is a BadRequest (or AttributeCheckingError) with a
// bounded message, and every filter it builds only names stored paths of the allow-lists.
//
//	go test ./internal/api -run '^$' -fuzz FuzzQueryParse -fuzztime 20s -fuzzminimizetime 200x

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// parseQuery is h.query without the database.
func parseQuery(h *handler, c echo.Context) (*pipeline, output, error) {
	var out output
	f, err := web.Fields(c)
	if err != nil {
		return nil, out, err
	}
	raw, ok := f["query"].([]any)
	if !ok {
		return nil, out, apperr.New(apperr.BadRequest, "not a query")
	}
	if len(raw) == 0 || len(raw) > 64 {
		return nil, out, apperr.New(apperr.BadRequest, "bad number of steps")
	}
	gets := map[string]kind{"getCase": kindCase, "getAlert": kindAlert, "getObservable": kindObservable,
		"getTask": kindTask, "getLog": kindLog, "getJob": kindJob}
	ctx := context.Background()
	cl := cases.Caller{Login: "fuzz", Org: "soc", Orgs: []string{"soc"}}
	var p *pipeline
	for i, r := range raw {
		step, ok := r.(map[string]any)
		if !ok {
			return nil, out, apperr.Errorf(apperr.BadRequest, "query step %d is not an object", i+1)
		}
		name, _ := step["_name"].(string)
		if name == "" {
			return nil, out, apperr.Errorf(apperr.BadRequest, "query step %d has no _name", i+1)
		}
		if out.page || out.count {
			return nil, out, badStep(name, "nothing may follow page or count")
		}
		if p == nil {
			if k, ok := gets[name]; ok { // h.start reads the record: check what it checks before
				if err := params(name, step, "idOrName"); err != nil {
					return nil, out, err
				}
				if id, ok := step["idOrName"].(string); !ok || id == "" {
					return nil, out, badStep(name, "idOrName must be a non-empty string")
				}
				p = &pipeline{kind: k, filter: search.Node{Op: search.OpEq, Path: "_id", Value: "x"}}
				continue
			}
			if p, err = h.start(ctx, cl, name, step); err != nil {
				return nil, out, err
			}
			continue
		}
		switch name {
		case "filter", "sort", "page", "count":
			if err := h.next(ctx, cl, p, &out, name, step); err != nil {
				return nil, out, err
			}
			continue
		case "similarCases": // h.next reads the alert: check what it checks before and after
			if err := params(name, step, "caseFilter"); err != nil {
				return nil, out, err
			}
			if p.kind != kindAlert {
				return nil, out, badStep(name, "applies to alerts, not to %ss", p.kind)
			}
			*p = pipeline{kind: kindSimilar, filter: search.Node{Op: search.OpAll}}
			if cf, ok := step["caseFilter"]; ok && cf != nil {
				n, err := parseFilter(name, cf, cases.CaseFields)
				if err != nil {
					return nil, out, err
				}
				p.and(n)
			}
			continue
		}
		t, ok := traversals[name]
		if !ok {
			return nil, out, badStep(name, "unknown or misplaced step")
		}
		if err := params(name, step); err != nil {
			return nil, out, err
		}
		if !slices.Contains(t.from, p.kind) {
			return nil, out, badStep(name, "does not apply to %ss", p.kind)
		}
		*p = pipeline{kind: t.to, filter: search.Node{Op: search.OpIn, Path: "_id", Values: []any{}}}
	}
	for _, e := range out.extraData {
		if e != "total" && !slices.Contains(extraNames[p.kind], e) {
			return nil, out, badStep("page", "unknown extraData")
		}
	}
	return p, out, nil
}

// storedPaths are the storage paths a filter of a kind may name, besides the pipeline's own.
func storedPaths(k kind) map[string]bool {
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

var fuzzEcho = echo.New()

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
	h := &handler{max: 1000}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		c := fuzzEcho.NewContext(req, httptest.NewRecorder())
		p, out, err := parseQuery(h, c)
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
		checkFilter(t, p.filter, storedPaths(p.kind), 0)
		for _, k := range p.sort {
			if !storedPaths(p.kind)[k.Path] {
				t.Fatalf("sort on the path %q, not of the allow-list", k.Path)
			}
		}
		if out.page && (out.from < 0 || out.to < out.from || out.to-out.from > h.max) {
			t.Fatalf("page %d-%d", out.from, out.to)
		}
	})
}
