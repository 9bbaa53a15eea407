package sqlite

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Updates of the SQLite engine, applied in Go to the stored document as MongoDB applies them: $set creates
// the missing intermediate objects, $inc keeps int64 + int64 an int64 (an overflow is an error) and gives a
// double otherwise, $addToSet compares deeply (5 equals 5.0), $pull removes every equal element. The document
// is a jv tree (jsontree.go): what the operations do not touch keeps its text, so the order of keys and the
// numbers stay as written. The operations run in MongoDB's order (by path, array indexes by number), so the
// fields an update adds to an object come in the order MongoDB adds them.

// parseDoc reads a stored document for an update.
func parseDoc(b []byte) (*jv, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("stored document is not an object")
	}
	end, err := skipValue(b, i)
	if err != nil {
		return nil, err
	}
	doc := &jv{raw: b[i:end]}
	if err := doc.open(); err != nil {
		return nil, err
	}
	return doc, nil
}

// encodeDoc returns the JSON text of a document.
func encodeDoc(doc *jv, size int) ([]byte, error) {
	return doc.appendJSON(make([]byte, 0, size+64))
}

// applyUpdate applies the operations of u to doc, in MongoDB's order.
func applyUpdate(doc *jv, u []engine.Op) error {
	if len(u) > 1 {
		u = slices.Clone(u)
		slices.SortStableFunc(u, func(a, b engine.Op) int { return comparePaths(a.Path, b.Path) })
	}
	for _, op := range u {
		segs := strings.Split(op.Path, ".")
		switch op.Kind {
		case engine.OpSet:
			if err := setPath(doc, segs, &jv{kind: jGo, val: op.Value}); err != nil {
				return fmt.Errorf("set %s: %w", op.Path, err)
			}
		case engine.OpUnset:
			if err := unsetPath(doc, segs); err != nil {
				return err
			}
		case engine.OpInc:
			cur, found, err := getPath(doc, segs)
			if err != nil {
				return err
			}
			nv := op.Value
			if found {
				if cur.jtype() != '0' {
					return fmt.Errorf("inc %s: cannot increment a non-number", op.Path)
				}
				if nv, err = addNumbers(cur.value(), op.Value); err != nil {
					return fmt.Errorf("inc %s: %w", op.Path, err)
				}
			}
			if err := setPath(doc, segs, &jv{kind: jGo, val: nv}); err != nil {
				return fmt.Errorf("inc %s: %w", op.Path, err)
			}
		case engine.OpAddToSet:
			cur, found, err := getPath(doc, segs)
			if err != nil {
				return err
			}
			if !found {
				cur = &jv{kind: jArray}
				if err := setPath(doc, segs, cur); err != nil {
					return fmt.Errorf("addToSet %s: %w", op.Path, err)
				}
			} else if cur.jtype() != '[' {
				return fmt.Errorf("addToSet %s: the field is not an array", op.Path)
			} else if err := cur.open(); err != nil {
				return err
			}
			have := make([]any, len(cur.elems), len(cur.elems)+len(op.Items))
			for i, e := range cur.elems {
				have[i] = e.value()
			}
			for _, it := range op.Items {
				if !containsValue(have, it) {
					have = append(have, it)
					cur.elems = append(cur.elems, &jv{kind: jGo, val: it})
				}
			}
		case engine.OpPull:
			cur, found, err := getPath(doc, segs)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if cur.jtype() != '[' {
				return fmt.Errorf("pull %s: the field is not an array", op.Path)
			}
			if err := cur.open(); err != nil {
				return err
			}
			kept := cur.elems[:0]
			for _, e := range cur.elems {
				if !containsValue(op.Items, e.value()) {
					kept = append(kept, e)
				}
			}
			cur.elems = kept
		default:
			return fmt.Errorf("unknown update operation %d", op.Kind)
		}
	}
	return nil
}

// comparePaths orders update paths as MongoDB applies them: segment by segment, by bytes, except two segments
// that are both numbers (array indexes), by value.
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		sa, ra, _ := strings.Cut(a, ".")
		sb, rb, _ := strings.Cut(b, ".")
		if c := compareSegments(sa, sb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return cmp.Compare(len(a), len(b))
}

func compareSegments(a, b string) int {
	if isDigits(a) && isDigits(b) {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			return cmp.Compare(len(a), len(b))
		}
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// getPath returns the value at segs and whether it is present.
func getPath(doc *jv, segs []string) (*jv, bool, error) {
	cur := doc
	for _, s := range segs {
		switch cur.jtype() {
		case '{':
			if err := cur.open(); err != nil {
				return nil, false, err
			}
			i := cur.member(s)
			if i < 0 {
				return nil, false, nil
			}
			cur = cur.elems[i]
		case '[':
			if err := cur.open(); err != nil {
				return nil, false, err
			}
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(cur.elems) {
				return nil, false, nil
			}
			cur = cur.elems[i]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// setPath sets the value at segs, creating missing intermediate objects (also in place of a null). An array
// element is addressed by its index; going through a scalar is an error.
func setPath(doc *jv, segs []string, v *jv) error {
	cur := doc
	for i, s := range segs {
		last := i == len(segs)-1
		switch cur.jtype() {
		case '{':
			if err := cur.open(); err != nil {
				return err
			}
			at := cur.member(s)
			if last {
				if at >= 0 {
					cur.elems[at] = v
				} else {
					cur.rkeys = append(cur.rkeys, quoteKey(s))
					cur.elems = append(cur.elems, v)
				}
				return nil
			}
			var next *jv
			if at >= 0 {
				next = cur.elems[at]
			}
			if next == nil || next.jtype() == 'n' {
				next = &jv{kind: jObject}
				if at >= 0 {
					cur.elems[at] = next
				} else {
					cur.rkeys = append(cur.rkeys, quoteKey(s))
					cur.elems = append(cur.elems, next)
				}
			}
			cur = next
		case '[':
			if err := cur.open(); err != nil {
				return err
			}
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(cur.elems) {
				return fmt.Errorf("cannot create field %q in an array", s)
			}
			if last {
				cur.elems[idx] = v
				return nil
			}
			if cur.elems[idx].jtype() == 'n' {
				cur.elems[idx] = &jv{kind: jObject}
			}
			cur = cur.elems[idx]
		default:
			return fmt.Errorf("cannot create field %q in a %s", s, jtypeName(cur.jtype()))
		}
	}
	return nil
}

func jtypeName(t byte) string {
	switch t {
	case '"':
		return "string"
	case 't':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// unsetPath removes the field at segs (nothing when absent; an array element becomes null, as MongoDB).
func unsetPath(doc *jv, segs []string) error {
	parent, ok, err := getPath(doc, segs[:len(segs)-1])
	if !ok || err != nil {
		return err
	}
	last := segs[len(segs)-1]
	switch parent.jtype() {
	case '{', '[':
		if err := parent.open(); err != nil {
			return err
		}
	}
	switch parent.jtype() {
	case '{':
		if i := parent.member(last); i >= 0 {
			parent.rkeys = slices.Delete(parent.rkeys, i, i+1)
			parent.elems = slices.Delete(parent.elems, i, i+1)
		}
	case '[':
		if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(parent.elems) {
			parent.elems[i] = &jv{kind: jGo}
		}
	}
	return nil
}

// addNumbers adds two numbers: int64 + int64 is an int64 (overflow: an error), anything else a float64.
func addNumbers(a, b any) (any, error) {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			s := x + y
			if (s > x) != (y > 0) {
				return nil, errors.New("integer overflow")
			}
			return s, nil
		case float64:
			return float64(x) + y, nil
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return x + float64(y), nil
		case float64:
			return x + y, nil
		}
	}
	return nil, fmt.Errorf("cannot increment a non-number (%T)", a)
}

func containsValue(arr []any, v any) bool {
	for _, e := range arr {
		if valuesEqual(e, v) {
			return true
		}
	}
	return false
}

// valuesEqual compares normalized values as MongoDB does: numbers by value, objects and arrays deeply.
func valuesEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y && !math.IsNaN(y)
		}
		return false
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !valuesEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// upsertSeed returns the document an upsert starts from: the equalities of f (an Eq or an And of them), which
// must include a string _id: the _id first, then the others in MongoDB's order of paths.
func upsertSeed(f search.Node) (*jv, string, error) {
	var eqs []search.Node
	var walk func(n search.Node) error
	walk = func(n search.Node) error {
		switch n.Op {
		case search.OpAll:
			return nil
		case search.OpAnd:
			for _, c := range n.Children {
				if err := walk(c); err != nil {
					return err
				}
			}
			return nil
		case search.OpEq:
			if err := engine.CheckPath(n.Path); err != nil {
				return err
			}
			eqs = append(eqs, n)
			return nil
		}
		return fmt.Errorf("docstore: an upsert needs a filter of equalities, not %s", n.Op)
	}
	if err := walk(f); err != nil {
		return nil, "", err
	}
	slices.SortStableFunc(eqs, func(a, b search.Node) int {
		switch {
		case a.Path == "_id" && b.Path != "_id":
			return -1
		case b.Path == "_id" && a.Path != "_id":
			return 1
		}
		return comparePaths(a.Path, b.Path)
	})
	doc := &jv{kind: jObject}
	id := ""
	for _, n := range eqs {
		v := engine.Normalize(n.Value)
		if n.Path == "_id" {
			id, _ = v.(string)
		}
		if err := setPath(doc, strings.Split(n.Path, "."), &jv{kind: jGo, val: v}); err != nil {
			return nil, "", err
		}
	}
	if id == "" {
		return nil, "", errors.New("docstore: an upsert needs a filter on a string _id")
	}
	return doc, id, nil
}
