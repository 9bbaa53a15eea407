package webui

import (
	"net/url"
	"strings"
	"testing"
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
