// Package webuitest checks pages of the web interfaces without a browser: the security headers, the page
// weight, and the markup a browser and a screen reader rely on (one h1, a label for every control, unique
// ids, no inline script, style or event handler, no javascript: URL). Both services' page tests use it.
package webuitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/openir/platform/pkg/webui"
)

// Get GETs url with a Bearer key (when not "") or the session cookie of jar (may be nil) and returns the
// status, headers and body; redirects are not followed (a page without a session answers the login page's).
func Get(t testing.TB, url, key string, jar http.CookieJar) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	hc := &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// MaxPage is the budget of a page's HTML (the first load stays under 150 KB).
const MaxPage = 150 << 10

// CheckPage checks a page's headers (CSP, nosniff, no-store, no-referrer), its weight and its markup, and
// returns the parsed document.
func CheckPage(t testing.TB, path string, hdr http.Header, body string) *html.Node {
	t.Helper()
	if csp := hdr.Get("Content-Security-Policy"); csp != webui.CSP {
		t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
	}
	for h, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
		"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
		if hdr.Get(h) != v {
			t.Errorf("GET %s: %s %q, want %q", path, h, hdr.Get(h), v)
		}
	}
	if len(body) > MaxPage {
		t.Errorf("GET %s: %d bytes, over the 150 KB budget", path, len(body))
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	CheckMarkup(t, path, doc)
	return doc
}

// CheckMarkup checks what every page must hold: html lang, a title, one h1, a label or accessible name for
// every control, unique ids, text on buttons and links, scope on column headers, no inline script or style,
// no event-handler attribute, no javascript: URL.
func CheckMarkup(t testing.TB, path string, doc *html.Node) {
	t.Helper()
	ids := map[string]int{}
	labels := map[string]bool{}
	var h1, titles int
	var controls []*html.Node
	Walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		for _, a := range n.Attr {
			if a.Key == "id" {
				ids[a.Val]++
			}
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("%s: <%s %s=…>: an inline event handler", path, n.Data, a.Key)
			}
			if a.Key == "style" {
				t.Errorf("%s: <%s style=…>: an inline style", path, n.Data)
			}
			if (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
				t.Errorf("%s: <%s %s=%q>", path, n.Data, a.Key, a.Val)
			}
		}
		switch n.Data {
		case "html":
			if Attr(n, "lang") == "" {
				t.Errorf("%s: <html> without lang", path)
			}
		case "title":
			titles++
		case "h1":
			h1++
		case "script":
			if Attr(n, "src") == "" {
				t.Errorf("%s: an inline <script>", path)
			}
		case "style":
			t.Errorf("%s: an inline <style>", path)
		case "label":
			if f := Attr(n, "for"); f != "" {
				labels[f] = true
			}
		case "input", "select", "textarea":
			if Attr(n, "type") != "hidden" {
				controls = append(controls, n)
			}
		case "button", "a":
			if strings.TrimSpace(Text(n)) == "" && Attr(n, "aria-label") == "" {
				t.Errorf("%s: <%s> without text", path, n.Data)
			}
		case "th":
			if n.Parent != nil && n.Parent.Parent != nil && n.Parent.Parent.Data == "thead" && Attr(n, "scope") == "" {
				t.Errorf("%s: <th> without scope", path)
			}
		}
	})
	if titles != 1 || h1 != 1 {
		t.Errorf("%s: %d titles and %d h1, want one of each", path, titles, h1)
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("%s: id %q used %d times", path, id, n)
		}
	}
	for _, c := range controls {
		named := Attr(c, "aria-label") != "" || labels[Attr(c, "id")] && Attr(c, "id") != ""
		for p := c.Parent; p != nil && !named; p = p.Parent {
			named = p.Data == "label"
		}
		if !named {
			t.Errorf("%s: <%s name=%q> has no label", path, c.Data, Attr(c, "name"))
		}
	}
}

// Walk calls f on n and every node under it, in document order.
func Walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		Walk(c, f)
	}
}

// Attr is the value of an attribute ("" when absent).
func Attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// Text is the text under n.
func Text(n *html.Node) string {
	var b strings.Builder
	Walk(n, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return b.String()
}

// Find returns the elements under doc that match.
func Find(doc *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	Walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
	})
	return out
}

// WriteControls are the page's controls that change something (forms and buttons sent to the API, and
// buttons that reveal a secret).
func WriteControls(doc *html.Node) []*html.Node {
	return Find(doc, func(n *html.Node) bool {
		return (Attr(n, "data-api") != "" || Attr(n, "data-reveal") != "") && n.Data != "body"
	})
}

// Hostile are values that break out of HTML when a page writes them unescaped.
var Hostile = []string{`<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, `"'><b>x</b>`}

// CheckEscaped fails when a hostile value is in the page as markup: the raw string in the body, or an
// element (script not from the interface's static files, img, b) that can only come from a value.
func CheckEscaped(t testing.TB, path, body string, doc *html.Node) {
	t.Helper()
	for _, h := range Hostile {
		if strings.Contains(body, h) {
			t.Errorf("%s: %q is in the page unescaped", path, h)
		}
	}
	for _, n := range Find(doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "img" || n.Data == "b" }) {
		if n.Data == "script" && strings.HasPrefix(Attr(n, "src"), webui.Prefix+"/static/") {
			continue
		}
		t.Errorf("%s: a <%s> element came from a value", path, n.Data)
	}
}

// FormBody is the JSON body ui.js's formBody builds from a form as the page rendered it, with fill changing
// fields as a user would (by id: an input's or textarea's text, a select's option value, "on" or "" for a
// checkbox): data-type, data-omit-empty, data-if-checked and dotted names as the script reads them. Tests send
// it to the form's data-api route, so that what a page's form sends is what the test checks.
func FormBody(t testing.TB, form *html.Node, fill map[string]string) map[string]any {
	t.Helper()
	body := map[string]any{}
	for _, el := range Find(form, func(n *html.Node) bool { return n.Data == "input" || n.Data == "select" || n.Data == "textarea" }) {
		name, typ := Attr(el, "name"), Attr(el, "type")
		_, disabled := attr(el, "disabled")
		if name == "" || disabled || name == "sel" || name == "analyzer" || typ == "file" || typ == "submit" || typ == "button" {
			continue
		}
		v, filled := fill[Attr(el, "id")]
		if typ == "checkbox" || typ == "radio" {
			_, checked := attr(el, "checked")
			if filled {
				checked = v != ""
			}
			if typ == "radio" && !checked {
				continue
			}
			if js, ok := attr(el, "data-if-checked"); ok {
				if checked {
					setPath(body, name, decode(t, js))
				}
				continue
			}
			setPath(body, name, checked)
			continue
		}
		if !filled {
			v = fieldValue(el)
		}
		val := typed(t, Attr(el, "data-type"), v)
		if _, omit := attr(el, "data-omit-empty"); omit {
			if l, isList := val.([]any); val == nil || val == "" || isList && len(l) == 0 {
				continue
			}
		}
		setPath(body, name, val)
	}
	return body
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// fieldValue is a field's value as rendered: an input's value, a textarea's text, a select's selected option
// (the first when none is).
func fieldValue(el *html.Node) string {
	switch el.Data {
	case "textarea":
		return strings.TrimPrefix(Text(el), "\n")
	case "select":
		opts := Find(el, func(n *html.Node) bool { return n.Data == "option" })
		for _, o := range opts {
			if _, sel := attr(o, "selected"); sel {
				return optionValue(o)
			}
		}
		if len(opts) > 0 {
			return optionValue(opts[0])
		}
		return ""
	}
	return Attr(el, "value")
}

func optionValue(o *html.Node) string {
	if v, ok := attr(o, "value"); ok {
		return v
	}
	return strings.TrimSpace(Text(o))
}

// typed converts a value by its data-type as ui.js's value() does.
func typed(t testing.TB, typ, v string) any {
	t.Helper()
	lines := func(sep string) []any {
		out := []any{}
		for _, s := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	switch typ {
	case "int", "float", "json":
		if v == "" {
			return nil
		}
		return decode(t, v)
	case "bool":
		if v == "" {
			return nil
		}
		return v == "true"
	case "list":
		return lines("\n,")
	case "lines":
		return lines("\n")
	}
	return v
}

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("a field's value %q is not JSON: %v", s, err)
	}
	return v
}

func setPath(obj map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := obj[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[p] = next
		}
		obj = next
	}
	obj[parts[len(parts)-1]] = v
}
