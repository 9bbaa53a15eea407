package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAlertImportAndMerge imports an alert as a case (with a template) from the alert's page, then merges two
// alerts into an existing case from the alert list ("Merge into case number").
func TestAlertImportAndMerge(t *testing.T) {
	h := need(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	template := "alert-triage-" + suffix
	apiObject(t, h.orgAdminKey, "POST", "/api/case/template", map[string]any{
		"name": template, "titlePrefix": "[Alert]", "description": "From an alert.",
		"tasks": []map[string]any{{"title": "Qualify", "order": 0}},
	}, http.StatusCreated)
	newAlert := func(ref, title, ip string) string {
		a := apiObject(t, h.analyst.Key, "POST", "/api/alert", map[string]any{
			"type": "siem", "source": "ui-test", "sourceRef": ref + "-" + suffix, "title": title,
			"description": "Raised by the **SIEM**.", "severity": 2, "tags": []string{"ui-test"},
			"artifacts": []map[string]any{{"dataType": "ip", "data": ip}},
		}, http.StatusCreated)
		return a["_id"].(string)
	}
	imported := newAlert("imp", "Beaconing host "+suffix, "198.51.100.10")
	first := newAlert("m1", "Port scan "+suffix, "198.51.100.21")
	second := newAlert("m2", "Brute force "+suffix, "198.51.100.22")
	target := apiObject(t, h.analyst.Key, "POST", "/api/case", map[string]any{
		"title": "Investigation " + suffix, "description": "Collects the alerts of one attacker."}, http.StatusCreated)
	targetID, number := target["_id"].(string), int(target["caseId"].(float64))

	tb := newTab(t)
	tb.login(h.analyst.Login, h.analyst.Password, "")

	// Import: the alert's page, the template chosen, "Import as a case".
	tb.open("/ui/alerts/" + imported)
	tb.checkPage("alert")
	tb.must(chromedp.SetValue(chromedp.ID("ai-template"), template))
	tb.submitAndFollow(`form[data-api$="/createCase"] button[type="submit"]`)
	tb.waitFor("the imported case's page", `location.pathname.startsWith("/ui/cases/") && document.querySelector("h1") !== null`)
	caseID := strings.TrimPrefix(eval[string](tb, `location.pathname`), "/ui/cases/")
	if h1 := eval[string](tb, `document.querySelector("h1").textContent`); !strings.Contains(h1, "Beaconing host "+suffix) {
		t.Errorf("imported case's title %q: want the alert's", h1)
	}
	a := apiObject(t, h.analyst.Key, "GET", "/api/alert/"+imported, nil, http.StatusOK)
	if a["status"] != "Imported" || a["case"] != caseID {
		t.Errorf("imported alert: status %v, case %v; want Imported, %s", a["status"], a["case"], caseID)
	}
	if got := caseObservables(t, h, caseID); !slices.Equal(got, []string{"198.51.100.10"}) {
		t.Errorf("imported case's observables %q, want the alert's", got)
	}
	// The template gave its title prefix and its task.
	if h1 := eval[string](tb, `document.querySelector("h1").textContent`); !strings.Contains(h1, "[Alert]") {
		t.Errorf("imported case's title %q lacks the template's prefix", h1)
	}
	tb.checkPage("imported-case")
	tb.clickTab("Tasks")
	if tasks := eval[[]string](tb, `Array.prototype.map.call(document.querySelectorAll("section[id^=task-] > h3"), h => h.firstChild.textContent.trim())`); !slices.Equal(tasks, []string{"Qualify"}) {
		t.Errorf("imported case's tasks %q, want the template's [Qualify]", tasks)
	}

	// Merge: the alert list, both alerts selected, the case's number, Merge.
	tb.open("/ui/alerts?q=" + suffix)
	tb.checkPage("alerts")
	for _, id := range []string{first, second} {
		tb.must(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#alert-table input[name="sel"][value="%s"]`, id))))
	}
	if n := eval[int](tb, `document.querySelectorAll('#alert-table input[name="sel"]:checked').length`); n != 2 {
		t.Fatalf("%d alerts selected, want 2", n)
	}
	tb.must(chromedp.SendKeys(chromedp.ID("am-case"), fmt.Sprint(number)))
	tb.submitAndFollow(`form[aria-label="Merge the selected alerts into a case"] button[type="submit"]`)
	tb.waitFor("the case the alerts were merged into", fmt.Sprintf(`location.pathname === "/ui/cases/%s"`, targetID))
	tb.checkPage("merged-case")
	for _, id := range []string{first, second} {
		a := apiObject(t, h.analyst.Key, "GET", "/api/alert/"+id, nil, http.StatusOK)
		if a["case"] != targetID {
			t.Errorf("merged alert %s: case %v, want %s", id, a["case"], targetID)
		}
	}
	got := caseObservables(t, h, targetID)
	slices.Sort(got)
	if !slices.Equal(got, []string{"198.51.100.21", "198.51.100.22"}) {
		t.Errorf("case's observables after the merge %q, want both alerts'", got)
	}
}

// caseObservables is the data of a case's observables, through the API.
func caseObservables(t *testing.T, h *harness, caseID string) []string {
	t.Helper()
	raw, err := h.api(h.analyst.Key, "GET", "/api/case/"+caseID+"/artifact", nil, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	var obs []struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &obs); err != nil {
		t.Fatalf("observables of %s: %v: %s", caseID, err, raw)
	}
	var out []string
	for _, o := range obs {
		out = append(out, o.Data)
	}
	return out
}
