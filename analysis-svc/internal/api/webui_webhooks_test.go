package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/openir/platform/pkg/events/eventstest"
	wt "github.com/openir/platform/pkg/webui/webuitest"
)

// button finds the one button of a page whose data-api is route (and data-method method, "" for POST).
func button(t *testing.T, doc *html.Node, route, method string) *html.Node {
	t.Helper()
	bs := wt.Find(doc, func(n *html.Node) bool {
		return n.Data == "button" && wt.Attr(n, "data-api") == route && wt.Attr(n, "data-method") == method
	})
	if len(bs) != 1 {
		t.Fatalf("%d buttons %s %s, want 1", len(bs), method, route)
	}
	return bs[0]
}

// The orgadmin's webhook pages: the list and its create form, sent as ui.js sends it; the test button's
// delivery arrives and is listed on the webhook's page with its re-send; the change form keeps a secret left
// empty; disable, enable and delete; credentials never in a page, hostile names escaped; an analyst, a read
// user and the superadmin are refused, another organization's webhook is a 404 page.
func TestWebUI_Webhooks(t *testing.T) {
	f := newJobFixture(t)
	recv := eventstest.NewReceiver(t, "sign-s3cret")
	hostile := strings.Join(wt.Hostile, "")

	list := f.admin.wantPage(t, "/ui/admin/webhooks", http.StatusOK)
	if !strings.Contains(wt.Text(list), "No webhook yet") {
		t.Errorf("the empty list does not say so")
	}
	if len(byAttr(f.admin.wantPage(t, "/ui/jobs", http.StatusOK), "href", "/ui/admin/webhooks")) != 1 {
		t.Errorf("the orgadmin's top bar has no Webhooks link")
	}
	forms := byAttr(list, "data-api", "/api/webhook")
	if len(forms) != 1 || forms[0].Data != "form" || wt.Attr(forms[0], "data-then") != "/ui/admin/webhooks/{id}" {
		t.Fatalf("the list has no create form")
	}
	body := wt.FormBody(t, forms[0], map[string]string{"wh-name": hostile, "wh-url": recv.URL(), "wh-auth": "bearer",
		"wh-token": "tok-s3cret", "wh-secret": "sign-s3cret", "wh-filter": `{"operation": "Update"}`})
	if _, ok := body["password"]; ok {
		t.Errorf("the create form sends an empty password: %v", body)
	}
	wh := f.admin.Call(t, http.MethodPost, "/api/webhook", body).Want(t, http.StatusCreated).Object(t)
	id := wh["id"].(string)
	if wh["hasToken"] != true || wh["hasSecret"] != true || wh["auth"] != "bearer" {
		t.Fatalf("the webhook created from the form: %v", wh)
	}

	path := "/ui/admin/webhooks/" + id
	for _, p := range []string{"/ui/admin/webhooks", path} {
		st, hdr, b := f.admin.page(t, p)
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d", p, st)
		}
		doc := wt.CheckPage(t, p, hdr, b)
		wt.CheckEscaped(t, p, b, doc)
		if strings.Contains(b, "s3cret") {
			t.Errorf("%s shows a credential", p)
		}
		if !strings.Contains(wt.Text(doc), wt.Hostile[0]) || !strings.Contains(wt.Text(doc), recv.URL()) {
			t.Errorf("%s does not show the webhook's name and URL", p)
		}
	}

	// Test: the receiver gets a signed Test event; the webhook's page lists its delivery with a re-send.
	page := f.admin.wantPage(t, path, http.StatusOK)
	test := button(t, page, "/api/webhook/"+id+"/test", "")
	if wt.Attr(test, "data-then") != path {
		t.Errorf("the test button goes to %q", wt.Attr(test, "data-then"))
	}
	f.admin.Call(t, http.MethodPost, wt.Attr(test, "data-api"), nil).Want(t, http.StatusOK)
	v := recv.Wait(t, 15*time.Second, func(v map[string]any) bool { return v["operation"] == "Test" })
	if v["objectId"] != id || recv.BadSignatures() != 0 {
		t.Errorf("the test event %v (%d bad signatures)", v, recv.BadSignatures())
	}
	var resend []*html.Node
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d := f.admin.wantPage(t, path, http.StatusOK)
		resend = wt.Find(d, func(n *html.Node) bool { return strings.HasSuffix(wt.Attr(n, "data-api"), "/resend") })
		if len(resend) == 1 && strings.Contains(wt.Text(d), "Delivered") && strings.Contains(wt.Text(d), "1 in all") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook's page does not list the delivered test: %s", wt.Text(d))
		}
	}
	f.admin.Call(t, http.MethodPost, wt.Attr(resend[0], "data-api"), nil).Want(t, http.StatusOK)
	for deadline := time.Now().Add(10 * time.Second); recv.Count(func(v map[string]any) bool { return v["operation"] == "Test" }) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the re-sent test did not arrive")
		}
	}
	if _, _, frag := f.admin.page(t, path+"?fragment=1"); strings.Contains(frag, "<html") || !strings.Contains(frag, "/resend") {
		t.Errorf("the deliveries fragment is a whole page or lacks the delivery")
	}

	// Change: the form holds the values, never a credential; left empty, the token and secret are kept.
	edit := wt.Find(page, func(n *html.Node) bool { return n.Data == "form" && wt.Attr(n, "data-method") == "PATCH" })
	if len(edit) != 1 || wt.Attr(edit[0], "data-api") != "/api/webhook/"+id {
		t.Fatalf("the webhook's page has no change form")
	}
	body = wt.FormBody(t, edit[0], map[string]string{"wh-name": "renamed"})
	if body["url"] != recv.URL() || body["auth"] != "bearer" || body["filter"] == nil {
		t.Errorf("the change form does not hold the webhook's values: %v", body)
	}
	for _, k := range []string{"password", "token", "secret"} {
		if _, ok := body[k]; ok {
			t.Errorf("the change form sends %s left empty", k)
		}
	}
	got := f.admin.Call(t, http.MethodPatch, "/api/webhook/"+id, body).Want(t, http.StatusOK).Object(t)
	if got["name"] != "renamed" || got["hasToken"] != true || got["hasSecret"] != true {
		t.Errorf("after the change: %v", got)
	}

	// Disable, enable, delete, as the buttons send them.
	disable := button(t, f.admin.wantPage(t, "/ui/admin/webhooks", http.StatusOK), "/api/webhook/"+id, http.MethodPatch)
	f.admin.Raw(t, http.MethodPatch, "/api/webhook/"+id, "application/json", wt.Attr(disable, "data-body")).Want(t, http.StatusOK)
	off := f.admin.wantPage(t, "/ui/admin/webhooks", http.StatusOK)
	if len(byAttr(off, "data-api", "/api/webhook/"+id+"/test")) != 0 || !strings.Contains(wt.Text(off), "disabled") {
		t.Errorf("a disabled webhook still offers its test")
	}
	enable := button(t, off, "/api/webhook/"+id, http.MethodPatch)
	if wt.Attr(enable, "data-body") != `{"enabled":true}` {
		t.Errorf("the disabled webhook's button sends %s", wt.Attr(enable, "data-body"))
	}
	del := button(t, off, "/api/webhook/"+id, http.MethodDelete)
	if wt.Attr(del, "data-confirm") == "" {
		t.Errorf("delete asks no confirmation")
	}

	// Refusals.
	for _, c := range []*client{f.analyst, f.reads, f.e.super} {
		c.wantPage(t, "/ui/admin/webhooks", http.StatusForbidden)
		c.wantPage(t, path, http.StatusForbidden)
	}
	otherAdmin := f.e.user(t, "other-admin", "other", roleOrgAdmin)
	otherAdmin.wantPage(t, path, http.StatusNotFound)
	if d := otherAdmin.wantPage(t, "/ui/admin/webhooks", http.StatusOK); len(byAttr(d, "href", path)) != 0 {
		t.Errorf("another organization lists the webhook")
	}
	if strings.Contains(wt.Text(f.analyst.wantPage(t, "/ui/jobs", http.StatusOK)), "Webhooks") {
		t.Errorf("the analyst's top bar offers the webhooks")
	}
	if st, _, _ := f.admin.page(t, path+"?size=0"); st != http.StatusBadRequest {
		t.Errorf("a bad page size: %d", st)
	}

	f.admin.Call(t, wt.Attr(del, "data-method"), wt.Attr(del, "data-api"), nil).Want(t, http.StatusNoContent)
	f.admin.wantPage(t, path, http.StatusNotFound)
	if d := f.admin.wantPage(t, "/ui/admin/webhooks", http.StatusOK); len(byAttr(d, "href", path)) != 0 {
		t.Errorf("the deleted webhook is still listed")
	}
}
