package api_test

// Hostile input over HTTP: oversized and deeply nested bodies, huge lists, NUL bytes and invalid UTF-8,
// regular-expression metacharacters, NoSQL operators, path tricks in file names, lying content types and
// unknown methods. None may answer 5xx, hang, or change data it should not; every error has the shape of
// DECISIONS.md "Errors".

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/openir/platform/pkg/apitest"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// slowRequest is the longest any hostile request may take: the tests' requests are small, so anything
// slower is a hang or a super-linear blow-up.
const slowRequest = 2 * time.Minute // a hang detector, not a speed check: speed is measured by make bench

// hostile sends a request and checks what every hostile request must satisfy: no 5xx, an answer within
// slowRequest, the error shape on 4xx, and a status among allowed (when given).
func hostile(t *testing.T, c *client, method, path, ctype string, body io.Reader, hdr http.Header, allowed ...int) *resp {
	t.Helper()
	start := time.Now()
	r := c.Send(t, method, path, ctype, body, hdr)
	if d := time.Since(start); d > slowRequest {
		t.Errorf("%s %s: answered after %v", method, shorten(path), d)
	}
	if r.Status >= 500 {
		t.Errorf("%s %s: status %d; body %s", method, shorten(path), r.Status, shorten(string(r.Body)))
		return r
	}
	if len(allowed) > 0 && !slices.Contains(allowed, r.Status) {
		t.Errorf("%s %s: status %d, want one of %v; body %s", method, shorten(path), r.Status, allowed, shorten(string(r.Body)))
	}
	if r.Status >= 400 && method != http.MethodHead {
		r.CheckErrorShape(t)
	}
	return r
}

// hostileJSON is hostile with a JSON body given as text.
func hostileJSON(t *testing.T, c *client, method, path, body string, allowed ...int) *resp {
	t.Helper()
	return hostile(t, c, method, path, "application/json", strings.NewReader(body), nil, allowed...)
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// jsonText marshals v or fails.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// total returns X-Total of a list call that must succeed.
func total(t *testing.T, c *client, method, path string) string {
	t.Helper()
	return c.Call(t, method, path, nil).Want(t, http.StatusOK).Header.Get("X-Total")
}

// unknownReader hides the length of a body so that the client sends it chunked (no Content-Length).
type unknownReader struct{ r io.Reader }

func (u unknownReader) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestHostile_BodyOverTheLimit(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	run := "/api/analyzer/" + f.analyzer + "/run"
	big := strings.Repeat("x", 3<<20) // the harness's body limit is 1M
	jsonBody := `{"dataType":"ip","data":"` + big + `"}`
	multipartBody := func() (string, []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_json", `{"dataType":"file"}`)
		fw, _ := mw.CreateFormFile("attachment", "big.bin")
		_, _ = fw.Write([]byte(big))
		_ = mw.Close()
		return mw.FormDataContentType(), buf.Bytes()
	}
	mct, mbody := multipartBody()
	tooLarge := []int{http.StatusRequestEntityTooLarge}
	cases := []struct {
		name, path, ctype string
		c                 *client
		body              []byte
		want              []int
	}{
		{"json run", run, "application/json", f.analyst, []byte(jsonBody), tooLarge},
		{"form run", run, "application/x-www-form-urlencoded", f.analyst, []byte("dataType=ip&data=" + big), tooLarge},
		{"multipart upload", run, mct, f.analyst, mbody, tooLarge},
		{"body without content type", run, "", f.analyst, []byte(jsonBody), tooLarge},
		{"search", "/api/job/_search", "application/json", f.reads, []byte(`{"query":{"data":"` + big + `"}}`), tooLarge},
		{"enable", "/api/organization/analyzer/Test_Echo_1_0", "application/json", f.admin, []byte(`{"name":"` + big + `"}`), tooLarge},
		{"login, unauthenticated", "/api/login", "application/json", f.e.anon(), []byte(`{"user":"` + big + `"}`), tooLarge},
		// Authentication may come first.
		{"anonymous run", run, "application/json", f.e.anon(), []byte(jsonBody), []int{413, 401}},
	}
	for _, tc := range cases {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s chunked=%v", tc.name, chunked), func(t *testing.T) {
				var body io.Reader = bytes.NewReader(tc.body)
				if chunked {
					body = unknownReader{body}
				}
				hostile(t, tc.c, http.MethodPost, tc.path, tc.ctype, body, nil, tc.want...)
			})
		}
	}
	if n := total(t, f.analyst, http.MethodGet, "/api/job"); n != "0" {
		t.Errorf("refused bodies created %s jobs", n)
	}
	if n := total(t, f.admin, http.MethodGet, "/api/analyzer"); n != "1" {
		t.Errorf("refused bodies enabled analyzers: %s", n)
	}
}

func TestHostile_DeepNesting(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	resp := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)
	responder := resp["id"].(string)
	run := "/api/analyzer/" + f.analyzer + "/run"
	nest := func(n int, open, close, leaf string) string {
		return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		name, path, body string
		c                *client
	}{
		{"100k [ in a search", "/api/job/_search", `{"query":` + strings.Repeat("[", 100000) + `}`, f.reads},
		{"100k [ closed in a search", "/api/job/_search", `{"query":` + nest(100000, "[", "]", "") + `}`, f.reads},
		{"100k { in run parameters", run, `{"dataType":"ip","data":"1.1.1.1","parameters":` + nest(100000, `{"a":`, `}`, `1`) + `}`, f.analyst},
		// Logins get 64 KiB at most (413 beyond): nesting within that is still a 400.
		{"60k [ in a login", "/api/login", `{"user":` + strings.Repeat("[", 60000), f.e.anon()},
		{"20k _not in a search", "/api/job/_search", `{"query":` + nest(20000, `{"_not":`, `}`, `{}`) + `}`, f.reads},
		{"5k _and in a search", "/api/analyzer/_search", `{"query":` + nest(5000, `{"_and":[`, `]}`, `{}`) + `}`, f.admin},
		{"5k deep configuration value", "/api/organization/analyzer/Test_Echo_1_0",
			`{"name":"deep","configuration":{"level":` + nest(5000, `{"a":`, `}`, `1`) + `}}`, f.admin},
		{"5k deep query in a form", "/api/job/_search", "", f.reads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body == "" {
				q := nest(5000, `{"_or":[`, `]}`, `{}`)
				hostile(t, tc.c, http.MethodPost, tc.path, "application/x-www-form-urlencoded",
					strings.NewReader(url.Values{"query": {q}}.Encode()), nil, http.StatusBadRequest)
				return
			}
			hostileJSON(t, tc.c, http.MethodPost, tc.path, tc.body, http.StatusBadRequest)
		})
	}

	// Deep but valid JSON in free-form fields is data: accepted and returned verbatim, or refused with 400.
	deep := nest(3000, `{"a":`, `}`, `"leaf"`)
	t.Run("3k deep run parameters", func(t *testing.T) {
		r := hostileJSON(t, f.analyst, http.MethodPost, run, `{"dataType":"ip","data":"1.1.1.2","parameters":`+deep+`}`,
			http.StatusOK, http.StatusBadRequest)
		if r.Status != http.StatusOK {
			return
		}
		j := f.analyst.Call(t, http.MethodGet, "/api/job/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK).Object(t)
		if j["parameters"] != deep {
			t.Errorf("parameters came back changed: %s", shorten(fmt.Sprint(j["parameters"])))
		}
	})
	t.Run("3k deep responder data", func(t *testing.T) {
		r := hostileJSON(t, f.analyst, http.MethodPost, "/api/responder/"+responder+"/run",
			`{"dataType":"thehive:case","data":`+deep+`}`, http.StatusOK, http.StatusBadRequest)
		if r.Status != http.StatusOK {
			return
		}
		r = f.analyst.Call(t, http.MethodGet, "/api/job/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK)
		var j struct{ Data json.RawMessage }
		r.Decode(t, &j)
		if string(j.Data) != deep {
			t.Errorf("responder data came back changed: %s", shorten(string(j.Data)))
		}
	})
	// The service still answers.
	f.reads.Call(t, http.MethodGet, "/api/job", nil).Want(t, http.StatusOK)
}

func TestHostile_HugeLists(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "v-7"})
	values := make([]string, 50000)
	for i := range values {
		values[i] = fmt.Sprintf("v-%d", i)
	}
	in := func(field string) string {
		return jsonText(t, map[string]any{"query": map[string]any{"_in": map[string]any{"_field": field, "_values": values}}})
	}
	t.Run("50k values in _in over jobs", func(t *testing.T) {
		r := hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", in("data"), http.StatusOK, http.StatusBadRequest)
		if r.Status == http.StatusOK && r.Header.Get("X-Total") != "1" {
			t.Errorf("X-Total %s, want 1", r.Header.Get("X-Total"))
		}
	})
	t.Run("50k values in _in over analyzers", func(t *testing.T) {
		r := hostileJSON(t, f.admin, http.MethodPost, "/api/analyzer/_search", in("name"), http.StatusOK, http.StatusBadRequest)
		if r.Status == http.StatusOK && r.Header.Get("X-Total") != "0" {
			t.Errorf("X-Total %s, want 0", r.Header.Get("X-Total"))
		}
	})
	t.Run("20k children of _or", func(t *testing.T) {
		kids := make([]any, 20000)
		for i := range kids {
			kids[i] = map[string]any{"data": values[i]}
		}
		hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", jsonText(t, map[string]any{"query": map[string]any{"_or": kids}}),
			http.StatusBadRequest)
	})
	t.Run("10k sort keys", func(t *testing.T) {
		q := url.Values{"sort": slices.Repeat([]string{"-data"}, 10000)}
		hostile(t, f.reads, http.MethodGet, "/api/job?"+q.Encode(), "", nil, nil, http.StatusOK, http.StatusBadRequest)
		hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", jsonText(t, map[string]any{"sort": slices.Repeat([]string{"+tlp"}, 10000)}),
			http.StatusOK, http.StatusBadRequest)
	})
	// 5k only: role lists are quadratic (bugs_roles_quadratic.go.txt).
	t.Run("5k roles", func(t *testing.T) {
		hostileJSON(t, f.e.super, http.MethodPost, "/api/user", jsonText(t, map[string]any{"login": "many-roles",
			"organization": "soc", "roles": values[:5000]}), http.StatusBadRequest)
		f.e.super.Call(t, http.MethodGet, "/api/user/many-roles", nil).WantError(t, http.StatusNotFound, "NotFoundError")
		hostileJSON(t, f.reads, http.MethodPatch, "/api/user/soc-reader", jsonText(t, map[string]any{"roles": values[:5000]}),
			http.StatusBadRequest, http.StatusForbidden)
	})
	// Text operands over MongoDB's 32 KB regex limit (the embedded engine accepts them).
	t.Run("huge text operands", func(t *testing.T) {
		for _, q := range []map[string]any{
			{"_string": strings.Repeat("data:a OR ", 50000) + "data:b"},
			{"_like": map[string]any{"_field": "data", "_value": strings.Repeat("a", 100000)}},
			{"_wildcard": map[string]any{"_field": "data", "_value": strings.Repeat("?", 60000)}},
			{"_wildcard": map[string]any{"_field": "data", "_value": strings.Repeat("*a", 30000)}},
			{"data": strings.Repeat("a", 500000)},
		} {
			hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", jsonText(t, map[string]any{"query": q}),
				http.StatusOK, http.StatusBadRequest)
		}
	})
	t.Run("50k parameters", func(t *testing.T) {
		params := map[string]any{}
		for _, v := range values {
			params[v] = 1
		}
		r := hostileJSON(t, f.analyst, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run",
			jsonText(t, map[string]any{"dataType": "ip", "data": "1.2.3.4", "parameters": params}), http.StatusOK, http.StatusBadRequest)
		if r.Status == http.StatusOK {
			f.analyst.Call(t, http.MethodGet, "/api/job/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK)
		}
	})
	t.Run("50k values of a multi configuration item", func(t *testing.T) {
		r := hostileJSON(t, f.admin, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0",
			jsonText(t, map[string]any{"name": "many lists", "configuration": map[string]any{"lists": values}}),
			http.StatusCreated, http.StatusBadRequest)
		if r.Status == http.StatusCreated {
			f.admin.Call(t, http.MethodGet, "/api/analyzer/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK)
		}
	})
}

// Path parameters of every route, for a value sent percent-encoded.
func paramPaths(v, analyzer string) []struct{ method, path string } {
	return []struct{ method, path string }{
		{"GET", "/api/user/" + v}, {"PATCH", "/api/user/" + v}, {"POST", "/api/user/" + v + "/key/renew"},
		{"GET", "/api/user/" + v + "/key"}, {"DELETE", "/api/user/" + v + "/key"},
		{"POST", "/api/user/" + v + "/password/set"},
		{"GET", "/api/organization/" + v}, {"PATCH", "/api/organization/" + v}, {"DELETE", "/api/organization/" + v},
		{"GET", "/api/organization/" + v + "/user"}, {"POST", "/api/organization/" + v + "/user/_search"},
		{"POST", "/api/organization/analyzer/" + v}, {"POST", "/api/organization/responder/" + v},
		{"GET", "/api/analyzer/" + v}, {"PATCH", "/api/analyzer/" + v}, {"DELETE", "/api/analyzer/" + v},
		{"POST", "/api/analyzer/" + v + "/run"}, {"GET", "/api/analyzer/type/" + v}, {"GET", "/api/responder/type/" + v},
		{"GET", "/api/responder/" + v},
		{"GET", "/api/job/" + v}, {"GET", "/api/job/" + v + "/report"}, {"GET", "/api/job/" + v + "/waitreport?atMost=1ms"},
		{"GET", "/api/job/" + v + "/artifacts"}, {"DELETE", "/api/job/" + v},
		{"GET", "/api/datastore/" + v}, {"GET", "/api/datastore/" + v + "?name=" + v},
		{"GET", "/api/datastorezip/" + v}, {"GET", "/api/datastorezip/" + v + "?name=" + v},
		{"GET", "/api/job?dataFilter=" + v}, {"GET", "/api/job?dataTypeFilter=" + v}, {"GET", "/api/job?analyzerFilter=" + v},
		{"GET", "/api/job?range=" + v}, {"GET", "/api/job?sort=" + v}, {"GET", "/api/analyzer?sort=" + v},
		{"GET", "/api/job/" + analyzer + v},
	}
}

func TestHostile_NULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	run := "/api/analyzer/" + f.analyzer + "/run"
	for _, v := range []string{"%00", "a%00b", "%FF", "%C0%AF", "%ED%A0%80", "%FF%FE%00", "%E2%80%AE"} {
		t.Run("path and query "+v, func(t *testing.T) {
			for _, p := range paramPaths(v, f.analyzer) {
				c := f.admin
				if strings.HasPrefix(p.path, "/api/user") || strings.HasPrefix(p.path, "/api/organization/"+v) {
					c = f.e.super
				}
				var body io.Reader
				ctype := ""
				if p.method != "GET" && p.method != "DELETE" {
					ctype, body = "application/json", strings.NewReader(`{}`)
				}
				hostile(t, c, p.method, p.path, ctype, body, nil, http.StatusOK, http.StatusBadRequest, http.StatusNotFound)
			}
		})
	}

	// Strings with NUL, invalid UTF-8 (raw bytes, which encoding/json replaces by U+FFFD) and bidi controls in
	// JSON bodies: refused with 400, or stored and returned as the JSON decoder read them.
	weird := []string{"a\x00b", "\x00", "a\xffb", "\xed\xa0\x80", "\u202eevil", "x\u0000y\u0000"}
	rawJSON := func(s string) string {
		// A JSON string literal holding s's bytes as they are (invalid UTF-8 included), NUL escaped.
		return `"` + strings.ReplaceAll(s, "\x00", `\u0000`) + `"`
	}
	decoded := func(s string) string { // s as the server's JSON decoder reads rawJSON(s)
		var out string
		if err := json.Unmarshal([]byte(rawJSON(s)), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i, s := range weird {
		t.Run(fmt.Sprintf("strings %q", s), func(t *testing.T) {
			hostileJSON(t, f.e.super, http.MethodPost, "/api/organization", `{"name":`+rawJSON(s)+`}`, http.StatusBadRequest)
			hostileJSON(t, f.e.super, http.MethodPost, "/api/user", `{"login":`+rawJSON(s)+`,"organization":"soc","roles":["read"]}`,
				http.StatusBadRequest)
			hostileJSON(t, f.e.anon(), http.MethodPost, "/api/login", `{"user":`+rawJSON(s)+`,"password":`+rawJSON(s)+`}`,
				http.StatusUnauthorized, http.StatusBadRequest)

			org := fmt.Sprintf("weird-%d", i)
			r := hostileJSON(t, f.e.super, http.MethodPost, "/api/organization", `{"name":"`+org+`","description":`+rawJSON(s)+`}`,
				http.StatusCreated, http.StatusBadRequest)
			if r.Status == http.StatusCreated {
				if got := f.e.getOrg(t, org)["description"]; got != decoded(s) {
					t.Errorf("description %q came back as %q", s, got)
				}
			}
			login := fmt.Sprintf("weird-%d", i)
			r = hostileJSON(t, f.e.super, http.MethodPost, "/api/user", `{"login":"`+login+`","name":`+rawJSON(s)+`,"organization":"soc","roles":["read"]}`,
				http.StatusCreated, http.StatusBadRequest)
			if r.Status == http.StatusCreated {
				if got := f.e.getUser(t, login)["name"]; got != decoded(s) {
					t.Errorf("user name %q came back as %q", s, got)
				}
			}
			r = hostileJSON(t, f.admin, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0",
				`{"name":`+rawJSON("Echo "+s)+`,"configuration":{"level":`+rawJSON(s)+`}}`, http.StatusCreated, http.StatusBadRequest)
			if r.Status == http.StatusCreated {
				w := f.admin.Call(t, http.MethodGet, "/api/analyzer/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK).Object(t)
				if w["name"] != strings.TrimSpace(decoded("Echo "+s)) || w["configuration"].(map[string]any)["level"] != decoded(s) {
					t.Errorf("analyzer name/level %q came back as %q / %q", s, w["name"], w["configuration"].(map[string]any)["level"])
				}
			}
			data := "1.2.3.4" + s
			r = hostileJSON(t, f.analyst, http.MethodPost, run, `{"dataType":"ip","data":`+rawJSON(data)+`,"message":`+rawJSON(s)+
				`,"label":`+rawJSON(s)+`,"parameters":{`+rawJSON(s)+`:`+rawJSON(s)+`}}`, http.StatusOK, http.StatusBadRequest)
			if r.Status == http.StatusOK {
				id := r.Object(t)["id"].(string)
				j := f.analyst.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)
				if j["data"] != decoded(data) || j["message"] != decoded(s) {
					t.Errorf("job data/message %q came back as %q / %q", s, j["data"], j["message"])
				}
				// The value is searchable as itself, and only it matches.
				for _, q := range []map[string]any{
					{"data": decoded(data)},
					{"_like": map[string]any{"_field": "data", "_value": decoded(data)}},
					{"_wildcard": map[string]any{"_field": "data", "_value": decoded(data)}},
				} {
					got := hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", jsonText(t, map[string]any{"query": q}), http.StatusOK).IDs(t)
					if !slices.Equal(got, []string{id}) {
						t.Errorf("search %v found %v, want [%s]", q, got, id)
					}
				}
			}
			for _, q := range []string{
				`{"query":{"data":` + rawJSON(s) + `}}`,
				`{"query":{"_like":{"_field":"data","_value":` + rawJSON(s) + `}}}`,
				`{"query":{"_wildcard":{"_field":"message","_value":` + rawJSON(s+"*") + `}}}`,
				`{"query":{"_string":` + rawJSON("data:"+s) + `}}`,
				`{"query":{"_in":{"_field":"label","_values":[` + rawJSON(s) + `]}}}`,
				`{"query":{"_between":{"_field":"tlp","_from":` + rawJSON(s) + `}}}`,
			} {
				hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search", q, http.StatusOK, http.StatusBadRequest)
			}
		})
	}

	// Raw bytes through the form and query-string encodings (no JSON decoder to repair them).
	t.Run("form and query string", func(t *testing.T) {
		for _, v := range []string{"%00", "1.1.1.1%00x", "%FF%FE", "%C3%28", "%ED%A0%80"} {
			hostile(t, f.analyst, http.MethodPost, run, "application/x-www-form-urlencoded",
				strings.NewReader("dataType=ip&data="+v+"&message="+v+"&parameters=%7B%22"+v+"%22%3A1%7D"), nil,
				http.StatusOK, http.StatusBadRequest)
			hostile(t, f.analyst, http.MethodPost, run+"?dataType=ip&force=1&data="+v, "", nil, nil, http.StatusOK, http.StatusBadRequest)
			hostile(t, f.reads, http.MethodPost, "/api/job/_search?query="+url.QueryEscape(`{"data":"`)+v+url.QueryEscape(`"}`),
				"", nil, nil, http.StatusOK, http.StatusBadRequest)
			hostile(t, f.e.super, http.MethodPost, "/api/user", "application/x-www-form-urlencoded",
				strings.NewReader("login=f"+v+"&organization=soc&roles=read"), nil, http.StatusBadRequest)
			hostile(t, f.e.super, http.MethodPost, "/api/organization", "application/x-www-form-urlencoded",
				strings.NewReader("name=o"+v), nil, http.StatusBadRequest)
		}
		// Every job the server took can be read back and listed.
		for _, j := range f.analyst.Call(t, http.MethodGet, "/api/job?range=all", nil).Want(t, http.StatusOK).List(t) {
			f.analyst.Call(t, http.MethodGet, "/api/job/"+j["id"].(string), nil).Want(t, http.StatusOK)
		}
	})
	t.Run("headers", func(t *testing.T) {
		for _, v := range []string{"a\tb", "\xff", "ключ"} {
			hostile(t, f.analyst, http.MethodPost, run, "application/json", strings.NewReader(`{"dataType":"ip","data":"9.9.9.9"}`),
				http.Header{"Idempotency-Key": {v}}, http.StatusBadRequest)
			r := hostile(t, f.analyst, http.MethodGet, "/api/job", "", nil, http.Header{"X-Request-Id": {v}}, http.StatusOK)
			if id := r.Header.Get("X-Request-Id"); id == v || id == "" {
				t.Errorf("X-Request-Id %q echoed as %q", v, id)
			}
		}
	})
	// After all that, every list still answers.
	for _, p := range []string{"/api/user?range=all", "/api/organization?range=all"} {
		f.e.super.Call(t, http.MethodGet, p, nil).Want(t, http.StatusOK)
	}
	f.admin.Call(t, http.MethodGet, "/api/analyzer?range=all", nil).Want(t, http.StatusOK)
	f.reads.Call(t, http.MethodGet, "/api/job?range=all", nil).Want(t, http.StatusOK)
}

func TestHostile_RegexMetacharacters(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	values := []string{"x.*y", "xAAy", "x.AAy", "(a+)+$", "[z]", `back\slash`, "a|b", "^caret", "{2}", "a" + strings.Repeat("a", 60)}
	ids := map[string]string{}
	for _, v := range values {
		ids[v] = f.run(t, f.analyst, map[string]any{"dataType": "domain", "data": v})["id"].(string)
	}
	idsOf := func(vs ...string) []string {
		var out []string
		for _, v := range vs {
			out = append(out, ids[v])
		}
		slices.Sort(out)
		return out
	}
	search := func(t *testing.T, q map[string]any) []string {
		t.Helper()
		got := hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search?range=all", jsonText(t, map[string]any{"query": q}),
			http.StatusOK).IDs(t)
		slices.Sort(got)
		return got
	}
	like := func(v string) map[string]any {
		return map[string]any{"_like": map[string]any{"_field": "data", "_value": v}}
	}
	wild := func(v string) map[string]any {
		return map[string]any{"_wildcard": map[string]any{"_field": "data", "_value": v}}
	}
	for _, tc := range []struct {
		name  string
		query map[string]any
		want  []string
	}{
		{"like .*", like(".*"), idsOf("x.*y")},
		{"like (a+)+", like("(a+)+"), idsOf("(a+)+$")},
		{"like [z]", like("[z]"), idsOf("[z]")},
		{"like [", like("["), idsOf("[z]")},
		{`like \s`, like(`\s`), idsOf(`back\slash`)},
		{"like |", like("a|b"), idsOf("a|b")},
		{"like ^", like("^c"), idsOf("^caret")},
		{"like $", like("+$"), idsOf("(a+)+$")},
		{"like {2}", like("{2}"), idsOf("{2}")},
		{"like .", like("."), idsOf("x.*y", "x.AAy")},
		{"wildcard x.*", wild("x.*"), idsOf("x.*y", "x.AAy")},
		{"wildcard x.??y", wild("x.??y"), idsOf("x.AAy")},
		{"wildcard [*", wild("[*"), idsOf("[z]")},
		{"wildcard *|*", wild("*|*"), idsOf("a|b")},
		{"wildcard (a+)+$", wild("(a+)+$"), idsOf("(a+)+$")},
		{"wildcard catastrophic", wild(strings.Repeat("*a", 30) + "*b"), nil},
		{"equality .*", map[string]any{"data": ".*"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := search(t, tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("found %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("dataFilter", func(t *testing.T) {
		got := hostile(t, f.reads, http.MethodGet, "/api/job?range=all&dataFilter="+url.QueryEscape(".*"), "", nil, nil, http.StatusOK).IDs(t)
		if !slices.Equal(got, idsOf("x.*y")) {
			t.Errorf("dataFilter=.* found %v", got)
		}
	})
	t.Run("_string", func(t *testing.T) {
		for _, v := range []string{`data:".*"`, `data:x.*y`, `data:"(a+)+$"`, `data:[z]`} {
			r := hostileJSON(t, f.reads, http.MethodPost, "/api/job/_search?range=all", jsonText(t, map[string]any{"query": map[string]any{"_string": v}}),
				http.StatusOK, http.StatusBadRequest)
			if r.Status == http.StatusOK {
				for _, id := range r.IDs(t) {
					if j := f.reads.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t); !strings.Contains(v, j["data"].(string)) {
						t.Errorf("_string %s matched %v", v, j["data"])
					}
				}
			}
		}
	})
	t.Run("analyzer names", func(t *testing.T) {
		for _, n := range []string{"Echo.*", "EchoXX"} {
			f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{"name": n}).Want(t, http.StatusCreated)
		}
		r := hostileJSON(t, f.admin, http.MethodPost, "/api/analyzer/_search", `{"query":{"_like":{"_field":"name","_value":".*"}}}`, http.StatusOK)
		if l := r.List(t); len(l) != 1 || l[0]["name"] != "Echo.*" {
			t.Errorf("_like .* over names found %v", l)
		}
	})
}

// keyProblems walks a stored document and returns the keys that a client could have smuggled in: starting
// with "$", holding ".", or holding NUL.
func keyProblems(prefix string, v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "$") || strings.ContainsAny(k, ".\x00") {
				out = append(out, prefix+k)
			}
			out = append(out, keyProblems(prefix+k+"/", e)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, keyProblems(fmt.Sprintf("%s%d/", prefix, i), e)...)
		}
	}
	return out
}

// checkStoredKeys fails when a document of any collection has a key starting with "$" or holding "." or NUL.
func checkStoredKeys(t *testing.T, e *env) {
	t.Helper()
	names, err := e.db.Collections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 5 {
		t.Fatalf("only collections %v: the scan reads the wrong database", names)
	}
	for _, n := range names {
		for _, d := range e.rawDocs(t, n) {
			if p := keyProblems("", d); len(p) > 0 {
				t.Errorf("collection %s: document %v has client keys %v", n, d["_id"], p)
			}
		}
	}
}

func TestHostile_OperatorInjection(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	run := "/api/analyzer/" + f.analyzer + "/run"
	responder := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	victim := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.10.10.10"})["id"].(string)

	t.Run("searches", func(t *testing.T) {
		queries := []string{
			`{"query":{"$where":"sleep(100) || true"}}`,
			`{"query":{"data":{"$ne":null}}}`,
			`{"query":{"data":{"$regex":".*"}}}`,
			`{"query":{"$or":[{"data":"x"}]}}`,
			`{"query":{"$expr":{"$eq":[1,1]}}}`,
			`{"query":{"_field":"$where","_value":"1"}}`,
			`{"query":{"_field":"data","_value":{"$gt":""}}}`,
			`{"query":{"_in":{"_field":"data","_values":[{"$gt":""}]}}}`,
			`{"query":{"_like":{"_field":"data","_value":{"$regex":"."}}}}`,
			`{"query":{"_between":{"_field":"tlp","_from":{"$gt":0}}}}`,
			`{"query":{"_gt":{"$where":1}}}`,
			`{"query":{"_contains":"$where"}}`,
			`{"query":{"_id":{"$ne":""}}}`,
			`{"query":{"data.$":"x"}}`,
			`{"query":{"organization":"other"}}`,
			`{"query":{"_string":"$where:1"}}`,
			`{"query":{"parameters.$where":"1"}}`,
			`{"query":{"_and":[{"data":"x"},{"$where":"1"}]}}`,
			`{"query":{},"sort":"$natural"}`,
			`{"query":{},"sort":["-$where"]}`,
			`{"query":{},"sort":"data.$"}`,
			`{"query":{},"range":{"$gt":0}}`,
		}
		for _, q := range queries {
			for _, p := range []struct {
				c    *client
				path string
			}{{f.reads, "/api/job/_search"}, {f.admin, "/api/analyzer/_search"}, {f.admin, "/api/responder/_search"}} {
				hostileJSON(t, p.c, http.MethodPost, p.path, q, http.StatusBadRequest)
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(q), &m)
			if qs := jsonText(t, m["query"]); qs != "{}" { // the same query through the query string
				hostile(t, f.reads, http.MethodGet, "/api/job?query="+url.QueryEscape(qs), "", nil, nil, http.StatusBadRequest)
			}
		}
		for _, s := range []string{"$natural", "-$where", "data.$", "%24where"} {
			hostile(t, f.reads, http.MethodGet, "/api/job?sort="+s, "", nil, nil, http.StatusBadRequest)
		}
		// Filters of GET /api/job take values only.
		for _, v := range []string{`{"$ne":null}`, `$where`, `.*`} {
			r := hostile(t, f.reads, http.MethodGet, "/api/job?dataTypeFilter="+url.QueryEscape(v)+"&analyzerFilter="+url.QueryEscape(v),
				"", nil, nil, http.StatusOK, http.StatusBadRequest)
			if r.Status == http.StatusOK && len(r.List(t)) != 0 {
				t.Errorf("filters %s matched %s", v, r.Body)
			}
		}
	})

	evil := map[string]any{"$where": "1 == 1", "a.b": map[string]any{"$gt": 1}, "$set": map[string]any{"status": "Success"},
		"nested": map[string]any{"$inc": map[string]any{"x": 1}, "k.e.y": []any{map[string]any{"$ne": nil}}}, "_id": "forged"}
	t.Run("run parameters are data", func(t *testing.T) {
		for _, enc := range []string{"json", "form", "multipart"} {
			body := map[string]any{"dataType": "ip", "data": "10.20.30.40", "parameters": evil, "force": true}
			var r *resp
			switch enc {
			case "json":
				r = hostileJSON(t, f.analyst, http.MethodPost, run, jsonText(t, body), http.StatusOK)
			case "form":
				r = hostile(t, f.analyst, http.MethodPost, run, "application/x-www-form-urlencoded", strings.NewReader(url.Values{
					"dataType": {"ip"}, "data": {"10.20.30.40"}, "force": {"1"}, "parameters": {jsonText(t, evil)}}.Encode()), nil, http.StatusOK)
			case "multipart":
				r = f.analyst.MultipartJSON(t, http.MethodPost, run, body).Want(t, http.StatusOK)
			}
			j := f.analyst.Call(t, http.MethodGet, "/api/job/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK).Object(t)
			var got map[string]any
			if err := json.Unmarshal([]byte(j["parameters"].(string)), &got); err != nil || jsonText(t, got) != jsonText(t, evil) {
				t.Errorf("%s: parameters stored as %v (%v), want %s", enc, j["parameters"], err, jsonText(t, evil))
			}
			if j["status"] != "Waiting" || j["id"] == "forged" {
				t.Errorf("%s: parameters were interpreted: %v", enc, j)
			}
		}
	})
	t.Run("responder data is data", func(t *testing.T) {
		r := hostileJSON(t, f.analyst, http.MethodPost, "/api/responder/"+responder+"/run",
			jsonText(t, map[string]any{"dataType": "thehive:case", "data": evil, "parameters": evil}), http.StatusOK)
		j := f.analyst.Call(t, http.MethodGet, "/api/job/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK).Object(t)
		if jsonText(t, j["data"]) != jsonText(t, evil) || j["id"] == "forged" {
			t.Errorf("responder data stored as %v", j["data"])
		}
	})
	t.Run("operators in scalar fields are refused", func(t *testing.T) {
		op := map[string]any{"$ne": nil}
		for _, body := range []map[string]any{
			{"dataType": op, "data": "1.1.1.1"},
			{"dataType": "ip", "data": op},
			{"dataType": "ip", "data": map[string]any{"$gt": ""}},
			{"dataType": "ip", "data": "1.1.1.1", "tlp": map[string]any{"$gt": 0}},
			{"dataType": "ip", "data": "1.1.1.1", "pap": op},
			{"dataType": "ip", "data": "1.1.1.1", "message": op},
			{"dataType": "ip", "data": "1.1.1.1", "label": op},
			{"dataType": "ip", "data": "1.1.1.1", "parameters": "$where"},
			{"dataType": "ip", "data": "1.1.1.1", "force": op},
		} {
			hostileJSON(t, f.analyst, http.MethodPost, run, jsonText(t, body), http.StatusBadRequest)
		}
		hostileJSON(t, f.analyst, http.MethodPost, "/api/responder/"+responder+"/run",
			jsonText(t, map[string]any{"dataType": op, "data": map[string]any{}}), http.StatusBadRequest)
	})
	t.Run("analyzer settings", func(t *testing.T) {
		before := f.admin.Call(t, http.MethodGet, "/api/analyzer?range=all", nil).Want(t, http.StatusOK).Body
		for _, body := range []map[string]any{
			{"name": "c1", "configuration": map[string]any{"$where": "1"}},
			{"name": "c2", "configuration": map[string]any{"a.b": 1}},
			{"name": "c3", "configuration": map[string]any{"$set": map[string]any{"organization": "other"}}},
			{"name": "c4", "configuration": map[string]any{"level": map[string]any{"$ne": nil}}},
			{"name": "c5", "configuration": map[string]any{"lists": []any{map[string]any{"$gt": ""}}}},
			{"name": "c6", "configuration": map[string]any{"check_tlp": map[string]any{"$ne": false}}},
			{"name": "c7", "configuration": "$where"},
			{"name": map[string]any{"$ne": ""}},
			{"name": "c8", "rate": map[string]any{"$inc": 1}, "rateUnit": "Day"},
			{"name": "c9", "rate": 1, "rateUnit": map[string]any{"$ne": nil}},
			{"name": "c10", "jobCache": map[string]any{"$set": 1}},
			{"name": "c11", "jobTimeout": map[string]any{"$gt": 0}},
		} {
			hostileJSON(t, f.admin, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", jsonText(t, body), http.StatusBadRequest)
			hostileJSON(t, f.admin, http.MethodPatch, "/api/analyzer/"+f.analyzer, jsonText(t, body), http.StatusBadRequest)
		}
		if after := f.admin.Call(t, http.MethodGet, "/api/analyzer?range=all", nil).Want(t, http.StatusOK).Body; !bytes.Equal(before, after) {
			t.Errorf("refused settings changed the analyzers:\nbefore %s\nafter  %s", before, after)
		}
		// Operator-looking strings are plain values.
		r := hostileJSON(t, f.admin, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0",
			`{"name":"$where","configuration":{"level":"{\"$ne\":null}","lists":["$set","a.b"]}}`, http.StatusCreated)
		w := f.admin.Call(t, http.MethodGet, "/api/analyzer/"+r.Object(t)["id"].(string), nil).Want(t, http.StatusOK).Object(t)
		conf := w["configuration"].(map[string]any)
		if w["name"] != "$where" || conf["level"] != `{"$ne":null}` || jsonText(t, conf["lists"]) != `["$set","a.b"]` {
			t.Errorf("analyzer stored as %v", w)
		}
	})
	t.Run("identity fields", func(t *testing.T) {
		users := f.e.super.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, http.StatusOK).Body
		orgs := f.e.super.Call(t, http.MethodGet, "/api/organization?range=all", nil).Want(t, http.StatusOK).Body
		op := map[string]any{"$ne": nil}
		for _, body := range []map[string]any{
			{"login": op, "organization": "soc", "roles": roleRead},
			{"login": "$where", "organization": "soc", "roles": roleRead},
			{"login": "a.$b", "organization": "soc", "roles": roleRead},
			{"login": "inj1", "organization": op, "roles": roleRead},
			{"login": "inj2", "organization": "soc", "roles": []any{op}},
			{"login": "inj3", "organization": "soc", "roles": op},
			{"login": "inj4", "organization": "soc", "roles": roleRead, "name": map[string]any{"$set": "x"}},
			{"login": "inj5", "organization": "soc", "roles": roleRead, "password": op},
		} {
			hostileJSON(t, f.e.super, http.MethodPost, "/api/user", jsonText(t, body), http.StatusBadRequest, http.StatusForbidden)
		}
		for _, body := range []map[string]any{
			{"name": "$where"}, {"name": op}, {"name": "o.$x"}, {"name": "inj-org", "description": op},
			{"name": "inj-org2", "status": op},
		} {
			hostileJSON(t, f.e.super, http.MethodPost, "/api/organization", jsonText(t, body), http.StatusBadRequest)
		}
		for _, body := range []map[string]any{{"description": op}, {"status": op}, {"status": "$set"}} {
			hostileJSON(t, f.e.super, http.MethodPatch, "/api/organization/soc", jsonText(t, body), http.StatusBadRequest)
		}
		for _, body := range []map[string]any{{"password": op}, {"currentPassword": op, "password": op}} {
			hostileJSON(t, f.e.super, http.MethodPost, "/api/user/soc-reader/password/set", jsonText(t, body), http.StatusBadRequest)
		}
		if after := f.e.super.Call(t, http.MethodGet, "/api/user?range=all", nil).Want(t, http.StatusOK).Body; !bytes.Equal(users, after) {
			t.Errorf("refused requests changed the users:\nbefore %s\nafter  %s", users, after)
		}
		if after := f.e.super.Call(t, http.MethodGet, "/api/organization?range=all", nil).Want(t, http.StatusOK).Body; !bytes.Equal(orgs, after) {
			t.Errorf("refused requests changed the organizations:\nbefore %s\nafter  %s", orgs, after)
		}
		// Operator-looking strings are plain values.
		r := hostileJSON(t, f.e.super, http.MethodPost, "/api/user", `{"login":"plain","organization":"soc","roles":["read"],"name":"{\"$ne\":null} $where a.b"}`,
			http.StatusCreated)
		if n := r.Object(t)["name"]; n != `{"$ne":null} $where a.b` {
			t.Errorf("name stored as %v", n)
		}
	})
	t.Run("login", func(t *testing.T) {
		for _, body := range []string{
			`{"user":{"$ne":null},"password":{"$ne":null}}`,
			`{"user":"root","password":{"$gt":""}}`,
			`{"user":{"$regex":"^r"},"password":"x"}`,
			`{"user":["root"],"password":["x"]}`,
		} {
			r := hostileJSON(t, f.e.anon(), http.MethodPost, "/api/login", body, http.StatusBadRequest, http.StatusUnauthorized)
			if findCookie(r.Cookies, "SESSION") != nil && r.Status == http.StatusOK {
				t.Errorf("%s: logged in", body)
			}
		}
		hostile(t, f.e.anon(), http.MethodPost, "/api/login", "application/x-www-form-urlencoded",
			strings.NewReader("user[$ne]=x&password[$ne]=x"), nil, http.StatusUnauthorized, http.StatusBadRequest)
	})
	// The victim job is untouched, and no client key reached a stored document.
	if j := f.reads.Call(t, http.MethodGet, "/api/job/"+victim, nil).Want(t, http.StatusOK).Object(t); j["status"] != "Waiting" || j["data"] != "10.10.10.10" {
		t.Errorf("victim job changed: %v", j)
	}
	checkStoredKeys(t, f.e)
}

// multipartRaw builds a multipart body by hand, so that the file part's Content-Disposition and
// Content-Type are exactly what a hostile client writes.
func multipartRaw(t *testing.T, js, disposition, ctype string, content []byte) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("_json", js); err != nil {
		t.Fatal(err)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", disposition)
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pw.Write(content)
	_ = mw.Close()
	return mw.FormDataContentType(), &buf
}

func TestHostile_UploadFileNames(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t)
	run := "/api/analyzer/" + f.analyzer + "/run?force=1"
	names := []string{
		// `..\..\windows\win.ini`, `C:\temp\a.exe` and ".." are kept as they are: bugs_upload_names.go.txt.
		"../../etc/passwd", "../../../../../../tmp/x.exe", "/etc/shadow", "a\x00b.exe", "\x00", ".", "", "dir/", "....//....//x", "%2e%2e%2fx", `a"b.txt`, "a;b=c.txt",
		"ファイル.txt", "\u202etxt.exe", "a\xffb.bin", strings.Repeat("n", 3000) + ".bin",
	}
	for i, name := range names {
		t.Run(fmt.Sprintf("%q", shorten(name)), func(t *testing.T) {
			content := []byte(fmt.Sprintf("file %d with a hostile name", i))
			disp := fmt.Sprintf(`form-data; name="attachment"; filename="%s"`, strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name))
			ct, body := multipartRaw(t, `{"dataType":"file"}`, disp, "application/octet-stream", content)
			r := hostile(t, f.analyst, http.MethodPost, run, ct, body, nil, http.StatusOK, http.StatusBadRequest)
			if r.Status != http.StatusOK {
				return
			}
			checkUploadedName(t, f, r.Object(t), content)
		})
	}
	t.Run("the data part", func(t *testing.T) {
		content := []byte("through the data part")
		ct, body := multipartRaw(t, `{"dataType":"file"}`, `form-data; name="data"; filename="../../x/y.bin"`, "", content)
		checkUploadedName(t, f, hostile(t, f.analyst, http.MethodPost, run, ct, body, nil, http.StatusOK).Object(t), content)
	})
	t.Run("download names", func(t *testing.T) {
		j := multipartRun(t, f.analyst, run, "attachment", "plain.txt", []byte("plain"), `{"dataType":"file"}`).Want(t, http.StatusOK).Object(t)
		hash := j["attachment"].(map[string]any)["id"].(string)
		for _, n := range []string{"../../etc/passwd", "a\r\nSet-Cookie: x=1", `a"; filename="evil.exe`, "a\x00b", `..\..\x`, "%0d%0a"} {
			r := hostile(t, f.reads, http.MethodGet, "/api/datastore/"+hash+"?name="+url.QueryEscape(n), "", nil, nil, http.StatusOK)
			checkDisposition(t, r)
			if r.Header.Get("Set-Cookie") != "" {
				t.Errorf("name %q set a cookie", n)
			}
			z := hostile(t, f.reads, http.MethodGet, "/api/datastorezip/"+hash+"?name="+url.QueryEscape(n), "", nil, nil, http.StatusOK)
			if cd := z.Header.Get("Content-Disposition"); z.Header.Get("Set-Cookie") != "" || strings.ContainsAny(cd, "\r\n\x00/\\") ||
				len(z.Header.Values("Content-Disposition")) != 1 {
				t.Errorf("zip of name %q: headers %v", n, z.Header)
			}
			if entry, _ := apitest.Unzip(t, z.Body, "malware"); strings.ContainsAny(entry, "/\\\r\n\x00") {
				t.Errorf("zip of name %q: entry %q", n, entry)
			}
		}
	})
}

// checkUploadedName checks a file job: the stored name holds no path, and the file downloads under it.
func checkUploadedName(t *testing.T, f *jobFixture, j map[string]any, content []byte) {
	t.Helper()
	att, _ := j["attachment"].(map[string]any)
	if att == nil {
		t.Fatalf("no attachment: %v", j)
	}
	name, _ := att["name"].(string)
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || !utf8.ValidString(name) {
		t.Errorf("stored file name %q is not a plain file name", name)
	}
	if att["size"] != float64(len(content)) {
		t.Errorf("size %v, want %d", att["size"], len(content))
	}
	got := f.reads.Call(t, http.MethodGet, "/api/job/"+j["id"].(string), nil).Want(t, http.StatusOK).Object(t)
	if got["attachment"].(map[string]any)["name"] != name {
		t.Errorf("the job reads back with the name %v, not %q", got["attachment"].(map[string]any)["name"], name)
	}
	r := f.reads.Call(t, http.MethodGet, "/api/datastore/"+att["id"].(string)+"?name="+url.QueryEscape(name), nil).Want(t, http.StatusOK)
	if !bytes.Equal(r.Body, content) {
		t.Errorf("download %q, want %q", r.Body, content)
	}
	checkDisposition(t, r)
	// The analyzer sees the same plain name.
	done := f.wait(t, f.analyst, j["id"].(string))
	if rep, ok := done["report"].(map[string]any); ok {
		if full, ok := rep["full"].(map[string]any); ok && full["filename"] != name {
			t.Errorf("the analyzer got the file name %q, the job says %q", full["filename"], name)
		}
	}
}

// checkDisposition fails unless a download is an attachment of type application/octet-stream, not sniffed,
// whose file name holds no path, quote or line break.
func checkDisposition(t *testing.T, r *resp) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("download Content-Type %q", ct)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("download without nosniff")
	}
	cd := r.Header.Get("Content-Disposition")
	fn, ok := strings.CutPrefix(cd, `attachment; filename="`)
	fn, ok2 := strings.CutSuffix(fn, `"`)
	if !ok || !ok2 || strings.ContainsAny(fn, "\"/\\\r\n\x00") {
		t.Errorf("Content-Disposition %q", cd)
	}
}

func TestHostile_ContentTypeLies(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	run := "/api/analyzer/" + f.analyzer + "/run"
	good := `{"dataType":"ip","data":"10.30.0.1"}`
	for _, tc := range []struct {
		name, ctype, body string
		want              []int
	}{
		{"form labelled JSON", "application/json", "dataType=ip&data=1.1.1.1", []int{400}},
		{"JSON labelled form (curl -d)", "application/x-www-form-urlencoded", good, []int{200}},
		{"multipart without boundary", "multipart/form-data", good, []int{400}},
		{"multipart with a wrong boundary", "multipart/form-data; boundary=nope", "--other\r\n\r\nx\r\n--other--\r\n", []int{400}},
		{"JSON labelled multipart", "multipart/form-data; boundary=x", good, []int{400}},
		{"JSON labelled text/plain", "text/plain", good, []int{400}},
		{"JSON labelled XML", "application/xml", good, []int{400}},
		{"JSON labelled octet-stream", "application/octet-stream", good, []int{400}},
		{"broken content type", "application/json; charset", good, []int{200, 400}},
		{"garbage content type", ";;;===", good, []int{200, 400}},
		{"UTF-16 JSON", "application/json; charset=utf-16", "\xff\xfe{\x00}\x00", []int{400}},
		{"JSON with a BOM", "application/json", "\ufeff" + good, []int{200, 400}},
		{"JSON array", "application/json", `[` + good + `]`, []int{400}},
		{"JSON string", "application/json", `"x"`, []int{400}},
		{"empty JSON", "application/json", ``, []int{400}},
		{"vendor JSON", "application/vnd.api+json", good, []int{200}},
		{"two JSON values", "application/json", good + good, []int{400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile(t, f.analyst, http.MethodPost, run, tc.ctype, strings.NewReader(tc.body), nil, tc.want...)
		})
	}
	t.Run("file part with a lying type", func(t *testing.T) {
		ct, body := multipartRaw(t, `{"dataType":"file"}`, `form-data; name="attachment"; filename="x.html"`, "text/html",
			[]byte("<script>alert(1)</script>"))
		j := hostile(t, f.analyst, http.MethodPost, run, ct, body, nil, http.StatusOK).Object(t)
		r := f.reads.Call(t, http.MethodGet, "/api/datastore/"+j["attachment"].(map[string]any)["id"].(string), nil).Want(t, http.StatusOK)
		checkDisposition(t, r) // served as an octet-stream attachment, never as HTML
	})
	t.Run("_json sent as a file", func(t *testing.T) {
		ct, body := multipartRaw(t, `{}`, `form-data; name="_json"; filename="x.json"`, "application/json", []byte(good))
		hostile(t, f.analyst, http.MethodPost, run, ct, body, nil, http.StatusBadRequest)
	})
	t.Run("attachment sent as a value", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_json", `{"dataType":"file"}`)
		_ = mw.WriteField("attachment", "not a file")
		_ = mw.Close()
		hostile(t, f.analyst, http.MethodPost, run, mw.FormDataContentType(), &buf, nil, http.StatusBadRequest)
	})
	t.Run("Content-Encoding lie", func(t *testing.T) {
		hostile(t, f.analyst, http.MethodPost, run, "application/json", strings.NewReader(good),
			http.Header{"Content-Encoding": {"gzip"}}, http.StatusOK, http.StatusBadRequest, http.StatusUnsupportedMediaType)
	})
	// Identity endpoints too: a lying type never changes a user.
	t.Run("PATCH with a lying type", func(t *testing.T) {
		// text/plain is not a request format: its body is ignored, so the PATCH changes nothing (200).
		for _, ct := range []string{"multipart/form-data", "application/json", "text/plain"} {
			hostile(t, f.e.super, http.MethodPatch, "/api/user/soc-reader", ct, strings.NewReader("status=Locked"), nil,
				http.StatusOK, http.StatusBadRequest)
		}
		if st := f.e.getUser(t, "soc-reader")["status"]; st != "Active" {
			t.Errorf("a lying PATCH locked the user: %v", st)
		}
	})
}

func TestHostile_MethodsNotAllowed(t *testing.T) {
	t.Parallel()
	f := newJobFixture(t, withoutWorkers())
	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.40.0.1"})["id"].(string)
	for _, c := range []struct{ method, path string }{
		{"PUT", "/api/job/" + id}, {"PATCH", "/api/job/" + id}, {"POST", "/api/job/" + id}, {"PUT", "/api/job"},
		{"DELETE", "/api/job"}, {"DELETE", "/api/status"}, {"PUT", "/api/analyzer/" + f.analyzer},
		{"GET", "/api/analyzer/" + f.analyzer + "/run"}, {"DELETE", "/api/analyzer/" + f.analyzer + "/run"},
		{"POST", "/api/user/current"}, {"DELETE", "/api/user"}, {"PUT", "/api/login"}, {"DELETE", "/api/logout"},
		{"TRACE", "/api/status"}, {"OPTIONS", "/api/job"}, {"PROPFIND", "/api/job"}, {"FOO", "/api/user/current"},
		{"POST", "/api/datastore/abc"}, {"DELETE", "/api/datastore/abc"}, {"PATCH", "/api/job/_search"},
		{"GET", "/api/job/_search/x"}, {"POST", "/healthz"}, {"PUT", "/metrics"},
	} {
		for _, who := range []*client{f.analyst, f.e.anon()} {
			r := hostile(t, who, c.method, c.path, "", nil, nil)
			if c.method == http.MethodOptions && r.Status == http.StatusNoContent && len(r.Body) == 0 && r.Header.Get("Allow") != "" {
				continue // Echo answers OPTIONS itself with the allowed methods and no body: harmless
			}
			if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed &&
				!(who.Key == "" && r.Status == http.StatusUnauthorized) {
				t.Errorf("%s %s as %q: status %d, want 404 or 405", c.method, c.path, who.Login, r.Status)
			}
		}
	}
	// HEAD is GET without a body where Echo routes it, else an error without a body.
	r := hostile(t, f.analyst, http.MethodHead, "/api/job/"+id, "", nil, nil)
	if r.Status >= 500 || len(r.Body) != 0 {
		t.Errorf("HEAD: status %d body %q", r.Status, r.Body)
	}
	if st := f.analyst.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)["status"]; st != "Waiting" {
		t.Errorf("the job changed: %v", st)
	}
}
