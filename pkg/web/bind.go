package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

// Opt is a request field that distinguishes absent, null and a value: PATCH bodies need all three.
type Opt[T any] struct {
	Set  bool // the field was in the request
	Null bool // it was null
	V    T
}

// UnmarshalJSON records that the field was present.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null, o.V = true, *new(T)
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

func (Opt[T]) elem() reflect.Type { return reflect.TypeFor[T]() }

// Strings is a list field that also accepts a single string (a form value or `"sort": "-name"`).
type Strings []string

// UnmarshalJSON accepts a string or an array of strings.
func (s *Strings) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// Validator is implemented by request types that check themselves after binding.
type Validator interface{ Validate() error }

const fieldsKey = "web.fields"

// Fields returns the request's fields as JSON values, gathered from the body (a JSON object, a URL-encoded
// form, or the `_json` part and plain values of a multipart form) and the query string, which wins on conflict
// (spec §1: the formats are equivalent). Form and query values are strings, or lists of strings when repeated.
func Fields(c echo.Context) (map[string]any, error) {
	if f, ok := c.Get(fieldsKey).(map[string]any); ok {
		return f, nil
	}
	f, err := readFields(c)
	if err != nil {
		return nil, err
	}
	c.Set(fieldsKey, f)
	return f, nil
}

func readFields(c echo.Context) (map[string]any, error) {
	req := c.Request()
	var docs [][]byte               // JSON objects, decoded into the fields first
	var plain []map[string][]string // then form values, then the query string, which wins
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	switch {
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		body, err := readBody(c, req)
		if err != nil {
			return nil, err
		}
		docs = append(docs, body)
	case mt == "application/x-www-form-urlencoded":
		body, err := readBody(c, req)
		if err != nil {
			return nil, err
		}
		// `curl -d '{"a":1}'` sends JSON labelled as a form: take it as the JSON it is.
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			docs = append(docs, t)
			break
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, err := parseQuery(string(body))
		if err != nil {
			return nil, err
		}
		plain = append(plain, form)
	case mt == "":
		// A client that forgot the content type (curl --data-binary, some scripts): take a JSON object as JSON.
		body, err := readBody(c, req)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			docs = append(docs, t)
		}
	case mt == "multipart/form-data":
		form, err := readMultipart(c, req)
		if err != nil {
			return nil, err
		}
		c.Set(formKey, form)
		if js := form.values["_json"]; len(js) > 0 {
			docs = append(docs, []byte(js[0]))
		}
		values := map[string][]string{}
		for k, v := range form.values {
			if k != "_json" {
				values[k] = v
			}
		}
		plain = append(plain, values)
	}
	q, err := parseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	plain = append(plain, q)
	if err := checkJSON(c, docs, plain); err != nil {
		return nil, err
	}
	f := map[string]any{}
	for _, d := range docs {
		if err := decodeObject(d, f); err != nil {
			return nil, err
		}
	}
	for _, p := range plain {
		mergeValues(f, p)
	}
	return f, nil
}

// checkJSON scans the JSON documents of a request (the body, a `_json` part, and form or query values that
// hold JSON, which binding decodes later) against the JSON limits before any is decoded, and reserves the
// estimated memory of decoding them in the service's budget, until the request ends.
func checkJSON(c echo.Context, docs [][]byte, plain []map[string][]string) error {
	lim := limitsOf(c).JSON
	var cost int64
	for _, d := range docs {
		n, err := scanJSON(d, lim)
		if err != nil {
			return err
		}
		cost += n
	}
	for _, p := range plain {
		for _, vs := range p {
			for _, v := range vs {
				if t := strings.TrimSpace(v); t != "" && (t[0] == '{' || t[0] == '[') {
					n, err := scanJSON([]byte(t), lim)
					if err != nil {
						return err
					}
					cost += n
				}
			}
		}
	}
	if b := limiterOf(c); b != nil {
		return b.reserveDecoded(c.Request().Context(), cost)
	}
	return nil
}

func parseQuery(s string) (map[string][]string, error) {
	if strings.Count(s, "&") >= maxQueryPairs {
		return nil, apperr.Errorf(apperr.BadRequest, "query string or form with more than %d parameters", maxQueryPairs)
	}
	v, err := urlParseQuery(s)
	if err != nil {
		return nil, apperr.New(apperr.BadRequest, "malformed query string or form")
	}
	return v, nil
}

// readBody reads a JSON or form body: at most the Body limit, even on an upload route (whose larger limit is
// for the files of a multipart body).
func readBody(c echo.Context, req *http.Request) ([]byte, error) {
	b := limiterOf(c)
	if b == nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, bodyError(err, "cannot read request body")
		}
		return body, nil
	}
	max := min(b.limit, b.lim.Body)
	if b.declared > max {
		closeUnread(b.w)
		return nil, errTooLarge(max)
	}
	body, err := b.readRaw(c.Request().Context(), req.Body, max)
	if err != nil {
		return nil, bodyError(err, "cannot read request body")
	}
	if int64(len(body)) > max {
		closeUnread(b.w)
		return nil, errTooLarge(max)
	}
	return body, nil
}

// bodyError is the 413 of a body over its limit, else a 400 with msg.
func bodyError(err error, msg string) error {
	if tl := asTooLarge(err); tl != nil {
		return tl
	}
	if apperr.As(err) != nil {
		return err
	}
	return apperr.Wrap(apperr.BadRequest, msg, err)
}

func decodeObject(body []byte, into map[string]any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return apperr.New(apperr.BadRequest, "malformed JSON body")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.New(apperr.BadRequest, "malformed JSON body: trailing data")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return apperr.New(apperr.BadRequest, "the JSON body must be an object")
	}
	for k, x := range obj {
		into[k] = x
	}
	return nil
}

func mergeValues(f map[string]any, vals map[string][]string) {
	for k, v := range vals {
		switch len(v) {
		case 0:
		case 1:
			f[k] = v[0]
		default:
			f[k] = append([]string(nil), v...)
		}
	}
}

// Bind fills dst (a pointer to a request struct with json tags) from the request's fields, converting form
// and query strings to the field's type, then runs dst's Validate method if it has one. Unknown fields are
// ignored (clients send extra keys); a value of the wrong type is a 400 naming the field.
func Bind(c echo.Context, dst any) error {
	f, err := Fields(c)
	if err != nil {
		return err
	}
	return BindFields(f, dst)
}

// BindFields is Bind on fields already gathered.
func BindFields(f map[string]any, dst any) error {
	t := reflect.TypeOf(dst)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return apperr.New(apperr.Internal, "bind target must be a pointer to a struct")
	}
	m := make(map[string]any, len(f))
	for name, ft := range jsonFields(t.Elem()) {
		if v, ok := f[name]; ok {
			m[name] = coerce(v, ft)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return apperr.Wrap(apperr.BadRequest, "malformed input", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return apperr.Fields(apperr.FieldError{Name: te.Field, Message: "expected " + typeName(te.Type)})
		}
		return apperr.New(apperr.BadRequest, "malformed input")
	}
	if v, ok := dst.(Validator); ok {
		return v.Validate()
	}
	return nil
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = sf.Type
	}
	return out
}

type elemer interface{ elem() reflect.Type }

var rawMessage = reflect.TypeFor[json.RawMessage]()

// coerce turns form/query strings into the JSON value the target type expects; other values pass through.
func coerce(v any, t reflect.Type) any {
	for {
		if e, ok := reflect.Zero(t).Interface().(elemer); ok {
			t = e.elem()
			continue
		}
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
			continue
		}
		break
	}
	switch x := v.(type) {
	case []string:
		if t.Kind() == reflect.Slice && t != rawMessage {
			out := make([]any, len(x))
			for i, s := range x {
				out[i] = coerce(s, t.Elem())
			}
			return out
		}
		return coerce(x[0], t)
	case string:
		switch t.Kind() {
		case reflect.Bool:
			switch strings.ToLower(x) {
			case "true", "1", "on", "yes":
				return true
			case "false", "0", "off", "no", "":
				return false
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
			reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			if strings.TrimSpace(x) == "" {
				return nil // an empty form value is the form's null
			}
			if _, err := strconv.ParseFloat(x, 64); err == nil {
				return json.Number(x)
			}
		case reflect.Slice:
			if t == rawMessage {
				return jsonOrString(x)
			}
			if strings.HasPrefix(strings.TrimSpace(x), "[") {
				return jsonOrString(x)
			}
			return []any{coerce(x, t.Elem())}
		case reflect.Map, reflect.Struct, reflect.Interface:
			return jsonOrString(x)
		}
	}
	return v
}

// jsonOrString parses s as a JSON object or array when it is one (a `query` or `parameters` sent as a form
// value), else keeps it as a string.
func jsonOrString(s string) any {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	return v
}
