package api_test

import (
	"fmt"
	"net/http"
	"testing"
)

// Issue 28: an _or of 998 terms was a 500 (SQLite's expression depth) on case search, the v1 query and
// _stats; it is answered.
func TestRegressionLongOr(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	id := tm.analyst.newCase(t, map[string]any{"title": "title-500"}).Str(t, "id")
	var terms []any
	for i := range 998 {
		terms = append(terms, map[string]any{"title": fmt.Sprintf("title-%d", i)})
	}
	or := map[string]any{"_or": terms}
	if got := tm.readOnly.Call(t, http.MethodPost, "/api/case/_search", map[string]any{"query": or}).Want(t, 200).IDs(t); len(got) != 1 || got[0] != id {
		t.Errorf("case search: %v", got)
	}
	tm.readOnly.Call(t, http.MethodPost, "/api/case/_stats", map[string]any{"query": or, "stats": []any{map[string]any{"_agg": "count"}}}).Want(t, 200)
	q := []any{map[string]any{"_name": "listCase"}, map[string]any{"_name": "filter", "_or": terms}}
	if l := tm.readOnly.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": q}).Want(t, 200).List(t); len(l) != 1 {
		t.Errorf("v1 query: %d cases", len(l))
	}
}
