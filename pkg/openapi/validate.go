package openapi

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks responses against the document: the status code is declared by the operation (exactly,
// or as 4XX/5XX/default) and a JSON body matches the declared schema.
type Validator struct {
	doc *Doc
	mu  sync.Mutex
	c   *jsonschema.Compiler
	sch map[string]*jsonschema.Schema
}

// NewValidator returns a validator of responses against d.
func (d *Doc) NewValidator() (*Validator, error) {
	c, err := d.compiler()
	if err != nil {
		return nil, err
	}
	return &Validator{doc: d, c: c, sch: map[string]*jsonschema.Schema{}}, nil
}

// Check validates one response to method and escapedPath (the request URL's EscapedPath). A request that
// matches no operation passes when it was answered 404 or 405 (a test probing an unknown route) or is an
// OPTIONS request (answered by the router).
func (v *Validator) Check(method, escapedPath string, status int, contentType string, body []byte) error {
	where := method + " " + escapedPath
	if WebInterface(escapedPath) {
		return nil // a page, not an operation of the API
	}
	path, op := v.doc.operation(method, escapedPath)
	if op == nil {
		// An unknown route (404), a method the route lacks (405), or the router's own answer to OPTIONS.
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed || method == http.MethodOptions {
			return nil
		}
		return fmt.Errorf("openapi: %s answered %d but the document has no operation for it", where, status)
	}
	where = method + " " + path
	responses := obj(op, "responses")
	code := strconv.Itoa(status)
	resp, ok := responses[code]
	if !ok {
		code = code[:1] + "XX"
		if resp, ok = responses[code]; !ok {
			code = "default"
			if resp, ok = responses[code]; !ok {
				return fmt.Errorf("openapi: %s answered %d, a status its responses do not declare", where, status)
			}
		}
	}
	content := obj(v.doc.deref(resp), "content")
	if len(content) == 0 || len(body) == 0 || method == http.MethodHead {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/json" {
		if _, ok := content[mt]; ok || content["*/*"] != nil {
			return nil
		}
		return fmt.Errorf("openapi: %s answered %d with %s, a media type the document does not declare", where, status, mt)
	}
	if _, ok := content[mt]; !ok {
		return fmt.Errorf("openapi: %s answered %d with JSON, which the document does not declare", where, status)
	}
	if len(obj(content[mt].(map[string]any), "schema")) == 0 {
		return nil
	}
	sch, err := v.schema(path, strings.ToLower(method), code, mt)
	if err != nil {
		return fmt.Errorf("openapi: %s %s: %w", where, code, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("openapi: %s answered %d with a body that is not JSON: %v", where, status, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("openapi: %s answered %d with a body that does not match the document: %v\nbody: %s", where, status, err, clip(body))
	}
	return nil
}

func (v *Validator) schema(path, method, code, ct string) (*jsonschema.Schema, error) {
	key := method + " " + path + " " + code + " " + ct
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.sch[key]; ok {
		return s, nil
	}
	s, err := v.doc.schemaFor(v.c, path, method, code, ct)
	if err != nil {
		return nil, err
	}
	v.sch[key] = s
	return s, nil
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// Transport returns a RoundTripper that sends through next (nil: http.DefaultTransport), then checks every
// response against the document and calls report with each mismatch (a test's Errorf). It reads the body in
// full and hands it on unchanged.
func (v *Validator) Transport(next http.RoundTripper, report func(format string, args ...any)) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := next.RoundTrip(req)
		if err != nil {
			return res, err
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil { // the client reads what came, then the same error
			res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			return res, nil
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		if err := v.Check(req.Method, req.URL.EscapedPath(), res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
			report("%v", err)
		}
		return res, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
