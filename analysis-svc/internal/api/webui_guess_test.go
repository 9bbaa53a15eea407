package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	wt "github.com/openir/platform/pkg/webui/webuitest"
)

// planRuns GETs the guessing plan of values as a user, wants 200 and its headers, and returns the fragment
// and the fields of each box (ui.js data-fields), by value.
func planRuns(t *testing.T, c *client, values ...string) (string, map[string][]map[string]string) {
	t.Helper()
	path := "/ui/analyze/plan?values=" + url.QueryEscape(strings.Join(values, "\n"))
	st, hdr, body := c.page(t, path)
	if st != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("%s GET %s: %d %s: %.300s", c.Login, path, st, hdr.Get("Content-Type"), body)
	}
	if hdr.Get("Content-Security-Policy") == "" || hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("the plan fragment lacks the page headers")
	}
	if strings.Contains(body, "<html") || strings.Contains(body, "<form") {
		t.Errorf("the plan is a whole page or holds a form: %.300s", body)
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	wt.CheckEscaped(t, path, body, doc)
	runs := map[string][]map[string]string{}
	for _, box := range wt.Find(doc, func(n *html.Node) bool { return wt.Attr(n, "name") == "run" }) {
		var f map[string]string
		if err := json.Unmarshal([]byte(wt.Attr(box, "data-fields")), &f); err != nil {
			t.Fatalf("a box's data-fields %q: %v", wt.Attr(box, "data-fields"), err)
		}
		if !hasAttr(box, "checked") || wt.Attr(box, "type") != "checkbox" || wt.Attr(box, "aria-label") == "" {
			t.Errorf("the box %v is not a checked, labelled checkbox", f)
		}
		runs[f["data"]] = append(runs[f["data"]], f)
	}
	return body, runs
}

// New analysis with the data type guessed: the page's form fans out over the plan's boxes; the plan lists
// each value once with its guessed type (observable.Guess) and the organization's enabled analyzers that
// accept it, escapes what the user typed, guesses nothing where it is ambiguous; a box's fields, sent as
// ui.js sends them, run the job; another organization's analyzers never appear; a read user is refused.
func TestWebUI_AnalyzeGuess(t *testing.T) {
	f := newJobFixture(t)
	otherAdmin := f.e.user(t, "other-admin", "other", roleOrgAdmin)
	otherKeyed := otherAdmin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0",
		map[string]any{"configuration": map[string]any{"key": "k"}}).Want(t, http.StatusCreated).Object(t)["id"].(string)

	page := f.analyst.wantPage(t, "/ui/analyze?dataType=guess", http.StatusOK)
	forms := wt.Find(page, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-fanout") == "run" })
	if len(forms) != 1 || wt.Attr(forms[0], "data-api") != "/api/analyzer/{worker}/run" || wt.Attr(forms[0], "data-missing") == "" {
		t.Fatalf("the guessing form is not the fan-out over the plan's boxes to the run route")
	}
	if ta := byAttr(page, "data-plan", "/ui/analyze/plan"); len(ta) != 1 || wt.Attr(ta[0], "data-plan-target") != "an-plan" ||
		len(byAttr(forms[0], "id", "an-plan")) != 1 {
		t.Fatalf("the values field does not name the plan and its region inside the form")
	}
	if opts := byAttr(f.analyst.wantPage(t, "/ui/analyze", http.StatusOK), "value", "guess"); len(opts) != 1 || opts[0].Data != "option" {
		t.Errorf("the data type choice does not offer the guess")
	}

	hostile := strings.Join(wt.Hostile, "")
	body, runs := planRuns(t, f.analyst, "203.0.113.7", " example.org ", "www.example.org", "setup.exe", hostile,
		"203.0.113.7", "d41d8cd98f00b204e9800998ecf8427e", "")
	if len(runs) != 2 || len(runs["203.0.113.7"]) != 1 || len(runs["example.org"]) != 1 {
		t.Fatalf("plan boxes %v, want Test_Echo on the ip and the domain once each", runs)
	}
	if r := runs["203.0.113.7"][0]; r["worker"] != f.analyzer || r["dataType"] != "ip" {
		t.Errorf("the ip's box %v", r)
	}
	if r := runs["example.org"][0]; r["worker"] != f.analyzer || r["dataType"] != "domain" {
		t.Errorf("the domain's box %v", r)
	}
	doc, _ := html.Parse(strings.NewReader(body))
	text := wt.Text(doc)
	for _, want := range []string{"no enabled analyzer accepts fqdn", "no enabled analyzer accepts hash", "setup.exe",
		"not guessed", "choose its data type above to run it", wt.Hostile[0]} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q: %s", want, text)
		}
	}
	if n := strings.Count(text, "203.0.113.7"); n != 1 {
		t.Errorf("the repeated value is listed %d times", n)
	}

	// A box's fields as ui.js sends them with the form's other fields: the job runs on the guessed type.
	fields := runs["203.0.113.7"][0]
	req := wt.FormBody(t, forms[0], map[string]string{"an-msg": "guessed"})
	req["dataType"], req["data"] = fields["dataType"], fields["data"]
	j := f.analyst.Call(t, http.MethodPost, "/api/analyzer/"+url.PathEscape(fields["worker"])+"/run", req).Want(t, http.StatusOK).Object(t)
	if j["dataType"] != "ip" || j["data"] != "203.0.113.7" || j["message"] != "guessed" || j["tlp"] != float64(2) {
		t.Errorf("the guessed run made %v", j)
	}

	// The values in the URL (ui.js keeps them there): the page holds them and their plan, said to be for them.
	withValues := f.analyst.wantPage(t, "/ui/analyze?dataType=guess&values="+url.QueryEscape(" 203.0.113.7\n\n"+hostile+"\n"), http.StatusOK)
	if ta := byAttr(withValues, "id", "an-values"); len(ta) != 1 || !strings.Contains(wt.Text(ta[0]), hostile) {
		t.Errorf("the values field does not hold the URL's values")
	}
	region := byAttr(withValues, "id", "an-plan")
	if len(region) != 1 || wt.Attr(region[0], "data-planned") != "203.0.113.7\n"+hostile {
		t.Fatalf("the plan region is not said to be for the URL's values")
	}
	if boxes := wt.Find(region[0], func(n *html.Node) bool { return wt.Attr(n, "name") == "run" }); len(boxes) != 1 ||
		!strings.Contains(wt.Attr(boxes[0], "data-fields"), `"203.0.113.7"`) {
		t.Errorf("the page's plan has %d boxes, want the ip's", len(boxes))
	}
	if _, _, b := f.analyst.page(t, "/ui/analyze?dataType=guess&values="+url.QueryEscape(hostile)); strings.Contains(b, hostile) {
		t.Errorf("the page holds the URL's values unescaped")
	}

	// Another organization sees its own analyzers only.
	if _, o := planRuns(t, f.other, "203.0.113.7", "example.org"); len(o) != 1 || len(o["203.0.113.7"]) != 1 ||
		o["203.0.113.7"][0]["worker"] != otherKeyed {
		t.Errorf("the other organization's plan %v, want its Test_Keyed on the ip only", o)
	}
	// Past 200 values the plan says how many it left out.
	many := make([]string, 205)
	for i := range many {
		many[i] = "host" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".example.org"
	}
	if b, _ := planRuns(t, f.analyst, many...); !strings.Contains(b, "5 more values are not listed") {
		t.Errorf("the plan of 205 values does not say 5 are left out")
	}
	if b, r := planRuns(t, f.analyst); len(r) != 0 || strings.Contains(b, "<table") {
		t.Errorf("an empty plan lists something: %s", b)
	}

	// Roles: a read user is refused the plan; no session goes to the login page.
	if st, _, _ := f.reads.page(t, "/ui/analyze/plan?values=203.0.113.7"); st != http.StatusForbidden {
		t.Errorf("read user: %d, want 403", st)
	}
	f.reads.wantPage(t, "/ui/analyze?dataType=guess", http.StatusForbidden)
	if st, hdr, _ := f.e.anon().page(t, "/ui/analyze/plan?values=x"); st != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/ui/login?") {
		t.Errorf("without a session: %d %s", st, hdr.Get("Location"))
	}
}
