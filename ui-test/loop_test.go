package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAnalystLoop is the README's loop as a user in the browser: sign in, create a case from a template, add
// three observables, run Observable_Validator on all three and see its report badges arrive without a reload,
// add a task log with an attachment, close the case; then a user of another organisation gets a 404 on it.
func TestAnalystLoop(t *testing.T) {
	h := need(t)
	validator := h.validatorID(t)
	// Each test binary has services of its own: the names need no suffix, and the case view makes a clean
	// screenshot for the README.
	template := "phishing"
	apiObject(t, h.orgAdminKey, "POST", "/api/case/template", map[string]any{
		"name": template, "displayName": "Phishing", "titlePrefix": "[Phish]", "severity": 3,
		"description": "A reported phishing mail.",
		"tasks": []map[string]any{{"title": "Triage", "group": "Identification", "order": 0},
			{"title": "Contain", "group": "Containment", "order": 1}},
	}, http.StatusCreated)

	tb := newTab(t)
	tb.login(h.analyst.Login, h.analyst.Password, "login")
	tb.checkPage("cases")

	// A case from the template, through the New case form of the case list.
	tb.open("/ui/cases?new=1")
	title := "Suspicious login on the VPN gateway"
	tb.must(
		chromedp.SetValue(chromedp.ID("nc-template"), template),
		chromedp.SendKeys(chromedp.ID("nc-title"), title),
		chromedp.SendKeys(chromedp.ID("nc-desc"), "Three addresses to check.\n\n*From the SOC queue.*"),
	)
	tb.checkPage("new-case")
	tb.submitAndFollow(`#new-case button[type="submit"]`)
	tb.waitFor("the new case's page", `location.pathname.startsWith("/ui/cases/") && document.querySelector("h1") !== null`)
	caseID := strings.TrimPrefix(eval[string](tb, `location.pathname`), "/ui/cases/")
	h1 := eval[string](tb, `document.querySelector("h1").textContent`)
	if !strings.Contains(h1, "[Phish]") || !strings.Contains(h1, title) {
		t.Errorf("case page's title %q: want the template's prefix and %q", h1, title)
	}
	cs := apiObject(t, h.analyst.Key, "GET", "/api/case/"+caseID, nil, http.StatusOK)
	if cs["severity"] != float64(3) {
		t.Errorf("case made from the template has severity %v, want the template's 3", cs["severity"])
	}
	tb.checkPage("case-details")

	// Three observables, one per line, on the Observables tab.
	tb.clickTab("Observables")
	tb.must(chromedp.Click(chromedp.CSS(`#new-observables summary`)),
		chromedp.SetValue(chromedp.ID("no-type"), "ip"),
		chromedp.SendKeys(chromedp.ID("no-data"), "10.0.0.1\n10.0.0.2\n203.0.113.7"))
	tb.submitAndFollow(`#new-observables button[type="submit"]`)
	tb.waitFor("three observables", `document.querySelectorAll('#observables input[name="sel"]').length === 3`)

	// Select all, tick Observable_Validator, Run.
	analyzer := fmt.Sprintf(`#run-analyzers input[name="analyzer"][value$="|%s"]`, validator)
	tb.must(chromedp.Click(chromedp.CSS(`#observables input[data-select-all]`)), chromedp.Click(chromedp.CSS(analyzer)))
	if n := eval[int](tb, `document.querySelectorAll('#observables input[name="sel"]:checked').length`); n != 3 {
		t.Fatalf("select all selected %d observables, want 3", n)
	}
	// ui.js reloads the page once the jobs are created; from then on the page must not be reloaded: the
	// badges come through the live region, re-rendered on the stream's job events.
	tb.submitAndFollow(`#run-analyzers button[type="submit"]`)
	tb.markDocument()
	atLoad := eval[int](tb, `document.querySelectorAll("#observables span.tax").length`)
	if err := tb.poll(`(() => { const rows = document.querySelectorAll("#observables tbody tr");
	  return rows.length === 3 && Array.prototype.every.call(rows, r => r.querySelector("span.tax") !== null); })()`); err != nil {
		// Tell a slow analysis from a lost update: what the API has by now.
		done := 0
		raw, _ := h.api(h.analyst.Key, "GET", "/api/case/"+caseID+"/artifact", nil, http.StatusOK)
		var obs []struct {
			Reports map[string]any `json:"reports"`
		}
		json.Unmarshal(raw, &obs)
		for _, o := range obs {
			if len(o.Reports) > 0 {
				done++
			}
		}
		tb.fatal(fmt.Errorf("the report badges did not all appear in the page within %s (%v); the API has the reports of %d of the 3 observables", waitDeadline, err, done))
	}
	if !tb.sameDocument() {
		t.Errorf("the page was reloaded while waiting for the report badges")
	}
	t.Logf("report badges: %d at the page's load", atLoad)
	// The stream's own path, whatever the timing above: once the page has its stream (and refreshed its live
	// parts once, as it does then), a job run from elsewhere must re-render the region on its events alone.
	tb.waitFor("the page's stream", `performance.getEntriesByType("resource").some(e => new URL(e.name).pathname === "/api/stream" && e.responseEnd > 0)`)
	tb.waitFor("the live region's refresh after the stream opened", `document.getElementById("observables").hasAttribute("data-refreshed")`)
	before := eval[string](tb, `document.getElementById("observables").getAttribute("data-refreshed")`)
	obs := eval[string](tb, `document.querySelector('#observables input[name="sel"]').value`)
	job := apiObject(t, h.analyst.Key, "POST", "/api/connector/analysis/job", map[string]any{
		"analysisId": "local", "analyzerId": validator, "artifactId": obs}, 0)
	tb.waitFor("the live region re-rendered on the job's events", fmt.Sprintf(
		`document.getElementById("observables").getAttribute("data-refreshed") !== %q`, before))
	h.waitJob(t, job["_id"].(string))
	if !tb.sameDocument() {
		t.Errorf("the page was reloaded on a job event")
	}
	badges := eval[[]string](tb, `Array.prototype.map.call(document.querySelectorAll("#observables span.tax"), s => s.textContent)`)
	t.Logf("badges: %q", badges)
	tb.checkPage("case-view")
	h.publishCaseView(t)

	// A task log with an attachment, on the Tasks tab.
	tb.clickTab("Tasks")
	attachment := filepath.Join(t.TempDir(), "headers.txt")
	if err := os.WriteFile(attachment, []byte("Received: from mail.example (203.0.113.7)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	form := `form[aria-label="Add a log to Triage"]`
	tb.must(
		chromedp.SendKeys(chromedp.CSS(form+` textarea[name="message"]`), "Checked the **headers**: the sender is 203.0.113.7."),
		chromedp.SetUploadFiles(chromedp.CSS(form+` input[type="file"]`), []string{attachment}),
	)
	tb.submitAndFollow(form + ` button[type="submit"]`)
	tb.waitFor("the log with its attachment", `Array.prototype.some.call(document.querySelectorAll("article.log"),
	  a => a.querySelector("strong") && a.querySelector("strong").textContent === "headers" &&
	  Array.prototype.some.call(a.querySelectorAll("a[download]"), l => l.textContent === "headers.txt"))`)
	tb.checkPage("case-tasks")

	// Close the case on the Details tab.
	tb.clickTab("Details")
	tb.must(chromedp.Click(chromedp.CSS(`#close-case summary`)),
		chromedp.SetValue(chromedp.ID("cc-res"), "TruePositive"),
		chromedp.SendKeys(chromedp.ID("cc-summary"), "Blocked the sender."))
	tb.submitAndFollow(`#close-case button[type="submit"]`)
	tb.waitFor("the closed case", `document.querySelector("h1 + p .status").textContent.includes("Resolved")`)
	cs = apiObject(t, h.analyst.Key, "GET", "/api/case/"+caseID, nil, http.StatusOK)
	if cs["status"] != "Resolved" || cs["resolutionStatus"] != "TruePositive" || cs["summary"] != "Blocked the sender." {
		t.Errorf("closed case: status %v, resolution %v, summary %v", cs["status"], cs["resolutionStatus"], cs["summary"])
	}
	tb.checkPage("case-closed")

	// The same case, for a user of another organisation: not found.
	rival := newTab(t)
	rival.login(h.rival.Login, h.rival.Password, "")
	rival.allow("/ui/cases/" + caseID)
	if status := rival.navigate("/ui/cases/" + caseID); status != http.StatusNotFound {
		t.Errorf("another organisation's user got %d on the case page, want 404", status)
	}
	if text := eval[string](rival, `document.body.innerText`); strings.Contains(text, title) || strings.Contains(text, "203.0.113.7") {
		t.Errorf("the 404 page shows the case: %q", text)
	}
	rival.checkPage("not-found")
}

// clickTab follows a tab of the case page by its name and waits for the tab's page.
func (tb *tab) clickTab(name string) {
	tb.t.Helper()
	tb.markDocument()
	tb.must(chromedp.Click(chromedp.CSS(fmt.Sprintf(`nav.tabs a[href]:nth-child(%d)`, map[string]int{
		"Details": 1, "Tasks": 2, "Observables": 3, "Activity": 4}[name]))))
	tb.waitFor("the "+name+" tab", `window.__uiTestMark !== true && document.readyState === "complete"`)
	tb.settle()
	if got := eval[string](tb, `document.querySelector('nav.tabs a[aria-current="page"]').firstChild.textContent.trim()`); got != name {
		tb.t.Fatalf("clicked the %s tab, the page shows %q", name, got)
	}
}

// validatorID is Observable_Validator's id on the connector (run.py writes it in credentials.json).
func (h *harness) validatorID(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(h.runDir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Connector struct {
			ID string `json:"observableValidatorId"`
		} `json:"case-connector"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.Connector.ID == "" {
		t.Fatalf("credentials.json has no Observable_Validator id (%v)", err)
	}
	return c.Connector.ID
}

// publishCaseView copies the case view's screenshot to docs/img/case-view.png when UI_SCREENSHOTS=docs/img.
func (h *harness) publishCaseView(t *testing.T) {
	t.Helper()
	dest := os.Getenv("UI_SCREENSHOTS")
	if dest == "" {
		return
	}
	if dest != "docs/img" {
		t.Errorf("UI_SCREENSHOTS=%q: only docs/img is supported", dest)
		return
	}
	png, err := os.ReadFile(filepath.Join(h.shots, "case-view.png"))
	if err != nil {
		t.Error(err)
		return
	}
	out := filepath.Join(h.root, "docs", "img", "case-view.png")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("case view copied to %s", out)
}
