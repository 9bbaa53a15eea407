package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBulkCaseActions drives the case list's bulk actions on a selection: flag, assign, close with a
// resolution, reopen, merge and delete, each checked through the API; and a live update that arrives while
// rows are selected leaves the selection alone and offers a refresh instead.
func TestBulkCaseActions(t *testing.T) {
	h := need(t)
	const tag = "bulk-flow"
	ids := make([]string, 5)
	for i := range ids {
		cs := apiObject(t, h.analyst.Key, "POST", "/api/case", map[string]any{"title": fmt.Sprintf("Bulk case %d", i+1),
			"description": "For the bulk actions.", "tags": []string{tag}}, http.StatusCreated)
		ids[i] = cs["id"].(string)
	}
	caseOf := func(id string) map[string]any {
		return apiObject(t, h.analyst.Key, "GET", "/api/case/"+id, nil, http.StatusOK)
	}
	list := "/ui/cases?tag=" + tag
	tb := newTab(t)
	tb.login(h.analyst.Login, h.analyst.Password, "")
	tb.open(list)
	tb.checkPage("cases-bulk")
	sel := func(id string) string { return fmt.Sprintf(`#case-table input[name="sel"][value=%q]`, id) }
	pick := func(picked ...string) {
		t.Helper()
		for _, id := range picked {
			tb.must(chromedp.Click(chromedp.CSS(sel(id))))
		}
		if n := eval[int](tb, `document.querySelectorAll('#case-table input[name="sel"]:checked').length`); n != len(picked) {
			tb.fatal(fmt.Errorf("%d rows selected, want %d", n, len(picked)))
		}
	}

	// A live update while rows are selected: the table is not re-rendered under the selection.
	pick(ids[0], ids[1])
	apiObject(t, h.analyst.Key, "POST", "/api/case", map[string]any{"title": "Arrives during the selection",
		"description": "A live update.", "tags": []string{tag}}, http.StatusCreated)
	tb.waitFor("the refresh bar", `!document.getElementById("live").hidden`)
	if n := eval[int](tb, `document.querySelectorAll('#case-table input[name="sel"]:checked').length`); n != 2 {
		t.Errorf("the live update changed the selection: %d rows selected, want 2", n)
	}

	// Flag the two selected cases.
	tb.submitAndFollow(`button[data-api="/api/case/_bulk"][data-body='{"flag":true}']`)
	for i, id := range ids {
		if got, want := caseOf(id)["flag"], i < 2; got != want {
			t.Errorf("case %d flag %v, want %v", i+1, got, want)
		}
	}
	if n := eval[int](tb, `document.querySelectorAll('#case-table span[aria-label="flagged"]').length`); n != 2 {
		t.Errorf("the list shows %d flagged cases, want 2", n)
	}

	// Assign them to the org-admin.
	pick(ids[0], ids[1])
	tb.must(chromedp.SetValue(chromedp.ID("bulk-assignee"), "orgadmin@demo"))
	tb.submitAndFollow(`form[aria-label="Assign the selected cases"] button[type="submit"]`)
	for _, id := range ids[:2] {
		if o := caseOf(id)["owner"]; o != "orgadmin@demo" {
			t.Errorf("case %s assignee %v, want orgadmin@demo", id, o)
		}
	}

	// Close them as false positives, then reopen the first.
	pick(ids[0], ids[1])
	tb.must(chromedp.SetValue(chromedp.ID("bulk-resolution"), "FalsePositive"),
		chromedp.SendKeys(chromedp.ID("bulk-summary"), "Scanner noise."))
	tb.submitAndFollow(`form[aria-label="Close the selected cases"] button[type="submit"]`)
	for _, id := range ids[:2] {
		if c := caseOf(id); c["status"] != "Resolved" || c["resolutionStatus"] != "FalsePositive" || c["summary"] != "Scanner noise." {
			t.Errorf("closed case %s: status %v, resolution %v, summary %v", id, c["status"], c["resolutionStatus"], c["summary"])
		}
	}
	pick(ids[0])
	tb.submitAndFollow(`button[data-api="/api/case/_bulk"][data-body='{"status":"Open"}']`)
	if s := caseOf(ids[0])["status"]; s != "Open" {
		t.Errorf("reopened case status %v", s)
	}
	if s := caseOf(ids[1])["status"]; s != "Resolved" {
		t.Errorf("the case left out of the reopening is %v", s)
	}
	if st := eval[string](tb, fmt.Sprintf(`document.querySelector(%q).closest("tr").querySelector(".status").textContent`, sel(ids[0]))); st != "Open" {
		t.Errorf("the reopened case's status in the list: %q, want Open (no resolution)", st)
	}

	// Merge the third and the fourth into a new case: ui.js goes to it.
	pick(ids[2], ids[3])
	tb.submitAndFollow(`form[aria-label="Merge the selected cases"] button[type="submit"]`)
	merged := strings.TrimPrefix(eval[string](tb, `location.pathname`), "/ui/cases/")
	if merged == "" || merged == "cases" || merged == ids[2] || merged == ids[3] {
		t.Fatalf("after the merge the page is %s, want the merged case", tb.path())
	}
	if title := caseOf(merged)["title"].(string); !strings.Contains(title, "Bulk case 3") || !strings.Contains(title, "Bulk case 4") {
		t.Errorf("merged case's title %q", title)
	}

	// Delete the fifth.
	tb.open(list)
	pick(ids[4])
	tb.submitAndFollow(`div[aria-label="Bulk actions on the selected cases"] button.danger[data-each]`)
	if d := tb.takeDialogs(); len(d) != 1 || !strings.HasPrefix(d[0], "confirm: ") {
		t.Errorf("the deletion asked %q, want one confirmation", d)
	}
	if _, err := h.api(h.analyst.Key, "GET", "/api/case/"+ids[4], nil, http.StatusNotFound); err != nil {
		t.Errorf("the deleted case: %v", err)
	}
	tb.checkPage("cases-bulk-after")
}

// TestResponders runs a responder on a case from its page: the action appears at once and its end (status and
// operations) is shown by the live region, without a reload.
func TestResponders(t *testing.T) {
	h := need(t)
	cs := apiObject(t, h.analyst.Key, "POST", "/api/case", map[string]any{"title": "Case for a responder",
		"description": "Tag it."}, http.StatusCreated)
	id := cs["id"].(string)
	tb := newTab(t)
	tb.login(h.analyst.Login, h.analyst.Password, "")
	tb.open("/ui/cases/" + id)
	run := `button[data-api="/api/connector/analysis/action"][data-confirm="Run Tagger?"]`
	tb.submitAndFollow(run)
	if d := tb.takeDialogs(); len(d) != 1 || d[0] != "confirm: Run Tagger?" {
		t.Errorf("the responder asked %q, want its confirmation", d)
	}
	tb.markDocument()
	tb.waitFor("the action's end", `(() => { const d = document.querySelector('[id^="actions-"] details[id^="action-"]');
	  return !!d && d.querySelector(".status").textContent === "Success" && d.textContent.includes("AddTagToCase"); })()`)
	if !tb.sameDocument() {
		t.Errorf("the page was reloaded while the action ran")
	}
	var list []map[string]any
	raw, err := h.api(h.analyst.Key, "GET", "/api/connector/analysis/action/case/"+id, nil, http.StatusOK)
	if err != nil || json.Unmarshal(raw, &list) != nil || len(list) != 1 || list[0]["status"] != "Success" {
		t.Fatalf("the case's actions through the API: %v %s", err, raw)
	}
	if tags, _ := apiObject(t, h.analyst.Key, "GET", "/api/case/"+id, nil, http.StatusOK)["tags"].([]any); len(tags) == 0 {
		t.Errorf("the Tagger's operation was not applied: no tag on the case")
	}
	tb.must(chromedp.Click(chromedp.CSS(`[id^="actions-"] details[id^="action-"] summary`)))
	tb.checkPage("case-responder")
}

// TestOrganisationSwitch: a user of two organisations switches in the top bar; the case list then shows the
// other organisation's cases only, and the choice holds across pages.
func TestOrganisationSwitch(t *testing.T) {
	h := need(t)
	const login, password = "both@demo", "both-password-1234"
	apiObject(t, h.superKey, "POST", "/api/user", map[string]any{"login": login, "name": "Two Hats",
		"organisation": "demo", "profile": "analyst"}, http.StatusCreated)
	if _, err := h.api(h.superKey, "PATCH", "/api/user/"+login, map[string]any{"organisations": []map[string]string{
		{"organisation": "demo", "profile": "analyst"}, {"organisation": "rival", "profile": "read-only"}}}, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if _, err := h.api(h.superKey, "POST", "/api/user/"+login+"/password/set", map[string]any{"password": password}, 0); err != nil {
		t.Fatal(err)
	}
	demoCase := apiObject(t, h.analyst.Key, "POST", "/api/case", map[string]any{"title": "Only in demo", "description": "demo"}, http.StatusCreated)
	key, err := h.api(h.superKey, "POST", "/api/user/"+h.rival.Login+"/key/renew", nil, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	rivalKey := strings.TrimSpace(string(key))
	rivalCase := apiObject(t, rivalKey, "POST", "/api/case", map[string]any{"title": "Only in rival", "description": "rival"}, http.StatusCreated)

	tb := newTab(t)
	tb.login(login, password, "")
	tb.open("/ui/cases")
	shows := func(c map[string]any) bool {
		return eval[bool](tb, fmt.Sprintf(`!!document.querySelector('#case-table a[href="/ui/cases/%s"]')`, c["id"]))
	}
	if eval[string](tb, `document.getElementById("org-switch").value`) != "demo" || !shows(demoCase) || shows(rivalCase) {
		t.Fatalf("before the switch: organisation %q, the demo case shown %v, the rival case shown %v",
			eval[string](tb, `document.getElementById("org-switch").value`), shows(demoCase), shows(rivalCase))
	}
	tb.checkPage("org-switch")
	tb.markDocument()
	// chromedp's SetValue dispatches the input and change events itself: the page starts to switch at once (a
	// second change event raced with the navigation it started, and the element was gone).
	tb.must(chromedp.SetValue(chromedp.ID("org-switch"), "rival"))
	tb.waitFor("the page in the other organisation", `window.__uiTestMark !== true && document.readyState === "complete"`)
	tb.settle()
	if !shows(rivalCase) || shows(demoCase) {
		t.Errorf("after the switch: the rival case shown %v, the demo case shown %v", shows(rivalCase), shows(demoCase))
	}
	// A read-only profile there: no write control on the list.
	if n := eval[int](tb, `document.querySelectorAll('#case-table input[name="sel"], #new-case').length`); n != 0 {
		t.Errorf("read-only in rival, the list has %d write controls", n)
	}
	tb.open("/ui/alerts")
	if v := eval[string](tb, `document.getElementById("org-switch").value`); v != "rival" {
		t.Errorf("on the next page the organisation is %q, want rival", v)
	}
	tb.allow("/ui/cases/" + demoCase["id"].(string))
	if st := tb.navigate("/ui/cases/" + demoCase["id"].(string)); st != http.StatusNotFound {
		t.Errorf("in rival, demo's case page answers %d, want 404", st)
	}
}

// TestSessionEnd: a session that ends while a page is open (here: the user signs out in another browser,
// which ends all its sessions, the same refusal as the inactivity timeout's) leads to the login page with the
// page to come back to; signing in again returns to it.
func TestSessionEnd(t *testing.T) {
	h := need(t)
	const login, password = "leaver@demo", "leaver-password-1234"
	apiObject(t, h.superKey, "POST", "/api/user", map[string]any{"login": login, "name": "Leaver",
		"organisation": "demo", "profile": "analyst"}, http.StatusCreated)
	if _, err := h.api(h.superKey, "POST", "/api/user/"+login+"/password/set", map[string]any{"password": password}, 0); err != nil {
		t.Fatal(err)
	}
	page := "/ui/cases?status=Open&sort=-severity"
	tb := newTab(t)
	tb.login(login, password, "")
	tb.open(page)
	other := newTab(t)
	other.login(login, password, "")
	other.markDocument()
	other.must(chromedp.Click(chromedp.CSS(`button[data-logout]`)))
	other.waitFor("the login page after signing out", `window.__uiTestMark !== true && location.pathname === "/ui/login"`)

	// The first page's next request (its stream's poll, or a click) is refused: back to the login page.
	tb.allow("HTTP 401")
	tb.allow("HTTP 303")
	tb.markDocument()
	tb.must(chromedp.Click(chromedp.CSS(`nav a[href="/ui/alerts"]`)))
	tb.waitFor("the login page", `location.pathname === "/ui/login" && document.readyState === "complete"`)
	u, err := url.Parse(tb.path())
	if err != nil {
		t.Fatal(err)
	}
	if next := u.Query().Get("next"); next != "/ui/alerts" && next != page {
		t.Errorf("the login page's return page %q, want the page the user was on or going to", next)
	}
	if !eval[bool](tb, `document.body.innerText.toLowerCase().includes("session")`) {
		t.Errorf("the login page does not say the session ended: %q", eval[string](tb, `document.body.innerText`))
	}
	want := u.Query().Get("next")
	tb.must(chromedp.SendKeys(chromedp.ID("login-user"), login), chromedp.SendKeys(chromedp.ID("login-password"), password),
		chromedp.Click(chromedp.CSS(`form[data-api] button[type="submit"]`)))
	tb.waitFor("the return page", fmt.Sprintf(`location.pathname + location.search === %q && document.readyState === "complete"`, want))
	tb.settle()
	tb.assertClean("the return page")
}
