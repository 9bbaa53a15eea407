package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// keyedSecret is the credential the Keyed worker needs; it must never reach a page.
const keyedSecret = "k-uitest-5ecret"

// writeKeyedWorker puts an external analyzer into make run's analyzers folder that needs a credential
// (api_key, a secret by its name) and an optional level: it succeeds only with the right key, and reports the
// level and whether the key matched (never the key).
func writeKeyedWorker(t *testing.T, runDir string) {
	t.Helper()
	dir := filepath.Join(runDir, "analyzers", "Keyed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := `{"name": "Keyed", "version": "1.0", "author": "ui-test", "url": "https://example.org", "license": "AGPL-V3",
  "description": "Needs a key", "dataTypeList": ["ip", "domain"], "command": "Keyed/keyed.py", "baseConfig": "Keyed",
  "configurationItems": [
    {"name": "api_key", "description": "the service's key", "type": "string", "multi": false, "required": true},
    {"name": "level", "description": "detail", "type": "string", "multi": false, "required": false, "defaultValue": "info"}]}`
	script := `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
with open(os.path.join(job, "input", "input.json")) as f:
    cfg = json.load(f).get("config", {})
os.makedirs(os.path.join(job, "output"), exist_ok=True)
ok = cfg.get("api_key") == ` + pyStr(keyedSecret) + `
report = {"success": ok, "errorMessage": "wrong or missing key", "summary": {"taxonomies": []},
          "full": {"keyMatches": ok, "level": cfg.get("level")}, "artifacts": [], "operations": []}
if ok:
    del report["errorMessage"]
with open(os.path.join(job, "output", "output.json"), "w") as f:
    json.dump(report, f)
`
	if err := os.WriteFile(filepath.Join(dir, "Keyed.json"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyed.py"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// analysisJSON calls analysis-svc's API and decodes the answer into out, failing the test on any error.
func analysisJSON(t *testing.T, key, method, path string, body any, want int, out any) {
	t.Helper()
	raw, err := env.analysisAPI(key, method, path, body, want)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// TestAnalysisEditAndGuess: the orgadmin enables an analyzer that needs a key through the generated form,
// then edits its configuration with the key left empty: the page never shows the key, and the analyzer's
// next job still gets it (it succeeds only with it) with the edited level. The analyst then types values with
// the data type guessed: the plan under the values lists each value's type and the analyzers that accept it,
// a box unchecked is not run, and the jobs made are exactly the checked boxes.
func TestAnalysisEditAndGuess(t *testing.T) {
	h := need(t)
	writeKeyedWorker(t, h.runDir)
	sa := h.creds["analysis-superadmin"]
	analysisJSON(t, sa.Key, "POST", "/api/analyzerdefinition/scan", nil, http.StatusOK, nil)
	analysisJSON(t, sa.Key, "POST", "/api/organization", map[string]any{"name": "beta", "description": "Beta SOC"}, 0, nil)
	const adminPassword, analystPassword = "beta-admin-password-1", "beta-analyst-password-1"
	for login, roles := range map[string][]string{"beta-admin": {"read", "analyze", "orgadmin"}, "beta-analyst": {"read", "analyze"}} {
		analysisJSON(t, sa.Key, "POST", "/api/user", map[string]any{"login": login, "name": login, "roles": roles, "organization": "beta"}, 0, nil)
	}
	analysisJSON(t, sa.Key, "POST", "/api/user/beta-admin/password/set", map[string]any{"password": adminPassword}, 0, nil)
	analysisJSON(t, sa.Key, "POST", "/api/user/beta-analyst/password/set", map[string]any{"password": analystPassword}, 0, nil)
	rawKey, err := h.analysisAPI(sa.Key, "POST", "/api/user/beta-analyst/key/renew", nil, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	analystKey := strings.Trim(strings.TrimSpace(string(rawKey)), `"`)

	// Enable Keyed with its key and Observable_Validator through the generated forms.
	admin := newAnalysisTab(t)
	admin.login("beta-admin", adminPassword, "")
	for _, name := range []string{"Keyed", "Observable_Validator"} {
		admin.open("/ui/admin/analyzers")
		admin.markDocument()
		admin.must(chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[aria-label^="Enable %s "]`, name))))
		admin.waitFor("the enable form of "+name, `window.__uiTestMark !== true && location.pathname.includes("/enable/") && document.readyState === "complete"`)
		admin.settle()
		if name == "Keyed" {
			admin.must(chromedp.SendKeys(chromedp.ID("cf-api_key"), keyedSecret))
		}
		admin.submitAndFollow(`form[aria-label^="Enable "] button[type="submit"]`)
		if p := admin.path(); p != "/ui/admin/analyzers" {
			t.Fatalf("after enabling %s the page is %s", name, p)
		}
	}
	var workers []struct{ ID, Name string }
	analysisJSON(t, analystKey, "GET", "/api/analyzer?range=all", nil, http.StatusOK, &workers)
	keyed := ""
	for _, w := range workers {
		if w.Name == "Keyed" {
			keyed = w.ID
		}
	}
	if keyed == "" {
		t.Fatalf("Keyed is not enabled: %v", workers)
	}

	// Edit: the key is not shown; change the level, leave the key empty.
	admin.open("/ui/admin/analyzers/edit/" + keyed)
	if v := eval[string](admin, `document.getElementById("cf-api_key").value`); v != "" {
		t.Errorf("the edit form shows the key field filled: %q", v)
	}
	if eval[bool](admin, fmt.Sprintf(`document.documentElement.outerHTML.includes(%q)`, keyedSecret)) {
		t.Errorf("the edit page holds the key")
	}
	admin.must(chromedp.SetValue(chromedp.ID("cf-level"), "debug"))
	admin.checkPage("analysis-edit")
	admin.submitAndFollow(`form[aria-label="Edit Keyed"] button[type="submit"]`)
	if p := admin.path(); p != "/ui/admin/analyzers" {
		t.Fatalf("after the edit the page is %s", p)
	}
	if eval[bool](admin, fmt.Sprintf(`document.documentElement.outerHTML.includes(%q)`, keyedSecret)) {
		t.Errorf("the analyzers page holds the key")
	}
	// A webhook made through the page's form (its host resolves nowhere: the delivery fails and waits for
	// its retry), tested from its page, then deleted; the secret is in no page.
	admin.open("/ui/admin/webhooks")
	admin.checkPage("analysis-webhooks")
	admin.must(chromedp.SendKeys(chromedp.ID("wh-name"), "Beta hook"), chromedp.SendKeys(chromedp.ID("wh-url"), "https://hooks.beta.invalid/in"),
		chromedp.SendKeys(chromedp.ID("wh-secret"), "wh-"+keyedSecret))
	admin.submitAndFollow(`#new-webhook button[type="submit"]`)
	if p := admin.path(); !strings.HasPrefix(p, "/ui/admin/webhooks/") {
		t.Fatalf("after creating the webhook the page is %s", p)
	}
	hookPage := admin.path()
	admin.submitAndFollow(`button[aria-label="Test Beta hook"]`)
	if p := admin.path(); p != hookPage {
		t.Fatalf("after the test the page is %s, want %s", p, hookPage)
	}
	if n := eval[int](admin, `document.querySelectorAll("#deliveries tbody button[data-api$='/resend']").length`); n != 1 {
		t.Errorf("the webhook's page lists %d deliveries after the test, want 1", n)
	}
	if eval[bool](admin, fmt.Sprintf(`document.documentElement.outerHTML.includes(%q)`, keyedSecret)) {
		t.Errorf("the webhook's page holds its secret")
	}
	admin.checkPage("analysis-webhook")
	admin.submitAndFollow(`button[aria-label="Delete Beta hook"]`)
	if d := admin.takeDialogs(); len(d) != 1 || !strings.HasPrefix(d[0], "confirm: Delete the webhook Beta hook?") {
		t.Errorf("the delete asked %q", d)
	}
	if p := admin.path(); p != "/ui/admin/webhooks" || !strings.Contains(eval[string](admin, `document.body.innerText`), "No webhook yet") {
		t.Errorf("after the delete the page is %s without the empty list", p)
	}

	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Report struct {
			Full         map[string]any `json:"full"`
			ErrorMessage string         `json:"errorMessage"`
		} `json:"report"`
	}
	analysisJSON(t, analystKey, "POST", "/api/analyzer/"+keyed+"/run", map[string]any{"dataType": "ip", "data": "198.51.100.9"}, http.StatusOK, &job)
	analysisJSON(t, analystKey, "GET", "/api/job/"+job.ID+"/waitreport?atMost=60seconds", nil, http.StatusOK, &job)
	if job.Status != "Success" || job.Report.Full["keyMatches"] != true || job.Report.Full["level"] != "debug" {
		t.Fatalf("the job after the edit: %s, report %v %s; want Success with the kept key and level debug", job.Status, job.Report.Full, job.Report.ErrorMessage)
	}

	// Guess: four values, their plan, one box unchecked, the checked ones run.
	an := newAnalysisTab(t)
	an.login("beta-analyst", analystPassword, "")
	an.open("/ui/analyze?dataType=guess")
	values := []string{"203.0.113.7", "example.org", "www.example.org", "setup.exe"}
	an.must(chromedp.SendKeys(chromedp.ID("an-values"), strings.Join(values, "\n")))
	an.waitFor("the plan of the four values", fmt.Sprintf(`document.getElementById("an-plan").getAttribute("data-planned") === %q`, strings.Join(values, "\n")))
	rows := eval[[]string](an, `Array.prototype.map.call(document.querySelectorAll("#an-plan tbody tr"), r => r.innerText.replace(/\s+/g, " ").trim())`)
	want := []string{"203.0.113.7 ip Keyed Observable_Validator", "example.org domain Keyed Observable_Validator",
		"www.example.org fqdn Observable_Validator", "setup.exe not guessed choose its data type above to run it"}
	if !slices.Equal(rows, want) {
		t.Errorf("the plan's rows:\n%q\nwant\n%q", rows, want)
	}
	// The values are in the URL: a reload shows the same plan.
	if got := eval[string](an, `new URLSearchParams(location.search).get("values")`); got != strings.Join(values, "\n") {
		t.Errorf("the URL keeps the values %q", got)
	}
	an.markDocument()
	an.must(chromedp.Reload())
	an.waitFor("the reloaded page", `window.__uiTestMark !== true && document.readyState === "complete"`)
	an.settle()
	if again := eval[[]string](an, `Array.prototype.map.call(document.querySelectorAll("#an-plan tbody tr"), r => r.innerText.replace(/\s+/g, " ").trim())`); !slices.Equal(again, want) {
		t.Errorf("after a reload the plan's rows are %q", again)
	}
	an.must(chromedp.SendKeys(chromedp.ID("an-msg"), "guessed in the browser"))
	an.must(chromedp.Click(chromedp.CSS(`input[aria-label="Keyed on example.org"]`)))
	an.checkPage("analysis-guess")
	an.submitAndFollow(`form[aria-label="Run analyzers"] button[type="submit"]`)
	if p := an.path(); !strings.HasPrefix(p, "/ui/jobs") {
		t.Fatalf("after the run the page is %s, want the job history", p)
	}
	var jobs []struct {
		WorkerName, DataType, Message string
		Data                          any
	}
	analysisJSON(t, analystKey, "POST", "/api/job/_search?range=all", map[string]any{"query": map[string]any{"message": "guessed in the browser"}}, http.StatusOK, &jobs)
	var got []string
	for _, j := range jobs {
		got = append(got, fmt.Sprintf("%s %s %v", j.WorkerName, j.DataType, j.Data))
	}
	slices.Sort(got)
	if wantJobs := []string{"Keyed ip 203.0.113.7", "Observable_Validator domain example.org", "Observable_Validator fqdn www.example.org",
		"Observable_Validator ip 203.0.113.7"}; !slices.Equal(got, wantJobs) {
		t.Errorf("the guessed run made %q, want %q", got, wantJobs)
	}
}
