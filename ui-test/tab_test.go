package uitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// tab is one browser tab in a browser context of its own (its own cookies: one signed-in user). It records,
// from the tab's events, every console error, uncaught exception, failed request (status >= 400 or a network
// failure) and JavaScript dialog, and the bytes each page loaded.
type tab struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	base   string // the service whose pages the tab opens (case-svc's or analysis-svc's URL)

	mu       sync.Mutex
	problems []string          // since the last check
	warnings []string          // console warnings, logged, not failed
	dialogs  []string          // every dialog the page opened ("alert: 1")
	urls     map[string]string // request id -> URL
	bytes    float64           // encoded bytes since the last document request
	requests int               // requests since the last document request
	allowed  []string          // problems holding one of these are expected (a 404 page)
}

// newTab opens a tab in a new browser context; it is closed when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	h := need(t)
	tb := &tab{t: t, urls: map[string]string{}, base: h.base}
	ctx, cancel := chromedp.NewContext(h.browser, chromedp.WithNewBrowserContext(), chromedp.WithListener(tb.listen))
	tb.ctx, tb.cancel = ctx, cancel
	t.Cleanup(func() {
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, w := range tb.warnings {
			t.Logf("console warning: %s", w)
		}
	})
	// The first Do opens the tab, which then lives as long as the context that Do was given: that one has no
	// deadline, so the opening is bounded here. Every page is measured as a first load: no cache.
	opened := make(chan error, 1)
	go func() {
		_, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open a tab: %v", err)
		}
	case <-time.After(waitDeadline):
		t.Fatalf("open a tab: not open after %s", waitDeadline)
	}
	return tb
}

// newAnalysisTab is newTab on analysis-svc's pages.
func newAnalysisTab(t *testing.T) *tab {
	t.Helper()
	tb := newTab(t)
	tb.base = env.analysisBase
	return tb
}

// listen runs in the tab's event loop: it records and returns at once, and runs no command.
func (tb *tab) listen(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		text := consoleText(ev.Args)
		switch ev.Type {
		case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeAssert:
			tb.problem("console." + string(ev.Type) + ": " + text)
		case runtime.ConsoleAPICalledTypeWarning:
			tb.warnings = append(tb.warnings, text)
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		tb.problem(fmt.Sprintf("exception: %s (%s:%d)", text, d.URL, d.LineNumber+1))
	case *log.EventEntryAdded:
		e := ev.Entry
		switch e.Level {
		case log.EntryLevelError:
			tb.problem(fmt.Sprintf("log %s error: %s %s", e.Source, e.Text, e.URL))
		case log.EntryLevelWarning:
			tb.warnings = append(tb.warnings, fmt.Sprintf("%s: %s %s", e.Source, e.Text, e.URL))
		}
	case *network.EventRequestWillBeSent:
		tb.urls[string(ev.RequestID)] = ev.Request.URL
		if ev.Type == network.ResourceTypeDocument {
			tb.bytes, tb.requests = 0, 0
		}
		tb.requests++
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			tb.problem(fmt.Sprintf("HTTP %d %s", ev.Response.Status, ev.Response.URL))
		}
	case *network.EventLoadingFinished:
		tb.bytes += ev.EncodedDataLength
	case *network.EventLoadingFailed:
		// A long poll of the stream is cancelled when the page goes away: not a failure.
		if !ev.Canceled {
			tb.problem(fmt.Sprintf("request failed: %s %s %s", ev.ErrorText, ev.BlockedReason, tb.urls[string(ev.RequestID)]))
		}
	case *page.EventJavascriptDialogOpening:
		tb.dialogs = append(tb.dialogs, string(ev.Type)+": "+ev.Message)
		// Answer it from outside the event loop (a dialog blocks the page). A confirm is accepted: the tests
		// click the buttons that ask one on purpose.
		go chromedp.Call(tb.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
	}
}

func (tb *tab) problem(p string) {
	for _, a := range tb.allowed {
		if strings.Contains(p, a) {
			return
		}
	}
	tb.problems = append(tb.problems, p)
}

func consoleText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		switch {
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, strings.Trim(string(a.Value), `"`))
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// allow makes the problems that hold s expected (for example the status of a page that must be a 404).
func (tb *tab) allow(s string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.allowed = append(tb.allowed, s)
}

// takeProblems returns and forgets the problems recorded so far.
func (tb *tab) takeProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}

func (tb *tab) takeDialogs() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	d := tb.dialogs
	tb.dialogs = nil
	return d
}

// assertClean fails the test for every console error, exception and failed request since the last check.
func (tb *tab) assertClean(where string) {
	tb.t.Helper()
	for _, p := range tb.takeProblems() {
		tb.t.Errorf("%s: %s", where, p)
	}
}

// run runs actions with the wait deadline; the test fails (and stops) when they fail.
func (tb *tab) must(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := tb.try(actions...); err != nil {
		tb.fatal(err)
	}
}

func (tb *tab) try(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// fatal stops the test with the error, the page's address and what the page showed.
func (tb *tab) fatal(err error) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 1500) : ""`))
	tb.t.Fatalf("%v\npage %s:\n%s\nproblems: %q", err, loc, text, tb.takeProblems())
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.fatal(fmt.Errorf("evaluate %s: %w", expr, err))
	}
	return v
}

// waitFor polls a JavaScript condition in the page (no sleep) until it holds, within the wait deadline. A poll
// that a navigation ends (the condition often waits for the next page) starts again in the new document.
func (tb *tab) waitFor(what, cond string) {
	tb.t.Helper()
	if err := tb.poll(cond); err != nil {
		tb.fatal(fmt.Errorf("waiting for %s (%s): %w", what, cond, err))
	}
}

// poll is waitFor returning its error.
func (tb *tab) poll(cond string) error {
	deadline := time.Now().Add(waitDeadline)
	for {
		left := time.Until(deadline)
		err := tb.try(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(left))(ctx, t)
			return err
		}))
		if err == nil || left <= 0 || !isNavigationError(err) {
			return err
		}
	}
}

// isNavigationError says whether an evaluation failed because its document went away.
func isNavigationError(err error) bool {
	for _, s := range []string{"navigated or closed", "Execution context was destroyed", "Cannot find context"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// open loads a page of the tab's service and waits until it settled.
func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.must(chromedp.Navigate(tb.base + path))
	tb.settle()
}

// settle waits until a page loaded and, for a signed-in page, until its stream exists and its live regions
// were refreshed once (ui.js does so when the stream opens): a user's click before that can land on a node
// the refresh replaces. A page that nothing changed must not show the "This page changed" bar then.
func (tb *tab) settle() {
	tb.t.Helper()
	tb.waitFor("the page to settle", `document.readyState === "complete" && (!document.body.hasAttribute("data-stream") ||
	  (performance.getEntriesByType("resource").some(e => new URL(e.name).pathname === "/api/stream" && e.responseEnd > 0) &&
	   Array.prototype.every.call(document.querySelectorAll("[data-live-src]:not([data-live-src=''])"), r => r.hasAttribute("data-refreshed"))))`)
	if eval[bool](tb, `(() => { const l = document.getElementById("live"); return !!l && !l.hidden; })()`) {
		tb.t.Errorf("%s: the \"This page changed\" bar shows on a page just loaded", eval[string](tb,
			`location.pathname + location.search + ": " + document.getElementById("live").textContent`))
	}
}

// navigate loads a page and returns its HTTP status.
func (tb *tab) navigate(path string) int64 {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(tb.base+path))
	if err != nil {
		tb.fatal(fmt.Errorf("navigate to %s: %w", path, err))
	}
	return resp.Status
}

// path is the current page's path and query.
func (tb *tab) path() string {
	tb.t.Helper()
	return eval[string](tb, `location.pathname + location.search`)
}

// login signs in through the login page and waits for the page it leads to. With a shot name, the login
// page gets the page checks and its screenshot (once per run is enough); otherwise only the console check.
func (tb *tab) login(user, password, shot string) {
	tb.t.Helper()
	tb.open("/ui/login")
	if shot != "" {
		tb.checkPage(shot)
	} else {
		tb.assertClean("login page")
	}
	tb.must(
		chromedp.SendKeys(chromedp.ID("login-user"), user),
		chromedp.SendKeys(chromedp.ID("login-password"), password),
		chromedp.Click(chromedp.CSS(`form[data-api] button[type="submit"]`)),
	)
	tb.waitFor("the page after sign-in", `location.pathname !== "/ui/login" && document.readyState === "complete" && !!document.querySelector("header.topbar")`)
	tb.settle()
}

// markDocument tags the current document, so that a later check can tell whether the page was reloaded.
func (tb *tab) markDocument() {
	tb.t.Helper()
	eval[bool](tb, `window.__uiTestMark = true`)
}

func (tb *tab) sameDocument() bool {
	tb.t.Helper()
	return eval[bool](tb, `window.__uiTestMark === true`)
}

// submitAndFollow clicks a submit control that leads to another document (ui.js reloads or goes to
// data-then on success), and waits for that document.
func (tb *tab) submitAndFollow(sel string) {
	tb.t.Helper()
	tb.markDocument()
	tb.must(chromedp.Click(chromedp.CSS(sel)))
	tb.waitFor("the page after "+sel, `window.__uiTestMark !== true && document.readyState === "complete"`)
	tb.settle()
}

// screenshot writes the page as name.png in the screenshots folder and returns its path.
func (tb *tab) screenshot(name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitDeadline)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(env.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	tb.t.Logf("screenshot %s", p)
	return p
}
