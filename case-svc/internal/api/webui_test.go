package api_test

// The web interface (internal/webui) without a browser: every page over HTTP against the real service and
// store, with its status, its permissions, its escaping of hostile values, its headers and the structure a
// browser and a screen reader rely on (labels, unique ids, headings, no inline script or style). The
// real-browser tests are in ui-test/.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/openir/platform/pkg/webui"
	"github.com/openir/platform/pkg/webui/webuitest"
)

// page GETs a page of the web interface with the client's credentials (a key, or the session cookie of its
// jar); redirects are not followed.
func (c *client) page(t testing.TB, path string) (int, http.Header, string) {
	t.Helper()
	return webuitest.Get(t, c.e.srv.URL+path, c.Key, c.Jar)
}

// wantPage GETs a page, wants the status and checks its headers, weight and markup (webuitest.CheckPage); it
// returns the parsed document.
func (c *client) wantPage(t testing.TB, path string, status int) *html.Node {
	t.Helper()
	st, hdr, body := c.page(t, path)
	if st != status {
		t.Fatalf("GET %s: %d, want %d: %.400s", path, st, status, body)
	}
	return webuitest.CheckPage(t, path, hdr, body)
}

// webuiFixture is a case with a task, a log, an observable and an alert, made through the API.
type webuiFixture struct {
	*team
	caseID, taskID, obsID, alertID string
}

func newWebUIFixture(t *testing.T, title, text string) *webuiFixture {
	t.Helper()
	tm := newTeam(t)
	f := &webuiFixture{team: tm}
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "note", "description": "a note", "type": "string"}).
		Want(t, http.StatusCreated)
	cs := tm.orgAdmin.newCase(t, map[string]any{"title": title, "description": text, "tags": []string{text},
		"customFields": map[string]any{"note": map[string]any{"string": "cf " + text}}})
	f.caseID = cs["_id"].(string)
	tk := tm.analyst.Call(t, http.MethodPost, "/api/case/"+f.caseID+"/task", map[string]any{"title": title, "description": text}).
		Want(t, http.StatusCreated).Object(t)
	f.taskID = tk["_id"].(string)
	tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+f.taskID+"/log", map[string]any{"message": text}).Want(t, http.StatusCreated)
	obs := tm.analyst.Call(t, http.MethodPost, "/api/case/"+f.caseID+"/artifact", map[string]any{"dataType": "other",
		"data": []string{title}, "tags": []string{text}, "message": text}).Want(t, http.StatusCreated).List(t)
	f.obsID = obs[0]["_id"].(string)
	al := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r1",
		"title": title, "description": text, "tags": []string{text}}).Want(t, http.StatusCreated).Object(t)
	f.alertID = al["_id"].(string)
	return f
}

func (f *webuiFixture) pages() []string {
	c := "/ui/cases/" + f.caseID
	return []string{"/ui/cases", "/ui/cases?status=Open&sort=-severity&size=15&col=note&col=nosuchfield", c, c + "?tab=tasks", c + "?tab=observables",
		c + "?tab=activity", "/ui/observables/" + f.obsID, "/ui/alerts", "/ui/alerts/" + f.alertID, "/ui/tasks/mine",
		"/ui/tasks/waiting"}
}

// Every page renders for an analyst with its markup checked; the org-admin and platform admin pages too.
func TestWebUI_Pages(t *testing.T) {
	f := newWebUIFixture(t, "Phishing", "A suspicious **mail**")
	for _, p := range f.pages() {
		f.analyst.wantPage(t, p, http.StatusOK)
	}
	f.orgAdmin.wantPage(t, "/ui/admin/users", http.StatusOK)
	f.orgAdmin.wantPage(t, "/ui/admin/templates", http.StatusOK)
	f.admin.wantPage(t, "/ui/admin/organisations", http.StatusOK)
	f.admin.wantPage(t, "/ui/admin/users", http.StatusOK)
	f.admin.wantPage(t, "/ui/admin/profiles", http.StatusOK)
	f.admin.wantPage(t, "/ui/admin/customfields", http.StatusOK)
	f.anon().wantPage(t, "/ui/login?next=/ui/cases", http.StatusOK)

	// The custom field column the URL asks for, with the case's value; an unknown one is left out.
	doc := f.analyst.wantPage(t, "/ui/cases?col=note&col=nosuchfield", http.StatusOK)
	heads := webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "th" && webuitest.Text(n) == "note" })
	cells := webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "td" && webuitest.Text(n) == "cf A suspicious **mail**" })
	if len(heads) != 1 || len(cells) != 1 || len(webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "th" && webuitest.Text(n) == "nosuchfield" })) != 0 {
		t.Errorf("custom field columns: %d headers, %d cells", len(heads), len(cells))
	}
	// The edit form offers the custom fields with the case's values.
	if in := webuitest.Find(f.analyst.wantPage(t, "/ui/cases/"+f.caseID, http.StatusOK), func(n *html.Node) bool {
		return webuitest.Attr(n, "name") == "customFields.note.string" && webuitest.Attr(n, "value") == "cf A suspicious **mail**"
	}); len(in) != 1 {
		t.Errorf("the edit form has no input for the custom field note with its value")
	}
	// The observables tab's filters, kept by its live fragment.
	obsDoc := f.analyst.wantPage(t, "/ui/cases/"+f.caseID+"?tab=observables&dataType=ip", http.StatusOK)
	if rows := webuitest.Find(obsDoc, func(n *html.Node) bool { return n.Data == "input" && webuitest.Attr(n, "name") == "sel" }); len(rows) != 0 {
		t.Errorf("the ip filter shows %d observables of type other", len(rows))
	}
	if live := webuitest.Find(obsDoc, func(n *html.Node) bool { return webuitest.Attr(n, "id") == "observables" }); len(live) != 1 ||
		webuitest.Attr(live[0], "data-live-src") != "/ui/cases/"+f.caseID+"/observables?dataType=ip" {
		t.Errorf("the live fragment does not keep the filter")
	}
	if rows := webuitest.Find(f.analyst.wantPage(t, "/ui/cases/"+f.caseID+"?tab=observables&dataType=other", http.StatusOK),
		func(n *html.Node) bool { return n.Data == "input" && webuitest.Attr(n, "name") == "sel" }); len(rows) != 1 {
		t.Errorf("the other filter shows %d observables, want 1", len(rows))
	}
	// The markdown description is rendered, the task log too.
	_, _, body := f.analyst.page(t, "/ui/cases/"+f.caseID)
	if !strings.Contains(body, "A suspicious <strong>mail</strong>") {
		t.Errorf("the description is not rendered as markdown")
	}
	// The live counters: the analyst has no task assigned; the organisation has one waiting task and one new alert.
	// Assigned, the task starts (InProgress): it is the analyst's open task and no longer waiting.
	f.analyst.Call(t, http.MethodPatch, "/api/case/task/"+f.taskID, map[string]any{"owner": "ana"}).Want(t, http.StatusOK)
	if st, _, body := f.analyst.page(t, "/ui/counters"); st != 200 || body != `{"myTasks":1,"waitingTasks":0,"unreadAlerts":1}`+"\n" {
		t.Errorf("counters: %d %s", st, body)
	}
	if _, _, body := f.other.page(t, "/ui/counters"); body != `{"myTasks":0,"waitingTasks":0,"unreadAlerts":0}`+"\n" {
		t.Errorf("another organisation's counters: %s", body)
	}
}

// Another organisation's records are not found, as through the API; a read-only profile sees no write
// control and its writes are refused; an analyst sees no administration; bad parameters are a 400 page.
func TestWebUI_Permissions(t *testing.T) {
	f := newWebUIFixture(t, "Phishing", "text")
	for _, p := range []string{"/ui/cases/" + f.caseID, "/ui/cases/" + f.caseID + "?tab=tasks", "/ui/observables/" + f.obsID,
		"/ui/alerts/" + f.alertID, "/ui/cases/" + f.caseID + "/observables"} {
		if st, _, body := f.other.page(t, p); st != http.StatusNotFound {
			t.Errorf("another organisation's %s: %d %.200s", p, st, body)
		}
	}
	_, _, list := f.other.page(t, "/ui/cases")
	if strings.Contains(list, "Phishing") {
		t.Errorf("another organisation's case list shows the case")
	}
	for _, p := range f.pages() {
		doc := f.readOnly.wantPage(t, p, http.StatusOK)
		if w := webuitest.WriteControls(doc); len(w) > 0 {
			t.Errorf("read-only %s: %d write controls, first %s %s", p, len(w), w[0].Data, webuitest.Attr(w[0], "data-api"))
		}
	}
	f.readOnly.Call(t, http.MethodPatch, "/api/case/"+f.caseID, map[string]any{"title": "x"}).WantError(t, http.StatusForbidden, "AuthorizationError")
	for _, p := range []string{"/ui/admin/users", "/ui/admin/templates", "/ui/admin/organisations", "/ui/admin/profiles", "/ui/admin/customfields"} {
		if st, _, _ := f.analyst.page(t, p); st != http.StatusForbidden {
			t.Errorf("analyst %s: %d, want 403", p, st)
		}
	}
	for _, p := range []string{"/ui/cases?page=0", "/ui/cases?size=100000", "/ui/cases?sort=password", "/ui/cases?filter=nosuchfield:1",
		"/ui/cases?severity=9", "/ui/cases/" + f.caseID + "?tab=nope"} {
		st, hdr, body := f.analyst.page(t, p)
		if st != http.StatusBadRequest && st != http.StatusNotFound || !strings.Contains(hdr.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s", p, st, hdr.Get("Content-Type"))
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("%s: a stack trace", p)
		}
	}
}

// Hostile values that users, alert sources and analyzers write are escaped wherever they appear, and
// markdown cannot produce script, event handlers or javascript:/data: links.
func TestWebUI_HostileValues(t *testing.T) {
	hostile := []string{`<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, `"'><b>x</b>`}
	title := strings.Join(hostile, " ")
	md := title + "\n\n[a](javascript:alert(1)) [b](data:text/html,<script>alert(1)</script>) ![c](javascript:alert(2)) " +
		"<a href=\"javascript:alert(3)\">d</a> [e](JaVaScRiPt:alert(4))"
	f := newWebUIFixture(t, title, md)
	for _, p := range f.pages() {
		_, _, body := f.analyst.page(t, p)
		for _, h := range hostile {
			if strings.Contains(body, h) {
				t.Errorf("%s: %q is in the page unescaped", p, h)
			}
		}
		doc := f.analyst.wantPage(t, p, http.StatusOK)
		for _, n := range webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "img" || n.Data == "b" }) {
			if n.Data == "script" && strings.HasPrefix(webuitest.Attr(n, "src"), webui.Prefix+"/static/") {
				continue
			}
			t.Errorf("%s: a <%s> element came from a value", p, n.Data)
		}
		for _, n := range webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "a" }) {
			if h := strings.ToLower(webuitest.Attr(n, "href")); strings.HasPrefix(h, "data:") {
				t.Errorf("%s: a link to %q", p, webuitest.Attr(n, "href"))
			}
		}
	}
}

// A page without a valid session goes to the login page with the page to come back to; the return path is
// kept only when it is a page of this interface.
func TestWebUI_Login(t *testing.T) {
	tm := newTeam(t)
	st, hdr, _ := tm.anon().page(t, "/ui/cases?status=Open")
	loc, _ := url.Parse(hdr.Get("Location"))
	if st != http.StatusSeeOther || loc.Path != "/ui/login" || loc.Query().Get("next") != "/ui/cases?status=Open" {
		t.Fatalf("anonymous page: %d %s", st, hdr.Get("Location"))
	}
	if st, hdr, _ := tm.anon().page(t, "/"); st != http.StatusFound || hdr.Get("Location") != "/ui/cases" {
		t.Errorf("/: %d %s", st, hdr.Get("Location"))
	}
	for next, want := range map[string]string{"/ui/cases?x=1": "/ui/cases?x=1", "https://evil.example/": "/ui/",
		"//evil.example/ui/": "/ui/", "/api/user": "/ui/", `/ui/\evil`: "/ui/"} {
		doc := tm.anon().wantPage(t, "/ui/login?next="+url.QueryEscape(next), http.StatusOK)
		forms := webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "form" })
		if len(forms) != 1 || webuitest.Attr(forms[0], "data-then") != want {
			t.Errorf("next %q: the login form returns to %q, want %q", next, webuitest.Attr(forms[0], "data-then"), want)
		}
	}

	// A session: the page's CSRF token is the session's; writes without it are refused.
	tm.admin.Call(t, http.MethodPost, "/api/user/ana/password/set", map[string]any{"password": "a long password 1"}).Want(t, http.StatusNoContent)
	s := tm.sessionClient()
	s.Call(t, http.MethodPost, "/api/login", map[string]any{"user": "ana", "password": "a long password 1"}).Want(t, http.StatusOK)
	doc := s.wantPage(t, "/ui/cases", http.StatusOK)
	metas := webuitest.Find(doc, func(n *html.Node) bool { return n.Data == "meta" && webuitest.Attr(n, "name") == "xsrf-token" })
	if len(metas) != 1 || webuitest.Attr(metas[0], "content") == "" || webuitest.Attr(metas[0], "content") != s.Cookie("XSRF-TOKEN") {
		t.Fatalf("the page's CSRF token is not the session's")
	}
	switchOrg := func(org, csrf string) int {
		req, _ := http.NewRequest(http.MethodPost, tm.srv.URL+"/ui/organisation", strings.NewReader(`{"organisation":"`+org+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if csrf != "" {
			req.Header.Set("X-XSRF-TOKEN", csrf)
		}
		res, err := (&http.Client{Jar: s.Jar}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	token := s.Cookie("XSRF-TOKEN")
	for _, tc := range []struct {
		org, csrf string
		want      int
	}{{"soc", "", http.StatusForbidden}, {"soc", "wrong", http.StatusForbidden}, {"cert", token, http.StatusNotFound}, {"soc", token, http.StatusNoContent}} {
		if st := switchOrg(tc.org, tc.csrf); st != tc.want {
			t.Errorf("switch to %s with CSRF %q: %d, want %d", tc.org, tc.csrf, st, tc.want)
		}
	}
	// No API key in any page of the session.
	key := tm.analyst.Key
	for _, p := range []string{"/ui/cases", "/ui/tasks/mine"} {
		if _, _, body := s.page(t, p); strings.Contains(body, key) {
			t.Errorf("%s shows the user's API key", p)
		}
	}
}

// The shared assets: hashed names cached for a year, unknown names 404, the favicon.
func TestWebUI_Assets(t *testing.T) {
	tm := newTeam(t)
	for _, name := range []string{"ui.css", "ui.js", "favicon.svg"} {
		res, err := http.Get(tm.srv.URL + webui.Asset(name))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d %q", name, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
	res, err := http.Get(tm.srv.URL + "/ui/static/ui.0000.js")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown asset: %d", res.StatusCode)
	}
}

// With a real analysis server: the observables tab offers its analyzers, a job's report appears in the
// observables fragment (the live region's source) as taxonomy badges and on the observable's page as a tree;
// the case offers its responders and shows an action's operations once run; a read-only user gets neither.
func TestWebUI_AnalyzersAndResponders(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, "")))
	cs := tm.analyst.newCase(t, map[string]any{"title": "with analyzers"})
	caseID := cs.Str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"203.0.113.5"}})[0]

	doc := tm.analyst.wantPage(t, "/ui/cases/"+caseID+"?tab=observables", http.StatusOK)
	boxes := webuitest.Find(doc, func(n *html.Node) bool {
		return webuitest.Attr(n, "name") == "analyzer" && webuitest.Attr(n, "value") == "local|"+as.Analyzers["Echo"]
	})
	if len(boxes) != 1 {
		t.Fatalf("the run form has no checkbox for Echo on local")
	}
	if n := webuitest.Find(tm.readOnly.wantPage(t, "/ui/cases/"+caseID+"?tab=observables", http.StatusOK), func(n *html.Node) bool { return webuitest.Attr(n, "name") == "analyzer" }); len(n) != 0 {
		t.Errorf("the read-only user is offered %d analyzers", len(n))
	}

	// What the run form sends, once per (observable, analyzer).
	j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
		map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).Want(t, http.StatusCreated).Object(t)
	eventually(t, "echo job", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" })
	_, _, frag := tm.analyst.page(t, "/ui/cases/"+caseID+"/observables")
	if !strings.Contains(frag, `class="tax tax-`) || strings.Contains(frag, "<html") {
		t.Errorf("the observables fragment has no taxonomy badge or is a whole page: %.300s", frag)
	}
	odoc := tm.analyst.wantPage(t, "/ui/observables/"+ip.Str(t, "id"), http.StatusOK)
	if len(webuitest.Find(odoc, func(n *html.Node) bool { return webuitest.Attr(n, "class") == "jsontree" })) == 0 {
		t.Errorf("the observable's page shows no report tree")
	}

	// Responders of the case: offered, then the action with its operations.
	ddoc := tm.analyst.wantPage(t, "/ui/cases/"+caseID, http.StatusOK)
	runs := webuitest.Find(ddoc, func(n *html.Node) bool {
		return webuitest.Attr(n, "data-api") == "/api/connector/analysis/action" && strings.Contains(webuitest.Attr(n, "data-body"), as.Responder["Tagger"])
	})
	if len(runs) != 1 {
		t.Fatalf("the case offers no Tagger responder")
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(webuitest.Attr(runs[0], "data-body")), &body); err != nil {
		t.Fatal(err)
	}
	a := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", body).Want(t, http.StatusCreated).Object(t)
	eventually(t, "responder", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+a.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" })
	_, _, page := tm.analyst.page(t, "/ui/cases/"+caseID)
	if !strings.Contains(page, "Tagger") || !strings.Contains(page, "Success") || !strings.Contains(page, "AddTagToCase") {
		t.Errorf("the case page does not show the responder's action and operations")
	}
	// The actions list alone (the live region's source while an action runs): the caller's organisation's
	// actions only; an unknown object type is refused.
	if st, _, frag := tm.analyst.page(t, "/ui/actions/case/"+caseID); st != http.StatusOK || !strings.Contains(frag, `id="action-`+a.Str(t, "id")+`"`) ||
		!strings.Contains(frag, "AddTagToCase") || strings.Contains(frag, "<html") {
		t.Errorf("the actions fragment: %d %.300s", st, frag)
	}
	if st, _, frag := tm.other.page(t, "/ui/actions/case/"+caseID); st != http.StatusNotFound || strings.Contains(frag, "action-") {
		t.Errorf("another organisation's actions fragment: %d %.300s", st, frag)
	}
	if st, _, _ := tm.analyst.page(t, "/ui/actions/nothing/"+caseID); st != http.StatusBadRequest {
		t.Errorf("an unknown object type's actions: %d, want 400", st)
	}
	// An action that has not ended makes its list a live region (root: the case); once every action shown has
	// ended it is not. The built-in responder may end before the page renders: the page is checked against
	// the statuses it shows itself.
	running := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{
		"analysisId": "local", "responderId": as.Responder["Tagger"], "objectType": "case", "objectId": caseID,
		"parameters": map[string]any{"tag": "second"}}).Want(t, http.StatusCreated).Object(t)
	ld := tm.analyst.wantPage(t, "/ui/cases/"+caseID, http.StatusOK)
	region := webuitest.Find(ld, func(n *html.Node) bool { return webuitest.Attr(n, "id") == "actions-"+caseID })
	if len(region) != 1 {
		t.Fatalf("the case page has no actions list")
	}
	pending := false
	for _, st := range webuitest.Find(region[0], func(n *html.Node) bool { return webuitest.Attr(n, "class") == "status" }) {
		if txt := webuitest.Text(st); txt == "Waiting" || txt == "InProgress" {
			pending = true
		}
	}
	if live := webuitest.Attr(region[0], "data-live-src") != ""; live != pending ||
		pending && (webuitest.Attr(region[0], "data-live-root") != caseID || webuitest.Attr(region[0], "data-live-src") != "/ui/actions/case/"+caseID) {
		t.Errorf("actions list: live region %v (root %q, source %q) with an action running %v", live,
			webuitest.Attr(region[0], "data-live-root"), webuitest.Attr(region[0], "data-live-src"), pending)
	}
	eventually(t, "second responder", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+running.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" || o["status"] == "Failure" })
	// A task's responders: offered in its section of the tasks tab.
	tk := tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "triage"}).Want(t, http.StatusCreated).Object(t)
	tdoc := tm.analyst.wantPage(t, "/ui/cases/"+caseID+"?tab=tasks", http.StatusOK)
	if n := webuitest.Find(tdoc, func(n *html.Node) bool {
		return webuitest.Attr(n, "data-api") == "/api/connector/analysis/action" && strings.Contains(webuitest.Attr(n, "data-body"), tk.Str(t, "id"))
	}); len(n) == 0 {
		t.Errorf("the task offers no responder")
	}
	// A log's responders: offered on the log, its actions read with the other logs' in one request.
	lg := tm.analyst.Call(t, http.MethodPost, "/api/case/task/"+tk.Str(t, "id")+"/log", map[string]any{"message": "seen"}).Want(t, http.StatusCreated).Object(t)
	la := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{"analysisId": "local",
		"responderId": as.Responder["Tagger"], "objectType": "case_task_log", "objectId": lg.Str(t, "id")}).Want(t, http.StatusCreated).Object(t)
	eventually(t, "log responder", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+la.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Success" })
	tdoc = tm.analyst.wantPage(t, "/ui/cases/"+caseID+"?tab=tasks", http.StatusOK)
	logArt := webuitest.Find(tdoc, func(n *html.Node) bool { return webuitest.Attr(n, "id") == "log-"+lg.Str(t, "id") })
	if len(logArt) != 1 {
		t.Fatalf("the tasks tab does not show the log")
	}
	if n := webuitest.Find(logArt[0], func(n *html.Node) bool {
		return webuitest.Attr(n, "data-api") == "/api/connector/analysis/action" && strings.Contains(webuitest.Attr(n, "data-body"), lg.Str(t, "id"))
	}); len(n) == 0 {
		t.Errorf("the log offers no responder")
	}
	if n := webuitest.Find(logArt[0], func(n *html.Node) bool { return webuitest.Attr(n, "id") == "action-"+la.Str(t, "id") }); len(n) != 1 {
		t.Errorf("the log does not show its action")
	}
	rdoc := tm.readOnly.wantPage(t, "/ui/cases/"+caseID, http.StatusOK)
	if w := webuitest.WriteControls(rdoc); len(w) != 0 {
		t.Errorf("the read-only user has %d write controls (responders?)", len(w))
	}
}
