package api_test

// The web interface (internal/webui) without a browser: every page over HTTP against the real service and
// store, with its status, its roles, its escaping of hostile values (reports included), its headers and the
// markup a browser and a screen reader rely on (pkg/webui/webuitest). Forms are checked by sending what
// ui.js would send to the route they name.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/api"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
	"github.com/openir/platform/pkg/apitest"
	"github.com/openir/platform/pkg/webui"
	wt "github.com/openir/platform/pkg/webui/webuitest"
)

// page GETs a page with the client's credentials (a key, or the session cookie of its jar); redirects are
// not followed.
func (c *client) page(t testing.TB, path string) (int, http.Header, string) {
	t.Helper()
	return wt.Get(t, c.e.srv.URL+path, c.Key, c.Jar)
}

// wantPage GETs a page, wants the status, checks its headers and markup and returns the parsed document.
func (c *client) wantPage(t testing.TB, path string, status int) *html.Node {
	t.Helper()
	st, hdr, body := c.page(t, path)
	if st != status {
		t.Fatalf("%s GET %s: %d, want %d: %.400s", c.Login, path, st, status, body)
	}
	return wt.CheckPage(t, path, hdr, body)
}

// byAttr finds the elements whose attribute key is val.
func byAttr(doc *html.Node, key, val string) []*html.Node {
	return wt.Find(doc, func(n *html.Node) bool { return wt.Attr(n, key) == val })
}

// webuiFixture is jobFixture's organization with one finished job of Test_Echo (its report echoes the
// value) made through the API.
type webuiFixture struct {
	*jobFixture
	job string
}

func newWebUIFixture(t *testing.T, value string) *webuiFixture {
	t.Helper()
	f := &webuiFixture{jobFixture: newJobFixture(t)}
	j := f.run(t, f.analyst, map[string]any{"dataType": "domain", "data": value, "message": "msg " + value,
		"parameters": map[string]any{"note": value}, "tlp": 1})
	f.job = j["id"].(string)
	f.wait(t, f.analyst, f.job)
	return f
}

// Every page renders for the role it is for, with its markup checked, and shows the records.
func TestWebUI_Pages(t *testing.T) {
	f := newWebUIFixture(t, "example.org")
	j := "/ui/jobs/" + f.job
	for _, p := range []string{"/ui/jobs", "/ui/jobs?status=Success&dataType=domain&analyzer=Test_Echo&value=example&type=analyzer&from=2020-01-01&to=2100-01-01&sort=-status&size=15",
		j, "/ui/analyze", "/ui/analyze?dataType=domain"} {
		f.analyst.wantPage(t, p, http.StatusOK)
	}
	for _, p := range []string{"/ui/jobs", j, "/ui/admin/users", "/ui/admin/analyzers", "/ui/admin/responders",
		"/ui/admin/analyzers/enable/Test_Echo_1_0", "/ui/admin/analyzers/enable/Test_Keyed_1_0",
		"/ui/admin/responders/enable/Test_Responder_1_0", "/ui/admin/analyzers/edit/" + f.analyzer, "/ui/admin/catalog"} {
		f.admin.wantPage(t, p, http.StatusOK)
	}
	for _, p := range []string{"/ui/admin/organizations", "/ui/admin/users", "/ui/admin/catalog"} {
		f.e.super.wantPage(t, p, http.StatusOK)
	}
	f.e.anon().wantPage(t, "/ui/login?next=/ui/jobs", http.StatusOK)

	// The history: the job, the exact count, filters that match and filters that do not.
	doc := f.analyst.wantPage(t, "/ui/jobs?status=Success&value=example", http.StatusOK)
	if links := byAttr(doc, "href", j); len(links) != 1 || !strings.Contains(wt.Text(doc), "1 in all") {
		t.Errorf("the history does not list the job once with its count")
	}
	for _, q := range []string{"dataType=ip", "status=Failure", "value=nothing-like-it", "analyzer=Other", "type=responder", "to=2000-01-01"} {
		if d := f.analyst.wantPage(t, "/ui/jobs?"+q, http.StatusOK); len(byAttr(d, "href", j)) != 0 || !strings.Contains(wt.Text(d), "0 in all") {
			t.Errorf("filter %s still lists the job", q)
		}
	}
	// The live region's source keeps the filters; it renders the region alone.
	live := byAttr(doc, "id", "jobs")
	if len(live) != 1 || wt.Attr(live[0], "data-live") != "job" {
		t.Fatalf("the history has no live region")
	}
	src, _ := url.Parse(wt.Attr(live[0], "data-live-src"))
	if src.Path != "/ui/jobs" || src.Query().Get("status") != "Success" || src.Query().Get("value") != "example" || src.Query().Get("fragment") != "1" {
		t.Errorf("the live region's source %q does not keep the filters", src)
	}
	if _, _, frag := f.analyst.page(t, src.String()); strings.Contains(frag, "<html") || !strings.Contains(frag, j) {
		t.Errorf("the live fragment is a whole page or lacks the job: %.300s", frag)
	}
	// Sortable columns say their order and link to the other one, keeping the filters.
	sorted := f.analyst.wantPage(t, "/ui/jobs?status=Success&sort=-createdAt", http.StatusOK)
	if th := wt.Find(sorted, func(n *html.Node) bool { return n.Data == "th" && wt.Attr(n, "aria-sort") == "descending" }); len(th) != 1 {
		t.Errorf("no column says it sorts the list")
	} else if a := wt.Find(th[0], func(n *html.Node) bool { return n.Data == "a" }); len(a) != 1 || wt.Attr(a[0], "href") != "?sort=createdAt&status=Success" {
		t.Errorf("the sorted column links to %q", wt.Attr(a[0], "href"))
	}

	// The report: status, taxonomy badges, the tree, the raw JSON, the re-run with force and the delete.
	rep := f.analyst.wantPage(t, j, http.StatusOK)
	text := wt.Text(rep)
	for _, want := range []string{"Success", "Test:Echo=ok", "example.org", "msg example.org", "TLP:green"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report page lacks %q", want)
		}
	}
	if len(wt.Find(rep, func(n *html.Node) bool { return wt.Attr(n, "class") == "jsontree" })) < 2 {
		t.Errorf("the report page shows no report tree (report and parameters)")
	}
	if len(byAttr(rep, "data-live-root", f.job)) != 1 {
		t.Errorf("the report page has no live region for the job")
	}
	rerun := byAttr(rep, "data-api", "/api/analyzer/"+f.analyzer+"/run")
	if len(rerun) != 1 || !strings.Contains(wt.Attr(rerun[0], "data-body"), `"force":true`) {
		t.Fatalf("the report page offers no re-run with force")
	}
	again := f.analyst.Raw(t, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run", "application/json", wt.Attr(rerun[0], "data-body")).
		Want(t, http.StatusOK).Object(t)
	if again["id"] == f.job || again["fromCache"] == true {
		t.Errorf("the re-run with force came from the cache")
	}
	if len(byAttr(rep, "data-api", "/api/job/"+f.job)) != 1 {
		t.Errorf("the report page offers no delete")
	}

	// New analysis: a checkbox per enabled analyzer that accepts the type, in a form sent once per value and
	// analyzer to the run route.
	an := f.analyst.wantPage(t, "/ui/analyze?dataType=domain", http.StatusOK)
	forms := wt.Find(an, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-fanout") != "" })
	if len(forms) != 1 || wt.Attr(forms[0], "data-api") != "/api/analyzer/{worker}/run" || wt.Attr(forms[0], "data-fanout") != "worker data" {
		t.Fatalf("the new analysis form is not the fan-out to the run route")
	}
	boxes := wt.Find(an, func(n *html.Node) bool { return wt.Attr(n, "name") == "worker" })
	if len(boxes) != 1 || wt.Attr(boxes[0], "value") != f.analyzer {
		t.Fatalf("the new analysis form offers %d analyzers, want Test_Echo", len(boxes))
	}
	f.analyst.Call(t, http.MethodPost, "/api/analyzer/"+wt.Attr(boxes[0], "value")+"/run",
		map[string]any{"dataType": "domain", "data": "second.example", "tlp": 2, "pap": 2}).Want(t, http.StatusOK)
	if n := wt.Find(f.analyst.wantPage(t, "/ui/analyze?dataType=ip", http.StatusOK), func(n *html.Node) bool { return wt.Attr(n, "name") == "worker" }); len(n) != 1 {
		t.Errorf("ip: %d analyzers", len(n))
	}
	if d := f.analyst.wantPage(t, "/ui/analyze?dataType=file", http.StatusOK); len(byAttr(d, "type", "file")) != 1 {
		t.Errorf("the file type's form has no file input")
	}

	// The enable form is generated from the configuration items: required, defaults, multi-valued.
	en := f.admin.wantPage(t, "/ui/admin/analyzers/enable/Test_Keyed_1_0", http.StatusOK)
	key := byAttr(en, "name", "configuration.key")
	if len(key) != 1 || !hasAttr(key[0], "required") || wt.Attr(key[0], "type") != "password" {
		t.Errorf("the required secret item key is not a required password field")
	}
	ee := f.admin.wantPage(t, "/ui/admin/analyzers/enable/Test_Echo_1_0", http.StatusOK)
	if lv := byAttr(ee, "name", "configuration.level"); len(lv) != 1 || wt.Attr(lv[0], "value") != "info" {
		t.Errorf("the item level does not hold its default")
	}
	if ls := byAttr(ee, "name", "configuration.lists"); len(ls) != 1 || ls[0].Data != "textarea" || wt.Attr(ls[0], "data-type") != "lines" {
		t.Errorf("the multi-valued item lists is not a one-per-line field")
	}
	if g := byAttr(ee, "name", "configuration.check_tlp"); len(g) != 1 || wt.Attr(g[0], "data-type") != "bool" {
		t.Errorf("the global item check_tlp is not offered as a boolean")
	}
	forms = wt.Find(en, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-api") != "" })
	if len(forms) != 1 || wt.Attr(forms[0], "data-api") != "/api/organization/analyzer/Test_Keyed_1_0" {
		t.Fatalf("the enable form sends to %q", wt.Attr(forms[0], "data-api"))
	}
	f.admin.Call(t, http.MethodPost, wt.Attr(forms[0], "data-api"), map[string]any{"name": "Keyed",
		"configuration": map[string]any{"key": "s3cr3t-value"}}).Want(t, http.StatusCreated)
	ws := f.admin.wantPage(t, "/ui/admin/analyzers", http.StatusOK)
	if strings.Contains(wt.Text(ws), "s3cr3t-value") || !strings.Contains(wt.Text(ws), "set (hidden)") {
		t.Errorf("the analyzers page shows the secret item's value")
	}
	if !strings.Contains(wt.Text(ws), "Keyed") || len(wt.Find(ws, func(n *html.Node) bool {
		return strings.HasPrefix(wt.Attr(n, "data-api"), "/api/analyzer/") && wt.Attr(n, "data-method") == "DELETE"
	})) != 2 {
		t.Errorf("the analyzers page does not list both analyzers with their disable button")
	}

	// Each enabled worker links to its edit page (TestWebUI_EditWorker); a user's roles change with the form
	// of their row.
	if len(byAttr(ws, "href", "/ui/admin/analyzers/edit/"+f.analyzer)) != 1 {
		t.Errorf("the analyzers page does not link to Test_Echo's edit page")
	}
	users := f.admin.wantPage(t, "/ui/admin/users", http.StatusOK)
	rf := byAttr(users, "aria-label", "Roles of soc-reader")
	if len(rf) != 1 || wt.Attr(rf[0], "data-api") != "/api/user/soc-reader" || len(byAttr(users, "aria-label", "Roles of soc-admin")) != 0 {
		t.Fatalf("the users page has no roles form for soc-reader (or one for the orgadmin itself)")
	}
	f.admin.Call(t, http.MethodPatch, "/api/user/soc-reader", map[string]any{"roles": []string{"read", "analyze"}}).Want(t, http.StatusOK)
	sel := wt.Find(f.admin.wantPage(t, "/ui/admin/users", http.StatusOK), func(n *html.Node) bool {
		return n.Data == "option" && hasAttr(n, "selected") && n.Parent != nil && wt.Attr(n.Parent, "id") == "roles-soc-reader"
	})
	if len(sel) != 1 || wt.Text(sel[0]) != "read,analyze" {
		t.Errorf("the roles choice does not show the user's roles")
	}

	// The user's own page: name, password change and the own key, revealed or renewed into the page.
	me := f.analyst.wantPage(t, "/ui/me", http.StatusOK)
	if len(byAttr(me, "data-api", "/api/user/soc-analyst/password/change")) != 1 || len(byAttr(me, "data-reveal", "/api/user/soc-analyst/key")) != 1 ||
		len(byAttr(me, "data-reveal", "/api/user/soc-analyst/key/renew")) != 1 || len(byAttr(me, "data-api", "/api/user/soc-analyst")) != 1 {
		t.Errorf("the own page lacks the password change, the name or the key's reveal and renew")
	}
	if strings.Contains(wt.Text(me), f.analyst.Key) {
		t.Errorf("the own page shows the key before a click")
	}
	// The status page: version, database, the queue (TestWebUI_StatusQueue).
	for _, c := range []*client{f.analyst, f.e.super} {
		st := wt.Text(c.wantPage(t, "/ui/status", http.StatusOK))
		if !strings.Contains(st, "analysis-svc "+api.Version) || !strings.Contains(st, "answers") || !strings.Contains(st, "Job queue") {
			t.Errorf("%s's status page: %.300s", c.Login, st)
		}
	}

	// The counters of the top bar.
	if st, _, body := f.analyst.page(t, "/ui/counters"); st != http.StatusOK || !strings.Contains(body, `"activeJobs":`) {
		t.Errorf("counters: %d %s", st, body)
	}
	// The catalog: both kinds, the scan actions with their result shown in the page.
	cat := f.e.super.wantPage(t, "/ui/admin/catalog", http.StatusOK)
	for _, k := range []string{"analyzer", "responder"} {
		b := byAttr(cat, "data-api", "/api/"+k+"definition/scan")
		if len(b) != 1 || wt.Attr(b[0], "data-show") != "scan-"+k || len(byAttr(cat, "id", "scan-"+k)) != 1 {
			t.Errorf("the catalog has no %s scan showing its result", k)
		}
	}
	if !strings.Contains(wt.Text(cat), "Test_Keyed") || !strings.Contains(wt.Text(cat), "key: string required") {
		t.Errorf("the catalog does not list the definitions with their configuration items")
	}
}

// The edit page of an enabled worker: the enable form's fields (one template) holding the worker's values,
// never a credential's; what its form sends (wt.FormBody, as ui.js builds it) keeps the credentials left
// empty, replaces those filled and every other item, and the limits; an optional credential can be removed.
// Only an orgadmin of the worker's organization has the page; a session's PATCH needs its CSRF token.
func TestWebUI_EditWorker(t *testing.T) {
	f := newWebUIFixture(t, "example.org")
	keyed := f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0", map[string]any{"name": "Keyed",
		"configuration": map[string]any{"key": "s3cr3t-value", "proxy_https": "http://squid:Pr0xyPass@proxy.example:3128",
			"check_tlp": true, "max_tlp": 1, "cacerts": "line1\nline2"}, "rate": 7, "rateUnit": "Hour", "jobCache": 15}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	path := "/ui/admin/analyzers/edit/" + keyed

	f.e.setPassword(t, "soc-admin", "a long password 1")
	s := f.e.sessionClient()
	s.loginAs(t, "soc-admin", "a long password 1").Want(t, http.StatusOK)
	doc := s.wantPage(t, path, http.StatusOK)
	if b := strings.ToLower(wt.Text(doc)) + strings.Join(attrValues(doc), " "); strings.Contains(b, "s3cr3t-value") || strings.Contains(b, "pr0xypass") {
		t.Fatalf("the edit page shows a credential")
	}
	val := func(id string) string {
		n := byAttr(doc, "id", id)
		if len(n) != 1 {
			t.Fatalf("the edit page has no field %s", id)
		}
		return wt.Attr(n[0], "value")
	}
	if val("en-name") != "Keyed" || val("cf-max_tlp") != "1" || val("en-rate") != "7" || val("en-cache") != "15" || val("cf-key") != "" || val("cf-proxy_https") != "" {
		t.Errorf("the edit page's fields do not hold the worker's values")
	}
	key := byAttr(doc, "id", "cf-key")[0]
	if wt.Attr(key, "type") != "password" || hasAttr(key, "required") {
		t.Errorf("the stored required key is not an optional password field (empty keeps it)")
	}
	if sel := wt.Find(doc, func(n *html.Node) bool {
		return n.Data == "option" && hasAttr(n, "selected") && n.Parent != nil && wt.Attr(n.Parent, "id") == "cf-check_tlp"
	}); len(sel) != 1 || wt.Attr(sel[0], "value") != "true" {
		t.Errorf("check_tlp does not show its value")
	}
	if ta := byAttr(doc, "id", "cf-cacerts"); len(ta) != 1 || strings.TrimPrefix(wt.Text(ta[0]), "\n") != "line1\nline2" {
		t.Errorf("the text item cacerts does not hold its value")
	}
	// The key is required: it cannot be removed; the proxy can.
	if len(byAttr(doc, "name", "configuration.key")) != 1 || len(wt.Find(doc, func(n *html.Node) bool {
		return wt.Attr(n, "name") == "configuration.proxy_https" && wt.Attr(n, "data-if-checked") == "null"
	})) != 1 {
		t.Errorf("the removal boxes: the required key has one or the proxy none")
	}
	forms := wt.Find(doc, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-api") != "" })
	if len(forms) != 1 || wt.Attr(forms[0], "data-api") != "/api/analyzer/"+keyed || wt.Attr(forms[0], "data-method") != "PATCH" {
		t.Fatalf("the edit form does not PATCH the analyzer")
	}
	// Sent as rendered, with max_tlp and the rate changed: the credentials are kept, the rest as shown.
	body := wt.FormBody(t, forms[0], map[string]string{"cf-max_tlp": "3", "en-rate": ""})
	s.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, body).WantError(t, http.StatusForbidden, "AuthorizationError")
	s.CSRF = true
	got := s.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, body).Want(t, http.StatusOK).Object(t)
	conf := got["configuration"].(map[string]any)
	if conf["key"] != "s3cr3t-value" || conf["proxy_https"] != "http://squid:Pr0xyPass@proxy.example:3128" || conf["check_tlp"] != true ||
		conf["max_tlp"] != float64(3) || conf["cacerts"] != "line1\nline2" || got["rate"] != nil || got["jobCache"] != float64(15) || got["name"] != "Keyed" {
		t.Errorf("after the edit form: %v", got)
	}
	// A key typed in replaces the stored one; the proxy's box removes it.
	doc = s.wantPage(t, path, http.StatusOK)
	forms = wt.Find(doc, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-api") != "" })
	box := wt.Find(doc, func(n *html.Node) bool { return wt.Attr(n, "data-if-checked") != "" })
	wt.Walk(box[0], func(n *html.Node) { n.Attr = append(n.Attr, html.Attribute{Key: "checked"}) })
	got = s.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, wt.FormBody(t, forms[0], map[string]string{"cf-key": "n3w-key"})).
		Want(t, http.StatusOK).Object(t)
	if conf = got["configuration"].(map[string]any); conf["key"] != "n3w-key" || conf["proxy_https"] != nil || conf["max_tlp"] != float64(3) {
		t.Errorf("after replacing the key and removing the proxy: %v", conf)
	}
	if d := s.wantPage(t, path, http.StatusOK); len(wt.Find(d, func(n *html.Node) bool { return wt.Attr(n, "data-if-checked") != "" })) != 0 {
		t.Errorf("a removed proxy still offers its removal")
	}

	// Roles and organizations.
	for _, c := range []*client{f.analyst, f.reads} {
		c.wantPage(t, path, http.StatusForbidden)
	}
	otherAdmin := f.e.user(t, "other-admin", "other", roleOrgAdmin)
	otherAdmin.wantPage(t, path, http.StatusNotFound)
	otherAdmin.wantPage(t, "/ui/admin/responders/edit/"+keyed, http.StatusNotFound)
	f.admin.wantPage(t, "/ui/admin/responders/edit/"+keyed, http.StatusNotFound) // an analyzer is no responder
	otherAdmin.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, body).WantError(t, http.StatusNotFound, "NotFoundError")
}

// The status page's queue: the workers busy and the jobs waiting of the caller's organization, or of every
// organization with this replica's workers for the superadmin. Two workers are held by a job of each
// organization at its gate (fair_test.go), then two more of soc's wait.
func TestWebUI_StatusQueue(t *testing.T) {
	jf := newJobFixture(t, withJobs(analysis.JobsConfig{Workers: 2}))
	otherAdmin := jf.e.user(t, "other-admin", "other", roleOrgAdmin)
	otherEcho := otherAdmin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	f := &fairFixture{jobFixture: jf, otherAnalyzer: otherEcho, prefix: fmt.Sprintf("%s-%d-", t.Name(), time.Now().UnixNano())}
	f.waitStatusAs(t, f.analyst, f.submit(t, f.analyst, "s1", ""), "InProgress")
	f.waitStatusAs(t, f.other, f.submit(t, f.other, "o1", ""), "InProgress")
	for _, g := range []string{"s2", "s3"} {
		if id := f.submit(t, f.analyst, g, ""); f.status(t, f.analyst, id) != "Waiting" {
			t.Fatalf("a job runs with both workers held")
		}
	}

	// rows are the queue table's rows: organization → busy, waiting, oldest.
	rows := func(c *client) map[string][]string {
		t.Helper()
		doc := c.wantPage(t, "/ui/status", http.StatusOK)
		out := map[string][]string{}
		for _, tr := range wt.Find(doc, func(n *html.Node) bool { return n.Data == "tr" && n.Parent != nil && n.Parent.Data == "tbody" }) {
			var cells []string
			for _, td := range wt.Find(tr, func(n *html.Node) bool { return n.Data == "td" }) {
				cells = append(cells, strings.TrimSpace(wt.Text(td)))
			}
			if len(cells) == 4 {
				out[cells[0]] = cells[1:]
			}
		}
		return out
	}
	for _, c := range []*client{f.analyst, f.reads, f.admin} {
		r := rows(c)
		if len(r) != 1 || r["soc"] == nil || r["soc"][0] != "1" || r["soc"][1] != "2" || r["soc"][2] == "none waits" {
			t.Errorf("%s's queue: %v, want soc only: 1 busy, 2 waiting since a date", c.Login, r)
		}
	}
	if r := rows(f.other); len(r) != 1 || r["other"] == nil || r["other"][0] != "1" || r["other"][1] != "0" || r["other"][2] != "none waits" {
		t.Errorf("other's queue: %v", r)
	}
	r := rows(f.e.super)
	if len(r) != 2 || r["soc"][0] != "1" || r["soc"][1] != "2" || r["other"][0] != "1" || r["other"][1] != "0" {
		t.Errorf("the superadmin's queue: %v, want both organizations", r)
	}
	if st := wt.Text(f.e.super.wantPage(t, "/ui/status", http.StatusOK)); !strings.Contains(st, "2 busy of 2") {
		t.Errorf("the superadmin's status page does not show this replica's busy workers")
	}
	if st := wt.Text(f.analyst.wantPage(t, "/ui/status", http.StatusOK)); strings.Contains(st, "busy of") {
		t.Errorf("an organization's user sees the replica's workers (every organization's load)")
	}
	// An organization with nothing queued has its row, with zeros.
	f.e.createOrg(t, "third-org")
	if r := rows(f.e.user(t, "third-analyst", "third-org", roleAnalyze)); len(r) != 1 || r["third-org"] == nil || r["third-org"][0] != "0" {
		t.Errorf("an organization with nothing queued: %v", r)
	}
}

// attrValues are the values of every attribute of the document.
func attrValues(doc *html.Node) []string {
	var out []string
	wt.Walk(doc, func(n *html.Node) {
		for _, a := range n.Attr {
			out = append(out, a.Val)
		}
	})
	return out
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// A read user sees no run, delete or configuration control; an analyze user no configuration page; another
// organization's job is a 404 page and is not in its history; an orgadmin has no superadmin page; bad
// parameters are 400 pages without a trace.
func TestWebUI_Roles(t *testing.T) {
	f := newWebUIFixture(t, "example.org")
	j := "/ui/jobs/" + f.job
	for _, p := range []string{"/ui/jobs", j} {
		if w := wt.WriteControls(f.reads.wantPage(t, p, http.StatusOK)); len(w) != 0 {
			t.Errorf("read user %s: %d write controls, first %s %s", p, len(w), w[0].Data, wt.Attr(w[0], "data-api"))
		}
	}
	nav := wt.Text(f.reads.wantPage(t, "/ui/jobs", http.StatusOK))
	if strings.Contains(nav, "New analysis") || strings.Contains(nav, "Analyzers") {
		t.Errorf("the read user's top bar offers analysis or configuration")
	}
	for _, p := range []string{"/ui/analyze", "/ui/analyze?dataType=domain", "/ui/admin/analyzers", "/ui/admin/users", "/ui/admin/catalog"} {
		f.reads.wantPage(t, p, http.StatusForbidden)
	}
	for _, p := range []string{"/ui/admin/analyzers", "/ui/admin/responders", "/ui/admin/analyzers/enable/Test_Echo_1_0", "/ui/admin/users",
		"/ui/admin/catalog", "/ui/admin/organizations"} {
		f.analyst.wantPage(t, p, http.StatusForbidden)
	}
	if strings.Contains(wt.Text(f.analyst.wantPage(t, "/ui/jobs", http.StatusOK)), "Catalog") {
		t.Errorf("the analyze user's top bar offers configuration")
	}
	f.admin.wantPage(t, "/ui/admin/organizations", http.StatusForbidden)
	f.e.super.wantPage(t, "/ui/jobs", http.StatusForbidden)
	f.other.wantPage(t, j, http.StatusNotFound)
	f.other.wantPage(t, j+"?fragment=1", http.StatusNotFound)
	if d := f.other.wantPage(t, "/ui/jobs", http.StatusOK); len(byAttr(d, "href", j)) != 0 {
		t.Errorf("another organization's history lists the job")
	}
	f.other.wantPage(t, "/ui/admin/analyzers/enable/Nope_1_0", http.StatusForbidden)
	f.admin.wantPage(t, "/ui/admin/analyzers/enable/Nope_1_0", http.StatusNotFound)
	for _, p := range []string{"/ui/jobs?page=0", "/ui/jobs?size=100000", "/ui/jobs?sort=password", "/ui/jobs?status=Nope",
		"/ui/jobs?type=x", "/ui/jobs?from=yesterday", "/ui/analyze?dataType=nothing"} {
		st, hdr, body := f.analyst.page(t, p)
		if st != http.StatusBadRequest || !strings.Contains(hdr.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s", p, st, hdr.Get("Content-Type"))
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("%s: a stack trace", p)
		}
	}
}

// Hostile values that users and analyzers write are escaped wherever they appear: an observable and the
// report that echoes it, a message, parameters, a failure's message, a file name, a user's name, an
// organization's description, an analyzer's name and a configuration value (its edit page).
func TestWebUI_HostileValues(t *testing.T) {
	hostile := strings.Join(wt.Hostile, " ")
	f := newWebUIFixture(t, hostile)
	failed := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "203.0.113.9", "parameters": map[string]any{"fail": hostile}})
	f.wait(t, f.analyst, failed["id"].(string))
	// The file name holds no quote: it would end the part's header.
	file := f.analyst.Multipart(t, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run", map[string]any{"dataType": "file"}, nil,
		apitest.Part{Field: "attachment", Filename: wt.Hostile[0] + wt.Hostile[1] + ".txt", ContentType: "text/plain", Content: []byte("hello")}).
		Want(t, http.StatusOK).Object(t)
	f.wait(t, f.analyst, file["id"].(string))
	f.e.createUser(t, f.admin, "hostile-user", "soc", roleRead)
	f.admin.Call(t, http.MethodPatch, "/api/user/hostile-user", map[string]any{"name": hostile}).Want(t, http.StatusOK)
	f.e.super.Call(t, http.MethodPost, "/api/organization", map[string]any{"name": "hostile-org", "description": hostile}).Want(t, http.StatusCreated)
	keyed := f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0", map[string]any{"name": hostile,
		"configuration": map[string]any{"key": hostile, "cacerts": hostile}}).Want(t, http.StatusCreated).Object(t)["id"].(string)

	pages := map[*client][]string{
		f.analyst: {"/ui/jobs", "/ui/jobs?value=" + url.QueryEscape(hostile), "/ui/jobs/" + f.job, "/ui/jobs/" + f.job + "?fragment=1",
			"/ui/jobs/" + failed["id"].(string), "/ui/jobs/" + file["id"].(string), "/ui/analyze?dataType=ip"},
		f.admin:   {"/ui/admin/users", "/ui/admin/analyzers", "/ui/admin/analyzers/edit/" + keyed},
		f.e.super: {"/ui/admin/users", "/ui/admin/organizations"},
	}
	for c, ps := range pages {
		for _, p := range ps {
			st, hdr, body := c.page(t, p)
			if st != http.StatusOK {
				t.Fatalf("%s: %d %.300s", p, st, body)
			}
			var doc *html.Node
			if strings.Contains(p, "fragment=1") {
				doc, _ = html.Parse(strings.NewReader(body))
			} else {
				doc = wt.CheckPage(t, p, hdr, body)
			}
			wt.CheckEscaped(t, p, body, doc)
		}
	}
	// The hostile values are shown, as text.
	if !strings.Contains(wt.Text(f.analyst.wantPage(t, "/ui/jobs/"+f.job, http.StatusOK)), wt.Hostile[0]) {
		t.Errorf("the report page does not show the observable as text")
	}
}

// A page without a valid session goes to the login page with the page to come back to; a session's page
// carries its CSRF token, and a write without it is refused; no page holds the user's API key.
func TestWebUI_LoginAndCSRF(t *testing.T) {
	f := newWebUIFixture(t, "example.org")
	st, hdr, _ := f.e.anon().page(t, "/ui/jobs?status=Success")
	loc, _ := url.Parse(hdr.Get("Location"))
	if st != http.StatusSeeOther || loc.Path != "/ui/login" || loc.Query().Get("next") != "/ui/jobs?status=Success" {
		t.Fatalf("anonymous page: %d %s", st, hdr.Get("Location"))
	}
	if st, hdr, _ := f.e.anon().page(t, "/"); st != http.StatusFound || hdr.Get("Location") != "/ui/" {
		t.Errorf("/: %d %s", st, hdr.Get("Location"))
	}
	if st, hdr, _ := f.analyst.page(t, "/ui/"); st != http.StatusFound || hdr.Get("Location") != "/ui/jobs" {
		t.Errorf("the analyst's start page: %d %s", st, hdr.Get("Location"))
	}
	if st, hdr, _ := f.e.super.page(t, "/ui/"); st != http.StatusFound || hdr.Get("Location") != "/ui/admin/organizations" {
		t.Errorf("the superadmin's start page: %d %s", st, hdr.Get("Location"))
	}
	doc := f.e.anon().wantPage(t, "/ui/login?next="+url.QueryEscape("/ui/jobs/"+f.job), http.StatusOK)
	forms := wt.Find(doc, func(n *html.Node) bool { return n.Data == "form" })
	if len(forms) != 1 || wt.Attr(forms[0], "data-api") != "/api/login" || wt.Attr(forms[0], "data-then") != "/ui/jobs/"+f.job {
		t.Fatalf("the login form does not sign in at /api/login and come back")
	}

	f.e.setPassword(t, "soc-analyst", "a long password 1")
	s := f.e.sessionClient()
	s.loginAs(t, "soc-analyst", "a long password 1").Want(t, http.StatusOK)
	page := s.wantPage(t, "/ui/jobs/"+f.job, http.StatusOK)
	metas := wt.Find(page, func(n *html.Node) bool { return n.Data == "meta" && wt.Attr(n, "name") == "xsrf-token" })
	token := s.Cookie("XSRF-TOKEN")
	if len(metas) != 1 || token == "" || wt.Attr(metas[0], "content") != token {
		t.Fatalf("the page's CSRF token is not the session's")
	}
	del := func(csrf string) int {
		req, _ := http.NewRequest(http.MethodDelete, f.e.srv.URL+"/api/job/"+f.job, nil)
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
	for _, tc := range []struct {
		csrf string
		want int
	}{{"", http.StatusForbidden}, {"wrong", http.StatusForbidden}, {token, http.StatusNoContent}} {
		if st := del(tc.csrf); st != tc.want {
			t.Errorf("delete with CSRF %q: %d, want %d", tc.csrf, st, tc.want)
		}
	}
	if d := s.wantPage(t, "/ui/jobs", http.StatusOK); len(byAttr(d, "href", "/ui/jobs/"+f.job)) != 0 {
		t.Errorf("the deleted job is still in the history")
	}
	key := f.analyst.Key
	for _, p := range []string{"/ui/jobs", "/ui/jobs/" + f.job, "/ui/analyze"} {
		if _, _, body := s.page(t, p); strings.Contains(body, key) {
			t.Errorf("%s shows the user's API key", p)
		}
	}
	// Signed out, the session's pages lead to the login page again.
	s.Call(t, http.MethodPost, "/api/logout", nil)
	if st, _, _ := s.page(t, "/ui/jobs"); st != http.StatusSeeOther {
		t.Errorf("a page after sign-out: %d", st)
	}
}

// The shared assets are served by analysis-svc too: hashed names cached for a year.
func TestWebUI_Assets(t *testing.T) {
	e := newEnv(t, withoutWorkers())
	for _, name := range []string{"ui.css", "ui.js", "favicon.svg"} {
		res, err := http.Get(e.srv.URL + webui.Asset(name))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d %q", name, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}

// hostileWorker is an external analyzer whose report holds markup everywhere a page shows a report: keys and
// values of the full report, the taxonomies, an artifact's data, tags and message, and its numbers as written.
const hostileWorker = `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
h = "<script>alert(1)</script> <img src=x onerror=alert(1)> \"'><b>x</b>"
out = {"success": True,
       "summary": {"taxonomies": [{"level": h, "namespace": h, "predicate": h, "value": h},
                                  {"level": "malicious", "namespace": "N", "predicate": "P", "value": 2.50}]},
       "full": {h: h, "list": [h, {"deep": h}], "n": 1.0},
       "artifacts": [{"dataType": "other", "data": h, "tags": [h], "message": h}]}
with open(os.path.join(job, "output", "output.json"), "w") as f:
    json.dump(out, f)
`

// A hostile report from an external worker (a program of the public format) is shown escaped: the tree, the
// badges, the artifacts and the raw JSON; its numbers are shown as written.
func TestWebUI_HostileExternalReport(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Hostile", "hostile.py"), hostileWorker, 0o755)
	writeFile(t, filepath.Join(root, "Hostile", "Hostile.json"), flavor("Hostile", "Hostile/hostile.py", "other"), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	w := x.enable(t, "analyzer", "Hostile_1_0", nil)
	id := x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"x"}`)
	if r := x.waitRaw(t, id); !strings.Contains(string(r.Body), `"status":"Success"`) {
		t.Fatalf("the hostile worker's job: %s", r.Body)
	}
	for _, p := range []string{"/ui/jobs/" + id, "/ui/jobs"} {
		st, hdr, body := x.analyst.page(t, p)
		if st != http.StatusOK {
			t.Fatalf("%s: %d %.300s", p, st, body)
		}
		wt.CheckEscaped(t, p, body, wt.CheckPage(t, p, hdr, body))
	}
	doc := x.analyst.wantPage(t, "/ui/jobs/"+id, http.StatusOK)
	badges := wt.Find(doc, func(n *html.Node) bool { return strings.HasPrefix(wt.Attr(n, "class"), "tax ") })
	if len(badges) != 2 || wt.Attr(badges[0], "class") != "tax tax-info" || wt.Attr(badges[1], "class") != "tax tax-malicious" ||
		!strings.Contains(wt.Text(badges[0]), wt.Hostile[0]) || wt.Text(badges[1]) != "N:P=2.5" {
		t.Errorf("the badges: %d, the hostile level not as info or the number not as written", len(badges))
		for _, b := range badges {
			t.Logf("badge %s: %s", wt.Attr(b, "class"), wt.Text(b))
		}
	}
	text := wt.Text(doc)
	h := strings.Join(wt.Hostile, " ")
	for _, want := range []string{h + `: "` + h + `"`, "n: 1.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report page lacks %q as text", want)
		}
	}
	// The raw JSON view's text is the report the API answers, its numbers as written.
	decode := func(what, s string) map[string]any {
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v: %.300s", what, err, s)
		}
		return v
	}
	pre := byAttr(doc, "id", "job-raw-text")
	if len(pre) != 1 {
		t.Fatalf("the report page has %d raw JSON views", len(pre))
	}
	raw := decode("the raw JSON view", wt.Text(pre[0]))
	report, _ := decode("the API's job", string(x.waitRaw(t, id).Body))["report"].(map[string]any)
	for _, k := range []string{"success", "summary", "full"} {
		if report[k] == nil || !reflect.DeepEqual(raw[k], report[k]) {
			t.Errorf("the raw JSON view's %s: %v, the API's %v", k, raw[k], report[k])
		}
	}
}
