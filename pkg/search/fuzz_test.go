package search

import (
	"errors"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/apperr"
)

// checkFuzzErr fails unless err is nil or a bare *apperr.Error of kind BadRequest.
func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.BadRequest || e.Message == "" {
		t.Fatalf("error %v (%T) is not an apperr BadRequest", err, err)
	}
}

// paths are the storage paths of testFields.
var paths = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range testFields {
		m[f.Path] = true
	}
	return m
}()

// checkNode fails unless n is a well-formed tree over the paths of testFields.
func checkNode(t *testing.T, n Node, depth int) {
	t.Helper()
	if depth > MaxDepth+3 {
		t.Fatalf("tree deeper than %d", depth)
	}
	switch n.Op {
	case OpAll:
	case OpAnd, OpOr, OpNot:
		if n.Op == OpNot && len(n.Children) != 1 {
			t.Fatalf("OpNot with %d children", len(n.Children))
		}
		for _, c := range n.Children {
			checkNode(t, c, depth+1)
		}
		return
	case OpEq, OpGt, OpGte, OpLt, OpLte, OpIn, OpExists, OpLike, OpWildcard, OpPrefix, OpSuffix:
		if !paths[n.Path] {
			t.Fatalf("path %q is not from the allow-list", n.Path)
		}
		vals := n.Values
		switch n.Op {
		case OpIn:
			if vals == nil {
				t.Fatal("OpIn with nil Values")
			}
		case OpExists:
		default:
			vals = []any{n.Value}
		}
		for _, v := range vals {
			switch v.(type) {
			case string, int64, float64, bool:
			default:
				t.Fatalf("value %#v (%T) is not a coerced scalar", v, v)
			}
		}
		return
	default:
		t.Fatalf("unknown op %q", n.Op)
	}
	if len(n.Children) != 0 || n.Path != "" {
		t.Fatalf("malformed %#v", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `{"_any": 1}`, `{"status": "Open"}`, `{"title": "x", "severity": 2, "flag": "true"}`,
		`{"_and": [{"status": "Open"}, {"_or": [{"severity": 1}, {"_not": {"flag": false}}]}]}`,
		`{"_field": "title", "_value": "x"}`, `{"_gt": {"severity": "3"}}`, `{"_lte": {"_createdAt": 1.5e3}}`,
		`{"_between": {"_field": "_createdAt", "_from": 1, "_to": 2}}`,
		`{"_in": {"_field": "severity", "_values": [1, "2", 3.5]}}`, `{"_contains": "owner"}`,
		`{"_like": {"_field": "title", "_value": "a.b"}}`, `{"_wildcard": {"_field": "title", "_value": "a*b?"}}`,
		`{"_startsWith": {"_field": "title", "_value": "x"}}`, `{"_endsWith": {"_field": "title", "_value": "y"}}`,
		`{"_id": "abc"}`, `{"_string": "status:Open AND title:\"a \\\"b\\\"\" OR severity:2"}`,
		`{"_string": "(x"}`, `{"$where": "1"}`, `{"_and": {}}`, `[1, 2]`, `{"severity": 1e999}`,
		strings.Repeat(`{"_not":`, 40) + `{}` + strings.Repeat(`}`, 40),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, err := ParseJSON(raw, testFields)
		checkFuzzErr(t, err)
		if err == nil {
			checkNode(t, n, 1)
		}
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "all", "0-10", "10", "5-5", "-1", "1-2-3", "99999999999999999999", "a-b"} {
		f.Add(s, 100)
	}
	f.Add("0-10", 0)
	f.Add("all", -1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		off, lim, err := ParseRange(s, max)
		checkFuzzErr(t, err)
		if err != nil {
			return
		}
		if off < 0 || lim < 1 || lim > max && lim > 1 {
			t.Fatalf("ParseRange(%q, %d) = %d, %d", s, max, off, lim)
		}
	})
}

func FuzzParseSort(f *testing.F) {
	for _, s := range []string{"", "title", "+title", "-severity,title", " title", "-", "nope", "$x", "a,,b", "-_createdAt,-_createdAt"} {
		f.Add(s, "status")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		keys, err := ParseSort([]string{a, b}, testFields)
		checkFuzzErr(t, err)
		seen := map[string]bool{}
		for _, k := range keys {
			if !paths[k.Path] || seen[k.Path] {
				t.Fatalf("bad or duplicate key %v", k)
			}
			seen[k.Path] = true
		}
	})
}
