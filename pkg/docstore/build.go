package docstore

import (
	"errors"
	"fmt"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Filter builders: stores write their own conditions with these, and client searches come from search.Parse;
// both are the same filter tree.

// All matches every document.
func All() search.Node { return search.Node{Op: search.OpAll} }

// ID matches the document with this _id.
func ID(id string) search.Node { return Eq("_id", id) }

// Eq matches documents whose path equals v (for an array path: holds v); nil matches missing or null.
func Eq(path string, v any) search.Node {
	return search.Node{Op: search.OpEq, Path: path, Value: Normalize(v)}
}

// Ne matches documents whose path does not equal v (missing included, as MongoDB's $ne).
func Ne(path string, v any) search.Node { return Not(Eq(path, v)) }

// Gt, Gte, Lt and Lte compare path with v; a number only compares with numbers, a string with strings.
func Gt(path string, v any) search.Node {
	return search.Node{Op: search.OpGt, Path: path, Value: Normalize(v)}
}
func Gte(path string, v any) search.Node {
	return search.Node{Op: search.OpGte, Path: path, Value: Normalize(v)}
}
func Lt(path string, v any) search.Node {
	return search.Node{Op: search.OpLt, Path: path, Value: Normalize(v)}
}
func Lte(path string, v any) search.Node {
	return search.Node{Op: search.OpLte, Path: path, Value: Normalize(v)}
}

// In matches documents whose path equals one of vs; no values match nothing.
func In[T any](path string, vs ...T) search.Node {
	vals := make([]any, len(vs))
	for i, v := range vs {
		vals[i] = Normalize(v)
	}
	return search.Node{Op: search.OpIn, Path: path, Values: vals}
}

// Exists matches documents where path holds a value other than null.
func Exists(path string) search.Node { return search.Node{Op: search.OpExists, Path: path} }

// Missing matches documents where path is absent or null.
func Missing(path string) search.Node { return Not(Exists(path)) }

// Prefix matches strings that start with s (case-sensitive).
func Prefix(path, s string) search.Node {
	return search.Node{Op: search.OpPrefix, Path: path, Value: s}
}

// And matches when every node matches (no node: everything).
func And(nodes ...search.Node) search.Node { return search.Node{Op: search.OpAnd, Children: nodes} }

// Or matches when one node matches (no node: nothing).
func Or(nodes ...search.Node) search.Node { return search.Node{Op: search.OpOr, Children: nodes} }

// Not matches when n does not.
func Not(n search.Node) search.Node { return search.Node{Op: search.OpNot, Children: []search.Node{n}} }

// Sort builds sort keys: "field" or "+field" ascending, "-field" descending.
func Sort(keys ...string) []search.SortKey {
	out := make([]search.SortKey, 0, len(keys))
	for _, k := range keys {
		switch {
		case len(k) > 0 && k[0] == '-':
			out = append(out, search.SortKey{Path: k[1:], Desc: true})
		case len(k) > 0 && k[0] == '+':
			out = append(out, search.SortKey{Path: k[1:]})
		default:
			out = append(out, search.SortKey{Path: k})
		}
	}
	return out
}

// Update is a list of field operations applied together, in MongoDB's sense ($set, $unset, $inc, $addToSet
// with $each, $pull with $in). Two operations on the same path, or on a path and its parent, are refused.
type Update struct {
	ops []engine.Op
	err error
}

// Set sets path to v (a struct or map value is stored as its JSON object).
func (u Update) Set(path string, v any) Update {
	return u.add(engine.Op{Kind: engine.OpSet, Path: path, Value: Normalize(v)})
}

// Unset removes path.
func (u Update) Unset(path string) Update { return u.add(engine.Op{Kind: engine.OpUnset, Path: path}) }

// Inc adds n (an integer or a float) to the number at path (missing counts as 0).
func (u Update) Inc(path string, n any) Update {
	v := Normalize(n)
	switch v.(type) {
	case int64, float64:
	default:
		if u.err == nil {
			u.err = fmt.Errorf("docstore: inc %s by a non-number", path)
		}
	}
	return u.add(engine.Op{Kind: engine.OpInc, Path: path, Value: v})
}

// AddToSet appends each of vs not already present to the array at path (missing: a new array).
func (u Update) AddToSet(path string, vs ...any) Update {
	items := make([]any, len(vs))
	for i, v := range vs {
		items[i] = Normalize(v)
	}
	return u.add(engine.Op{Kind: engine.OpAddToSet, Path: path, Items: items})
}

// Pull removes every element equal to one of vs from the array at path.
func (u Update) Pull(path string, vs ...any) Update {
	items := make([]any, len(vs))
	for i, v := range vs {
		items[i] = Normalize(v)
	}
	return u.add(engine.Op{Kind: engine.OpPull, Path: path, Items: items})
}

// Set starts an update with a Set (and so on for the others).
func Set(path string, v any) Update          { return Update{}.Set(path, v) }
func Unset(path string) Update               { return Update{}.Unset(path) }
func Inc(path string, n any) Update          { return Update{}.Inc(path, n) }
func AddToSet(path string, vs ...any) Update { return Update{}.AddToSet(path, vs...) }
func Pull(path string, vs ...any) Update     { return Update{}.Pull(path, vs...) }

// Empty reports whether u has no operation.
func (u Update) Empty() bool { return len(u.ops) == 0 }

func (u Update) add(op engine.Op) Update {
	if u.err == nil {
		if err := engine.CheckPath(op.Path); err != nil {
			u.err = err
		} else if op.Path == "_id" {
			u.err = errors.New("docstore: _id cannot be updated")
		}
	}
	for _, o := range u.ops {
		if u.err == nil && (o.Path == op.Path || isParent(o.Path, op.Path) || isParent(op.Path, o.Path)) {
			u.err = fmt.Errorf("docstore: update paths %s and %s conflict", o.Path, op.Path)
		}
	}
	ops := make([]engine.Op, len(u.ops), len(u.ops)+1)
	copy(ops, u.ops)
	return Update{ops: append(ops, op), err: u.err}
}

func (u Update) check() error {
	if u.err != nil {
		return u.err
	}
	if len(u.ops) == 0 {
		return errors.New("docstore: empty update")
	}
	return nil
}

func isParent(parent, child string) bool {
	return len(child) > len(parent) && child[:len(parent)] == parent && child[len(parent)] == '.'
}

// Normalize returns v as the engines take it: nil, bool, int64, float64, string, []any or map[string]any
// (structs and other values go through their JSON encoding; integral JSON numbers become int64).
func Normalize(v any) any { return engine.Normalize(v) }
