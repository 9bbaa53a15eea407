package webui

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// List is the paging and sorting of a list page, read from its query string (page, size, sort), so that a
// link or a reload shows the same page. The shared templates "ui-pager" (the count, previous and next
// page, the page size) and "ui-th" (a sortable column's header, built with the "sortcol" function) render it.
type List struct {
	Query  url.Values // the page's query string (the filters), without the fragment flag
	Page   int        // from 1
	Size   int
	Sort   string // "-field" or "field"
	Total  int64
	Pages  int
	Sizes  []int
	Offset int
}

// ParseList reads the paging and sorting of a list from q: page (from 1), size (1 to 500, 25 by default) and
// sort ("field" or "-field", one of sortable, the storage paths). A bad value is a 400. The returned sort key
// is what the domain's search takes.
func ParseList(q url.Values, defaultSort string, sortable map[string]bool) (List, []search.SortKey, error) {
	v := List{Query: url.Values{}, Page: 1, Size: 25, Sort: defaultSort, Sizes: []int{15, 25, 50, 100, 500}}
	for k, vs := range q {
		if k != FragmentParam {
			v.Query[k] = vs
		}
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1_000_000 {
			return v, nil, apperr.New(apperr.BadRequest, "page must be a positive number")
		}
		v.Page = n
	}
	if s := q.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return v, nil, apperr.New(apperr.BadRequest, "size must be between 1 and 500")
		}
		v.Size = n
	}
	if s := q.Get("sort"); s != "" {
		if !sortable[strings.TrimPrefix(s, "-")] {
			return v, nil, apperr.New(apperr.BadRequest, "cannot sort by "+strings.TrimPrefix(s, "-"))
		}
		v.Sort = s
	}
	v.Offset = (v.Page - 1) * v.Size
	return v, []search.SortKey{{Path: strings.TrimPrefix(v.Sort, "-"), Desc: strings.HasPrefix(v.Sort, "-")}}, nil
}

// FragmentParam is the query parameter of a page's live region source: the same page, only the region.
const FragmentParam = "fragment"

// SetTotal sets the exact count of the list's records and the number of pages.
func (v *List) SetTotal(n int64) {
	v.Total = n
	v.Pages = int((n + int64(v.Size) - 1) / int64(v.Size))
}

// SortLink is the query string that sorts by field (descending first, then ascending when already so).
func (v List) SortLink(field string) string {
	s := "-" + field
	if v.Sort == s {
		s = field
	}
	return WithParam(v.Query, "sort", s)
}

// SortState is the aria-sort of a column.
func (v List) SortState(field string) string {
	switch v.Sort {
	case field:
		return "ascending"
	case "-" + field:
		return "descending"
	}
	return "none"
}

// PageLink is the query string of page n.
func (v List) PageLink(n int) string { return WithParam(v.Query, "page", strconv.Itoa(n)) }

// Prev is the previous page (0: none).
func (v List) Prev() int { return v.Page - 1 }

// Next is the next page (0: none).
func (v List) Next() int {
	if v.Page >= v.Pages {
		return 0
	}
	return v.Page + 1
}

// Is reports whether the query parameter key is value.
func (v List) Is(key, value string) bool { return v.Query.Get(key) == value }

// Get is the query parameter key.
func (v List) Get(key string) string { return v.Query.Get(key) }

// Fragment is the URL of the list's live region: path with the list's query and the fragment flag.
func (v List) Fragment(path string) string {
	q := url.Values{}
	for k, vs := range v.Query {
		q[k] = vs
	}
	q.Set(FragmentParam, "1")
	return path + "?" + q.Encode()
}

// Column is a sortable column's header ("sortcol" builds it, "ui-th" renders it).
type Column struct {
	V     List
	Field string
	Label string
}

// Taxonomy is one item of a report's summary: level (info, safe, suspicious or malicious, anything else is
// info), namespace, predicate and value.
type Taxonomy struct {
	Level, Namespace, Predicate, Value string
}

// Taxonomies reads the taxonomies of a report's summary ({"taxonomies": [...]}); malformed items are left out
// and non-string values are written as text (escaped where the template writes them).
func Taxonomies(summary map[string]any) []Taxonomy {
	list, _ := summary["taxonomies"].([]any)
	var out []Taxonomy
	for _, t := range list {
		m, _ := t.(map[string]any)
		if m == nil {
			continue
		}
		str := func(k string) string {
			switch v := m[k].(type) {
			case string:
				return v
			case nil:
				return ""
			default:
				return fmt.Sprint(v)
			}
		}
		level := str("level")
		switch level {
		case "info", "safe", "suspicious", "malicious":
		default:
			level = "info"
		}
		out = append(out, Taxonomy{Level: level, Namespace: str("namespace"), Predicate: str("predicate"), Value: str("value")})
	}
	return out
}
