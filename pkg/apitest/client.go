// Package apitest is what the API tests of both services share: a client that calls a service over HTTP as
// a user would (a Bearer key, basic credentials, a session cookie or nothing) through a transport that
// validates every response against the service's OpenAPI document, the checks of a response (status, JSON,
// the error shape of DECISIONS.md, X-Total), and the bodies of the tests both services run against their own
// setup (request limits, percent-encoded path parameters, the OpenAPI document, protected zips). A service's
// harness builds the service (its internal/app) and hands these helpers its URL and handler.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/auth"
)

// Client is one way of calling the API: a Bearer key, basic credentials, a cookie jar, or nothing.
type Client struct {
	URL      string // the server's base URL
	Login    string // the user behind the credential, "" for none
	Key      string
	Basic    [2]string
	Password string // the user's password, when the test set one
	Jar      http.CookieJar
	HC       *http.Client
	CSRF     bool        // send the XSRF-TOKEN cookie's value in X-XSRF-TOKEN
	Header   http.Header // sent with every request
}

// RequestTimeout bounds one request of a test client. The heavy requests of the tests (10,000 and 30,000
// tasks in one case, 20,000 artifacts) took 30 to 67 s on a 2-core machine loaded by other builds, so the bound
// is far above what a request needs when it works, and still ends a request that hangs.
const RequestTimeout = 5 * time.Minute

// NewClient returns a client of the server at url for login ("" for none) without credentials, sending its
// requests through transport (nil: http.DefaultTransport).
func NewClient(url string, transport http.RoundTripper, login string) *Client {
	return &Client{URL: url, Login: login, HC: &http.Client{Timeout: RequestTimeout, Transport: transport}, Header: http.Header{}}
}

// WithKey sets the Bearer key the client sends and returns the client.
func (c *Client) WithKey(key string) *Client {
	c.Key = key
	return c
}

// WithBasic sets the basic credentials the client sends and returns the client.
func (c *Client) WithBasic(login, password string) *Client {
	c.Basic = [2]string{login, password}
	return c
}

// WithJar gives the client an empty cookie jar (a browser session) and returns the client.
func (c *Client) WithJar() *Client {
	jar, _ := cookiejar.New(nil)
	c.Jar = jar
	c.HC.Jar = jar
	return c
}

// In returns a copy of the client that sends X-Organisation: org (TheHive's organisation switch).
func (c *Client) In(org string) *Client {
	d := *c
	d.Header = c.Header.Clone()
	d.Header.Set("X-Organisation", org)
	return &d
}

// Cookie returns the value of a cookie the jar holds for the server, "" if none.
func (c *Client) Cookie(name string) string {
	u, _ := url.Parse(c.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// Call sends body (nil for none) as JSON.
func (c *Client) Call(t testing.TB, method, path string, body any) *Response {
	t.Helper()
	if body == nil {
		return c.Send(t, method, path, "", nil, nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return c.Send(t, method, path, "application/json", bytes.NewReader(b), nil)
}

// Raw sends a body as is with a content type.
func (c *Client) Raw(t testing.TB, method, path, contentType, body string) *Response {
	t.Helper()
	return c.Send(t, method, path, contentType, strings.NewReader(body), nil)
}

// Form sends a URL-encoded form.
func (c *Client) Form(t testing.TB, method, path string, v url.Values) *Response {
	t.Helper()
	return c.Raw(t, method, path, "application/x-www-form-urlencoded", v.Encode())
}

// Part is one file of a multipart request.
type Part struct {
	Field, Filename, ContentType string
	Content                      []byte
}

// Multipart sends a multipart body: the JSON of v in `_json` (when v is not nil), plain fields, and files.
func (c *Client) Multipart(t testing.TB, method, path string, v any, fields map[string]string, files ...Part) *Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if v != nil {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := mw.WriteField("_json", string(js)); err != nil {
			t.Fatal(err)
		}
	}
	for k, x := range fields {
		if err := mw.WriteField(k, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+f.Field+`"; filename="`+f.Filename+`"`)
		if f.ContentType != "" {
			h.Set("Content-Type", f.ContentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(f.Content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return c.Send(t, method, path, mw.FormDataContentType(), &buf, nil)
}

// MultipartJSON sends a multipart body whose part `_json` holds the JSON of v.
func (c *Client) MultipartJSON(t testing.TB, method, path string, v any) *Response {
	t.Helper()
	return c.Multipart(t, method, path, v, nil)
}

// Send is the one place requests are made: the client's headers and credentials, then hdr.
func (c *Client) Send(t testing.TB, method, path, contentType string, body io.Reader, hdr http.Header) *Response {
	t.Helper()
	req, err := http.NewRequest(method, c.URL+path, body)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	for k, vs := range c.Header {
		req.Header[k] = slices.Clone(vs)
	}
	for k, vs := range hdr {
		req.Header[k] = slices.Clone(vs)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.Key != "":
		req.Header.Set("Authorization", "Bearer "+c.Key)
	case c.Basic[0] != "":
		req.SetBasicAuth(c.Basic[0], c.Basic[1])
	}
	if c.CSRF && c.Jar != nil {
		if v := c.Cookie(auth.CSRFCookie); v != "" {
			req.Header.Set(auth.CSRFHeader, v)
		}
	}
	res, err := c.HC.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &Response{Method: method, Path: path, Status: res.StatusCode, Header: res.Header, Cookies: res.Cookies(), Body: b}
}

// Clients makes the clients of one server as a harness's own client type C, which wraps *Client (to add
// the harness's fixtures as methods).
type Clients[C any] struct {
	URL       string
	Transport http.RoundTripper // validates every response (OpenAPI.Transport)
	Wrap      func(*Client) C
}

// New returns a client of login without credentials.
func (s Clients[C]) New(login string) C { return s.Wrap(NewClient(s.URL, s.Transport, login)) }

// Anon returns a client without credentials.
func (s Clients[C]) Anon() C { return s.New("") }

// Key returns a client sending Authorization: Bearer key.
func (s Clients[C]) Key(login, key string) C {
	return s.Wrap(NewClient(s.URL, s.Transport, login).WithKey(key))
}

// Basic returns a client sending HTTP basic credentials.
func (s Clients[C]) Basic(login, password string) C {
	return s.Wrap(NewClient(s.URL, s.Transport, login).WithBasic(login, password))
}

// Session returns a client with an empty cookie jar.
func (s Clients[C]) Session() C { return s.Wrap(NewClient(s.URL, s.Transport, "").WithJar()) }
