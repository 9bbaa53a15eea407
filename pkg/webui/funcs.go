package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Funcs are the template functions every page may use.
func Funcs() template.FuncMap {
	return template.FuncMap{
		"asset":    Asset,
		"markdown": Markdown,
		"jsontree": JSONTree,
		"date":     Date,
		"severity": Severity,
		"tlp":      TLP,
		"join":     strings.Join,
		"with":     WithParam,
		"has":      func(list []string, v string) bool { return contains(list, v) },
		"add":      func(a, b int) int { return a + b },
		// sortcol is a sortable column's header for "ui-th": the list, the field (storage path), the label.
		"sortcol": func(v List, field, label string) Column { return Column{V: v, Field: field, Label: label} },
		// taxonomyList reads a report summary's taxonomies for "ui-taxonomies".
		"taxonomyList": Taxonomies,
		"json": func(v any) string {
			b, _ := json.Marshal(v)
			return string(b)
		},
	}
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

var (
	md = goldmark.New(goldmark.WithExtensions(extension.GFM)) // raw HTML is not rendered (goldmark's default)
	// policy keeps what markdown writes but images (nothing is loaded from another host); links only to http,
	// https and mailto, opened apart from the page without a referrer.
	policy = func() *bluemonday.Policy {
		p := bluemonday.NewPolicy()
		p.AllowElements("p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "hr",
			"h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td")
		p.AllowAttrs("href").OnElements("a")
		p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
		p.AllowURLSchemes("http", "https", "mailto")
		p.RequireParseableURLs(true)
		p.RequireNoReferrerOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(true)
		return p
	}()
)

// Markdown renders user-written markdown as sanitised HTML: no raw HTML, no script, links to http(s) and
// mailto only.
func Markdown(s string) template.HTML {
	var buf bytes.Buffer
	if err := md.Convert([]byte(s), &buf); err != nil {
		return template.HTML("<p>" + html.EscapeString(s) + "</p>")
	}
	return template.HTML(policy.SanitizeBytes(buf.Bytes())) //nolint:gosec // sanitised above
}

// JSONTree renders any JSON value as nested, collapsible lists; every key and value is escaped.
func JSONTree(v any) template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="jsontree">`)
	writeTree(&b, v, 0)
	b.WriteString(`</div>`)
	return template.HTML(b.String()) //nolint:gosec // every value is escaped by writeTree
}

func writeTree(b *strings.Builder, v any, depth int) {
	open := ""
	if depth < 2 {
		open = " open"
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString(`<span class="j-empty">{}</span>`)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(b, `<details%s><summary>{%d}</summary><ul>`, open, len(x))
		for _, k := range keys {
			fmt.Fprintf(b, `<li><span class="j-key">%s</span>: `, html.EscapeString(k))
			writeTree(b, x[k], depth+1)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ul></details>`)
	case []any:
		if len(x) == 0 {
			b.WriteString(`<span class="j-empty">[]</span>`)
			return
		}
		fmt.Fprintf(b, `<details%s><summary>[%d]</summary><ol start="0">`, open, len(x))
		for _, e := range x {
			b.WriteString(`<li>`)
			writeTree(b, e, depth+1)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ol></details>`)
	case string:
		fmt.Fprintf(b, `<span class="j-str">"%s"</span>`, html.EscapeString(x))
	case nil:
		b.WriteString(`<span class="j-null">null</span>`)
	case bool:
		fmt.Fprintf(b, `<span class="j-bool">%t</span>`, x)
	case float64, float32, int, int64, int32, uint, uint64, json.Number:
		fmt.Fprintf(b, `<span class="j-num">%s</span>`, html.EscapeString(fmt.Sprint(x)))
	default:
		// A typed value (a []map[string]any of operations, a struct): its JSON form, as generic values.
		var g any
		if raw, err := json.Marshal(x); err == nil && json.Unmarshal(raw, &g) == nil {
			writeTree(b, g, depth) // g is generic: map[string]any, []any, string, float64, bool or nil
			return
		}
		fmt.Fprintf(b, `<span class="j-str">%s</span>`, html.EscapeString(fmt.Sprint(x)))
	}
}

// Date renders a time (time.Time, or epoch milliseconds) as UTC minutes; zero renders "".
func Date(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case int64:
		if x != 0 {
			t = time.UnixMilli(x)
		}
	case *int64:
		if x != nil {
			t = time.UnixMilli(*x)
		}
	}
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// Severity names a severity level (1 low … 4 critical).
func Severity(n int) string {
	switch n {
	case 1:
		return "low"
	case 2:
		return "medium"
	case 3:
		return "high"
	case 4:
		return "critical"
	}
	return strconv.Itoa(n)
}

// TLP names a TLP or PAP level.
func TLP(n int) string {
	switch n {
	case 0:
		return "white"
	case 1:
		return "green"
	case 2:
		return "amber"
	case 3:
		return "red"
	}
	return strconv.Itoa(n)
}

// WithParam returns the query string of u with key set to value ("" removes it) and page reset unless the key
// is page: the links of filters, sorts and pages keep every other part of the view.
func WithParam(q url.Values, key, value string) string {
	n := url.Values{}
	for k, v := range q {
		n[k] = append([]string(nil), v...)
	}
	if key != "page" {
		n.Del("page")
	}
	if value == "" {
		n.Del(key)
	} else {
		n.Set(key, value)
	}
	if len(n) == 0 {
		return "?"
	}
	return "?" + n.Encode()
}
