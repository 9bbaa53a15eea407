package mongox

import (
	"fmt"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/openir/platform/pkg/search"
)

// Filter translates a filter tree from search.Parse into a MongoDB query document usable with Find,
// CountDocuments and the like.
//
// It only uses operators that both MongoDB and FerretDB v1.24 (SQLite backend) support: $and, $or, $nor, $eq,
// $gt, $gte, $lt, $lte, $in, $exists and $regex (with $options "i" for the case-insensitive operators). The
// keys of the document are these operators and the nodes' Path values, which come from the allow-list
// (search.Field.Path), never from user input; user values only ever appear as values. Text operands become
// regular expressions in which every character of the user's text is literal (regexp.QuoteMeta), except "*"
// and "?" of OpWildcard.
//
// OpAll, and an OpAnd without children, give the empty document (match everything); an OpOr without children
// and an OpIn without values match nothing. OpNot becomes {$nor: [child]}; OpExists is {path: {$exists: true, $ne: null}}:
// stores write absent optional values as null, and `_contains` asks for a value. A node with an unknown Op matches nothing.
func Filter(n search.Node) bson.D {
	switch n.Op {
	case search.OpAll:
		return bson.D{}
	case search.OpAnd:
		if len(n.Children) == 0 {
			return bson.D{}
		}
		return bson.D{{Key: "$and", Value: filters(n.Children)}}
	case search.OpOr:
		if len(n.Children) == 0 {
			return matchNothing()
		}
		return bson.D{{Key: "$or", Value: filters(n.Children)}}
	case search.OpNot:
		if len(n.Children) == 0 {
			return matchNothing() // not(everything)
		}
		return bson.D{{Key: "$nor", Value: filters(n.Children)}}
	case search.OpEq:
		return field(n.Path, "$eq", n.Value)
	case search.OpGt:
		return field(n.Path, "$gt", n.Value)
	case search.OpGte:
		return field(n.Path, "$gte", n.Value)
	case search.OpLt:
		return field(n.Path, "$lt", n.Value)
	case search.OpLte:
		return field(n.Path, "$lte", n.Value)
	case search.OpIn:
		vals := make(bson.A, 0, len(n.Values))
		vals = append(vals, n.Values...)
		return field(n.Path, "$in", vals)
	case search.OpExists:
		return bson.D{{Key: n.Path, Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: nil}}}}
	case search.OpLike:
		return regex(n.Path, quote(text(n.Value)), true)
	case search.OpWildcard:
		return regex(n.Path, "^"+wildcard(text(n.Value))+"$", true)
	case search.OpPrefix:
		return regex(n.Path, "^"+quote(text(n.Value)), false)
	case search.OpSuffix:
		return regex(n.Path, quote(text(n.Value))+"$", false)
	}
	return matchNothing()
}

// Sort translates sort keys from search.ParseSort into a MongoDB sort document ({path: 1} ascending,
// {path: -1} descending, in order). No keys give the empty document.
func Sort(keys []search.SortKey) bson.D {
	d := make(bson.D, 0, len(keys))
	for _, k := range keys {
		dir := 1
		if k.Desc {
			dir = -1
		}
		d = append(d, bson.E{Key: k.Path, Value: dir})
	}
	return d
}

func filters(nodes []search.Node) bson.A {
	a := make(bson.A, 0, len(nodes))
	for _, c := range nodes {
		a = append(a, Filter(c))
	}
	return a
}

// field returns {path: {op: v}}.
func field(path, op string, v any) bson.D {
	return bson.D{{Key: path, Value: bson.D{{Key: op, Value: v}}}}
}

// matchNothing returns a filter no document matches.
func matchNothing() bson.D {
	return field("_id", "$in", bson.A{})
}

// regex returns {path: {$regex: pattern}}, with $options "i" when fold is set.
func regex(path, pattern string, fold bool) bson.D {
	r := bson.D{{Key: "$regex", Value: pattern}}
	if fold {
		r = append(r, bson.E{Key: "$options", Value: "i"})
	}
	return bson.D{{Key: path, Value: r}}
}

// text returns the string operand of a text node.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// quote returns a regular expression that matches s literally. NUL bytes, which MongoDB refuses in a pattern,
// are written as the escape \x00.
func quote(s string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(s), "\x00", `\x00`)
}

// wildcard returns the regular expression (without anchors) of a wildcard pattern: "*" matches any run of
// characters, "?" any one character, everything else is literal. Runs of "*" are collapsed into one, which
// matches the same strings and keeps backtracking regex engines from blowing up on "a****b".
func wildcard(p string) string {
	var b strings.Builder
	lit := 0 // start of the pending literal run
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '?':
			b.WriteString(quote(p[lit:i]))
			b.WriteString(".")
			lit = i + 1
		case '*':
			b.WriteString(quote(p[lit:i]))
			if i == 0 || p[i-1] != '*' {
				b.WriteString(".*")
			}
			lit = i + 1
		}
	}
	b.WriteString(quote(p[lit:]))
	return b.String()
}
