package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// pageBudget is the budget for the first load of a page: HTML, style sheet and script together.
const pageBudget = 150_000

// maxTabs bounds the Tab presses of the keyboard check on long pages.
const maxTabs = 60

// checkPage runs the checks every visited page must pass: every control named (a label check in JS and the
// accessibility tree), text contrast WCAG AA in the light and the dark scheme, a Tab order that moves forward
// through the page with a visible focus, the page weight, and no console error, exception or failed request.
// With a name, it also writes the page's screenshot.
func (tb *tab) checkPage(name string) {
	tb.t.Helper()
	where := tb.path()
	if name != "" {
		where = name + " (" + where + ")"
	}
	t0 := time.Now()
	for _, p := range eval[[]string](tb, jsUnlabelled) {
		tb.t.Errorf("%s: %s", where, p)
	}
	for _, p := range tb.unnamedAX() {
		tb.t.Errorf("%s: accessibility tree: %s", where, p)
	}
	for _, scheme := range []string{"light", "dark"} {
		tb.emulateScheme(scheme)
		for _, p := range eval[[]string](tb, jsContrast) {
			tb.t.Errorf("%s: contrast below WCAG AA in the %s scheme: %s", where, scheme, p)
		}
	}
	tb.emulateScheme("")
	t1 := time.Now()
	for _, p := range tb.tabOrder() {
		tb.t.Errorf("%s: keyboard: %s", where, p)
	}
	tb.mu.Lock()
	weight, requests := tb.bytes, tb.requests
	tb.mu.Unlock()
	if weight > pageBudget {
		tb.t.Errorf("%s: page weight %.0f bytes (%d requests) over the budget of %d", where, weight, requests, pageBudget)
	}
	tb.t.Logf("%s: %.1f KB in %d requests; checks %s, of which Tab walk %s", where, weight/1000, requests, time.Since(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	tb.assertClean(where)
	if name != "" {
		tb.screenshot(name)
	}
}

// jsUnlabelled lists form controls with no label (a <label>, aria-label or aria-labelledby; a placeholder or a
// title is not one), and buttons, links and summaries with no text, and duplicate ids.
const jsUnlabelled = `(() => {
  const out = [];
  const desc = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.getAttribute("name") ? "[name=" + el.getAttribute("name") + "]" : "");
  const aria = el => (el.getAttribute("aria-label") || "").trim() || (el.getAttribute("aria-labelledby") || "").split(/\s+/)
    .map(id => document.getElementById(id)).filter(Boolean).map(e => e.textContent.trim()).join("");
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    const labelled = Array.prototype.some.call(el.labels || [], l => l.textContent.trim() !== "");
    if (!labelled && !aria(el)) out.push("control without a label: " + desc(el));
  }
  for (const el of document.querySelectorAll("button, a[href], summary")) {
    if (!el.textContent.trim() && !aria(el)) out.push(el.tagName.toLowerCase() + " without text: " + desc(el) + " " + el.outerHTML.slice(0, 120));
  }
  const seen = {};
  for (const el of document.querySelectorAll("[id]")) {
    if (seen[el.id]) out.push("duplicate id: " + el.id);
    seen[el.id] = true;
  }
  return out;
})()`

// unnamedAX lists the interactive nodes of the accessibility tree that have no accessible name.
func (tb *tab) unnamedAX() []string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		tb.fatal(fmt.Errorf("accessibility tree: %w", err))
	}
	interactive := map[string]bool{"textbox": true, "searchbox": true, "button": true, "combobox": true,
		"listbox": true, "checkbox": true, "radio": true, "link": true, "spinbutton": true, "slider": true,
		"switch": true, "tab": true, "menuitem": true}
	var out []string
	for _, n := range res.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := axString(n.Role)
		if !interactive[role] {
			continue
		}
		if name := axString(n.Name); strings.TrimSpace(name) == "" {
			out = append(out, fmt.Sprintf("%s without an accessible name (DOM node %d)", role, n.BackendDOMNodeID))
		}
	}
	return out
}

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) != nil {
		return string(v.Value)
	}
	return s
}

// emulateScheme sets prefers-color-scheme ("" removes the override).
func (tb *tab) emulateScheme(scheme string) {
	tb.t.Helper()
	p := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, p); err != nil {
		tb.fatal(fmt.Errorf("emulate %s scheme: %w", scheme, err))
	}
}

// jsContrast lists the visible texts (and the values of text fields) whose contrast with the background
// under them is below WCAG 2 AA: 4.5:1, or 3:1 for large text (24px, or 18.66px bold). Colours in any CSS
// syntax are read through a canvas; semi-transparent backgrounds are composited down to an opaque one (the
// page's Canvas colour when none is).
const jsContrast = `(() => {
  const cv = document.createElement("canvas"); cv.width = cv.height = 1;
  const cx = cv.getContext("2d", { willReadFrequently: true });
  const rgba = c => { cx.clearRect(0, 0, 1, 1); cx.fillStyle = "rgba(0,0,0,0)"; cx.fillStyle = c; cx.fillRect(0, 0, 1, 1);
    const d = cx.getImageData(0, 0, 1, 1).data; return [d[0], d[1], d[2], d[3] / 255]; };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const probe = document.createElement("div"); probe.style.backgroundColor = "Canvas"; document.body.appendChild(probe);
  const canvas = rgba(getComputedStyle(probe).backgroundColor); probe.remove(); canvas[3] = 1;
  const background = el => {
    const layers = [];
    for (let a = el; a && a.nodeType === 1; a = a.parentElement) {
      const c = rgba(getComputedStyle(a).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = canvas;
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const out = [];
  const fields = "input:not([type=checkbox]):not([type=radio]):not([type=hidden]):not([type=file]), textarea, select";
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("option, script, style, [aria-hidden=true]") || el.closest(":disabled")) continue;
    const own = Array.prototype.some.call(el.childNodes, n => n.nodeType === 3 && n.textContent.trim() !== "");
    if (!own && !(el.matches(fields) && el.value)) continue;
    const s = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) || r.width <= 1 || r.height <= 1) continue;
    let o = 1; for (let a = el; a && a.nodeType === 1; a = a.parentElement) o *= parseFloat(getComputedStyle(a).opacity);
    if (o === 0) continue;
    const bg = background(el);
    const fgc = rgba(s.color); fgc[3] *= o;
    const fg = over(fgc, bg);
    const size = parseFloat(s.fontSize), bold = parseInt(s.fontWeight, 10) >= 700;
    const need = (size >= 24 || (size >= 18.66 && bold)) ? 3 : 4.5;
    const got = ratio(fg, bg);
    if (got < need) {
      const text = (el.matches(fields) ? el.value : el.textContent).trim().replace(/\s+/g, " ").slice(0, 40);
      out.push(el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\s+/g, ".") : "") +
        " \"" + text + "\" " + got.toFixed(2) + ":1 < " + need + ":1 (" + s.color + " on rgb(" + bg.slice(0, 3).map(Math.round).join(",") + "))");
    }
  }
  return out;
})()`

// tabOrder presses Tab from the start of the page and checks that the focus moves forward in document order,
// to a visibly focused element, and, when it leaves the page within maxTabs presses, that it reached every
// focusable element on the way. A positive tabindex, which takes an element out of the page's order, is
// reported as such.
func (tb *tab) tabOrder() []string {
	tb.t.Helper()
	// A focus point at the very start of the body, so the walk starts where a user's first Tab does; the
	// focusable elements a user can reach (visible, enabled, one radio per group).
	tabbable := eval[int](tb, `(() => { const s = document.createElement("span"); s.id = "__ui_test_start"; s.tabIndex = -1;
	  document.body.insertBefore(s, document.body.firstChild); s.focus();
	  const groups = {};
	  window.__uiTabbable = Array.prototype.filter.call(document.querySelectorAll(
	    "a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex='-1'])"),
	    el => { if (el.disabled || el.tabIndex < 0 || !el.checkVisibility({ visibilityProperty: true })) return false;
	      if (el.type === "radio" && el.name) { if (groups[el.name]) return false; groups[el.name] = true; }
	      return true; });
	  window.__uiSeen = new Set();
	  return window.__uiTabbable.length; })()`)
	defer eval[bool](tb, `(() => { const s = document.getElementById("__ui_test_start"); if (s) s.remove(); return true; })()`)
	var out []string
	out = append(out, eval[[]string](tb, `Array.prototype.filter.call(document.querySelectorAll("[tabindex]"), el => el.tabIndex > 0)
	  .map(el => "positive tabindex " + el.tabIndex + " on " + el.tagName.toLowerCase() + " \"" + el.textContent.trim().slice(0, 30) + "\"")`)...)
	type step struct {
		Index   int    `json:"index"`
		Desc    string `json:"desc"`
		Visible bool   `json:"visible"`
		Out     bool   `json:"out"`
		Parts   bool   `json:"parts"` // a field with parts that Tab walks (date, time)
	}
	prev := step{Index: -1}
	steps, left := 0, false
	for presses := 0; presses < maxTabs && presses <= tabbable; presses++ {
		tb.must(chromedp.KeyEvent(kb.Tab))
		s := eval[step](tb, `(() => { const el = document.activeElement;
		  if (!el || el === document.body || el.id === "__ui_test_start") return { index: -1, desc: "", visible: true, out: true };
		  window.__uiSeen.add(el);
		  const s = getComputedStyle(el);
		  const ring = (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== "none";
		  return { index: Array.prototype.indexOf.call(document.getElementsByTagName("*"), el),
		    desc: el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " \"" + (el.textContent || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 30) + "\"",
		    visible: ring, out: false, parts: el.tagName === "INPUT" && /^(date|time|datetime-local|month|week)$/.test(el.type) }; })()`)
		if s.Out {
			left = true
			break
		}
		steps++
		// Tab walks the parts of a date or time field (day, month, year) on the same element.
		if s.Index < prev.Index || s.Index == prev.Index && !s.Parts {
			out = append(out, fmt.Sprintf("Tab %d went back from %s to %s", steps, prev.Desc, s.Desc))
		}
		if !s.Visible {
			out = append(out, fmt.Sprintf("no visible focus on %s", s.Desc))
		}
		prev = s
	}
	if left {
		out = append(out, eval[[]string](tb, `window.__uiTabbable.filter(el => !window.__uiSeen.has(el)).map(el =>
		  "Tab never reached " + el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " \"" + (el.textContent || el.getAttribute("aria-label") || "").trim().slice(0, 30) + "\"")`)...)
	}
	if want := min(tabbable, 3); steps < want {
		out = append(out, fmt.Sprintf("Tab reached only %d of the page's %d focusable elements", steps, tabbable))
	}
	return out
}
