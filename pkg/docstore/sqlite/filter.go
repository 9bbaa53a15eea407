package sqlite

import (
	"encoding/json"
	"strings"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// The SQL translation of the filter tree for the SQLite engine. Paths become SQL literals (they were checked by
// engine.CheckPath and come from code and allow-lists), so that the expressions of a query are exactly those of
// the declared indexes; values are always bound parameters.

// sqlPath returns the JSON path literal of a document path: '$."a"."b"'.
func sqlPath(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 8)
	b.WriteString(`'$`)
	for _, seg := range strings.Split(p, ".") {
		b.WriteString(`."`)
		b.WriteString(seg)
		b.WriteByte('"')
	}
	b.WriteByte('\'')
	return b.String()
}

// sqlExpr is the one SQL expression of a path, used by index definitions, filters, sorts and groups alike:
// the column id for _id, json_extract(doc,'$."a"."b"') otherwise.
func sqlExpr(p string) string {
	if p == "_id" {
		return "id"
	}
	return "json_extract(doc," + sqlPath(p) + ")"
}

// sqlTarget is what a scalar condition tests: a value expression and the expression of its JSON type (the
// document's field, or the "value" and "type" columns of json_each for an element of an array path).
type sqlTarget struct {
	expr string
	typ  string
}

// sqlWhere builds a WHERE clause and its arguments.
type sqlWhere struct {
	b      strings.Builder
	args   []any
	arrays map[string]bool
	// cols, when set, writes the condition on a tally's columns (tally.go) rather than on the document: a
	// path without a column is errNotTallied.
	cols map[string]sqlTarget
	err  error
}

// sqlFilter returns the condition of f and its arguments. A path engine.CheckPath refuses is an error (paths
// are written into the SQL text).
func sqlFilter(f search.Node, arrays map[string]bool) (string, []any, error) {
	w := sqlWhere{arrays: arrays}
	w.node(f)
	if w.err != nil {
		return "", nil, w.err
	}
	return w.b.String(), w.args, nil
}

func (w *sqlWhere) arg(v any) {
	w.b.WriteByte('?')
	w.args = append(w.args, v)
}

func (w *sqlWhere) node(n search.Node) {
	switch n.Op {
	case search.OpAll:
		w.b.WriteByte('1')
	case search.OpAnd, search.OpOr:
		if len(n.Children) == 0 {
			if n.Op == search.OpAnd {
				w.b.WriteByte('1')
			} else {
				w.b.WriteByte('0')
			}
			return
		}
		if len(n.Children) == 1 {
			w.node(n.Children[0])
			return
		}
		sep := " AND "
		if n.Op == search.OpOr {
			sep = " OR "
		}
		w.b.WriteByte('(')
		w.join(n.Children, sep)
		w.b.WriteByte(')')
	case search.OpNot:
		// MongoDB's $nor: a condition that is unknown (NULL: a missing field) counts as not matching, so its
		// negation matches.
		if len(n.Children) == 0 {
			w.b.WriteByte('0')
			return
		}
		w.b.WriteString("NOT COALESCE(")
		w.node(search.Node{Op: search.OpOr, Children: n.Children})
		w.b.WriteString(",0)")
	case search.OpEq, search.OpGt, search.OpGte, search.OpLt, search.OpLte, search.OpIn, search.OpExists,
		search.OpLike, search.OpWildcard, search.OpPrefix, search.OpSuffix:
		w.field(n)
	default:
		w.b.WriteByte('0') // as the MongoDB engine: an unknown operator matches nothing
	}
}

// flatJoin is the most operands written as one chain of AND or OR: SQLite parses a chain of n as an
// expression n deep, and refuses one deeper than 1000 (SQLITE_MAX_EXPR_DEPTH).
const flatJoin = 16

// join writes cs separated by sep, longer lists as a balanced tree of parenthesised halves, so that the
// expression's depth grows with the logarithm of the number of operands (a 1000-term _or is about 22 deep).
func (w *sqlWhere) join(cs []search.Node, sep string) {
	if len(cs) <= flatJoin {
		for i, c := range cs {
			if i > 0 {
				w.b.WriteString(sep)
			}
			w.node(c)
		}
		return
	}
	half := len(cs) / 2
	w.b.WriteByte('(')
	w.join(cs[:half], sep)
	w.b.WriteString(")" + sep + "(")
	w.join(cs[half:], sep)
	w.b.WriteByte(')')
}

// field writes a condition on one path: on the field itself, or for an array path on any of its elements
// (json_each yields the one value of a scalar, so a scalar still matches as itself).
func (w *sqlWhere) field(n search.Node) {
	if err := engine.CheckPath(n.Path); err != nil {
		if w.err == nil {
			w.err = err
		}
		w.b.WriteByte('0')
		return
	}
	if w.cols != nil {
		t, ok := w.cols[n.Path]
		if !ok {
			if w.err == nil {
				w.err = errNotTallied
			}
			w.b.WriteByte('0')
			return
		}
		if n.Op == search.OpExists {
			w.b.WriteString(t.expr + " IS NOT NULL")
			return
		}
		w.scalar(n, t)
		return
	}
	if n.Op == search.OpExists {
		w.b.WriteString(sqlExpr(n.Path))
		w.b.WriteString(" IS NOT NULL")
		return
	}
	if !w.arrays[n.Path] || n.Path == "_id" {
		t := sqlTarget{expr: sqlExpr(n.Path), typ: "json_type(doc," + sqlPath(n.Path) + ")"}
		if n.Path == "_id" {
			t.typ = "'text'"
		}
		w.scalar(n, t)
		return
	}
	// A null equality also matches a missing or null array field (not only a null element).
	nullEq := (n.Op == search.OpEq && n.Value == nil) || (n.Op == search.OpIn && hasNil(n.Values)) ||
		((n.Op == search.OpGte || n.Op == search.OpLte) && n.Value == nil)
	if nullEq {
		w.b.WriteString("(" + sqlExpr(n.Path) + " IS NULL OR ")
	}
	w.b.WriteString("EXISTS(SELECT 1 FROM json_each(doc," + sqlPath(n.Path) + ") WHERE ")
	w.scalar(n, sqlTarget{expr: "value", typ: "type"})
	w.b.WriteByte(')')
	if nullEq {
		w.b.WriteByte(')')
	}
}

func hasNil(vs []any) bool {
	for _, v := range vs {
		if v == nil {
			return true
		}
	}
	return false
}

// scalar writes a condition on one value.
func (w *sqlWhere) scalar(n search.Node, t sqlTarget) {
	switch n.Op {
	case search.OpEq:
		w.eq(t, engine.Normalize(n.Value))
	case search.OpGt, search.OpGte, search.OpLt, search.OpLte:
		w.cmp(n.Op, t, engine.Normalize(n.Value))
	case search.OpIn:
		w.in(t, n.Values)
	case search.OpLike:
		w.regex(t, "(?is)"+engine.Quote(engine.Text(n.Value)))
	case search.OpWildcard:
		w.regex(t, `(?is)^`+engine.Wildcard(engine.Text(n.Value))+`\z`)
	case search.OpSuffix:
		w.regex(t, engine.Quote(engine.Text(n.Value))+`\z`)
	case search.OpPrefix:
		// A range on the expression (index-friendly): the strings from s up to s with its last byte that is not
		// 0xff incremented are exactly those starting with s (SQLite compares text bytewise).
		s := engine.Text(n.Value)
		w.b.WriteString("(" + t.expr + " >= ")
		w.arg(s)
		if up, ok := prefixEnd(s); ok {
			w.b.WriteString(" AND " + t.expr + " < ")
			w.arg(up)
		}
		w.b.WriteByte(')')
	}
}

// prefixEnd returns the smallest string greater than every string starting with s, if there is one.
func prefixEnd(s string) (string, bool) {
	b := []byte(s)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// eq writes value == v in MongoDB's sense.
func (w *sqlWhere) eq(t sqlTarget, v any) {
	switch x := v.(type) {
	case nil:
		w.b.WriteString(t.expr + " IS NULL")
	case bool:
		// json_extract gives 1 and 0 for true and false: the type tells them from numbers (and the value keeps
		// an index on the expression usable).
		if x {
			w.b.WriteString("(" + t.expr + " = 1 AND " + t.typ + " = 'true')")
		} else {
			w.b.WriteString("(" + t.expr + " = 0 AND " + t.typ + " = 'false')")
		}
	case int64, float64:
		// 0 and 1 would also equal false and true: the type check is only needed (and paid) for them.
		if f := sqlNum(x); f == 0 || f == 1 {
			w.b.WriteString("(" + t.expr + " = ")
			w.arg(x)
			w.b.WriteString(" AND " + t.typ + " IN ('integer','real'))")
			return
		}
		w.b.WriteString(t.expr + " = ")
		w.arg(x)
	case string:
		w.b.WriteString(t.expr + " = ")
		w.arg(x)
	default: // an object or an array: json_extract returns its minified JSON text
		b, err := json.Marshal(x)
		if err != nil {
			w.b.WriteByte('0')
			return
		}
		w.b.WriteString("(" + t.expr + " = ")
		w.arg(string(b))
		w.b.WriteString(" AND " + t.typ + " IN ('object','array'))")
	}
}

// cmp writes a range condition: numbers compare with numbers only, strings with strings only (SQLite sorts
// NULL < numbers < text, so one more bound on the same expression excludes the other type, and an index on
// the expression serves both bounds).
func (w *sqlWhere) cmp(op search.Op, t sqlTarget, v any) {
	sym := map[search.Op]string{search.OpGt: " > ", search.OpGte: " >= ", search.OpLt: " < ", search.OpLte: " <= "}[op]
	switch x := v.(type) {
	case nil:
		// MongoDB: $gte and $lte null are equality with null; $gt and $lt null match nothing.
		if op == search.OpGte || op == search.OpLte {
			w.b.WriteString(t.expr + " IS NULL")
		} else {
			w.b.WriteByte('0')
		}
	case int64, float64:
		w.b.WriteString("(" + t.expr + sym)
		w.arg(x)
		if op == search.OpGt || op == search.OpGte {
			w.b.WriteString(" AND " + t.expr + " < ''")
		}
		// Bools read as 0 and 1: exclude them when the range holds 0 or 1.
		f := sqlNum(x)
		if (op == search.OpGt && f < 1) || (op == search.OpGte && f <= 1) || (op == search.OpLt && f > 0) || (op == search.OpLte && f >= 0) {
			w.b.WriteString(" AND " + t.typ + " IN ('integer','real')")
		}
		w.b.WriteByte(')')
	case string:
		w.b.WriteString("(" + t.expr + sym)
		w.arg(x)
		if op == search.OpLt || op == search.OpLte {
			w.b.WriteString(" AND " + t.expr + " >= ''")
		}
		w.b.WriteByte(')')
	case bool:
		var n int64
		if x {
			n = 1
		}
		w.b.WriteString("(" + t.expr + sym)
		w.arg(n)
		w.b.WriteString(" AND " + t.typ + " IN ('true','false'))")
	default:
		w.b.WriteByte('0') // objects and arrays are not ordered here
	}
}

// maxInArgs is the longest IN list written with one bound variable per value.
const maxInArgs = 500

// in writes value ∈ vs: one IN list for the numbers and strings (index-friendly), the others as equalities.
func (w *sqlWhere) in(t sqlTarget, vs []any) {
	var plain, other []any
	for _, v := range vs {
		switch x := engine.Normalize(v).(type) {
		case int64, float64:
			if f := sqlNum(x); f == 0 || f == 1 {
				other = append(other, x)
			} else {
				plain = append(plain, x)
			}
		case string:
			plain = append(plain, x)
		default:
			other = append(other, x)
		}
	}
	terms := 0
	w.b.WriteByte('(')
	if len(plain) > maxInArgs {
		// SQLite takes at most 32,766 bound variables: a long list goes as one JSON array.
		js, err := json.Marshal(plain)
		if err != nil {
			w.b.WriteByte('0')
		} else {
			w.b.WriteString(t.expr + " IN (SELECT value FROM json_each(")
			w.arg(string(js))
			w.b.WriteString("))")
		}
		terms++
	} else if len(plain) > 0 {
		w.b.WriteString(t.expr + " IN (")
		for i, v := range plain {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.arg(v)
		}
		w.b.WriteByte(')')
		terms++
	}
	for _, v := range other {
		if terms > 0 {
			w.b.WriteString(" OR ")
		}
		w.eq(t, v)
		terms++
	}
	if terms == 0 {
		w.b.WriteByte('0')
	}
	w.b.WriteByte(')')
}

// regex writes a match of the Go regular expression pattern (only strings match).
func (w *sqlWhere) regex(t sqlTarget, pattern string) {
	// The value goes as a blob: text passed to a Go function stops at its first NUL byte.
	w.b.WriteString(sqliteRegexpFunc + "(")
	w.arg(pattern)
	w.b.WriteString(", CASE WHEN " + t.typ + " = 'text' THEN CAST(" + t.expr + " AS BLOB) END)")
}

// sqlOrder returns the ORDER BY clause of keys ("" without keys). Ascending puts NULL (missing) first, then
// numbers, then strings, as MongoDB.
func sqlOrder(keys []search.SortKey) (string, error) {
	if len(keys) == 0 {
		return "", nil
	}
	for _, k := range keys {
		if err := engine.CheckPath(k.Path); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	b.WriteString(" ORDER BY ")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(sqlExpr(k.Path))
		if k.Desc {
			b.WriteString(" DESC")
		}
	}
	return b.String(), nil
}

func sqlNum(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
