//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"
)

// httpClient bounds every call; long operations are polled, never waited on in one request.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// apiClient calls one service with one API key. The node gives the base URL at call time, so a client
// keeps working after its container was restarted on another host port.
type apiClient struct {
	n   *node
	key string
}

func (n *node) as(key string) apiClient { return apiClient{n: n, key: key} }

// reply is an answer, kept whole for the failure messages.
type reply struct {
	what   string
	code   int
	body   []byte
	header http.Header
}

func (c apiClient) call(t testing.TB, method, path string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader([]byte(mustJSON(body)))
	}
	req, err := http.NewRequest(method, c.n.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.do(t, req)
}

// upload sends a multipart request: the JSON part _json and one file part attachment.
func (c apiClient) upload(t testing.TB, path string, fields map[string]any, filename, contentType string, content []byte) reply {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("_json", mustJSON(fields)); err != nil {
		t.Fatal(err)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="attachment"; filename=%q`, filename))
	h.Set("Content-Type", contentType)
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(content)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.n.url+path, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(t, req)
}

func (c apiClient) do(t testing.TB, req *http.Request) reply {
	t.Helper()
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	r := reply{what: req.Method + " " + c.n.name + req.URL.Path}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", r.what, err)
	}
	defer resp.Body.Close()
	r.code, r.header = resp.StatusCode, resp.Header
	if r.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s: read the answer: %v", r.what, err)
	}
	return r
}

// want fails unless the status is one of codes.
func (r reply) want(t testing.TB, codes ...int) reply {
	t.Helper()
	if !slices.Contains(codes, r.code) {
		t.Fatalf("%s: status %d, want %v; body %.600s", r.what, r.code, codes, r.body)
	}
	return r
}

func (r reply) object(t testing.TB) obj {
	t.Helper()
	var o obj
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("%s: not a JSON object: %v; body %.300s", r.what, err, r.body)
	}
	return o
}

func (r reply) list(t testing.TB) []obj {
	t.Helper()
	var l []obj
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("%s: not a JSON array: %v; body %.300s", r.what, err, r.body)
	}
	return l
}

func (r reply) text() string { return strings.TrimSpace(string(r.body)) }

// apiError is an error body: {type, message}.
func (r reply) apiError(t testing.TB) (typ, msg string) {
	t.Helper()
	o := r.object(t)
	typ, _ = o["type"].(string)
	msg, _ = o["message"].(string)
	if typ == "" || msg == "" {
		t.Fatalf("%s: status %d without an error body {type, message}: %.300s", r.what, r.code, r.body)
	}
	return typ, msg
}

// obj is a decoded JSON object with checked accessors.
type obj map[string]any

func (o obj) str(t testing.TB, k string) string {
	t.Helper()
	s, ok := o[k].(string)
	if !ok {
		t.Fatalf("field %q is %T (%v), want a string; object %.400v", k, o[k], o[k], o)
	}
	return s
}

func (o obj) strs(t testing.TB, k string) []string {
	t.Helper()
	raw, ok := o[k].([]any)
	if !ok {
		t.Fatalf("field %q is %T, want an array; object %.400v", k, o[k], o)
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func (o obj) obj(t testing.TB, k string) obj {
	t.Helper()
	m, ok := o[k].(map[string]any)
	if !ok {
		t.Fatalf("field %q is %T (%v), want an object; object %.400v", k, o[k], o[k], o)
	}
	return m
}

// eventually polls check until it answers true, for at most timeout. check returns a description of the
// last state for the failure message.
func eventually(t testing.TB, what string, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %s; last: %s", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond) // polling interval; the deadline bounds the wait
	}
}
