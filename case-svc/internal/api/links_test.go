package api_test

import (
	"net/http"
	"slices"
	"testing"
)

// linkFixture: soc's case a shares 10.0.0.1 and x.example (as another type) with case b; c holds 10.0.0.1
// marked ignoreSimilarity, d (cert) holds it too, e shares nothing.
type linkFixture struct {
	tm               *team
	a, b, c, e       string
	aIP, aDom, bIP   string
	aIgnored, certIP string
}

func newLinkFixture(t *testing.T) linkFixture {
	t.Helper()
	tm := newTeam(t)
	f := linkFixture{tm: tm}
	add := func(c *client, caseID, dataType, data string) string {
		return c.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": dataType, "data": data})[0].Str(t, "id")
	}
	f.b = tm.analyst.newCase(t, map[string]any{"title": "older"}).Str(t, "id")
	f.bIP = add(tm.analyst, f.b, "ip", "10.0.0.1")
	add(tm.analyst, f.b, "other", "x.example")
	add(tm.analyst, f.b, "ip", "10.9.9.9")
	f.c = tm.analyst.newCase(t, map[string]any{"title": "ignored"}).Str(t, "id")
	cIP := add(tm.analyst, f.c, "ip", "10.0.0.1")
	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/"+cIP, map[string]any{"ignoreSimilarity": true}).Want(t, 200)
	d := tm.other.newCase(t, nil).Str(t, "id")
	f.certIP = add(tm.other, d, "ip", "10.0.0.1")
	f.e = tm.analyst.newCase(t, map[string]any{"title": "alone"}).Str(t, "id")
	add(tm.analyst, f.e, "ip", "10.7.7.7")
	f.a = tm.analyst.newCase(t, map[string]any{"title": "newer"}).Str(t, "id")
	f.aIP = add(tm.analyst, f.a, "ip", "10.0.0.1")
	f.aDom = add(tm.analyst, f.a, "domain", "x.example")
	f.aIgnored = add(tm.analyst, f.a, "ip", "10.9.9.9")
	tm.analyst.Call(t, http.MethodPatch, "/api/case/artifact/"+f.aIgnored, map[string]any{"ignoreSimilarity": true}).Want(t, 200)
	return f
}

func ids(t *testing.T, l []obj) []string {
	t.Helper()
	out := make([]string, len(l))
	for i, o := range l {
		out[i] = o.Str(t, "id")
	}
	slices.Sort(out)
	return out
}

// GET /api/case/{id}/links as thehive4py's get_linked_cases sends it (a bare GET): the linked case with the
// asked case's shared observables (linkedWith) and their number.
func TestCase_Links(t *testing.T) {
	t.Parallel()
	f := newLinkFixture(t)
	tm := f.tm
	links := tm.readOnly.Call(t, http.MethodGet, "/api/case/"+f.a+"/links", nil).Want(t, 200).List(t)
	if len(links) != 1 || links[0].Str(t, "id") != f.b || links[0].Str(t, "title") != "older" || links[0].Str(t, "_type") != "case" {
		t.Fatalf("links of a: %v", links)
	}
	want := []string{f.aIP, f.aDom}
	slices.Sort(want)
	var shared []obj
	for _, x := range links[0]["linkedWith"].([]any) {
		shared = append(shared, obj(x.(map[string]any)))
	}
	if got := ids(t, shared); !slices.Equal(got, want) || links[0].Num(t, "linksCount") != 2 {
		t.Errorf("linkedWith %v (count %v), want %v", got, links[0]["linksCount"], want)
	}
	back := tm.analyst.Call(t, http.MethodGet, "/api/case/"+f.b+"/links", nil).Want(t, 200).List(t)
	if len(back) != 1 || back[0].Str(t, "id") != f.a || back[0].Num(t, "linksCount") != 2 {
		t.Errorf("links of b: %v", back)
	}
	if l := tm.analyst.Call(t, http.MethodGet, "/api/case/"+f.e+"/links", nil).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("links of a case sharing nothing: %v", l)
	}
	if l := tm.analyst.Call(t, http.MethodGet, "/api/case/"+f.c+"/links", nil).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("links through an ignoreSimilarity observable: %v", l)
	}
	// the other organisation sees neither the case nor the link
	tm.other.Call(t, http.MethodGet, "/api/case/"+f.a+"/links", nil).WantError(t, 404, "NotFoundError")
	tm.admin.Call(t, http.MethodGet, "/api/case/"+f.a+"/links", nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/~999/links", nil).WantError(t, 404, "NotFoundError")
	tm.anon().Call(t, http.MethodGet, "/api/case/"+f.a+"/links", nil).WantError(t, 401, "AuthenticationError")
}

// GET /api/case/artifact/{id}/similar: the observables of the organisation's other cases with the same value,
// each with its case.
func TestObservable_Similar(t *testing.T) {
	t.Parallel()
	f := newLinkFixture(t)
	tm := f.tm
	l := tm.readOnly.Call(t, http.MethodGet, "/api/case/artifact/"+f.aIP+"/similar", nil).Want(t, 200).List(t)
	if len(l) != 1 || l[0].Str(t, "id") != f.bIP || l[0].Str(t, "data") != "10.0.0.1" || l[0].Obj(t, "case").Str(t, "id") != f.b {
		t.Fatalf("similar to a's ip: %v", l)
	}
	// another type, same value
	if l := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+f.aDom+"/similar", nil).Want(t, 200).List(t); len(l) != 1 ||
		l[0].Str(t, "dataType") != "other" {
		t.Errorf("similar to a's domain: %v", l)
	}
	if l := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+f.aIgnored+"/similar", nil).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("similar to an ignoreSimilarity observable: %v", l)
	}
	if l := tm.other.Call(t, http.MethodGet, "/api/case/artifact/"+f.certIP+"/similar", nil).Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("cert sees soc's observables: %v", l)
	}
	tm.other.Call(t, http.MethodGet, "/api/case/artifact/"+f.aIP+"/similar", nil).WantError(t, 404, "NotFoundError")
	tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/~nope/similar", nil).WantError(t, 404, "NotFoundError")
}

// The linkedCases query step: from one case, its links as GET /links writes them, filtered on the cases.
func TestQuery_LinkedCases(t *testing.T) {
	t.Parallel()
	f := newLinkFixture(t)
	tm := f.tm
	run := func(steps ...map[string]any) *resp {
		return tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": steps})
	}
	get := map[string]any{"_name": "getCase", "idOrName": f.a}
	l := run(get, map[string]any{"_name": "linkedCases"}).Want(t, 200).List(t)
	if len(l) != 1 || l[0].Str(t, "id") != f.b || l[0].Num(t, "linksCount") != 2 || l[0]["_createdAt"] == nil {
		t.Fatalf("linkedCases: %v", l)
	}
	if l := run(get, map[string]any{"_name": "linkedCases"}, map[string]any{"_name": "filter", "_field": "title", "_value": "nope"}).
		Want(t, 200).List(t); len(l) != 0 {
		t.Errorf("filtered: %v", l)
	}
	if n := tm.analyst.count(t, get, q{"_name": "linkedCases"}); n != 1 {
		t.Errorf("count %d", n)
	}
	r := tm.analyst.Call(t, http.MethodPost, "/api/v0/query", map[string]any{"query": []map[string]any{get,
		{"_name": "linkedCases"}, {"_name": "page", "from": 0, "to": 10}}}).Want(t, 200)
	if r.Total(t) != "1" {
		t.Errorf("X-Total %s", r.Total(t))
	}
	for name, steps := range map[string][]map[string]any{
		"two cases":     {{"_name": "listCase"}, {"_name": "linkedCases"}},
		"from alerts":   {{"_name": "listAlert"}, {"_name": "linkedCases"}},
		"a sort":        {get, {"_name": "linkedCases"}, {"_name": "sort", "_fields": []any{"-startDate"}}},
		"a parameter":   {get, {"_name": "linkedCases", "x": 1}},
		"unknown field": {get, {"_name": "linkedCases"}, {"_name": "filter", "_field": "nope", "_value": 1}},
	} {
		if msg := run(steps...).WantError(t, 400, "BadRequest"); msg == "" {
			t.Errorf("%s: no message", name)
		}
	}
	tm.other.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []map[string]any{get, {"_name": "linkedCases"}}}).
		WantError(t, 404, "NotFoundError")
}
