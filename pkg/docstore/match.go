package docstore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Matcher evaluates a filter on documents in Go, with the semantics both engines give the same filter in a
// query (MongoDB's, pinned by the conformance suite, which holds the matcher to both engines' results on the
// same documents): a caller that has the documents at hand (or reads many at once) decides which filters they
// match without one query per filter and document. It is what the rules of case-svc's automation use to
// evaluate their conditions on the objects of a batch of events.
//
// The semantics, as the engines': an array value matches when one of its elements does (a value at a path is
// never an array unless the collection declares it, Spec.Arrays), and equality with null, $gte and $lte null,
// and an $in holding null also match a missing or null array; a missing field and null are equal for equality
// and existence; numbers compare with numbers only (an int equals the same double; big integers exactly),
// strings with strings only (by bytes), booleans with booleans; the text operators match strings only;
// OpNot matches when its children do not. A filter with an object or array operand is refused by NewMatcher:
// the engines compare those through their own encodings, which a Go value does not carry.
type Matcher struct {
	root mnode
}

// mnode is a compiled filter node.
type mnode struct {
	op       search.Op
	path     []string
	value    any
	values   []any
	children []mnode
	re       *regexp.Regexp // OpLike, OpWildcard, OpSuffix
	text     string         // OpPrefix
}

// ErrMatcherOperand is returned (wrapped) by NewMatcher for a filter with an object or array operand.
var ErrMatcherOperand = errors.New("docstore: the matcher takes scalar operands only")

// NewMatcher compiles f. It refuses what the engines refuse in a filter (ErrBadPath: a path neither takes)
// and object or array operands (ErrMatcherOperand).
func NewMatcher(f search.Node) (*Matcher, error) {
	root, err := compileMatch(f)
	if err != nil {
		return nil, err
	}
	return &Matcher{root: root}, nil
}

// Matcher compiles f for the documents of c: as NewMatcher, and a path through an array the collection
// declares is refused with ErrBadPath, as a query of c would be.
func (c *Collection) Matcher(f search.Node) (*Matcher, error) {
	if err := c.arrays.filter(f); err != nil {
		return nil, err
	}
	return NewMatcher(f)
}

func compileMatch(n search.Node) (mnode, error) {
	m := mnode{op: n.Op}
	switch n.Op {
	case search.OpAll:
	case search.OpAnd, search.OpOr, search.OpNot:
		for _, c := range n.Children {
			cm, err := compileMatch(c)
			if err != nil {
				return mnode{}, err
			}
			m.children = append(m.children, cm)
		}
	case search.OpEq, search.OpGt, search.OpGte, search.OpLt, search.OpLte, search.OpIn, search.OpExists,
		search.OpLike, search.OpWildcard, search.OpPrefix, search.OpSuffix:
		if err := engine.CheckPath(n.Path); err != nil {
			return mnode{}, err
		}
		m.path = strings.Split(n.Path, ".")
		var err error
		switch n.Op {
		case search.OpIn:
			m.values = make([]any, len(n.Values))
			for i, v := range n.Values {
				if m.values[i], err = scalarOperand(n.Path, v); err != nil {
					return mnode{}, err
				}
			}
		case search.OpLike:
			m.re, err = regexp.Compile("(?is)" + engine.Quote(engine.Text(n.Value)))
		case search.OpWildcard:
			m.re, err = regexp.Compile(`(?is)^` + engine.Wildcard(engine.Text(n.Value)) + `\z`)
		case search.OpSuffix:
			m.re, err = regexp.Compile(engine.Quote(engine.Text(n.Value)) + `\z`)
		case search.OpPrefix:
			m.text = engine.Text(n.Value)
		case search.OpExists:
		default:
			m.value, err = scalarOperand(n.Path, n.Value)
		}
		if err != nil {
			return mnode{}, err
		}
	default:
		m.op = "" // the zero node and unknown operators match nothing, as on both engines
	}
	return m, nil
}

// scalarOperand normalizes an operand as the engines do, refusing objects and arrays.
func scalarOperand(path string, v any) (any, error) {
	switch x := engine.Normalize(v).(type) {
	case map[string]any, []any:
		return nil, fmt.Errorf("%w: %s compared with %T", ErrMatcherOperand, path, v)
	default:
		return x, nil
	}
}

// DecodeDocument decodes a document's JSON text into the form Match takes (objects as map[string]any,
// integral numbers as int64, others as float64).
func DecodeDocument(raw []byte) (map[string]any, error) {
	doc, ok := engine.DecodeValue(raw).(map[string]any)
	if !ok {
		return nil, errors.New("docstore: decode document: not a JSON object")
	}
	return doc, nil
}

// Match reports whether a document, as DecodeDocument returns it, matches the filter.
func (m *Matcher) Match(doc map[string]any) bool { return m.root.match(doc) }

// MatchJSON decodes a document's JSON text and reports whether it matches the filter.
func (m *Matcher) MatchJSON(raw []byte) (bool, error) {
	doc, err := DecodeDocument(raw)
	if err != nil {
		return false, err
	}
	return m.Match(doc), nil
}

func (n *mnode) match(doc map[string]any) bool {
	switch n.op {
	case search.OpAll:
		return true
	case search.OpAnd:
		for i := range n.children {
			if !n.children[i].match(doc) {
				return false
			}
		}
		return true
	case search.OpOr:
		for i := range n.children {
			if n.children[i].match(doc) {
				return true
			}
		}
		return false
	case search.OpNot:
		if len(n.children) == 0 {
			return false
		}
		for i := range n.children {
			if n.children[i].match(doc) {
				return false
			}
		}
		return true
	case "":
		return false
	}
	v, found := lookup(doc, n.path)
	if n.op == search.OpExists {
		return found && v != nil
	}
	arr, isArray := v.([]any)
	if !isArray {
		return n.scalar(v)
	}
	// An array: one element matching is enough; a null equality also matches a missing or null array (above:
	// v is nil then, not an array), and an array holding null.
	for _, e := range arr {
		if n.scalar(e) {
			return true
		}
	}
	return false
}

// lookup returns the value at a path of object keys (nil, false when a segment is missing or not an object).
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, seg := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// scalar tests one value (a field that is not an array, or an element of one).
func (n *mnode) scalar(v any) bool {
	switch n.op {
	case search.OpEq:
		return equal(v, n.value)
	case search.OpGt, search.OpGte, search.OpLt, search.OpLte:
		return compare(n.op, v, n.value)
	case search.OpIn:
		for _, x := range n.values {
			if equal(v, x) {
				return true
			}
		}
		return false
	case search.OpLike, search.OpWildcard, search.OpSuffix:
		s, ok := v.(string)
		return ok && n.re.MatchString(s)
	case search.OpPrefix:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, n.text)
	}
	return false
}

// equal is equality of a value with a scalar operand: of the same kind (numbers are one kind), and equal.
func equal(v, operand any) bool {
	if operand == nil {
		return v == nil
	}
	if !sameKind(v, operand) {
		return false
	}
	return engine.Compare(v, operand) == 0
}

// compare is a range condition: values of the operand's kind only; $gte and $lte null are equality with
// null, $gt and $lt null match nothing.
func compare(op search.Op, v, operand any) bool {
	if operand == nil {
		return (op == search.OpGte || op == search.OpLte) && v == nil
	}
	if !sameKind(v, operand) {
		return false
	}
	c := engine.Compare(v, operand)
	switch op {
	case search.OpGt:
		return c > 0
	case search.OpGte:
		return c >= 0
	case search.OpLt:
		return c < 0
	}
	return c <= 0
}

// sameKind reports whether two values are of one kind: numbers, strings or booleans.
func sameKind(a, b any) bool {
	switch b.(type) {
	case int64, float64:
		switch a.(type) {
		case int64, float64:
			return true
		}
	case string:
		_, ok := a.(string)
		return ok
	case bool:
		_, ok := a.(bool)
		return ok
	}
	return false
}
