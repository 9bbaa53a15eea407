package web

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

type sample struct {
	Name   string         `json:"name"`
	TLP    *int           `json:"tlp"`
	Force  bool           `json:"force"`
	Roles  Strings        `json:"roles"`
	Params map[string]any `json:"parameters"`
	Cache  Opt[int]       `json:"jobCache"`
}

func ctx(t *testing.T, method, target, ct string, body string) echo.Context {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return echo.New().NewContext(req, httptest.NewRecorder())
}

func multipartBody(t *testing.T, js string) (string, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("_json", js)
	_ = mw.Close()
	return mw.FormDataContentType(), buf.String()
}

// The four request formats of spec §1 bind to the same values.
func TestBind_FormatsAreEquivalent(t *testing.T) {
	js := `{"name":"n","tlp":3,"force":true,"roles":["read","analyze"],"parameters":{"a":1},"jobCache":null}`
	mct, mbody := multipartBody(t, js)
	form := url.Values{"name": {"n"}, "tlp": {"3"}, "force": {"1"}, "roles": {"read", "analyze"},
		"parameters": {`{"a":1}`}, "jobCache": {""}}
	cases := map[string]echo.Context{
		"json":                   ctx(t, http.MethodPost, "/", "application/json", js),
		"form":                   ctx(t, http.MethodPost, "/", "application/x-www-form-urlencoded", form.Encode()),
		"query":                  ctx(t, http.MethodPost, "/?"+form.Encode(), "", ""),
		"multipart":              ctx(t, http.MethodPost, "/", mct, mbody),
		"json as form (curl -d)": ctx(t, http.MethodPost, "/", "application/x-www-form-urlencoded", js),
		"json without type":      ctx(t, http.MethodPost, "/", "", js),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var s sample
			if err := Bind(c, &s); err != nil {
				t.Fatal(err)
			}
			if s.Name != "n" || s.TLP == nil || *s.TLP != 3 || !s.Force || len(s.Roles) != 2 || s.Roles[1] != "analyze" ||
				s.Params["a"] == nil || !s.Cache.Set {
				t.Fatalf("%+v", s)
			}
		})
	}
}

func TestBind_Errors(t *testing.T) {
	for name, c := range map[string]echo.Context{
		"malformed json":  ctx(t, http.MethodPost, "/", "application/json", `{"name":`),
		"not an object":   ctx(t, http.MethodPost, "/", "application/json", `[1,2]`),
		"trailing data":   ctx(t, http.MethodPost, "/", "application/json", `{} {}`),
		"wrong type":      ctx(t, http.MethodPost, "/", "application/json", `{"tlp":"high"}`),
		"bad form number": ctx(t, http.MethodPost, "/?tlp=x", "", ""),
	} {
		t.Run(name, func(t *testing.T) {
			var s sample
			err := Bind(c, &s)
			if k := apperr.KindOf(err); k != apperr.BadRequest && k != apperr.Invalid {
				t.Fatalf("err %v kind %v", err, k)
			}
		})
	}
}

func TestOpt_AbsentNullValue(t *testing.T) {
	for body, want := range map[string][3]bool{`{}`: {false, false, false}, `{"jobCache":null}`: {true, true, false},
		`{"jobCache":5}`: {true, false, true}} {
		var s sample
		if err := Bind(ctx(t, http.MethodPatch, "/", "application/json", body), &s); err != nil {
			t.Fatal(err)
		}
		if s.Cache.Set != want[0] || s.Cache.Null != want[1] || (s.Cache.V == 5) != want[2] {
			t.Fatalf("%s: %+v", body, s.Cache)
		}
	}
}
