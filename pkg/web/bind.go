package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
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
	f := map[string]any{}
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	switch {
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		if err := decodeObject(body, f); err != nil {
			return nil, err
		}
	case mt == "application/x-www-form-urlencoded":
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		// `curl -d '{"a":1}'` sends JSON labelled as a form: take it as the JSON it is.
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			if err := decodeObject(t, f); err != nil {
				return nil, err
			}
			break
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, err := parseQuery(string(body))
		if err != nil {
			return nil, err
		}
		mergeValues(f, form)
	case mt == "":
		// A client that forgot the content type (curl --data-binary, some scripts): take a JSON object as JSON.
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			if err := decodeObject(t, f); err != nil {
				return nil, err
			}
		}
	case mt == "multipart/form-data":
		form, err := c.MultipartForm()
		if err != nil {
			return nil, bodyError(err, "malformed multipart body")
		}
		if js := form.Value["_json"]; len(js) > 0 {
			if err := decodeObject([]byte(js[0]), f); err != nil {
				return nil, err
			}
		}
		plain := map[string][]string{}
		for k, v := range form.Value {
			if k != "_json" {
				plain[k] = v
			}
		}
		mergeValues(f, plain)
	}
	q, err := parseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	mergeValues(f, q)
	return f, nil
}

func parseQuery(s string) (map[string][]string, error) {
	v, err := urlParseQuery(s)
	if err != nil {
		return nil, apperr.New(apperr.BadRequest, "malformed query string or form")
	}
	return v, nil
}

func readBody(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, bodyError(err, "cannot read request body")
	}
	return body, nil
}

func bodyError(err error, msg string) error {
	var he *echo.HTTPError
	if errors.As(err, &he) { // the body limit
		return he
	}
	if strings.Contains(err.Error(), "too large") {
		return apperr.New(apperr.TooLarge, "request body too large")
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

// FormFile returns the uploaded file in the multipart part named one of names (first found), or nil.
func FormFile(c echo.Context, names ...string) (*multipart.FileHeader, error) {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if mt != "multipart/form-data" {
		return nil, nil
	}
	form, err := c.MultipartForm()
	if err != nil {
		return nil, bodyError(err, "malformed multipart body")
	}
	for _, n := range names {
		if fh := form.File[n]; len(fh) > 0 {
			return fh[0], nil
		}
	}
	return nil, nil
}
