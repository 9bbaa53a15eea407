package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
)

// Limits on the size of a query.
const (
	// MaxDepth is the deepest nesting of query objects Parse accepts; the top-level object is at depth 1.
	MaxDepth = 32
	// MaxNodes is the most nodes a parsed query may have.
	MaxNodes = 1000
	// MaxPattern is the longest value of _like, _wildcard, _startsWith and _endsWith, in bytes: matching
	// costs about the pattern's length for every byte of every value compared (a 900 KB _like took 45 s over
	// 67k observables).
	MaxPattern = 1024
)

// CheckPattern refuses a text pattern (OpLike, OpWildcard, OpPrefix, OpSuffix) longer than MaxPattern.
func CheckPattern(name, s string) error {
	if len(s) > MaxPattern {
		return bad("the pattern of %s is longer than %d bytes", name, MaxPattern)
	}
	return nil
}

// operators are the keys that make an object an operator object.
var operators = map[string]bool{
	"_any": true, "_and": true, "_or": true, "_not": true,
	"_field": true, "_value": true,
	"_gt": true, "_gte": true, "_lt": true, "_lte": true, "_between": true, "_in": true,
	"_contains": true, "_like": true, "_wildcard": true, "_startsWith": true, "_endsWith": true,
	"_id": true, "_string": true,
}

// ParseJSON parses a JSON-encoded query with [Parse]. An empty (or whitespace-only) body and a JSON null match
// everything. Numbers are decoded as json.Number so that large integers keep their precision.
func ParseJSON(raw []byte, fields Fields) (Node, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return Node{Op: OpAll}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var q any
	if err := dec.Decode(&q); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return Node{}, bad("invalid query: malformed JSON at offset %d", syn.Offset)
		}
		return Node{}, bad("invalid query: malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Node{}, bad("invalid query: unexpected data after the JSON value")
	}
	return Parse(q, fields)
}

// Parse parses a query, as decoded by encoding/json into an any (map[string]any, []any, string, float64 or
// json.Number, bool, nil), into a filter tree. Field names are looked up in fields; values are coerced to the
// field's [Type].
//
// The query language (the DSL of elastic4play):
//
//	null, {}, {"_any": ...}                              everything (OpAll)
//	{"_and": [Q, ...]}                                   all of the queries; an empty list matches everything
//	{"_or": [Q, ...]}                                    any of the queries; an empty list matches nothing
//	{"_not": Q}                                          not Q
//	{"_field": "f", "_value": v}                         f equals v
//	{"f": v}                                             f equals v; several such keys are ANDed
//	{"_gt": {"f": v}}, "_gte", "_lt", "_lte"             comparisons (exactly one field)
//	{"_between": {"_field": "f", "_from": a, "_to": b}}  a <= f < b (half-open); either bound may be left out
//	{"_in": {"_field": "f", "_values": [v, ...]}}        f equals one of the values; an empty list matches nothing
//	{"_contains": "f"}                                   f is present
//	{"_like": {"_field": "f", "_value": "s"}}            f contains s, ignoring case
//	{"_wildcard": {"_field": "f", "_value": "a*b?"}}     f matches the pattern as a whole, ignoring case
//	{"_startsWith": {"_field": "f", "_value": "s"}}      f starts with s (case-sensitive)
//	{"_endsWith": {"_field": "f", "_value": "s"}}        f ends with s (case-sensitive)
//	{"_id": v}                                           the field named "id" equals v
//	{"_string": "a:x AND b:\"y z\" OR c:w"}              field:value terms joined by AND/OR (see below)
//
// An object with a key starting with "_" is an operator object and must have exactly one key (the
// {"_field", "_value"} pair excepted), unless that key is not an operator but an allow-listed field name (such
// as "_createdAt"), which is then compared like any bare field. _like, _wildcard, _startsWith and _endsWith only
// apply to String fields. Values must be scalars; null, objects and arrays where a scalar is expected are
// rejected.
//
// _string accepts only field:value terms, where value is either a run of non-space characters or a
// double-quoted string (in which \" and \\ are escapes), joined by the case-insensitive keywords AND and OR,
// AND binding tighter than OR. Parentheses, ranges, wildcards, bare words and adjacent terms without a keyword
// are rejected; an empty _string matches everything.
//
// Queries nested deeper than [MaxDepth] or with more than [MaxNodes] nodes are rejected (the values of an _in
// list are not nodes: their number is bounded only by the size of the request). Every error is an
// apperr.BadRequest.
func Parse(query any, fields Fields) (Node, error) {
	p := parser{fields: fields}
	return p.parse(query, 1)
}

// parser holds the state of one Parse call.
type parser struct {
	fields Fields
	nodes  int
}

// count accounts for one more node.
func (p *parser) count() error {
	p.nodes++
	if p.nodes > MaxNodes {
		return bad("query is too large (more than %d nodes)", MaxNodes)
	}
	return nil
}

// leaf counts n and returns it.
func (p *parser) leaf(n Node) (Node, error) {
	if err := p.count(); err != nil {
		return Node{}, err
	}
	return n, nil
}

func (p *parser) parse(q any, depth int) (Node, error) {
	if depth > MaxDepth {
		return Node{}, bad("query is nested too deeply (more than %d levels)", MaxDepth)
	}
	switch q := q.(type) {
	case nil:
		return p.leaf(Node{Op: OpAll})
	case map[string]any:
		return p.object(q, depth)
	default:
		return Node{}, bad("a query must be an object, got %s", describe(q))
	}
}

// isOperator reports whether the key k of a query object is an operator (known or not) rather than a field.
func (p *parser) isOperator(k string) bool {
	if !strings.HasPrefix(k, "_") || operators[k] {
		return operators[k]
	}
	_, isField := p.fields[k]
	return !isField
}

func (p *parser) object(m map[string]any, depth int) (Node, error) {
	if len(m) == 0 {
		return p.leaf(Node{Op: OpAll})
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 2 && keys[0] == "_field" && keys[1] == "_value" {
		return p.fieldValue(m)
	}
	op := ""
	for _, k := range keys {
		if !p.isOperator(k) {
			continue
		}
		if !operators[k] {
			return Node{}, bad("unknown operator %s", quote(k))
		}
		if op == "" {
			op = k
		}
	}
	if op != "" {
		if len(keys) != 1 {
			return Node{}, bad("operator %s must be the only key of its object, got keys %s", quote(op), keyList(keys))
		}
		return p.operator(op, m[op], depth)
	}
	if len(keys) == 1 {
		return p.eq(keys[0], m[keys[0]])
	}
	if err := p.count(); err != nil {
		return Node{}, err
	}
	and := Node{Op: OpAnd, Children: make([]Node, 0, min(len(keys), MaxNodes))}
	for _, k := range keys {
		c, err := p.eq(k, m[k])
		if err != nil {
			return Node{}, err
		}
		and.Children = append(and.Children, c)
	}
	return and, nil
}

// keyList lists (the first few of) keys for an error message.
func keyList(keys []string) string {
	const max = 5
	var b strings.Builder
	for i, k := range keys {
		if i == max {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(k))
	}
	return b.String()
}

// eq returns the node "field name equals v".
func (p *parser) eq(name string, v any) (Node, error) {
	return p.compare(OpEq, name, v)
}

// compare returns the node "field name op v".
func (p *parser) compare(op Op, name string, v any) (Node, error) {
	f, err := p.fields.lookup(name)
	if err != nil {
		return Node{}, err
	}
	val, err := coerce(v, name, f.Type)
	if err != nil {
		return Node{}, err
	}
	return p.leaf(Node{Op: op, Path: f.Path, Value: val})
}

// fieldValue parses {"_field": f, "_value": v}.
func (p *parser) fieldValue(m map[string]any) (Node, error) {
	name, err := fieldName("_field/_value", m)
	if err != nil {
		return Node{}, err
	}
	return p.eq(name, m["_value"])
}

func (p *parser) operator(op string, v any, depth int) (Node, error) {
	switch op {
	case "_any":
		return p.leaf(Node{Op: OpAll})
	case "_and", "_or":
		return p.list(op, v, depth)
	case "_not":
		if err := p.count(); err != nil {
			return Node{}, err
		}
		c, err := p.parse(v, depth+1)
		if err != nil {
			return Node{}, err
		}
		return Node{Op: OpNot, Children: []Node{c}}, nil
	case "_gt", "_gte", "_lt", "_lte":
		return p.comparison(op, v)
	case "_between":
		return p.between(v)
	case "_in":
		return p.in(v)
	case "_contains":
		return p.contains(v)
	case "_like", "_wildcard", "_startsWith", "_endsWith":
		return p.text(op, v)
	case "_id":
		if _, ok := p.fields["id"]; !ok {
			return Node{}, bad("_id is not supported here: this resource has no id field")
		}
		return p.eq("id", v)
	case "_string":
		s, ok := v.(string)
		if !ok {
			return Node{}, bad("_string expects a string, got %s", describe(v))
		}
		return p.str(s)
	case "_field", "_value":
		return Node{}, bad(`"_field" and "_value" must be used together`)
	}
	return Node{}, bad("unknown operator %s", quote(op))
}

// list parses _and and _or.
func (p *parser) list(op string, v any, depth int) (Node, error) {
	arr, ok := v.([]any)
	if !ok {
		return Node{}, bad("%s expects an array of queries, got %s", op, describe(v))
	}
	if op == "_and" && len(arr) == 0 {
		return p.leaf(Node{Op: OpAll})
	}
	if err := p.count(); err != nil {
		return Node{}, err
	}
	n := Node{Op: OpAnd, Children: make([]Node, 0, min(len(arr), MaxNodes))}
	if op == "_or" {
		n.Op = OpOr
	}
	for _, q := range arr {
		c, err := p.parse(q, depth+1)
		if err != nil {
			return Node{}, err
		}
		n.Children = append(n.Children, c)
	}
	return n, nil
}

var comparisons = map[string]Op{"_gt": OpGt, "_gte": OpGte, "_lt": OpLt, "_lte": OpLte}

// comparison parses {"_gt": {"f": v}} and friends (also accepting {"_gt": {"_field": "f", "_value": v}}).
func (p *parser) comparison(op string, v any) (Node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Node{}, bad(`%s expects an object with exactly one field, like {"%s": {"field": value}}, got %s`, op, op, describe(v))
	}
	keys := slices.Sorted(maps.Keys(m))
	switch {
	case len(keys) == 2 && keys[0] == "_field" && keys[1] == "_value":
		name, err := fieldName(op, m)
		if err != nil {
			return Node{}, err
		}
		return p.compare(comparisons[op], name, m["_value"])
	case len(keys) == 1:
		return p.compare(comparisons[op], keys[0], m[keys[0]])
	}
	return Node{}, bad(`%s expects an object with exactly one field, like {"%s": {"field": value}}, got keys %s`, op, op, keyList(keys))
}

// between parses {"_between": {"_field": f, "_from": a, "_to": b}} into a <= f < b.
func (p *parser) between(v any) (Node, error) {
	m, err := args("_between", v, "_field", "_from", "_to")
	if err != nil {
		return Node{}, err
	}
	name, err := fieldName("_between", m)
	if err != nil {
		return Node{}, err
	}
	from, hasFrom := m["_from"]
	to, hasTo := m["_to"]
	if !hasFrom && !hasTo {
		return Node{}, bad(`_between requires "_from", "_to" or both`)
	}
	var kids []Node
	if hasFrom {
		c, err := p.compare(OpGte, name, from)
		if err != nil {
			return Node{}, err
		}
		kids = append(kids, c)
	}
	if hasTo {
		c, err := p.compare(OpLt, name, to)
		if err != nil {
			return Node{}, err
		}
		kids = append(kids, c)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return p.leaf(Node{Op: OpAnd, Children: kids})
}

// in parses {"_in": {"_field": f, "_values": [...]}}.
func (p *parser) in(v any) (Node, error) {
	m, err := args("_in", v, "_field", "_values")
	if err != nil {
		return Node{}, err
	}
	name, err := fieldName("_in", m)
	if err != nil {
		return Node{}, err
	}
	f, err := p.fields.lookup(name)
	if err != nil {
		return Node{}, err
	}
	raw, ok := m["_values"]
	if !ok {
		return Node{}, bad(`_in requires "_values"`)
	}
	arr, ok := raw.([]any)
	if !ok {
		return Node{}, bad(`_in: "_values" must be an array, got %s`, describe(raw))
	}
	vals := make([]any, 0, len(arr))
	for _, x := range arr {
		c, err := coerce(x, name, f.Type)
		if err != nil {
			return Node{}, err
		}
		vals = append(vals, c)
	}
	return p.leaf(Node{Op: OpIn, Path: f.Path, Values: vals})
}

// contains parses {"_contains": "f"} (also accepting {"_contains": {"_field": "f"}}).
func (p *parser) contains(v any) (Node, error) {
	var name string
	switch x := v.(type) {
	case string:
		name = x
	case map[string]any:
		m, err := args("_contains", x, "_field")
		if err != nil {
			return Node{}, err
		}
		if name, err = fieldName("_contains", m); err != nil {
			return Node{}, err
		}
	default:
		return Node{}, bad("_contains expects a field name, got %s", describe(v))
	}
	f, err := p.fields.lookup(name)
	if err != nil {
		return Node{}, err
	}
	return p.leaf(Node{Op: OpExists, Path: f.Path})
}

var textOps = map[string]Op{"_like": OpLike, "_wildcard": OpWildcard, "_startsWith": OpPrefix, "_endsWith": OpSuffix}

// text parses _like, _wildcard, _startsWith and _endsWith.
func (p *parser) text(op string, v any) (Node, error) {
	m, err := args(op, v, "_field", "_value")
	if err != nil {
		return Node{}, err
	}
	name, err := fieldName(op, m)
	if err != nil {
		return Node{}, err
	}
	f, err := p.fields.lookup(name)
	if err != nil {
		return Node{}, err
	}
	if f.Type != String {
		return Node{}, bad("%s only applies to string fields, and %s is a %s field", op, quote(name), f.Type)
	}
	raw, ok := m["_value"]
	if !ok {
		return Node{}, bad(`%s requires "_value"`, op)
	}
	s, err := coerce(raw, name, String)
	if err != nil {
		return Node{}, err
	}
	if str, ok := s.(string); ok {
		if err := CheckPattern(op, str); err != nil {
			return Node{}, err
		}
	}
	return p.leaf(Node{Op: textOps[op], Path: f.Path, Value: s})
}

// args checks that the operand of op is an object whose keys are among allowed.
func args(op string, v any, allowed ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, bad("%s expects an object with keys %s, got %s", op, keyList(allowed), describe(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			return nil, bad("unexpected key %s in %s (allowed: %s)", quote(k), op, keyList(allowed))
		}
	}
	return m, nil
}

// fieldName returns the "_field" of the operand m of op.
func fieldName(op string, m map[string]any) (string, error) {
	raw, ok := m["_field"]
	if !ok {
		return "", bad(`%s requires "_field"`, op)
	}
	name, ok := raw.(string)
	if !ok {
		return "", bad(`%s: "_field" must be a string, got %s`, op, describe(raw))
	}
	return name, nil
}
