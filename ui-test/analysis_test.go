package uitest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Hostile strings of the external worker's definition and report (hostile_test.go has case-svc's).
const (
	hostileScript = `<script>alert("report")</script>`
	hostileImg    = `<img src=x onerror=alert("img")>`
	hostileQuote  = `" onmouseover="alert('quote')" x="`
)

// writeHostileWorker puts an external analyzer in the public format into make run's analyzers folder: its
// definition and its report are full of hostile strings (taxonomies, the full report, an artifact).
func writeHostileWorker(t *testing.T, runDir string) {
	t.Helper()
	dir := filepath.Join(runDir, "analyzers", "Hostile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := fmt.Sprintf(`{"name": "Hostile", "version": "1.0", "author": %q, "url": "https://example.org",
  "license": "AGPL-V3", "description": %q, "dataTypeList": ["domain"], "command": "Hostile/hostile.py",
  "baseConfig": "Hostile", "configurationItems": []}`, hostileImg, "Reports "+hostileScript)
	script := `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
os.makedirs(os.path.join(job, "output"), exist_ok=True)
report = {
    "success": True,
    "summary": {"taxonomies": [{"level": "malicious", "namespace": ` + pyStr(hostileScript) + `,
        "predicate": ` + pyStr(hostileImg) + `, "value": ` + pyStr(hostileQuote) + `}]},
    "full": {"<b>x</b>": ` + pyStr(hostileScript) + `, "link": "javascript:alert('link')", "quote": ` + pyStr(hostileQuote) + `},
    "artifacts": [{"dataType": "domain", "data": "evil.example", "message": ` + pyStr(hostileImg) + `}],
    "operations": [],
}
with open(os.path.join(job, "output", "output.json"), "w") as f:
    json.dump(report, f)
`
	if err := os.WriteFile(filepath.Join(dir, "Hostile.json"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hostile.py"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// pyStr is a Python string literal of s (JSON's quoting is valid Python for these strings).
func pyStr(s string) string { return fmt.Sprintf("%q", s) }

// TestAnalysisLoop is issue 25's flow in analysis-svc's pages: the superadmin scans the catalog, creates an
// organization and its orgadmin; the orgadmin enables File_Info, Observable_Validator and an external worker
// through the generated form and creates an analyst; the analyst submits three values and a file; the job
// history shows the jobs end without a reload; a report page shows the badges and the tree; the external
// worker's hostile report runs no script. Every page gets the console, accessibility and weight checks.
func TestAnalysisLoop(t *testing.T) {
	h := need(t)
	writeHostileWorker(t, h.runDir)
	sa := h.creds["analysis-superadmin"]
	if sa.Password == "" {
		t.Fatalf("credentials.json has no password for analysis-svc's superadmin")
	}

	// Superadmin: scan, then an organization and its orgadmin with a password.
	super := newAnalysisTab(t)
	super.login(sa.Login, sa.Password, "analysis-login")
	super.open("/ui/admin/catalog")
	super.must(chromedp.Click(chromedp.CSS(`button[data-api="/api/analyzerdefinition/scan"]`)))
	super.waitFor("the scan's result", `(() => { const p = document.getElementById("scan-analyzer");
	  return !p.hidden && p.textContent.includes("Hostile"); })()`)
	super.checkPage("analysis-catalog")
	super.open("/ui/admin/organizations")
	super.must(chromedp.Click(chromedp.CSS(`#new-org summary`)),
		chromedp.SendKeys(chromedp.ID("no-name"), "acme"), chromedp.SendKeys(chromedp.ID("no-desc"), "Acme SOC"))
	super.submitAndFollow(`#new-org button[type="submit"]`)
	if _, err := h.analysisAPI(sa.Key, "GET", "/api/organization/acme", nil, http.StatusOK); err != nil {
		t.Fatalf("the organization made in the page: %v", err)
	}
	super.checkPage("analysis-organizations")
	const adminPassword, analystPassword = "acme-admin-password-1", "acme-analyst-password-1"
	super.open("/ui/admin/users")
	super.must(chromedp.Click(chromedp.CSS(`#new-user summary`)),
		chromedp.SendKeys(chromedp.ID("nu-login"), "acme-admin"), chromedp.SendKeys(chromedp.ID("nu-name"), "Acme admin"),
		chromedp.SetValue(chromedp.ID("nu-roles"), "read,analyze,orgadmin"), chromedp.SetValue(chromedp.ID("nu-org"), "acme"))
	super.submitAndFollow(`#new-user button[type="submit"]`)
	super.must(chromedp.SendKeys(chromedp.ID("pw-acme-admin"), adminPassword))
	super.submitAndFollow(`form[aria-label="Set the password of acme-admin"] button[type="submit"]`)
	super.checkPage("analysis-users")

	// Orgadmin: enable the three analyzers through the generated form, then make an analyst.
	admin := newAnalysisTab(t)
	admin.login("acme-admin", adminPassword, "")
	for i, name := range []string{"File_Info", "Observable_Validator", "Hostile"} {
		admin.open("/ui/admin/analyzers")
		admin.markDocument()
		admin.must(chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[aria-label^="Enable %s "]`, name))))
		admin.waitFor("the enable form of "+name, `window.__uiTestMark !== true && location.pathname.includes("/enable/") && document.readyState === "complete"`)
		admin.settle()
		if i == 0 {
			admin.checkPage("analysis-enable")
		}
		admin.submitAndFollow(`form[aria-label^="Enable "] button[type="submit"]`)
		if p := admin.path(); p != "/ui/admin/analyzers" {
			t.Fatalf("after enabling %s the page is %s", name, p)
		}
		if !eval[bool](admin, fmt.Sprintf(`Array.prototype.some.call(document.querySelectorAll("section[aria-labelledby=enabled] tbody tr td:first-child"), td => td.textContent === %q)`, name)) {
			t.Fatalf("%s is not listed as enabled", name)
		}
	}
	admin.checkPage("analysis-analyzers")
	admin.open("/ui/admin/users")
	admin.must(chromedp.Click(chromedp.CSS(`#new-user summary`)),
		chromedp.SendKeys(chromedp.ID("nu-login"), "acme-analyst"), chromedp.SendKeys(chromedp.ID("nu-name"), "Acme analyst"),
		chromedp.SetValue(chromedp.ID("nu-roles"), "read,analyze"))
	admin.submitAndFollow(`#new-user button[type="submit"]`)
	admin.must(chromedp.SendKeys(chromedp.ID("pw-acme-analyst"), analystPassword))
	admin.submitAndFollow(`form[aria-label="Set the password of acme-analyst"] button[type="submit"]`)

	// Analyst: three domains to every analyzer that takes them (Observable_Validator, Hostile), then a file
	// to File_Info; the job history shows the jobs end without a reload.
	an := newAnalysisTab(t)
	an.login("acme-analyst", analystPassword, "")
	an.open("/ui/analyze?dataType=domain")
	an.must(chromedp.SendKeys(chromedp.ID("an-data"), "example.org\nexample.net\nphish.example.com"))
	an.checkPage("analysis-new")
	an.submitAndFollow(`form[aria-label="Run analyzers"] button[type="submit"]`)
	if p := an.path(); !strings.HasPrefix(p, "/ui/jobs") {
		t.Fatalf("after the run the page is %s, want the job history", p)
	}
	file := filepath.Join(t.TempDir(), "invoice.txt")
	if err := os.WriteFile(file, []byte("Pay to http://pay.example.com/now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	an.open("/ui/analyze?dataType=file")
	an.must(chromedp.SetUploadFiles(chromedp.ID("an-file"), []string{file}))
	an.submitAndFollow(`form[aria-label="Run analyzers"] button[type="submit"]`)
	an.markDocument()
	ended := `Array.prototype.filter.call(document.querySelectorAll("#jobs tbody tr"), r => /Success|Failure/.test(r.textContent)).length`
	an.waitFor("the seven jobs ended in the history", ended+` === 7`)
	if !an.sameDocument() {
		t.Errorf("the job history was reloaded while the jobs ran")
	}
	if n := eval[int](an, `Array.prototype.filter.call(document.querySelectorAll("#jobs tbody tr"), r => /Failure/.test(r.textContent)).length`); n != 0 {
		t.Errorf("%d jobs failed:\n%s", n, eval[string](an, `document.getElementById("jobs").innerText`))
	}
	an.checkPage("analysis-jobs")

	// A report: the badges and the tree.
	job := func(analyzer, value string) string {
		t.Helper()
		href := eval[string](an, fmt.Sprintf(`(() => { const r = Array.prototype.find.call(document.querySelectorAll("#jobs tbody tr"),
		  r => r.cells[1].textContent.startsWith(%q) && r.cells[3].textContent.includes(%q)); return r ? r.querySelector("a").getAttribute("href") : ""; })()`, analyzer, value))
		if href == "" {
			an.fatal(fmt.Errorf("no %s job of %s in the history", analyzer, value))
		}
		return href
	}
	validator := job("Observable_Validator", "phish.example.com")
	hostile := job("Hostile", "example.org")
	an.open(validator)
	if n := eval[int](an, `document.querySelectorAll("span.tax").length`); n == 0 {
		t.Errorf("the Observable_Validator report shows no taxonomy badge")
	}
	if n := eval[int](an, `document.querySelectorAll(".jsontree").length`); n == 0 {
		t.Errorf("the Observable_Validator report shows no tree")
	}
	an.checkPage("analysis-report")

	// The external worker's hostile report: shown as text, no script runs.
	an.open(hostile)
	an.hostileCheck("hostile report", "evil.example")
	if text := eval[string](an, `document.body.innerText`); !strings.Contains(text, hostileScript) && !strings.Contains(text, `alert("report")`) {
		t.Errorf("the hostile report's strings are not shown as text")
	}
	an.screenshot("analysis-hostile-report")
	// Another organization's job: not found.
	demo := newAnalysisTab(t)
	demo.login(sa.Login, sa.Password, "")
	demo.allow(hostile)
	if st := demo.navigate(hostile); st != http.StatusNotFound && st != http.StatusForbidden {
		t.Errorf("the superadmin (organization admin) got %d on acme's job, want 404 or 403", st)
	}
}
