package webui

import (
	"bytes"
	"encoding/json"
	"html"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/labstack/echo/v4"
)

func TestMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"**b** and `c`":                     "<p><strong>b</strong> and <code>c</code></p>",
		"<script>alert(1)</script>":         "",
		"[x](javascript:alert(1))":          "<p>x</p>",
		"[x](JaVaScRiPt:alert(1))":          "<p>x</p>",
		"[x](data:text/html,hi)":            "<p>x</p>",
		"![i](http://evil.example/i.png)":   "<p></p>",
		`<img src=x onerror=alert(1)>`:      "",
		"[ok](https://example.org/a?b=1&c)": `<p><a href="https://example.org/a?b=1&amp;c" rel="noreferrer noopener" target="_blank">ok</a></p>`,
	} {
		if got := strings.TrimSpace(string(Markdown(in))); got != want {
			t.Errorf("Markdown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONTree(t *testing.T) {
	got := string(JSONTree(map[string]any{`<k>`: []any{`"><script>`, 1.5, nil, true}}))
	for _, bad := range []string{"<k>", "<script>"} {
		if strings.Contains(got, bad) {
			t.Errorf("JSONTree left %q unescaped: %s", bad, got)
		}
	}
	for _, want := range []string{"&lt;k&gt;", "&#34;&gt;&lt;script&gt;", ">1.5<", ">null<", ">true<"} {
		if !strings.Contains(got, want) {
			t.Errorf("JSONTree lacks %q: %s", want, got)
		}
	}
}

// JSONText is the value's indented JSON (as json.MarshalIndent without its \u escapes of &, < and >), escaped
// for an element's content: unescaped, it decodes to the value; nothing a report holds opens a tag.
func TestJSONText(t *testing.T) {
	v := map[string]any{
		`<k>`: []any{`"></pre><script>alert(1)</script>`, 1.5, json.Number("12345678901234567890"), nil, true,
			map[string]any{}, []any{}},
		"ctl":  "a\x00b\x1f\n\r\t\\ \"q\" & é \u2028\u2029 \xff",
		"ops":  []map[string]any{{"type": "AddTag", "tag": "<b>x</b>", "n": 3}}, // a typed value
		"deep": map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1}}}},
	}
	got := string(JSONText(v))
	for _, bad := range []string{"<", ">", "\x00", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("JSONText left %q: %s", bad, got)
		}
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if text := html.UnescapeString(got); text != strings.TrimSuffix(want.String(), "\n") {
		t.Errorf("JSONText, unescaped:\n%s\nwant (encoding/json):\n%s", text, want.String())
	}
	if !strings.Contains(got, `"\"&gt;&lt;/pre&gt;&lt;script&gt;`) || !strings.Contains(got, `"a\u0000b\u001f\n`) {
		t.Errorf("JSONText: %s", got)
	}
}

func TestSafeNextAndWithParam(t *testing.T) {
	for in, want := range map[string]string{"/ui/cases?a=1": "/ui/cases?a=1", "": "/ui/", "//evil/ui/x": "/ui/",
		"https://evil/ui/": "/ui/", "/api/x": "/ui/", `/ui/\\evil`: "/ui/", "javascript:alert(1)": "/ui/"} {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
	q := url.Values{"status": {"Open"}, "page": {"3"}}
	if got := WithParam(q, "sort", "-title"); got != "?sort=-title&status=Open" {
		t.Errorf("a new sort keeps the filter and goes back to page 1: %s", got)
	}
	if got := WithParam(q, "page", "4"); got != "?page=4&status=Open" {
		t.Errorf("page: %s", got)
	}
	if got := WithParam(q, "status", ""); got != "?" {
		t.Errorf("clearing: %s", got)
	}
}

// JSONText is encoding/json's indented text (keys sorted, two spaces) with &, < and > as entities: numbers
// of every size, strings that need escapes, typed values.
func TestJSONTextIsIndentedJSON(t *testing.T) {
	v := map[string]any{
		"floats":  []any{0.0, -0.5, 1.0, 100.0, 123456789.125, 1e-7, 1.5e-9, 1e20, 1e21, 3.4e38, -2.5e-300, 0.1 + 0.2},
		"ints":    []any{0, -7, int64(1) << 53, 42},
		"strings": []any{"", `<script>"x"&'y'</script>`, "tab\there\nline\r", "\x00\x1f", "\u2028\u2029", "caf\xe9", "日本"},
		"nested":  map[string]any{"b": map[string]any{}, "a": []any{}, "c": []any{nil, true, false}},
		"typed":   []map[string]any{{"z": 1, "y": []string{"q"}}},
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(strings.TrimSuffix(buf.String(), "\n"))
	if got := string(JSONText(v)); got != want {
		t.Errorf("JSONText:\n%s\nwant:\n%s", got, want)
	}
	if got := string(JSONTree(map[string]any{"n": []any{1e21, 0.5, 1e-7}})); !strings.Contains(got, ">1e+21<") ||
		!strings.Contains(got, ">0.5<") || !strings.Contains(got, ">1e-7<") {
		t.Errorf("JSONTree's numbers are not their JSON text: %s", got)
	}
}

// A page's slots are written where it prints their markers, whatever their order, and a slot not printed or
// not set is left out: the page is the one the template would render with JSONTree and JSONText.
func TestRenderSlots(t *testing.T) {
	pages := fstest.MapFS{"p/page.html": {Data: []byte(`{{define "content"}}<h1>x</h1><pre>{{.Raw.Marker}}</pre>{{.Tree.Marker}}{{if .Show}}{{.Gone.Marker}}{{end}}{{end}}` +
		`{{define "want"}}<h1>x</h1><pre>{{jsontext .V}}</pre>{{jsontree .V}}{{end}}`)}}
	tpl, err := Parse(pages, "p/*.html", "", template.FuncMap{"jsontext": JSONText})
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"k": []any{"<script>", 1.5, strings.Repeat("long ", 20000)}}
	type data struct {
		Raw, Tree, Gone, Unset Slot
		Show                   bool
		V                      any
	}
	d := data{Raw: TextSlot("raw", v), Tree: TreeSlot("tree", v), Gone: TreeSlot("gone", 1), V: v}
	render := func(fragment string, slots ...Slot) string {
		e := echo.New()
		rec := httptest.NewRecorder()
		if err := tpl.Render(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec), http.StatusTeapot, "page", fragment, d, slots...); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Security-Policy") != CSP || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Errorf("status %d, headers %v", rec.Code, rec.Header())
		}
		return rec.Body.String()
	}
	want := render("want")
	if got := render("content", d.Tree, d.Unset, d.Gone, d.Raw); got != want {
		t.Errorf("with slots:\n%.300s\nwant:\n%.300s", got, want)
	}
	if strings.Contains(want, "<script>") || strings.Contains(want, "<!--") {
		t.Errorf("a marker or an unescaped value: %.300s", want)
	}
}
