package docstore

import (
	"encoding/json"
	"fmt"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// The checks this package makes before a call reaches an engine, so that both engines refuse the same calls
// with the same errors: every path of a filter, a sort, a projection or a group (ErrBadPath), and every array a
// write would store (ErrUndeclaredArray).
//
// Spec.Arrays must be complete: a filter on a declared array path matches the arrays' elements on both engines,
// but the SQLite engine only knows which paths hold arrays from the declaration. So a write that would put an
// array at a path the collection does not declare is refused (inside the elements of a declared array anything
// goes), and a filter, sort or group on a path that goes through a declared array ("tags.0", "items.name") is
// ErrBadPath: MongoDB would look into the elements, SQLite cannot.

// ErrBadPath is returned (wrapped, naming the path) for a path neither engine takes: empty segments, quotes,
// backslashes, control characters or a segment starting with "$"; or, in a filter, a sort or a group, a path
// that goes through an array path the collection declares.
var ErrBadPath = engine.ErrBadPath

// ErrUndeclaredArray is returned (wrapped, naming the path) for an insert, a replace or an update that would
// store an array at a path the collection's Spec.Arrays does not list.
var ErrUndeclaredArray = engine.ErrUndeclaredArray

// arrayPaths are the array paths a collection declares.
type arrayPaths map[string]bool

func newArrayPaths(spec Spec) (arrayPaths, error) {
	a := arrayPaths{}
	for _, p := range spec.Arrays {
		if err := engine.CheckPath(p); err != nil {
			return nil, fmt.Errorf("docstore: collection %s: Arrays: %w", spec.Name, err)
		}
		if p == "_id" {
			return nil, fmt.Errorf("docstore: collection %s: Arrays: _id cannot be an array", spec.Name)
		}
		a[p] = true
	}
	return a, nil
}

// through returns the declared array path that p goes through (a proper prefix of p), or "".
func (a arrayPaths) through(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '.' && a[p[:i]] {
			return p[:i]
		}
	}
	return ""
}

// holds reports whether p may hold an array: it is declared, or inside the elements of a declared array.
func (a arrayPaths) holds(p string) bool { return a[p] || a.through(p) != "" }

// path checks a path a filter, a sort or a group reads.
func (a arrayPaths) path(p string) error {
	if err := engine.CheckPath(p); err != nil {
		return err
	}
	if arr := a.through(p); arr != "" {
		return fmt.Errorf("%w %q: it goes through the array path %s", ErrBadPath, p, arr)
	}
	return nil
}

// filter checks every path of a filter tree.
func (a arrayPaths) filter(n search.Node) error {
	switch n.Op {
	case search.OpAnd, search.OpOr, search.OpNot:
		for _, c := range n.Children {
			if err := a.filter(c); err != nil {
				return err
			}
		}
	case search.OpEq, search.OpGt, search.OpGte, search.OpLt, search.OpLte, search.OpIn, search.OpExists,
		search.OpLike, search.OpWildcard, search.OpPrefix, search.OpSuffix:
		return a.path(n.Path)
	}
	return nil
}

// query checks the paths of a query: its filter, its sort keys and its projection.
func (a arrayPaths) query(q Query) error {
	if err := a.filter(q.Filter); err != nil {
		return err
	}
	for _, k := range q.Sort {
		if err := a.path(k.Path); err != nil {
			return err
		}
	}
	for _, f := range q.Fields {
		if err := engine.CheckPath(f); err != nil {
			return err
		}
	}
	return nil
}

// value checks that v, stored at path p, puts no array at an undeclared path.
func (a arrayPaths) value(p string, v any) error {
	if bad := a.undeclared(p, v); bad != "" {
		return fmt.Errorf("%w: %s", ErrUndeclaredArray, bad)
	}
	return nil
}

// undeclared returns the first (in byte order) undeclared path where v, stored at p, holds an array, or "".
func (a arrayPaths) undeclared(p string, v any) string {
	if a.holds(p) {
		return ""
	}
	switch x := v.(type) {
	case []any:
		return p
	case map[string]any:
		bad := ""
		for k, e := range x {
			if q := a.undeclared(p+"."+k, e); q != "" && (bad == "" || q < bad) {
				bad = q
			}
		}
		return bad
	}
	return ""
}

// update checks the arrays an update stores: the values it sets, the arrays it adds to or pulls from and, for
// an upsert, the equalities of the filter the new document is made of.
func (a arrayPaths) update(u []engine.Op, f search.Node, upsert bool) error {
	for _, op := range u {
		switch op.Kind {
		case engine.OpSet:
			if err := a.value(op.Path, op.Value); err != nil {
				return err
			}
		case engine.OpAddToSet, engine.OpPull:
			if !a.holds(op.Path) {
				return fmt.Errorf("%w: %s", ErrUndeclaredArray, op.Path)
			}
		}
	}
	if upsert {
		return a.seed(f)
	}
	return nil
}

func (a arrayPaths) seed(n search.Node) error {
	switch n.Op {
	case search.OpAnd:
		for _, c := range n.Children {
			if err := a.seed(c); err != nil {
				return err
			}
		}
	case search.OpEq:
		return a.value(n.Path, n.Value)
	}
	return nil
}

// doc checks the JSON of a document to be stored (valid JSON: encodeDoc decoded it) for arrays at paths the
// collection does not declare.
func (a arrayPaths) doc(raw []byte) error {
	s := arrayScan{b: raw, arrays: a}
	s.value()
	if s.bad != "" {
		return fmt.Errorf("%w: %s", ErrUndeclaredArray, s.bad)
	}
	return nil
}

// arrayScan walks a JSON document for its arrays, without decoding it: the path of every array that is not
// inside another array must be declared. It reads valid JSON only, and stops at the first undeclared array.
type arrayScan struct {
	b      []byte
	i      int
	path   []byte
	arrays arrayPaths
	bad    string
}

func (s *arrayScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads the value at s.i.
func (s *arrayScan) value() {
	s.ws()
	if s.i >= len(s.b) || s.bad != "" {
		return
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		for {
			s.ws()
			if s.i >= len(s.b) || s.bad != "" {
				return
			}
			if s.b[s.i] == '}' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			start := s.i
			s.skipString()
			key := s.b[start+1 : max(start+1, s.i-1)]
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ':' {
				s.i++
			}
			n := len(s.path)
			if n > 0 {
				s.path = append(s.path, '.')
			}
			if jsonHasEscape(key) {
				var k string
				_ = json.Unmarshal(s.b[start:s.i-1], &k)
				s.path = append(s.path, k...)
			} else {
				s.path = append(s.path, key...)
			}
			s.value()
			s.path = s.path[:n]
		}
	case '[':
		if !s.arrays[string(s.path)] {
			s.bad = string(s.path)
			return
		}
		s.skipNested()
	case '"':
		s.skipString()
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// skipString skips the string at s.i (its opening quote) and its closing quote.
func (s *arrayScan) skipString() {
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return
		}
		s.i++
	}
}

// skipNested skips the array or object at s.i.
func (s *arrayScan) skipNested() {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.skipString()
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				s.i++
				return
			}
		}
		s.i++
	}
}

func jsonHasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}
