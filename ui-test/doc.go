// Package uitest drives case-svc's web interface (/ui/) in a real, headless Chromium (Debian's chromium
// package) with chromedp. The tests build both services, start them as `make run` does (deploy/dev/run.py on
// free ports and a temporary folder) and play an analyst's day in the browser: the README's loop, alerts,
// hostile values, and the accessibility, console and page-weight checks on every page they visit.
//
// It is a module of its own, outside go.work, so that chromedp stays out of the services' build graph; run it
// with `make test-browser` (part of `make test`). Without chromium the tests skip and say how to install it.
//
// Environment:
//   - UI_SCREENSHOTS_OUT: the folder for the screenshots of the main pages (default: a folder the test prints);
//   - UI_SCREENSHOTS=docs/img: also copy the case view's screenshot to docs/img/case-view.png (repository root).
package uitest
