package webui

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	sortable := map[string]bool{"createdAt": true, "status": true}
	q := url.Values{"status": {"Success"}, "sort": {"status"}, "page": {"2"}, "size": {"10"}, FragmentParam: {"1"}}
	v, keys, err := ParseList(q, "-createdAt", sortable)
	if err != nil || v.Offset != 10 || len(keys) != 1 || keys[0].Path != "status" || keys[0].Desc {
		t.Fatalf("ParseList: %+v %v %v", v, keys, err)
	}
	if v.Query.Has(FragmentParam) {
		t.Errorf("the fragment flag is kept in the list's links")
	}
	v.SetTotal(21)
	if v.Pages != 3 || v.Next() != 3 || v.Prev() != 1 {
		t.Errorf("pages %d next %d prev %d", v.Pages, v.Next(), v.Prev())
	}
	if got := v.SortLink("status"); got != "?size=10&sort=-status&status=Success" {
		t.Errorf("SortLink: %s", got)
	}
	if got := v.Fragment("/ui/jobs"); got != "/ui/jobs?fragment=1&page=2&size=10&sort=status&status=Success" {
		t.Errorf("Fragment: %s", got)
	}
	for _, bad := range []url.Values{{"page": {"0"}}, {"size": {"501"}}, {"sort": {"password"}}} {
		if _, _, err := ParseList(bad, "-createdAt", sortable); err == nil {
			t.Errorf("ParseList(%v) accepted", bad)
		}
	}
}

func TestTaxonomiesAndTypedTree(t *testing.T) {
	got := Taxonomies(map[string]any{"taxonomies": []any{
		map[string]any{"level": "malicious", "namespace": "<n>", "predicate": "p", "value": 3.0},
		map[string]any{"level": "<script>", "namespace": "n"}, "not an object"}})
	if len(got) != 2 || got[0] != (Taxonomy{"malicious", "<n>", "p", "3"}) || got[1].Level != "info" {
		t.Errorf("Taxonomies: %+v", got)
	}
	// A typed value (a responder's operations) is shown as its JSON, escaped.
	tree := string(JSONTree([]map[string]any{{"type": "AddTag", "tag": "<b>x</b>"}}))
	if !strings.Contains(tree, `<span class="j-key">tag</span>`) || strings.Contains(tree, "<b>") || !strings.Contains(tree, "&lt;b&gt;") {
		t.Errorf("JSONTree of a typed value: %s", tree)
	}
}
