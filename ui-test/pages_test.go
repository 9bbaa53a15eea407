package uitest

import (
	"context"

	"github.com/chromedp/chromedp"
	"net/http"
	"strings"
	"testing"
)

// TestAdminPages visits the administration pages: an org-admin's (users, case templates) and the platform
// administrator's (organisations, profiles, custom fields), with the page checks and screenshots.
func TestAdminPages(t *testing.T) {
	h := need(t)
	const password = "orgadmin-password-1234"
	if _, err := h.api(h.superKey, "POST", "/api/user/orgadmin@demo/password/set", map[string]any{"password": password}, 0); err != nil {
		t.Fatal(err)
	}
	org := newTab(t)
	org.login("orgadmin@demo", password, "")
	for _, p := range []string{"/ui/admin/users", "/ui/admin/templates"} {
		org.open(p)
		org.checkPage("admin-" + strings.TrimPrefix(p, "/ui/admin/"))
	}
	admin := h.creds["case-superadmin"]
	platform := newTab(t)
	platform.login(admin.Login, admin.Password, "")
	for _, p := range []string{"/ui/admin/organisations", "/ui/admin/profiles", "/ui/admin/customfields", "/ui/admin/users"} {
		platform.open(p)
		platform.checkPage("platform-" + strings.TrimPrefix(p, "/ui/admin/"))
	}
	// The analyst has no administration: the pages refuse.
	analyst := newTab(t)
	analyst.login(h.analyst.Login, h.analyst.Password, "")
	analyst.allow("/ui/admin/organisations")
	if resp := analyst.navigate("/ui/admin/organisations"); resp != http.StatusForbidden && resp != http.StatusNotFound {
		t.Errorf("an analyst got %d on the organisations page, want 403 or 404", resp)
	}
}

// TestChecksCatchDefects injects the defects each check is for into a real page and checks that the checks
// report them: a console error, an exception, a failed request, a dialog, an unlabelled field, a nameless
// button, low-contrast text, a Tab order that goes backwards and a heavy page.
func TestChecksCatchDefects(t *testing.T) {
	need(t)
	tb := newTab(t)
	tb.open("/ui/login")
	tb.assertClean("login")
	// Evaluated scripts are not subject to the page's CSP. The exception's timer runs before the one awaited,
	// and the response's event reaches the tab before the fetch resolves in the page.
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => {
	  console.error("deliberate error");
	  setTimeout(() => { throw new Error("deliberate exception"); }, 0);
	  await new Promise(r => setTimeout(r, 0));
	  const status = (await fetch("/ui/no-such-page")).status;
	  const f = document.createElement("input"); f.id = "unlabelled"; document.body.appendChild(f);
	  const b = document.createElement("button"); b.id = "nameless"; document.body.appendChild(b);
	  const p = document.createElement("p"); p.textContent = "faint text"; p.style.color = "#ccc"; p.style.background = "#fff"; document.body.appendChild(p);
	  const late = document.createElement("a"); late.href = "#"; late.textContent = "first by tabindex"; late.tabIndex = 1; document.body.appendChild(late);
	  return status; })()`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusNotFound {
		t.Fatalf("injecting the defects: status %d, %v", status, err)
	}
	// The dialog blocks the evaluation until the tab's listener answers it.
	eval[bool](tb, `(() => { alert("deliberate dialog"); return true; })()`)

	problems := strings.Join(tb.takeProblems(), "\n")
	for _, want := range []string{"deliberate error", "deliberate exception", "HTTP 404 " + env.base + "/ui/no-such-page"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems do not report %q:\n%s", want, problems)
		}
	}
	if d := tb.takeDialogs(); len(d) != 1 || d[0] != "alert: deliberate dialog" {
		t.Errorf("dialogs %q, want the deliberate alert", d)
	}
	labels := strings.Join(eval[[]string](tb, jsUnlabelled), "\n")
	for _, want := range []string{"control without a label: input#unlabelled", "button without text: button#nameless"} {
		if !strings.Contains(labels, want) {
			t.Errorf("the label check does not report %q:\n%s", want, labels)
		}
	}
	if ax := strings.Join(tb.unnamedAX(), "\n"); !strings.Contains(ax, "button without an accessible name") {
		t.Errorf("the accessibility tree check does not report the nameless button:\n%s", ax)
	}
	if c := strings.Join(eval[[]string](tb, jsContrast), "\n"); !strings.Contains(c, `"faint text" 1.61:1 < 4.5:1`) {
		t.Errorf("the contrast check does not report the faint text:\n%s", c)
	}
	k := strings.Join(tb.tabOrder(), "\n")
	for _, want := range []string{`positive tabindex 1 on a "first by tabindex"`, `Tab never reached a "first by tabindex"`} {
		if !strings.Contains(k, want) {
			t.Errorf("the keyboard check does not report %q:\n%s", want, k)
		}
	}
}
