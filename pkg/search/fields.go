// Package search parses the query language of the list and search endpoints into a neutral filter tree that
// storage engines (pkg/docstore) translate into their own query form.
//
// The query language is the JSON DSL of the reference system (elastic4play): {"_and": [...]}, {"_gt": {"f": 1}},
// {"_in": {"_field": "f", "_values": [...]}} and so on; see [Parse] for the full list. Every field a query names
// is looked up in a per-resource allow-list ([Fields]); the storage path of the field comes from that list, never
// from the query, so no user-supplied string can become a storage key. Values are coerced to the declared type of
// the field. The package also parses the "range" and "sort" parameters of list endpoints ([ParseRange],
// [ParseSort]).
//
// Every error returned by this package is an apperr.BadRequest with a message that names the offending field,
// operator or value and is safe to show to the client.
package search

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
)

// Type is how a field's values are compared and coerced.
type Type int

// The field types.
const (
	// String fields accept strings; numbers and booleans are converted to their string form.
	String Type = iota
	// Number fields accept JSON numbers and numeric strings; the value becomes an int64 when it is integral and
	// fits, a float64 otherwise. Timestamps (int64 epoch milliseconds) are Number fields.
	Number
	// Bool fields accept true/false and the strings "true"/"false" (case-insensitive).
	Bool
)

// String returns the name of the type as used in error messages.
func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Number:
		return "number"
	case Bool:
		return "boolean"
	default:
		return "Type(" + strconv.Itoa(int(t)) + ")"
	}
}

// Field maps an API field name to its storage path.
type Field struct {
	// Path is the storage path (for MongoDB a dotted document path). It is the only thing that ever becomes a
	// key of the storage query, so it must come from code, never from a request.
	Path string
	// Type is how values compared with the field are coerced.
	Type Type
}

// Fields is a per-resource allow-list: API name -> field. Only these may be filtered or sorted on.
type Fields map[string]Field

// lookup returns the allow-listed field called name.
func (fs Fields) lookup(name string) (Field, error) {
	if name == "" {
		return Field{}, bad("empty field name")
	}
	if strings.HasPrefix(name, "$") || strings.ContainsRune(name, 0) {
		return Field{}, bad("invalid field name %s", quote(name))
	}
	f, ok := fs[name]
	if !ok || f.Path == "" {
		return Field{}, bad("unknown field %s", quote(name))
	}
	return f, nil
}

// coerce converts the user value v, compared with the field called name, to type t.
func coerce(v any, name string, t Type) (any, error) {
	var (
		out any
		ok  bool
	)
	switch t {
	case Number:
		out, ok = toNumber(v)
	case Bool:
		out, ok = toBool(v)
	default:
		out, ok = toString(v)
	}
	if !ok {
		return nil, bad("value for field %s must be a %s, got %s", quote(name), t, describe(v))
	}
	return out, nil
}

// numberRe is the syntax accepted for numbers given as strings.
var numberRe = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

func toNumber(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		return parseNumber(string(v))
	case string:
		return parseNumber(strings.TrimSpace(v))
	case float64:
		return normFloat(v)
	case float32:
		return normFloat(float64(v))
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return nil, false
}

func parseNumber(s string) (any, bool) {
	if !numberRe.MatchString(s) {
		return nil, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	return normFloat(f)
}

// normFloat returns f as an int64 when it is integral and in range, rejecting NaN and infinities.
func normFloat(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), true
	}
	return f, true
}

func toBool(v any) (any, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		switch s := strings.TrimSpace(v); {
		case strings.EqualFold(s, "true"):
			return true, true
		case strings.EqualFold(s, "false"):
			return false, true
		}
	}
	return nil, false
}

func toString(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return string(v), true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		return formatFloat(v)
	case float32:
		return formatFloat(float64(v))
	case int:
		return strconv.Itoa(v), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return nil, false
}

// formatFloat formats f the way encoding/json would.
func formatFloat(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

// bad returns a BadRequest error.
func bad(format string, args ...any) error {
	return apperr.Errorf(apperr.BadRequest, format, args...)
}

// maxQuoted is how many bytes of a user string an error message repeats.
const maxQuoted = 64

// quote returns s as a Go-quoted string for an error message, shortened when long.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// describe names the JSON type (and for scalars the value) of v for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "string " + quote(v)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case json.Number, float64, float32, int, int32, int64:
		if s, ok := toString(v); ok {
			if str, ok := s.(string); ok && len(str) <= maxQuoted {
				return "number " + str
			}
		}
		return "a number"
	default:
		return "an unsupported value"
	}
}
