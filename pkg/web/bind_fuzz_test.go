package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

// fuzzTarget has a field of every kind request types use.
type fuzzTarget struct {
	Name   string              `json:"name"`
	TLP    *int                `json:"tlp"`
	Small  int8                `json:"small"`
	Count  uint                `json:"count"`
	Ratio  float64             `json:"ratio"`
	Force  bool                `json:"force"`
	Roles  Strings             `json:"roles"`
	Params map[string]any      `json:"parameters"`
	Cache  Opt[int]            `json:"jobCache"`
	Status Opt[string]         `json:"status"`
	Conf   Opt[map[string]any] `json:"configuration"`
	Ints   []int               `json:"ints"`
	Raw    json.RawMessage     `json:"raw"`
	Data   any                 `json:"data"`
	Nested *struct {
		A string `json:"a"`
	} `json:"nested"`
	Labels map[string]string `json:"labels"`
}

const fuzzBoundary = "fuzzboundary"

// The four request formats of spec §1 (the query string comes with every request), plus a raw multipart
// body and a body without a content type.
const (
	fmtJSON = iota
	fmtForm
	fmtMultipartJSON // the body is the `_json` part
	fmtMultipartRaw  // the body is a whole multipart body with boundary fuzzBoundary
	fmtNone
	nFormats
)

var fuzzEcho = echo.New()

func fuzzRequest(format int, body []byte, query string) echo.Context {
	var ct string
	switch format {
	case fmtJSON:
		ct = "application/json"
	case fmtForm:
		ct = "application/x-www-form-urlencoded"
	case fmtMultipartJSON:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.SetBoundary(fuzzBoundary)
		_ = mw.WriteField("_json", string(body))
		_ = mw.Close()
		body, ct = buf.Bytes(), mw.FormDataContentType()
	case fmtMultipartRaw:
		ct = "multipart/form-data; boundary=" + fuzzBoundary
	}
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.URL.RawQuery = query
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return fuzzEcho.NewContext(req, httptest.NewRecorder())
}

func fuzzBind(t *testing.T, format int, body []byte, query string) (fuzzTarget, error) {
	t.Helper()
	var dst fuzzTarget
	err := Bind(fuzzRequest(format, body, query), &dst)
	if err != nil {
		var e *apperr.Error
		if !errors.As(err, &e) || e.Message == "" ||
			(e.Kind != apperr.BadRequest && e.Kind != apperr.Invalid && e.Kind != apperr.TooLarge) {
			t.Fatalf("format %d: error %v (%T) is not an apperr BadRequest/Invalid/TooLarge", format, err, err)
		}
		if e.Kind == apperr.Invalid && len(e.Fields) == 0 {
			t.Fatalf("format %d: AttributeCheckingError without fields: %v", format, err)
		}
	}
	return dst, err
}

// FuzzBind binds random bodies in every format: Bind never panics, its errors are our kinds, and a JSON
// object binds the same whether sent as JSON, as JSON without a content type, as JSON labelled as a form
// (curl -d) or as the `_json` part of a multipart form; a URL-encoded form binds the same as the same text in
// the query string.
func FuzzBind(f *testing.F) {
	seeds := []struct {
		format int
		body   string
		query  string
	}{
		{fmtJSON, `{"name":"n","tlp":3,"force":true,"roles":["read","analyze"],"parameters":{"a":1},"jobCache":null}`, ""},
		{fmtJSON, `{"small":300,"count":-1,"ratio":1e400,"ints":[1,"2"],"raw":{"x":[1]},"data":"d","nested":{"a":"b"}}`, ""},
		{fmtJSON, `{"configuration":{"$where":1,"a.b":[null]},"status":null,"labels":{"k":1}}`, "tlp=2&force=on"},
		{fmtJSON, `[1,2]`, ""},
		{fmtJSON, `{"name":`, ""},
		{fmtJSON, `{} {}`, ""},
		{fmtJSON, "\ufeff{}", ""},
		{fmtForm, "name=n&tlp=3&force=1&roles=read&roles=analyze&parameters=%7B%22a%22%3A1%7D&jobCache=", ""},
		{fmtForm, "tlp=NaN&small=1e3&count=0x10&ratio=Inf&ints=[1,2]&ints=3&raw=%5B&configuration=x", "roles=a"},
		{fmtForm, "login=%zz", ""},
		{fmtForm, `{"name":"json as form"}`, ""},
		{fmtMultipartJSON, `{"name":"m","ints":[1,2,3]}`, "sort=-name"},
		{fmtMultipartRaw, "--" + fuzzBoundary + "\r\nContent-Disposition: form-data; name=\"_json\"\r\n\r\n{\"tlp\":1}\r\n--" +
			fuzzBoundary + "\r\nContent-Disposition: form-data; name=\"roles\"\r\n\r\nread\r\n--" + fuzzBoundary + "--\r\n", ""},
		{fmtMultipartRaw, "garbage", ""},
		{fmtNone, `{"name":"no type"}`, "name=query+wins"},
		{fmtNone, "", "tlp=x"},
	}
	for _, s := range seeds {
		f.Add(uint8(s.format), []byte(s.body), s.query)
	}
	f.Fuzz(func(t *testing.T, format uint8, body []byte, query string) {
		fm := int(format) % nFormats
		got, err := fuzzBind(t, fm, body, query)

		trimmed := bytes.TrimSpace(body)
		switch {
		case fm == fmtJSON && len(trimmed) > 0 && trimmed[0] == '{':
			for _, other := range []int{fmtNone, fmtForm, fmtMultipartJSON} {
				got2, err2 := fuzzBind(t, other, body, query)
				if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(got, got2)) {
					t.Fatalf("JSON %q query %q: as JSON %+v, %v; as format %d %+v, %v", body, query, got, err, other, got2, err2)
				}
			}
		case fm == fmtForm && query == "" && (len(trimmed) == 0 || trimmed[0] != '{'):
			got2, err2 := fuzzBind(t, fmtNone, nil, string(body))
			if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(got, got2)) {
				t.Fatalf("form %q: as a body %+v, %v; as a query string %+v, %v", body, got, err, got2, err2)
			}
		}
	})
}
