package search

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/apperr"
)

var testFields = Fields{
	"id":         {Path: "_id", Type: String},
	"title":      {Path: "title", Type: String},
	"status":     {Path: "status", Type: String},
	"severity":   {Path: "severity", Type: Number},
	"flag":       {Path: "flag", Type: Bool},
	"_createdAt": {Path: "createdAt", Type: Number},
	"owner":      {Path: "owner.login", Type: String},
}

func eq(path string, v any) Node         { return Node{Op: OpEq, Path: path, Value: v} }
func cmp(op Op, path string, v any) Node { return Node{Op: op, Path: path, Value: v} }
func and(c ...Node) Node                 { return Node{Op: OpAnd, Children: c} }
func or(c ...Node) Node                  { return Node{Op: OpOr, Children: c} }
func not(c Node) Node                    { return Node{Op: OpNot, Children: []Node{c}} }

var all = Node{Op: OpAll}

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  Node
	}{
		{"empty body", ``, all},
		{"blank body", " \n\t", all},
		{"null", `null`, all},
		{"empty object", `{}`, all},
		{"_any", `{"_any": "whatever"}`, all},
		{"_any object", `{"_any": {"x": [1]}}`, all},
		{"field value", `{"_field": "status", "_value": "Open"}`, eq("status", "Open")},
		{"bare field", `{"status": "Open"}`, eq("status", "Open")},
		{"bare fields are ANDed in key order", `{"title": "x", "severity": 2}`, and(eq("severity", int64(2)), eq("title", "x"))},
		{"underscore field in allow-list", `{"_createdAt": 5}`, eq("createdAt", int64(5))},
		{"dotted path", `{"owner": "bob"}`, eq("owner.login", "bob")},
		{"_and", `{"_and": [{"status": "Open"}, {"severity": 3}]}`, and(eq("status", "Open"), eq("severity", int64(3)))},
		{"_and empty", `{"_and": []}`, all},
		{"_or", `{"_or": [{"status": "Open"}, {"status": "New"}]}`, or(eq("status", "Open"), eq("status", "New"))},
		{"_or empty", `{"_or": []}`, Node{Op: OpOr, Children: []Node{}}},
		{"_not", `{"_not": {"status": "Closed"}}`, not(eq("status", "Closed"))},
		{"_not null", `{"_not": null}`, not(all)},
		{"nested", `{"_and": [{"_or": [{"status": "a"}, {"_not": {"flag": true}}]}, {}]}`,
			and(or(eq("status", "a"), not(eq("flag", true))), all)},
		{"_gt", `{"_gt": {"severity": 2}}`, cmp(OpGt, "severity", int64(2))},
		{"_gte", `{"_gte": {"severity": 2.5}}`, cmp(OpGte, "severity", 2.5)},
		{"_lt", `{"_lt": {"_createdAt": 1700000000000}}`, cmp(OpLt, "createdAt", int64(1700000000000))},
		{"_lte", `{"_lte": {"title": "m"}}`, cmp(OpLte, "title", "m")},
		{"_gt field value form", `{"_gt": {"_field": "severity", "_value": "4"}}`, cmp(OpGt, "severity", int64(4))},
		{"_between", `{"_between": {"_field": "_createdAt", "_from": 10, "_to": 20}}`,
			and(cmp(OpGte, "createdAt", int64(10)), cmp(OpLt, "createdAt", int64(20)))},
		{"_between from only", `{"_between": {"_field": "severity", "_from": 1}}`, cmp(OpGte, "severity", int64(1))},
		{"_between to only", `{"_between": {"_field": "severity", "_to": "3"}}`, cmp(OpLt, "severity", int64(3))},
		{"_in", `{"_in": {"_field": "severity", "_values": [1, "2", 3.5]}}`,
			Node{Op: OpIn, Path: "severity", Values: []any{int64(1), int64(2), 3.5}}},
		{"_in empty", `{"_in": {"_field": "status", "_values": []}}`, Node{Op: OpIn, Path: "status", Values: []any{}}},
		{"_contains", `{"_contains": "owner"}`, Node{Op: OpExists, Path: "owner.login"}},
		{"_contains object", `{"_contains": {"_field": "title"}}`, Node{Op: OpExists, Path: "title"}},
		{"_like", `{"_like": {"_field": "title", "_value": "a.b"}}`, Node{Op: OpLike, Path: "title", Value: "a.b"}},
		{"_like number value", `{"_like": {"_field": "title", "_value": 42}}`, Node{Op: OpLike, Path: "title", Value: "42"}},
		{"_wildcard", `{"_wildcard": {"_field": "title", "_value": "a*b?"}}`, Node{Op: OpWildcard, Path: "title", Value: "a*b?"}},
		{"_startsWith", `{"_startsWith": {"_field": "title", "_value": "Re:"}}`, Node{Op: OpPrefix, Path: "title", Value: "Re:"}},
		{"_endsWith", `{"_endsWith": {"_field": "title", "_value": ".exe"}}`, Node{Op: OpSuffix, Path: "title", Value: ".exe"}},
		{"_id", `{"_id": "abc"}`, eq("_id", "abc")},
		{"_id number becomes string", `{"_id": 12}`, eq("_id", "12")},
		{"_string one term", `{"_string": "status:Open"}`, eq("status", "Open")},
		{"_string AND", `{"_string": "status:Open AND severity:2"}`, and(eq("status", "Open"), eq("severity", int64(2)))},
		{"_string precedence", `{"_string": "status:a or status:b AND flag:true OR title:\"x y\""}`,
			or(eq("status", "a"), and(eq("status", "b"), eq("flag", true)), eq("title", "x y"))},
		{"_string escapes", `{"_string": "title:\"say \\\"hi\\\" \\\\o/\""}`, eq("title", `say "hi" \o/`)},
		{"_string colon in value", `{"_string": "title:http://x.y/z"}`, eq("title", "http://x.y/z")},
		{"_string empty quoted", `{"_string": "title:\"\""}`, eq("title", "")},
		{"_string empty", `{"_string": "  "}`, all},
		{"_string keyword as value", `{"_string": "title:AND"}`, eq("title", "AND")},
		{"user values stay values", `{"title": "$where"}`, eq("title", "$where")},
		{"big integer keeps precision", `{"_createdAt": 9007199254740993}`, eq("createdAt", int64(9007199254740993))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJSON([]byte(tt.query), testFields)
			if err != nil {
				t.Fatalf("ParseJSON(%s): %v", tt.query, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseJSON(%s)\n got %#v\nwant %#v", tt.query, got, tt.want)
			}
		})
	}
}

// TestParseGoValues checks Parse on values decoded without UseNumber and built in Go.
func TestParseGoValues(t *testing.T) {
	var q any
	if err := json.Unmarshal([]byte(`{"_and": [{"severity": 3}, {"title": 1.5}, {"_gt": {"severity": 2.5}}]}`), &q); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(q, testFields)
	if err != nil {
		t.Fatal(err)
	}
	want := and(eq("severity", int64(3)), eq("title", "1.5"), cmp(OpGt, "severity", 2.5))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if got, err := Parse(nil, testFields); err != nil || !reflect.DeepEqual(got, all) {
		t.Errorf("Parse(nil) = %v, %v", got, err)
	}
	if got, err := Parse(map[string]any{"severity": 7}, testFields); err != nil || !reflect.DeepEqual(got, eq("severity", int64(7))) {
		t.Errorf("Parse(int) = %v, %v", got, err)
	}
}

func TestCoerce(t *testing.T) {
	tests := []struct {
		in   any
		typ  Type
		want any
	}{
		{"abc", String, "abc"},
		{"", String, ""},
		{json.Number("12"), String, "12"},
		{json.Number("1.50"), String, "1.50"},
		{12.0, String, "12"},
		{1e21, String, "1e+21"},
		{0.5, String, "0.5"},
		{true, String, "true"},
		{false, String, "false"},
		{json.Number("12"), Number, int64(12)},
		{json.Number("-12"), Number, int64(-12)},
		{json.Number("1.5"), Number, 1.5},
		{json.Number("1e3"), Number, int64(1000)},
		{json.Number("2.0"), Number, int64(2)},
		{json.Number("1e20"), Number, 1e20},
		{json.Number("1e18"), Number, int64(1e18)},
		{json.Number("9223372036854775807"), Number, int64(9223372036854775807)},
		{json.Number("9223372036854775808"), Number, 9223372036854775808.0},
		{json.Number("-0"), Number, int64(0)},
		{"42", Number, int64(42)},
		{" 42 ", Number, int64(42)},
		{"+4.25", Number, 4.25},
		{".5", Number, 0.5},
		{3.0, Number, int64(3)},
		{3.25, Number, 3.25},
		{int64(5), Number, int64(5)},
		{true, Bool, true},
		{false, Bool, false},
		{"true", Bool, true},
		{"FALSE", Bool, false},
	}
	for _, tt := range tests {
		got, err := coerce(tt.in, "f", tt.typ)
		if err != nil {
			t.Errorf("coerce(%#v, %v): %v", tt.in, tt.typ, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("coerce(%#v, %v) = %#v (%T), want %#v (%T)", tt.in, tt.typ, got, got, tt.want, tt.want)
		}
	}

	bads := []struct {
		in  any
		typ Type
	}{
		{nil, String}, {map[string]any{}, String}, {[]any{"a"}, String},
		{nil, Number}, {true, Number}, {"abc", Number}, {"", Number}, {"1e999", Number}, {json.Number("1e999"), Number},
		{"0x10", Number}, {"1_000", Number}, {"NaN", Number}, {"Inf", Number}, {"1.2.3", Number}, {"--1", Number},
		{[]any{1.0}, Number}, {map[string]any{"$gt": 1.0}, Number},
		{nil, Bool}, {1.0, Bool}, {json.Number("1"), Bool}, {"yes", Bool}, {"", Bool}, {[]any{}, Bool},
	}
	for _, tt := range bads {
		_, err := coerce(tt.in, "f", tt.typ)
		checkBadRequest(t, err, "f")
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat(`{"_not": `, MaxDepth) + `{}` + strings.Repeat(`}`, MaxDepth)
	many := `{"_or": [` + strings.TrimSuffix(strings.Repeat(`{"status": "x"},`, MaxNodes), ",") + `]}`
	tests := []struct {
		name  string
		query string
		want  string // substring of the message
	}{
		{"malformed JSON", `{"status": `, "malformed JSON"},
		{"trailing data", `{} {}`, "after the JSON value"},
		{"top-level array", `[]`, "must be an object"},
		{"top-level string", `"status:x"`, "must be an object"},
		{"top-level number", `1`, "must be an object"},
		{"unknown field", `{"nope": 1}`, `unknown field "nope"`},
		{"unknown field among several", `{"status": "a", "nope": 1}`, `unknown field "nope"`},
		{"dollar field", `{"$where": "1"}`, `invalid field name "$where"`},
		{"NUL field", `{"sta\u0000tus": "1"}`, `invalid field name "sta\x00tus"`},
		{"empty field", `{"": "1"}`, "empty field name"},
		{"unknown operator", `{"_regexp": {"title": "x"}}`, `unknown operator "_regexp"`},
		{"unknown operator with field", `{"_parent": 1, "status": "x"}`, `unknown operator "_parent"`},
		{"two operators", `{"_and": [], "_or": []}`, "must be the only key"},
		{"operator and field", `{"_not": {}, "status": "x"}`, "must be the only key"},
		{"field without value", `{"_field": "status"}`, `"_field" and "_value" must be used together`},
		{"value without field", `{"_value": "x"}`, `"_field" and "_value" must be used together`},
		{"field value extra key", `{"_field": "status", "_value": "x", "title": "y"}`, "must be the only key"},
		{"_field not a string", `{"_field": 1, "_value": "x"}`, `"_field" must be a string`},
		{"value object", `{"status": {"$ne": 1}}`, `value for field "status" must be a string, got an object`},
		{"value array", `{"status": ["a"]}`, "got an array"},
		{"value null", `{"status": null}`, "got null"},
		{"number field string", `{"severity": "high"}`, `value for field "severity" must be a number, got string "high"`},
		{"number field bool", `{"severity": true}`, "must be a number, got boolean true"},
		{"bool field number", `{"flag": 1}`, "must be a boolean, got number 1"},
		{"bool field string", `{"flag": "yes"}`, "must be a boolean"},
		{"_and not array", `{"_and": {"status": "x"}}`, "_and expects an array"},
		{"_or not array", `{"_or": "x"}`, "_or expects an array"},
		{"_and child not object", `{"_and": [1]}`, "must be an object"},
		{"_and child bad", `{"_and": [{"status": "x"}, {"nope": 1}]}`, `unknown field "nope"`},
		{"_not array", `{"_not": []}`, "must be an object"},
		{"_gt not object", `{"_gt": 3}`, "_gt expects an object"},
		{"_gt two fields", `{"_gt": {"severity": 1, "title": "x"}}`, "exactly one field"},
		{"_gt empty", `{"_gte": {}}`, "exactly one field"},
		{"_lt unknown field", `{"_lt": {"nope": 1}}`, `unknown field "nope"`},
		{"_lte bad value", `{"_lte": {"severity": "x"}}`, "must be a number"},
		{"_between no bounds", `{"_between": {"_field": "severity"}}`, `"_from", "_to" or both`},
		{"_between no field", `{"_between": {"_from": 1}}`, `_between requires "_field"`},
		{"_between extra key", `{"_between": {"_field": "severity", "_from": 1, "_too": 2}}`, `unexpected key "_too" in _between`},
		{"_between null bound", `{"_between": {"_field": "severity", "_from": null}}`, "got null"},
		{"_between not object", `{"_between": [1, 2]}`, "_between expects an object"},
		{"_in not array", `{"_in": {"_field": "status", "_values": "a"}}`, `"_values" must be an array`},
		{"_in no values", `{"_in": {"_field": "status"}}`, `_in requires "_values"`},
		{"_in bad value", `{"_in": {"_field": "severity", "_values": [1, "x"]}}`, "must be a number"},
		{"_in nested array", `{"_in": {"_field": "status", "_values": [["a"]]}}`, "got an array"},
		{"_in unknown field", `{"_in": {"_field": "nope", "_values": []}}`, `unknown field "nope"`},
		{"_contains number", `{"_contains": 1}`, "_contains expects a field name"},
		{"_contains unknown", `{"_contains": "nope"}`, `unknown field "nope"`},
		{"_like number field", `{"_like": {"_field": "severity", "_value": "1"}}`, "only applies to string fields"},
		{"_like no value", `{"_like": {"_field": "title"}}`, `_like requires "_value"`},
		{"_like object value", `{"_like": {"_field": "title", "_value": {}}}`, "got an object"},
		{"_wildcard not object", `{"_wildcard": "a*"}`, "_wildcard expects an object"},
		{"_startsWith extra", `{"_startsWith": {"_field": "title", "_value": "a", "x": 1}}`, `unexpected key "x"`},
		{"_endsWith unknown", `{"_endsWith": {"_field": "nope", "_value": "a"}}`, `unknown field "nope"`},
		{"_id object", `{"_id": {"$gt": ""}}`, "got an object"},
		{"_string not string", `{"_string": 1}`, "_string expects a string"},
		{"_string bare word", `{"_string": "hello"}`, `"hello" is not a field:value term`},
		{"_string parentheses", `{"_string": "(status:a OR status:b)"}`, "parentheses"},
		{"_string parentheses in value", `{"_string": "status:(a)"}`, "parentheses"},
		{"_string range", `{"_string": "severity:[1 TO 3]"}`, "unsupported character"},
		{"_string wildcard value", `{"_string": "title:ab*"}`, "unsupported character"},
		{"_string wildcard field", `{"_string": "tit*:x"}`, "wildcards are not supported in field names"},
		{"_string unknown field", `{"_string": "nope:x"}`, `unknown field "nope"`},
		{"_string missing value", `{"_string": "status: AND title:x"}`, `missing value for field "status"`},
		{"_string missing field", `{"_string": ":x"}`, "missing field name"},
		{"_string adjacent terms", `{"_string": "status:a title:b"}`, "must be joined by AND or OR"},
		{"_string leading AND", `{"_string": "AND status:a"}`, "unexpected AND"},
		{"_string trailing OR", `{"_string": "status:a OR"}`, "OR at the end"},
		{"_string double keyword", `{"_string": "status:a AND OR title:b"}`, "unexpected OR"},
		{"_string NOT", `{"_string": "NOT status:a"}`, `"NOT" is not a field:value term`},
		{"_string unterminated", `{"_string": "title:\"abc"}`, "unterminated"},
		{"_string quote then text", `{"_string": "title:\"a\"b"}`, "expected a space"},
		{"_string bad value type", `{"_string": "severity:high"}`, "must be a number"},
		{"_string dollar field", `{"_string": "$where:1"}`, "invalid field name"},
		{"_string quote in field", `{"_string": "ti\"tle:x"}`, "got a quote"},
		{"too deep", deep, "nested too deeply"},
		{"too many nodes", many, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJSON([]byte(tt.query), testFields)
			if err == nil {
				t.Fatalf("ParseJSON(%s) = %#v, want an error", tt.query, got)
			}
			checkBadRequest(t, err, tt.want)
		})
	}
}

func TestParseLimits(t *testing.T) {
	ok := strings.Repeat(`{"_not": `, MaxDepth-1) + `{}` + strings.Repeat(`}`, MaxDepth-1)
	if _, err := ParseJSON([]byte(ok), testFields); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	// One _or node plus MaxNodes-1 children is exactly MaxNodes.
	q := `{"_or": [` + strings.TrimSuffix(strings.Repeat(`{"status": "x"},`, MaxNodes-1), ",") + `]}`
	if _, err := ParseJSON([]byte(q), testFields); err != nil {
		t.Errorf("%d nodes: %v", MaxNodes, err)
	}
	// Very deep JSON is rejected without exhausting the stack.
	huge := strings.Repeat(`{"_not": `, 5000) + `{}` + strings.Repeat(`}`, 5000)
	if _, err := ParseJSON([]byte(huge), testFields); err == nil {
		t.Error("huge nesting accepted")
	}
	deepString := strings.Repeat(`{"_and": [`, 40) + `{}` + strings.Repeat(`]}`, 40)
	_, err := ParseJSON([]byte(deepString), testFields)
	checkBadRequest(t, err, "nested too deeply")
}

func TestIDRequiresField(t *testing.T) {
	_, err := ParseJSON([]byte(`{"_id": "x"}`), Fields{"title": {Path: "title"}})
	checkBadRequest(t, err, "no id field")
}

func TestLongNamesAreShortenedInErrors(t *testing.T) {
	name := strings.Repeat("é", 100)
	_, err := Parse(map[string]any{name: "x"}, testFields)
	checkBadRequest(t, err, "unknown field")
	if msg := err.Error(); len(msg) > 100 || !strings.HasSuffix(msg, `"...`) {
		t.Errorf("message not shortened: %q", msg)
	}
}

// checkBadRequest fails unless err is an *apperr.Error of kind BadRequest whose message contains want.
func checkBadRequest(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want one containing %q", want)
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.BadRequest {
		t.Errorf("error %v (%T) is not an apperr BadRequest", err, err)
		return
	}
	if !strings.Contains(e.Message, want) {
		t.Errorf("message %q does not contain %q", e.Message, want)
	}
}

// Issue 28: a 900 KB _like pattern cost 45 s of both cores; text patterns are bounded (400).
func TestParsePatternLength(t *testing.T) {
	for _, op := range []string{"_like", "_wildcard", "_startsWith", "_endsWith"} {
		ok := `{"` + op + `": {"_field": "title", "_value": "` + strings.Repeat("a", MaxPattern) + `"}}`
		if _, err := ParseJSON([]byte(ok), testFields); err != nil {
			t.Errorf("%s of %d bytes: %v", op, MaxPattern, err)
		}
		long := `{"` + op + `": {"_field": "title", "_value": "` + strings.Repeat("a", 900<<10) + `"}}`
		_, err := ParseJSON([]byte(long), testFields)
		checkBadRequest(t, err, "longer than 1024 bytes")
	}
}
