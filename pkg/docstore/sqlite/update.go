package sqlite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Updates of the SQLite engine, applied in Go to the decoded document as MongoDB applies them: $set creates
// the missing intermediate objects, $inc keeps int64 + int64 an int64 (an overflow is an error) and gives a
// double otherwise, $addToSet compares deeply (5 equals 5.0), $pull removes every equal element.

// decodeDocMap decodes a stored document, numbers normalized (int64 when integral, float64 otherwise).
func decodeDocMap(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("stored document: %w", err)
	}
	if m == nil {
		return nil, errors.New("stored document is not an object")
	}
	for k, v := range m {
		m[k] = engine.Normalize(v)
	}
	return m, nil
}

func encodeDocMap(m map[string]any) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	return b, nil
}

// applyUpdate applies the operations of u to doc.
func applyUpdate(doc map[string]any, u []engine.Op) error {
	for _, op := range u {
		segs := strings.Split(op.Path, ".")
		switch op.Kind {
		case engine.OpSet:
			if err := setPath(doc, segs, op.Value); err != nil {
				return fmt.Errorf("set %s: %w", op.Path, err)
			}
		case engine.OpUnset:
			unsetPath(doc, segs)
		case engine.OpInc:
			cur, found := getPath(doc, segs)
			var nv any
			if !found {
				nv = op.Value
			} else {
				v, err := addNumbers(cur, op.Value)
				if err != nil {
					return fmt.Errorf("inc %s: %w", op.Path, err)
				}
				nv = v
			}
			if err := setPath(doc, segs, nv); err != nil {
				return fmt.Errorf("inc %s: %w", op.Path, err)
			}
		case engine.OpAddToSet:
			cur, found := getPath(doc, segs)
			var arr []any
			if found {
				a, ok := cur.([]any)
				if !ok {
					return fmt.Errorf("addToSet %s: the field is not an array", op.Path)
				}
				arr = a
			} else {
				arr = []any{}
			}
			for _, it := range op.Items {
				if !containsValue(arr, it) {
					arr = append(arr, it)
				}
			}
			if err := setPath(doc, segs, arr); err != nil {
				return fmt.Errorf("addToSet %s: %w", op.Path, err)
			}
		case engine.OpPull:
			cur, found := getPath(doc, segs)
			if !found {
				continue
			}
			arr, ok := cur.([]any)
			if !ok {
				return fmt.Errorf("pull %s: the field is not an array", op.Path)
			}
			kept := make([]any, 0, len(arr))
			for _, e := range arr {
				if !containsValue(op.Items, e) {
					kept = append(kept, e)
				}
			}
			if err := setPath(doc, segs, kept); err != nil {
				return fmt.Errorf("pull %s: %w", op.Path, err)
			}
		default:
			return fmt.Errorf("unknown update operation %d", op.Kind)
		}
	}
	return nil
}

// getPath returns the value at segs and whether it is present.
func getPath(doc map[string]any, segs []string) (any, bool) {
	var cur any = doc
	for _, s := range segs {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// setPath sets the value at segs, creating missing intermediate objects. An array element is addressed by
// its index; going through a scalar is an error.
func setPath(doc map[string]any, segs []string, v any) error {
	var cur any = doc
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[s] = v
				return nil
			}
			next, ok := c[s]
			if !ok || next == nil {
				next = map[string]any{}
				c[s] = next
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(c) {
				return fmt.Errorf("cannot create field %q in an array", s)
			}
			if last {
				c[idx] = v
				return nil
			}
			if c[idx] == nil {
				c[idx] = map[string]any{}
			}
			cur = c[idx]
		default:
			return fmt.Errorf("cannot create field %q in a %T value", s, cur)
		}
	}
	return nil
}

// unsetPath removes the field at segs (nothing when absent; an array element becomes null, as MongoDB).
func unsetPath(doc map[string]any, segs []string) {
	parent, ok := getPath(doc, segs[:len(segs)-1])
	if !ok {
		return
	}
	last := segs[len(segs)-1]
	switch c := parent.(type) {
	case map[string]any:
		delete(c, last)
	case []any:
		if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(c) {
			c[i] = nil
		}
	}
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
// must include a string _id.
func upsertSeed(f search.Node) (map[string]any, string, error) {
	doc := map[string]any{}
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
			return setPath(doc, strings.Split(n.Path, "."), engine.Normalize(n.Value))
		}
		return fmt.Errorf("docstore: an upsert needs a filter of equalities, not %s", n.Op)
	}
	if err := walk(f); err != nil {
		return nil, "", err
	}
	id, ok := doc["_id"].(string)
	if !ok || id == "" {
		return nil, "", errors.New("docstore: an upsert needs a filter on a string _id")
	}
	return doc, id, nil
}
