package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The hostile strings of the issue: a script element, an image with an error handler, quotes that break out
// of an attribute, and markdown links with javascript: and data: targets.
const (
	hScript = `<script>alert(1)</script>`
	hImg    = `<img src=x onerror=alert(1)>`
	hQuote  = `"'><b>x`
	hJSLink = `[click me](javascript:alert(1))`
	hData   = `[open](data:text/html,<script>alert(2)</script>)`
)

// TestHostileStrings writes the hostile strings in a case's title, description and tags, an observable's
// value and a task log through the interface's own forms, and in an alert through the API, then visits every
// page that shows them: each shows them as text, no script runs (no dialog opens), no element, attribute or
// link is made from them, and the console stays clean.
func TestHostileStrings(t *testing.T) {
	h := need(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	title := "Hostile " + suffix + " " + hScript + " " + hQuote + " " + hImg
	description := strings.Join([]string{"Description " + suffix, hScript, hImg, hQuote, hJSLink, hData,
		`<a href="javascript:alert(3)">raw link</a>`, "![image](javascript:alert(4))"}, "\n\n")
	tags := []string{hScript, hImg, hQuote}

	tb := newTab(t)
	tb.login(h.analyst.Login, h.analyst.Password, "")

	// The case, through the New case form.
	tb.open("/ui/cases?new=1")
	tb.must(
		chromedp.SendKeys(chromedp.ID("nc-title"), title),
		chromedp.SendKeys(chromedp.ID("nc-tags"), strings.Join(tags, ", ")),
		chromedp.SetValue(chromedp.ID("nc-desc"), description), // long: set, not typed
	)
	tb.submitAndFollow(`#new-case button[type="submit"]`)
	tb.waitFor("the new case's page", `location.pathname.startsWith("/ui/cases/") && document.querySelector("h1") !== null`)
	caseID := strings.TrimPrefix(eval[string](tb, `location.pathname`), "/ui/cases/")
	cs := apiObject(t, h.analyst.Key, "GET", "/api/case/"+caseID, nil, http.StatusOK)
	if cs["title"] != title || cs["description"] != description {
		t.Errorf("the form stored title %q and description %q, want what was typed", cs["title"], cs["description"])
	}
	tb.hostileCheck("case details", title, hScript, hQuote)

	// Observables: the hostile strings as values of type other.
	tb.clickTab("Observables")
	tb.must(chromedp.Click(chromedp.CSS(`#new-observables summary`)),
		chromedp.SetValue(chromedp.ID("no-type"), "other"),
		chromedp.SendKeys(chromedp.ID("no-data"), strings.Join([]string{hScript, hImg, hQuote, "javascript:alert(1)"}, "\n")),
		chromedp.SendKeys(chromedp.ID("no-tags"), hQuote))
	tb.submitAndFollow(`#new-observables button[type="submit"]`)
	tb.waitFor("four observables", `document.querySelectorAll('#observables input[name="sel"]').length === 4`)
	tb.hostileCheck("observables", hScript, hImg, hQuote, "javascript:alert(1)")
	obs := eval[string](tb, `document.querySelector('#observables a[href^="/ui/observables/"]').getAttribute("href")`)
	tb.open(obs)
	tb.hostileCheck("observable", hQuote)

	// A task and a log, through the Tasks tab.
	tb.open("/ui/cases/" + caseID + "?tab=tasks")
	tb.must(chromedp.Click(chromedp.CSS(`#new-task summary`)),
		chromedp.SendKeys(chromedp.ID("nt-title"), "Task "+hQuote+" "+hScript))
	tb.submitAndFollow(`#new-task button[type="submit"]`)
	tb.waitFor("the task", `document.querySelector('form[aria-label^="Add a log to"] textarea') !== null`)
	// The log's attachment has a hostile file name too.
	attachment := filepath.Join(t.TempDir(), hImg+hQuote+".txt")
	if err := os.WriteFile(attachment, []byte("evidence\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb.must(chromedp.SetValue(chromedp.CSS(`form[aria-label^="Add a log to"] textarea`), description),
		chromedp.SetUploadFiles(chromedp.CSS(`form[aria-label^="Add a log to"] input[type="file"]`), []string{attachment}))
	tb.submitAndFollow(`form[aria-label^="Add a log to"] button[type="submit"]`)
	tb.waitFor("the log", `document.querySelector("article.log") !== null`)
	// A browser sends a file name's double quote as %22 in the multipart header (HTML's form encoding).
	tb.hostileCheck("tasks", "Task "+hQuote+" "+hScript, hScript, hImg, hQuote,
		strings.ReplaceAll(filepath.Base(attachment), `"`, "%22"))

	// Analyzer reports that carry a hostile value: Echo (its report holds the observable) and
	// Observable_Validator, both on one observable, then its page with every report tree open.
	raw, err := h.api(h.analyst.Key, "POST", "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "url",
		"data": []string{"http://example.com/" + hQuote + hScript}}, http.StatusCreated)
	if err != nil {
		t.Fatal(err)
	}
	var created []map[string]any
	if err := json.Unmarshal(raw, &created); err != nil || len(created) != 1 {
		t.Fatalf("hostile url observable: %v: %s", err, raw)
	}
	urlObs := created[0]["_id"].(string)
	for _, analyzer := range []string{h.analyzerID(t, "Echo"), h.validatorID(t)} {
		job := apiObject(t, h.analyst.Key, "POST", "/api/connector/analysis/job", map[string]any{
			"analysisId": "local", "analyzerId": analyzer, "artifactId": urlObs}, http.StatusCreated)
		h.waitJob(t, job["_id"].(string))
	}
	tb.open("/ui/observables/" + urlObs)
	eval[bool](tb, `(document.querySelectorAll("details").forEach(d => d.open = true), true)`)
	tb.hostileCheck("observable with reports", "http://example.com/"+hQuote+hScript)
	tb.open("/ui/cases/" + caseID + "?tab=activity")
	tb.hostileCheck("activity")

	// An alert from a source: title, description, tags, observable.
	al := apiObject(t, h.analyst.Key, "POST", "/api/alert", map[string]any{
		"type": "siem", "source": hQuote, "sourceRef": "hostile-" + suffix, "title": "Alert " + suffix + " " + hScript + hQuote,
		"description": description, "tags": tags, "externalLink": "javascript:alert(5)",
		"artifacts": []map[string]any{{"dataType": "other", "data": hImg}},
	}, 0)
	tb.open("/ui/alerts/" + al["_id"].(string))
	tb.hostileCheck("alert", "Alert "+suffix+" "+hScript+hQuote, hImg)

	// An error message that may echo what was typed: a hostile case number in the alert list's merge form. The
	// API's refusal is expected; its message is shown as text.
	tb.open("/ui/alerts")
	tb.allow("/api/alert/merge/_bulk")
	tb.must(chromedp.Click(chromedp.CSS(`#alert-table input[name="sel"]`)),
		chromedp.SendKeys(chromedp.ID("am-case"), hImg+hQuote))
	tb.must(chromedp.Click(chromedp.CSS(`form[aria-label="Merge the selected alerts into a case"] button[type="submit"]`)))
	tb.waitFor("the refusal's message", `document.getElementById("page-error").textContent.trim() !== ""`)
	t.Logf("merge into a hostile case number: %q", eval[string](tb, `document.getElementById("page-error").textContent`))
	tb.hostileCheck("error message")

	// Lists and the search box, with the strings in the URL too.
	for _, p := range []string{"/ui/cases?q=" + url.QueryEscape(hQuote+hScript), "/ui/cases?tag=" + url.QueryEscape(hImg),
		"/ui/alerts?q=" + url.QueryEscape(hQuote), "/ui/alerts", "/ui/tasks/mine", "/ui/tasks/waiting", "/ui/cases"} {
		tb.open(p)
		tb.hostileCheck(p)
	}
}

// hostileCheck checks the page for the effects of hostile strings: no dialog opened, no element or attribute
// made from them (img src=x, an inline script, on* attributes, a <b> holding "x", a javascript: or data: link),
// each of the given texts shown as text, and the page checks (console, failed requests, accessibility).
func (tb *tab) hostileCheck(page string, texts ...string) {
	tb.t.Helper()
	where := page + " (" + tb.path() + ")"
	for _, d := range tb.takeDialogs() {
		tb.t.Errorf("%s: a dialog opened: %s", where, d)
	}
	for _, p := range eval[[]string](tb, `(() => {
	  const out = [];
	  document.querySelectorAll("img").forEach(i => out.push("img element: " + i.outerHTML));
	  document.querySelectorAll("script:not([src])").forEach(s => out.push("inline script: " + s.outerHTML.slice(0, 80)));
	  document.querySelectorAll("*").forEach(el => { for (const a of el.attributes) if (/^on/i.test(a.name)) out.push("attribute " + a.name + " on " + el.tagName); });
	  document.querySelectorAll("b").forEach(b => { if (b.textContent.trim().startsWith("x")) out.push("b element made from a quote: " + b.outerHTML); });
	  document.querySelectorAll("a[href], form[action], iframe, object, embed").forEach(el => {
	    const u = (el.getAttribute("href") || el.getAttribute("action") || el.getAttribute("src") || el.getAttribute("data") || "").trim().toLowerCase();
	    if (u.startsWith("javascript:") || u.startsWith("data:") || u.startsWith("vbscript:")) out.push("link to " + u + " on " + el.tagName);
	  });
	  return out; })()`) {
		tb.t.Errorf("%s: %s", where, p)
	}
	text := eval[string](tb, `document.body.innerText`)
	for _, s := range texts {
		if !strings.Contains(text, s) {
			tb.t.Errorf("%s: %q is not shown as text", where, s)
		}
	}
	tb.checkPage("")
}
