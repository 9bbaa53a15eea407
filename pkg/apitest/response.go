package apitest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// AuthFailure is the one message of every 401 of both services (the contracts' §7).
const AuthFailure = "Authentication failure"

// Response is a response read in full.
type Response struct {
	Method, Path string
	Status       int
	Header       http.Header
	Cookies      []*http.Cookie
	Body         []byte
}

// Want fails the test unless the status is code.
func (r *Response) Want(t testing.TB, code int) *Response {
	t.Helper()
	if r.Status != code {
		t.Fatalf("%s %s: status %d, want %d; body %s", r.Method, r.Path, r.Status, code, r.Body)
	}
	return r
}

// Decode unmarshals the JSON body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, want application/json", r.Method, r.Path, ct)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s %s: decode %s: %v", r.Method, r.Path, r.Body, err)
	}
}

// Object decodes the body as a JSON object.
func (r *Response) Object(t testing.TB) Object {
	t.Helper()
	var m Object
	r.Decode(t, &m)
	return m
}

// List decodes the body as a JSON array of objects.
func (r *Response) List(t testing.TB) []Object {
	t.Helper()
	var l []Object
	r.Decode(t, &l)
	if l == nil {
		t.Fatalf("%s %s: body %s is not an array", r.Method, r.Path, r.Body)
	}
	return l
}

// IDs returns the `id` of every item of a list response, in order.
func (r *Response) IDs(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, m := range r.List(t) {
		id, _ := m["id"].(string)
		out = append(out, id)
	}
	return out
}

// Total returns the X-Total header of a list.
func (r *Response) Total(t testing.TB) string {
	t.Helper()
	v := r.Header.Get("X-Total")
	if v == "" {
		t.Fatalf("%s %s: no X-Total header", r.Method, r.Path)
	}
	return v
}

// Text returns a text/plain body.
func (r *Response) Text(t testing.TB) string {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("%s %s: Content-Type %q, want text/plain", r.Method, r.Path, ct)
	}
	return string(r.Body)
}

// errorTypes are the error types of DECISIONS.md "Errors" by status.
var errorTypes = map[int][]string{
	400: {"BadRequest", "AttributeCheckingError", "CreateError"},
	401: {"AuthenticationError"},
	403: {"AuthorizationError"},
	404: {"NotFoundError"},
	405: {"BadRequest"},
	413: {"BadRequest"},
	429: {"RateLimitExceeded"},
	500: {"InternalError"},
}

// Leaks are fragments that must never reach a client: Go, driver and stack text.
var Leaks = []string{"goroutine ", ".go:", "mongo", "bson", "ferret", "sqlite", "runtime.", "panic", "%!", "<nil>"}

// CheckErrorShape fails unless the response is an error body of DECISIONS.md: JSON with exactly a string
// `type` and a string `message` (AttributeCheckingError may add `errors`, a non-empty list of
// {name,message}), of a type allowed for the status, without Go or driver text.
func (r *Response) CheckErrorShape(t testing.TB) (typ, msg string) {
	t.Helper()
	if r.Status < 400 {
		t.Fatalf("%s %s: status %d is not an error; body %s", r.Method, r.Path, r.Status, r.Body)
	}
	var m map[string]json.RawMessage
	r.Decode(t, &m)
	for k := range m {
		if k != "type" && k != "message" && k != "errors" {
			t.Errorf("%s %s: error body has an extra key %q: %s", r.Method, r.Path, k, r.Body)
		}
	}
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ == "" {
		t.Errorf("%s %s: error body without a string type: %s", r.Method, r.Path, r.Body)
	}
	if err := json.Unmarshal(m["message"], &msg); err != nil || msg == "" {
		t.Errorf("%s %s: error body without a string message: %s", r.Method, r.Path, r.Body)
	}
	if errs, ok := m["errors"]; ok {
		if typ != "AttributeCheckingError" {
			t.Errorf("%s %s: `errors` on a %s: %s", r.Method, r.Path, typ, r.Body)
		}
		var fe []struct{ Name, Message string }
		if err := json.Unmarshal(errs, &fe); err != nil || len(fe) == 0 {
			t.Errorf("%s %s: `errors` is not a non-empty list of {name,message}: %s", r.Method, r.Path, r.Body)
		}
	}
	if allowed, ok := errorTypes[r.Status]; ok && !slices.Contains(allowed, typ) {
		t.Errorf("%s %s: status %d with type %q, want one of %v", r.Method, r.Path, r.Status, typ, allowed)
	}
	low := strings.ToLower(string(r.Body))
	for _, l := range Leaks {
		if strings.Contains(low, l) {
			t.Errorf("%s %s: error body leaks %q: %s", r.Method, r.Path, l, r.Body)
		}
	}
	return typ, msg
}

// WantError fails unless the response is an error of this status and type with the DECISIONS.md shape. It
// returns the error message.
func (r *Response) WantError(t testing.TB, status int, typ string) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s %s: status %d, want %d %s; body %s", r.Method, r.Path, r.Status, status, typ, r.Body)
	}
	got, msg := r.CheckErrorShape(t)
	if got != typ {
		t.Fatalf("%s %s: error type %q, want %q; body %s", r.Method, r.Path, got, typ, r.Body)
	}
	if status == http.StatusUnauthorized && msg != AuthFailure {
		t.Errorf("%s %s: 401 message %q, want %q", r.Method, r.Path, msg, AuthFailure)
	}
	return msg
}

// FieldErrors returns the names in the `errors` list of an AttributeCheckingError.
func (r *Response) FieldErrors(t testing.TB) []string {
	t.Helper()
	var b struct {
		Errors []struct{ Name, Message string } `json:"errors"`
	}
	r.Decode(t, &b)
	var names []string
	for _, e := range b.Errors {
		names = append(names, e.Name)
	}
	return names
}

// Object is a decoded JSON object with typed accessors that fail the test on a wrong type.
type Object map[string]any

// Str is the string field k.
func (o Object) Str(t testing.TB, k string) string {
	t.Helper()
	s, ok := o[k].(string)
	if !ok {
		t.Fatalf("field %q = %#v, want a string in %v", k, o[k], o)
	}
	return s
}

// Num is the number field k.
func (o Object) Num(t testing.TB, k string) float64 {
	t.Helper()
	n, ok := o[k].(float64)
	if !ok {
		t.Fatalf("field %q = %#v, want a number in %v", k, o[k], o)
	}
	return n
}

// Obj is the object field k.
func (o Object) Obj(t testing.TB, k string) Object {
	t.Helper()
	m, ok := o[k].(map[string]any)
	if !ok {
		t.Fatalf("field %q = %#v, want an object in %v", k, o[k], o)
	}
	return m
}

// Strs is the field k, an array of strings.
func (o Object) Strs(t testing.TB, k string) []string {
	t.Helper()
	l, ok := o[k].([]any)
	if !ok {
		t.Fatalf("field %q = %#v, want an array in %v", k, o[k], o)
	}
	out := []string{}
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("field %q has a non-string %#v", k, x)
		}
		out = append(out, s)
	}
	return out
}

// Null fails unless the field is present and null.
func (o Object) Null(t testing.TB, k string) {
	t.Helper()
	if v, ok := o[k]; !ok || v != nil {
		t.Fatalf("field %q = %#v (present %v), want null", k, v, ok)
	}
}
