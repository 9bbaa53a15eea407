package webui

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// JSONTree renders any JSON value as nested, collapsible lists; every key and value is escaped. It writes
// without fmt and escapes into a pooled buffer: a report of 1 MiB is some 40,000 values and 5 MB of HTML
// (issue 25's bench row).
func JSONTree(v any) template.HTML {
	b := getBuf()
	defer putBuf(b)
	b.WriteString(`<div class="jsontree">`)
	writeTree(b, v, 0)
	b.WriteString(`</div>`)
	return template.HTML(b.String()) //nolint:gosec // every value is escaped by writeTree
}

func writeTree(b *outBuf, v any, depth int) {
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
		b.WriteString(`<details` + open + `><summary>{`)
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteString(`}</summary><ul>`)
		for _, k := range sortedKeys(x) {
			b.WriteString(`<li><span class="j-key">`)
			escapeTo(b, k, &htmlEscapes)
			b.WriteString(`</span>: `)
			writeTree(b, x[k], depth+1)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ul></details>`)
	case []any:
		if len(x) == 0 {
			b.WriteString(`<span class="j-empty">[]</span>`)
			return
		}
		b.WriteString(`<details` + open + `><summary>[`)
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteString(`]</summary><ol start="0">`)
		for _, e := range x {
			b.WriteString(`<li>`)
			writeTree(b, e, depth+1)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ol></details>`)
	case string:
		b.WriteString(`<span class="j-str">"`)
		escapeTo(b, x, &htmlEscapes)
		b.WriteString(`"</span>`)
	case nil:
		b.WriteString(`<span class="j-null">null</span>`)
	case bool:
		b.WriteString(`<span class="j-bool">` + strconv.FormatBool(x) + `</span>`)
	case json.Number:
		b.WriteString(`<span class="j-num">`)
		escapeTo(b, string(x), &htmlEscapes)
		b.WriteString(`</span>`)
	case float64:
		b.WriteString(`<span class="j-num">`)
		b.appendFloat(x)
		b.WriteString(`</span>`)
	case int:
		b.WriteString(`<span class="j-num">`)
		b.b = strconv.AppendInt(b.b, int64(x), 10)
		b.WriteString(`</span>`)
	case int64:
		b.WriteString(`<span class="j-num">`)
		b.b = strconv.AppendInt(b.b, x, 10)
		b.WriteString(`</span>`)
	case float32, int32, uint, uint64:
		b.WriteString(`<span class="j-num">`)
		escapeTo(b, fmt.Sprint(x), &htmlEscapes)
		b.WriteString(`</span>`)
	default:
		// A typed value (a []map[string]any of operations, a struct): its JSON form, as generic values.
		if g, ok := generic(x); ok {
			writeTree(b, g, depth)
			return
		}
		b.WriteString(`<span class="j-str">`)
		escapeTo(b, fmt.Sprint(x), &htmlEscapes)
		b.WriteString(`</span>`)
	}
}

// outBuf is the buffer JSONTree and JSONText write into, taken from a pool so that a large report is not
// written into a buffer grown from nothing, copied at every step (5 MB of HTML for a report of 1 MiB). With a
// writer (a Slot's), it is flushed to it every flushAt bytes and stays small.
type outBuf struct {
	b   []byte
	w   io.Writer
	err error // the writer's first error; later writes are dropped
}

const flushAt = 32 << 10

func (b *outBuf) WriteString(s string) {
	b.b = append(b.b, s...)
	if b.w != nil && len(b.b) >= flushAt {
		b.flush()
	}
}

func (b *outBuf) byte1(c byte) { b.b = append(b.b, c) }

func (b *outBuf) flush() {
	if b.err == nil && len(b.b) > 0 {
		_, b.err = b.w.Write(b.b)
	}
	b.b = b.b[:0]
}

func (b *outBuf) String() string { return string(b.b) }

// appendFloat writes f as encoding/json does (no exponent from 1e-6 to 1e21; NaN and infinities, which JSON
// has not, as null).
func (b *outBuf) appendFloat(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b.WriteString("null")
		return
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b.b = strconv.AppendFloat(b.b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9, as encoding/json
		if n := len(b.b); n >= 4 && b.b[n-4] == 'e' && b.b[n-3] == '-' && b.b[n-2] == '0' {
			b.b[n-2] = b.b[n-1]
			b.b = b.b[:n-1]
		}
	}
}

var outBufs = sync.Pool{New: func() any { return &outBuf{b: make([]byte, 0, 64<<10)} }}

// maxPooledOut is the largest buffer kept for the next page.
const maxPooledOut = 16 << 20

func getBuf() *outBuf { return outBufs.Get().(*outBuf) }

func putBuf(b *outBuf) {
	if cap(b.b) > maxPooledOut {
		return
	}
	b.b, b.w, b.err = b.b[:0], nil, nil
	outBufs.Put(b)
}

// Slot is a large part of a page that Go code writes rather than the template: the template prints its
// Marker where it goes and Render writes the part there, in pieces straight into the response, instead of
// building it as one string that the template engine copies through fmt (a report's tree and raw JSON: some
// 6 MB of HTML for a 1 MiB report).
type Slot struct {
	marker string
	write  func(*outBuf)
}

// slotNonce makes the markers of this process unguessable; and every value a page prints is escaped, so no
// value can print "<!--" anyway.
var slotNonce = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

func newSlot(name string, write func(*outBuf)) Slot {
	return Slot{marker: "<!--slot-" + slotNonce + "-" + name + "-->", write: write}
}

// TreeSlot is JSONTree(v) as a Slot.
func TreeSlot(name string, v any) Slot {
	return newSlot(name, func(b *outBuf) {
		b.WriteString(`<div class="jsontree">`)
		writeTree(b, v, 0)
		b.WriteString(`</div>`)
	})
}

// TextSlot is JSONText(v) as a Slot.
func TextSlot(name string, v any) Slot {
	return newSlot(name, func(b *outBuf) { writeJSON(b, v, 0) })
}

// Marker is what the template prints where the slot goes.
func (s Slot) Marker() template.HTML {
	return template.HTML(s.marker) //nolint:gosec // a constant comment
}

func (s Slot) writeTo(w io.Writer) error {
	b := getBuf()
	defer putBuf(b)
	b.w = w
	s.write(b)
	b.flush()
	return b.err
}

// JSONText renders any JSON value as indented JSON text (two spaces, keys sorted, as json.MarshalIndent),
// escaped for an element's content (a <pre>): &, < and > as entities. In one pass, without encoding/json's
// reflection, for a report's raw view.
func JSONText(v any) template.HTML {
	b := getBuf()
	defer putBuf(b)
	writeJSON(b, v, 0)
	return template.HTML(b.String()) //nolint:gosec // every string is escaped by writeJSONString
}

func writeJSON(b *outBuf, v any, depth int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.byte1('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.byte1(',')
			}
			newline(b, depth+1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSON(b, x[k], depth+1)
		}
		newline(b, depth)
		b.byte1('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.byte1('[')
		for i, e := range x {
			if i > 0 {
				b.byte1(',')
			}
			newline(b, depth+1)
			writeJSON(b, e, depth+1)
		}
		newline(b, depth)
		b.byte1(']')
	case string:
		writeJSONString(b, x)
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		escapeTo(b, string(x), &textEscapes)
	case float64:
		b.appendFloat(x)
	case int:
		b.b = strconv.AppendInt(b.b, int64(x), 10)
	case int64:
		b.b = strconv.AppendInt(b.b, x, 10)
	default: // another number type, a typed value: its JSON form, as generic values
		if g, ok := generic(x); ok {
			writeJSON(b, g, depth)
			return
		}
		b.WriteString("null")
	}
}

// newline starts a line of JSONText at depth.
func newline(b *outBuf, depth int) {
	b.byte1('\n')
	for n := 2 * depth; n > 0; n -= len(spaces) {
		b.WriteString(spaces[:min(n, len(spaces))])
	}
}

const spaces = "                                " // 32

// generic is v's JSON form as generic values (map[string]any, []any, string, json.Number, bool or nil).
func generic(v any) (any, bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g any
	return g, dec.Decode(&g) == nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// htmlEscapes are html.EscapeString's; textEscapes those of an element's content.
var htmlEscapes, textEscapes [256]string

func init() {
	for c, e := range map[byte]string{'&': "&amp;", '<': "&lt;", '>': "&gt;"} {
		htmlEscapes[c], textEscapes[c] = e, e
	}
	htmlEscapes['\''], htmlEscapes['"'] = "&#39;", "&#34;"
}

// escapeTo writes s with the bytes that table names replaced.
func escapeTo(b *outBuf, s string, table *[256]string) {
	last := 0
	for i := 0; i < len(s); i++ {
		if e := table[s[i]]; e != "" {
			b.WriteString(s[last:i])
			b.WriteString(e)
			last = i + 1
		}
	}
	b.WriteString(s[last:])
}

// writeJSONString writes s as a JSON string as encoding/json does (invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped), with &, < and > as HTML entities rather than \u escapes.
func writeJSONString(b *outBuf, s string) {
	b.byte1('"')
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			var e string
			switch {
			case c == '"':
				e = `\"`
			case c == '\\':
				e = `\\`
			case c == '\n':
				e = `\n`
			case c == '\r':
				e = `\r`
			case c == '\t':
				e = `\t`
			case c < 0x20:
				e = `\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf])
			default:
				e = textEscapes[c]
			}
			if e != "" {
				b.WriteString(s[last:i])
				b.WriteString(e)
				last = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b.WriteString(s[last:i])
			switch r {
			case '\u2028':
				b.WriteString(`\u2028`)
			case '\u2029':
				b.WriteString(`\u2029`)
			default:
				b.WriteString(`\ufffd`)
			}
			last = i + size
		}
		i += size
	}
	b.WriteString(s[last:])
	b.byte1('"')
}

const hexDigits = "0123456789abcdef"

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
