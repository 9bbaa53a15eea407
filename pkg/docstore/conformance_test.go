package docstore_test

// The conformance suite: one table of documents, filters, sorts, updates and group counts with the results
// MongoDB gives, run on both engines (SQLite through docstoretest; the MongoDB engine through mongotest, on
// the embedded FerretDB or on the MongoDB of MONGOTEST_URI). Where FerretDB itself deviates from MongoDB, the
// row is skipped on FerretDB only, with the reason; the SQLite engine follows MongoDB.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/docstore/mongotest"
	"github.com/openir/platform/pkg/search"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// confEngine is one engine the suite runs on.
type confEngine struct {
	name string
	open func(t *testing.T) *docstore.DB
}

func confEngines() []confEngine {
	return []confEngine{
		{"sqlite", func(t *testing.T) *docstore.DB {
			t.Helper()
			return docstoretest.New(t)
		}},
		{"mongodb", func(t *testing.T) *docstore.DB {
			t.Helper()
			return mongotest.New(t)
		}},
	}
}

// onFerretDB reports whether e is the MongoDB engine running on FerretDB rather than MongoDB.
func onFerretDB(e confEngine) bool { return e.name == "mongodb" && mongotest.FerretDB() }

// skipFerret skips the running row on FerretDB when reason is set.
func skipFerret(t *testing.T, e confEngine, reason string) {
	t.Helper()
	if reason != "" && onFerretDB(e) {
		t.Skip("FerretDB deviates from MongoDB: " + reason)
	}
}

// forEngines runs fn as a subtest per engine, in parallel.
func forEngines(t *testing.T, fn func(t *testing.T, e confEngine, db *docstore.DB)) {
	for _, e := range confEngines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			fn(t, e, e.open(t))
		})
	}
}

func confCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func confColl(t *testing.T, db *docstore.DB, spec docstore.Spec, docs ...string) *docstore.Collection {
	t.Helper()
	ctx := confCtx(t)
	c, err := db.Collection(ctx, spec)
	if err != nil {
		t.Fatalf("collection %s: %v", spec.Name, err)
	}
	for _, d := range docs {
		if err := c.Insert(ctx, json.RawMessage(d)); err != nil {
			t.Fatalf("insert %s: %v", d, err)
		}
	}
	return c
}

// The documents of the filter, sort and group rows. Paths: n (int, double, null, missing, a numeric string),
// s (strings, "" and missing), b (bool, null, missing), o (nested objects), tags and nums (arrays, declared),
// mixed (every kind), t (text with regular-expression metacharacters, non-ASCII, newlines), big (an int64
// beyond 2^53).
var confDocs = []string{
	`{"_id":"a","n":1,"s":"alpha","b":true,"tags":["red","blue"],"nums":[1,10],"o":{"k":"x","m":{"z":1}},"mixed":1,"t":"Hello World","big":9007199254740993}`,
	`{"_id":"b","n":5,"s":"Beta","b":false,"tags":["blue"],"nums":[5],"o":{"k":"y"},"mixed":"1","t":"a.b*c?d"}`,
	`{"_id":"c","n":5.0,"s":"gamma","tags":[],"nums":[2.5],"o":{},"mixed":null,"t":"(x+y)^2 [z] $1 \\d |"}`,
	`{"_id":"d","n":7.5,"s":"alphabet","b":null,"tags":["red"],"mixed":2.5,"t":"ÉCOLE été"}`,
	`{"_id":"e","n":null,"s":"Alpha","tags":null,"mixed":"b","t":"line1\nline2\n"}`,
	`{"_id":"f","n":"5","s":"","o":null,"t":"50% off_now"}`,
	`{"_id":"g","tags":["green","red"],"mixed":-1}`,
}

var confSpec = docstore.Spec{
	Name:   "conf",
	Arrays: []string{"tags", "nums"},
	Indexes: []docstore.Index{
		{Name: "n", Keys: []docstore.Key{docstore.Asc("n")}},
		{Name: "tags", Keys: []docstore.Key{docstore.Asc("tags")}},
		{Name: "ok_s", Keys: []docstore.Key{docstore.Asc("o.k"), docstore.Desc("s")}},
	},
	// Every scalar path is tallied, so that on SQLite each count whose paths a tally holds is the tally's sum
	// (confIDs checks it against the documents found); filters on _id or an array path count the documents.
	Tallies: []docstore.Tally{
		{Name: "nsb", Paths: []string{"n", "s", "b"}},
		{Name: "mixed", Paths: []string{"mixed"}},
		{Name: "o", Paths: []string{"o.k", "o.m.z", "o"}},
		{Name: "t", Paths: []string{"t"}},
		{Name: "big", Paths: []string{"big"}},
	},
}

func like(path, s string) search.Node { return search.Node{Op: search.OpLike, Path: path, Value: s} }
func wild(path, s string) search.Node {
	return search.Node{Op: search.OpWildcard, Path: path, Value: s}
}
func suffix(path, s string) search.Node {
	return search.Node{Op: search.OpSuffix, Path: path, Value: s}
}
func strs(s ...string) []string                { return s }
func allIDs() []string                         { return strs("a", "b", "c", "d", "e", "f", "g") }
func inAny(path string, vs ...any) search.Node { return docstore.In(path, vs...) }

var confFilters = []struct {
	name   string
	f      search.Node
	want   []string
	ferret string // why FerretDB deviates from MongoDB, when it does
}{
	// logic
	{"all", docstore.All(), allIDs(), ""},
	{"and of nothing is everything", docstore.And(), allIDs(), ""},
	{"or of nothing is nothing", docstore.Or(), nil, ""},
	{"not and of nothing", docstore.Not(docstore.And()), nil, ""},
	{"not or of nothing", docstore.Not(docstore.Or()), allIDs(), ""},
	{"and", docstore.And(docstore.Eq("n", 5), docstore.Eq("s", "Beta")), strs("b"), ""},
	{"or", docstore.Or(docstore.Eq("s", "alpha"), docstore.Eq("n", nil)), strs("a", "e", "g"), ""},
	{"not or", docstore.Not(docstore.Or(docstore.Eq("n", 5), docstore.Missing("n"))), strs("a", "d", "f"), ""},
	{"not not", docstore.Not(docstore.Not(docstore.Eq("b", true))), strs("a"), ""},
	{"and of or and not", docstore.And(docstore.Or(docstore.Eq("tags", "red"), docstore.Eq("tags", "green")), docstore.Ne("s", "alpha")), strs("d", "g"), ""},
	{"id", docstore.ID("c"), strs("c"), ""},
	{"unknown id", docstore.ID("zz"), nil, ""},
	{"in ids", docstore.In("_id", "a", "g", "zz"), strs("a", "g"), ""},
	{"the zero node (no operator) matches nothing", search.Node{}, nil, ""},
	{"an unknown operator matches nothing", search.Node{Op: "regex", Path: "s", Value: ".*"}, nil, ""},

	// numbers: int and double are equal, a numeric string is a string; null and missing
	{"eq int matches int and double", docstore.Eq("n", 5), strs("b", "c"), ""},
	{"eq double matches int and double", docstore.Eq("n", 5.0), strs("b", "c"), ""},
	{"eq numeric string", docstore.Eq("n", "5"), strs("f"), ""},
	{"eq null is null or missing", docstore.Eq("n", nil), strs("e", "g"), ""},
	{"ne includes null and missing", docstore.Ne("n", 5), strs("a", "d", "e", "f", "g"), ""},
	{"gt number ignores strings and null", docstore.Gt("n", 1), strs("b", "c", "d"), ""},
	{"gte", docstore.Gte("n", 5), strs("b", "c", "d"), ""},
	{"lt", docstore.Lt("n", 5), strs("a"), ""},
	{"lte double", docstore.Lte("n", 5.0), strs("a", "b", "c"), ""},
	{"gt fraction", docstore.Gt("n", 7.4), strs("d"), ""},
	{"lt fraction", docstore.Lt("n", 7.5), strs("a", "b", "c"), ""},
	{"gt string ignores numbers", docstore.Gt("n", "4"), strs("f"), ""},
	{"in mixed", inAny("n", 5, "x"), strs("b", "c"), ""},
	{"in null", inAny("n", nil, 1), strs("a", "e", "g"), ""},
	{"in nothing", docstore.In[any]("n"), nil, ""},
	{"in double", docstore.In("n", 5.0), strs("b", "c"), ""},
	{"in string", docstore.In("n", "5"), strs("f"), ""},
	{"exists", docstore.Exists("n"), strs("a", "b", "c", "d", "f"), ""},
	{"missing", docstore.Missing("n"), strs("e", "g"), ""},
	{"int64 beyond 2^53 equal", docstore.Eq("big", int64(9007199254740993)), strs("a"), ""},
	{"int64 beyond 2^53 not equal to its neighbour", docstore.Eq("big", int64(9007199254740992)), nil, ""},
	{"int64 beyond 2^53 greater than its neighbour", docstore.Gt("big", int64(9007199254740992)), strs("a"), ""},
	{"mixed null or missing", docstore.Eq("mixed", nil), strs("c", "f"), ""},
	{"mixed exists", docstore.Exists("mixed"), strs("a", "b", "d", "e", "g"), ""},

	// strings compare by bytes
	{"string gt", docstore.Gt("s", "alpha"), strs("c", "d"), ""},
	{"string lt", docstore.Lt("s", "B"), strs("e", "f"), ""},
	{"string gte empty", docstore.Gte("s", ""), strs("a", "b", "c", "d", "e", "f"), ""},
	{"string lte", docstore.Lte("s", "Alpha"), strs("e", "f"), ""},
	{"string eq empty", docstore.Eq("s", ""), strs("f"), ""},

	// bool
	{"bool true", docstore.Eq("b", true), strs("a"), ""},
	{"bool false", docstore.Eq("b", false), strs("b"), ""},
	{"bool ne", docstore.Ne("b", true), strs("b", "c", "d", "e", "f", "g"), ""},
	{"bool exists", docstore.Exists("b"), strs("a", "b"), ""},
	{"bool null", docstore.Eq("b", nil), strs("c", "d", "e", "f", "g"), ""},
	{"bool in", docstore.In("b", true, false), strs("a", "b"), ""},
	{"bool is not a number", docstore.Eq("b", 1), nil, ""},
	{"number is not a bool", docstore.Eq("n", true), nil, ""},

	// nested paths
	{"nested eq", docstore.Eq("o.k", "x"), strs("a"), ""},
	{"deep eq", docstore.Eq("o.m.z", 1), strs("a"), ""},
	{"deep exists", docstore.Exists("o.m.z"), strs("a"), ""},
	{"deep gt", docstore.Gt("o.m.z", 0), strs("a"), ""},
	{"nested missing", docstore.Missing("o.k"), strs("c", "d", "e", "f", "g"), ""},
	{"empty object exists", docstore.Exists("o"), strs("a", "b", "c"), ""},
	{"object null", docstore.Eq("o", nil), strs("d", "e", "f", "g"), ""},

	// array paths (Spec.Arrays): an element matches
	{"array eq", docstore.Eq("tags", "red"), strs("a", "d", "g"), ""},
	{"array eq is case-sensitive", docstore.Eq("tags", "RED"), nil, ""},
	{"array in", docstore.In("tags", "blue", "green"), strs("a", "b", "g"), ""},
	{"array ne: no element equals", docstore.Ne("tags", "red"), strs("b", "c", "e", "f"), ""},
	{"array not in", docstore.Not(docstore.In("tags", "red", "blue")), strs("c", "e", "f"), ""},
	{"array exists (empty array included)", docstore.Exists("tags"), strs("a", "b", "c", "d", "g"), ""},
	{"array missing", docstore.Missing("tags"), strs("e", "f"), ""},
	{"array null", docstore.Eq("tags", nil), strs("e", "f"), ""},
	{"array gt", docstore.Gt("tags", "q"), strs("a", "d", "g"), ""},
	{"array prefix", docstore.Prefix("tags", "gr"), strs("g"), ""},
	{"array like", like("tags", "RE"), strs("a", "d", "g"), ""},
	{"numeric array gte", docstore.Gte("nums", 5), strs("a", "b"), ""},
	{"numeric array lt", docstore.Lt("nums", 2), strs("a"), ""},
	{"numeric array eq double", docstore.Eq("nums", 5.0), strs("b"), ""},
	{"numeric array eq", docstore.Eq("nums", 10), strs("a"), ""},
	// without $elemMatch each condition may hold for a different element: [1,10] is > 1 and < 10
	{"numeric array range per element", docstore.And(docstore.Gt("nums", 1), docstore.Lt("nums", 10)), strs("a", "b", "c"), ""},

	// _like: case-insensitive substring, user text literal
	{"like case-insensitive", like("t", "WORLD"), strs("a"), ""},
	{"like metacharacters * ?", like("t", "b*c?"), strs("b"), ""},
	{"like dot", like("t", "."), strs("b"), ""},
	{"like parentheses plus caret", like("t", "(x+y)^2"), strs("c"), ""},
	{"like brackets dollar backslash pipe", like("t", `[z] $1 \d |`), strs("c"), ""},
	{"like pipe", like("t", "|"), strs("c"), ""},
	{"like non-ASCII folds upper to lower", like("t", "école"), strs("d"), ""},
	{"like non-ASCII folds lower to upper", like("t", "ÉTÉ"), strs("d"), ""},
	{"like percent", like("t", "50%"), strs("f"), ""},
	{"like underscore", like("t", "_"), strs("f"), ""},
	{"like empty matches every string", like("t", ""), strs("a", "b", "c", "d", "e", "f"), ""},
	{"like NUL", like("t", "\x00"), nil, ""},
	{"like only matches strings", like("n", "5"), strs("f"), ""},
	// _wildcard: whole value, case-insensitive, * and ? (also across newlines)
	{"wildcard star suffix", wild("t", "hello*"), strs("a"), ""},
	{"wildcard star prefix", wild("t", "*WORLD"), strs("a"), ""},
	{"wildcard is anchored", wild("t", "hello"), nil, ""},
	{"wildcard literal dot", wild("t", "a.b?c*"), strs("b"), ""},
	{"wildcard question dot", wild("t", "?.b*"), strs("b"), ""},
	{"wildcard question matches newline", wild("t", "line1?line2?"), strs("e"), ""},
	{"wildcard star matches newlines", wild("t", "line1*"), strs("e"), ""},
	{"wildcard star alone", wild("t", "*"), strs("a", "b", "c", "d", "e", "f"), ""},
	{"wildcard non-ASCII", wild("t", "école*"), strs("d"), ""},
	{"wildcard metacharacters", wild("t", "(x+y)^2*"), strs("c"), ""},
	{"wildcard brackets", wild("t", "*[z]*"), strs("c"), ""},
	{"wildcard many stars", wild("t", "h***o*d"), strs("a"), ""},
	// prefix and suffix: case-sensitive
	{"prefix", docstore.Prefix("t", "Hello"), strs("a"), ""},
	{"prefix is case-sensitive", docstore.Prefix("t", "hello"), nil, ""},
	{"prefix dot", docstore.Prefix("t", "a.b"), strs("b"), ""},
	{"prefix metacharacters", docstore.Prefix("t", "(x+"), strs("c"), ""},
	{"prefix empty", docstore.Prefix("t", ""), strs("a", "b", "c", "d", "e", "f"), ""},
	{"prefix non-ASCII", docstore.Prefix("t", "É"), strs("d"), ""},
	{"suffix", suffix("t", "off_now"), strs("f"), ""},
	{"suffix is the very end (not before a final newline)", suffix("t", "line2"), nil, ""},
	{"suffix with newline", suffix("t", "line2\n"), strs("e"), ""},
	{"suffix metacharacters", suffix("t", `\d |`), strs("c"), ""},
	{"suffix is case-sensitive", suffix("t", "WORLD"), nil, ""},
}

func TestConformanceFilters(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, confSpec, confDocs...)
		for _, r := range confFilters {
			t.Run(r.name, func(t *testing.T) {
				skipFerret(t, e, r.ferret)
				got := confIDs(t, c, r.f)
				if !slices.Equal(got, r.want) {
					t.Errorf("filter %s: got %q, want %q", confNode(r.f), got, r.want)
				}
			})
		}
	})
}

// confIDs returns the sorted _ids of the documents f matches, and checks that Count agrees.
func confIDs(t *testing.T, c *docstore.Collection, f search.Node) []string {
	t.Helper()
	ctx := confCtx(t)
	var docs []struct {
		ID string `json:"_id"`
	}
	if err := c.Find(ctx, docstore.Query{Filter: f}, &docs); err != nil {
		t.Fatalf("find %s: %v", confNode(f), err)
	}
	var out []string
	for _, d := range docs {
		out = append(out, d.ID)
	}
	sort.Strings(out)
	n, err := c.Count(ctx, f)
	if err != nil {
		t.Fatalf("count %s: %v", confNode(f), err)
	}
	if n != int64(len(out)) {
		t.Errorf("count %s = %d, find returned %d", confNode(f), n, len(out))
	}
	return out
}

func confNode(n search.Node) string {
	switch n.Op {
	case search.OpAnd, search.OpOr, search.OpNot:
		parts := make([]string, len(n.Children))
		for i, c := range n.Children {
			parts[i] = confNode(c)
		}
		return string(n.Op) + "(" + strings.Join(parts, ", ") + ")"
	case search.OpIn:
		return fmt.Sprintf("%s in %#v", n.Path, n.Values)
	case search.OpAll, search.OpExists:
		return fmt.Sprintf("%s %s", n.Op, n.Path)
	}
	return fmt.Sprintf("%s %s %#v", n.Path, n.Op, n.Value)
}

var confSorts = []struct {
	name          string
	filter        search.Node
	sort          []string
	offset, limit int
	want          []string
	ferret        string
}{
	{"number asc: null and missing first, int and double equal, then strings", docstore.All(), strs("n", "_id"), 0, 0, strs("e", "g", "a", "b", "c", "d", "f"), ""},
	{"number desc", docstore.All(), strs("-n", "_id"), 0, 0, strs("f", "d", "b", "c", "a", "e", "g"), ""},
	{"ties by _id desc", docstore.All(), strs("n", "-_id"), 0, 0, strs("g", "e", "a", "c", "b", "d", "f"), ""},
	{"mixed asc: null/missing, numbers, strings", docstore.All(), strs("mixed", "_id"), 0, 0, strs("c", "f", "g", "a", "d", "b", "e"), ""},
	{"mixed desc", docstore.All(), strs("-mixed", "_id"), 0, 0, strs("e", "b", "d", "a", "g", "c", "f"), ""},
	{"strings by bytes, missing first", docstore.All(), strs("s"), 0, 0, strs("g", "f", "e", "b", "a", "d", "c"), ""},
	{"strings desc, missing last", docstore.All(), strs("-s"), 0, 0, strs("c", "d", "a", "b", "e", "f", "g"), ""},
	{"bool asc: null/missing, false, true; then number desc", docstore.All(), strs("b", "-n", "_id"), 0, 0, strs("f", "d", "c", "e", "g", "b", "a"), ""},
	{"bool desc", docstore.All(), strs("-b", "_id"), 0, 0, strs("a", "b", "c", "d", "e", "f", "g"), ""},
	{"nested asc", docstore.All(), strs("o.k", "_id"), 0, 0, strs("c", "d", "e", "f", "g", "a", "b"), ""},
	{"nested desc", docstore.All(), strs("-o.k", "_id"), 0, 0, strs("b", "a", "c", "d", "e", "f", "g"), ""},
	{"_id desc", docstore.All(), strs("-_id"), 0, 0, strs("g", "f", "e", "d", "c", "b", "a"), ""},
	{"offset and limit", docstore.All(), strs("n", "_id"), 2, 3, strs("a", "b", "c"), ""},
	{"limit past the end", docstore.All(), strs("n", "_id"), 6, 5, strs("f"), ""},
	{"offset past the end", docstore.All(), strs("n", "_id"), 7, 0, nil, ""},
	{"limit only", docstore.All(), strs("-_id"), 0, 2, strs("g", "f"), ""},
	{"filtered", docstore.Exists("n"), strs("-n", "_id"), 0, 2, strs("f", "d"), ""},
	{"filtered on an array, sorted by another path", docstore.Eq("tags", "red"), strs("-mixed"), 0, 0, strs("d", "a", "g"), ""},
}

func TestConformanceSorts(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, confSpec, confDocs...)
		ctx := confCtx(t)
		for _, r := range confSorts {
			t.Run(r.name, func(t *testing.T) {
				skipFerret(t, e, r.ferret)
				var docs []struct {
					ID string `json:"_id"`
				}
				q := docstore.Query{Filter: r.filter, Sort: docstore.Sort(r.sort...), Offset: r.offset, Limit: r.limit}
				if err := c.Find(ctx, q, &docs); err != nil {
					t.Fatalf("find: %v", err)
				}
				var got []string
				for _, d := range docs {
					got = append(got, d.ID)
				}
				if !slices.Equal(got, r.want) {
					t.Errorf("sort %q offset %d limit %d: got %q, want %q", r.sort, r.offset, r.limit, got, r.want)
				}
			})
		}
		t.Run("FindPage adds _id and counts every match", func(t *testing.T) {
			var docs []struct {
				ID string `json:"_id"`
			}
			n, err := c.FindPage(ctx, docstore.Eq("n", 5), search.Page{Limit: 1, Sort: docstore.Sort("-n")}, &docs)
			if err != nil {
				t.Fatal(err)
			}
			if n != 2 || len(docs) != 1 || docs[0].ID != "b" {
				t.Errorf("FindPage: total %d, page %+v; want 2, [b]", n, docs)
			}
		})
		t.Run("FindOne takes the first in order", func(t *testing.T) {
			var d struct {
				ID string `json:"_id"`
			}
			if err := c.FindOne(ctx, docstore.Exists("n"), docstore.Sort("-n", "_id"), &d); err != nil || d.ID != "f" {
				t.Errorf("FindOne = %q, %v; want f", d.ID, err)
			}
			if err := c.FindOne(ctx, docstore.Eq("n", 99), nil, &d); !errors.Is(err, docstore.ErrNotFound) {
				t.Errorf("FindOne of nothing: %v, want ErrNotFound", err)
			}
		})
		t.Run("projection fills the fields asked for", func(t *testing.T) {
			var docs []map[string]any
			if err := c.Find(ctx, docstore.Query{Filter: docstore.ID("a"), Fields: strs("s", "o")}, &docs); err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || docs[0]["_id"] != "a" || docs[0]["s"] != "alpha" || docs[0]["o"] == nil {
				t.Errorf("projection: %v", docs)
			}
		})
	})
}

// The documents read back are what was written: integers stay integers (decodable into int64 fields), the
// order of keys is kept, text is unchanged.
func TestConformanceRoundTrip(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, confSpec, confDocs...)
		ctx := confCtx(t)
		for _, d := range confDocs {
			want := confValue(t, []byte(d)).(map[string]any)
			var raw json.RawMessage
			if err := c.Get(ctx, want["_id"].(string), &raw); err != nil {
				t.Fatalf("get: %v", err)
			}
			if got := confValue(t, raw); !confEqual(got, want) {
				t.Errorf("read back\n %s\nwant\n %s", raw, d)
			}
		}
		var typed struct {
			N   int64 `json:"n"`
			Big int64 `json:"big"`
			O   struct{ M struct{ Z int32 } }
			T   string  `json:"t"`
			F   float64 `json:"mixed"`
		}
		if err := c.Get(ctx, "a", &typed); err != nil {
			t.Fatalf("get into a struct: %v", err)
		}
		if typed.N != 1 || typed.Big != 9007199254740993 || typed.O.M.Z != 1 || typed.T != "Hello World" || typed.F != 1 {
			t.Errorf("typed: %+v", typed)
		}
		var odd struct {
			N float64 `json:"n"`
			T string  `json:"t"`
		}
		if err := c.Get(ctx, "c", &odd); err != nil || odd.N != 5 || odd.T != `(x+y)^2 [z] $1 \d |` {
			t.Errorf("get c: %+v, %v", odd, err)
		}
		if err := c.Get(ctx, "e", &odd); err != nil || odd.T != "line1\nline2\n" {
			t.Errorf("get e: %+v, %v", odd, err)
		}
		if err := c.Get(ctx, "zz", &odd); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("get unknown: %v, want ErrNotFound", err)
		}
		names, err := db.Collections(ctx)
		if err != nil || !slices.Contains(names, "conf") || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "$") }) {
			t.Errorf("Collections = %q, %v (want conf, and no tally table)", names, err)
		}
		if _, err := db.Collection(ctx, docstore.Spec{Name: "a$b"}); err == nil {
			t.Error("a collection name with '$' was taken")
		}
		// Opening a collection again with the same indexes is a no-op.
		if _, err := db.Collection(ctx, confSpec); err != nil {
			t.Errorf("reopen collection: %v", err)
		}
	})
}

// confValue decodes JSON as the engines take it (integral numbers int64, others float64).
func confValue(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return docstore.Normalize(v)
}

// confEqual compares normalized values; a wanted float64 equals a number of the same value, a wanted int64
// only an int64 (integers must stay integers).
func confEqual(got, want any) bool {
	switch w := want.(type) {
	case float64:
		switch g := got.(type) {
		case float64:
			return g == w
		case int64:
			return float64(g) == w
		}
		return false
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !confEqual(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !confEqual(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

var confUpdates = []struct {
	name    string
	doc     string // without _id
	u       docstore.Update
	want    string // without _id; empty: the document is unchanged
	wantErr bool   // the update fails and the document is unchanged
	ferret  string
}{
	{"set", `{"a":1}`, docstore.Set("a", "x"), `{"a":"x"}`, false, ""},
	{"set nested creates parents", `{}`, docstore.Set("p.q.r", 1), `{"p":{"q":{"r":1}}}`, false, ""},
	{"set nested into an object", `{"o":{"k":1}}`, docstore.Set("o.j", 2), `{"o":{"k":1,"j":2}}`, false, ""},
	{"set an object", `{}`, docstore.Set("o", map[string]any{"x": 1, "y": []any{1, "2"}}), `{"o":{"x":1,"y":[1,"2"]}}`, false, ""},
	{"set a struct", `{}`, docstore.Set("o", struct {
		A int    `json:"a"`
		B string `json:"b"`
	}{1, "x"}), `{"o":{"a":1,"b":"x"}}`, false, ""},
	{"set null", `{"a":1}`, docstore.Set("a", nil), `{"a":null}`, false, ""},
	{"set a double", `{"a":1}`, docstore.Set("a", 2.5), `{"a":2.5}`, false, ""},
	{"set an array", `{}`, docstore.Set("arr", []string{"a", "b"}), `{"arr":["a","b"]}`, false, ""},
	{"set text with metacharacters", `{}`, docstore.Set("s", "a\"b\\c\nd é ' $x"), `{"s":"a\"b\\c\nd é ' $x"}`, false, ""},
	{"set under a scalar fails", `{"a":1}`, docstore.Set("a.b", 1), ``, true, ""},
	{"unset", `{"a":1,"b":2}`, docstore.Unset("a"), `{"b":2}`, false, ""},
	{"unset missing", `{"b":2}`, docstore.Unset("a"), ``, false, ""},
	{"unset nested", `{"o":{"k":1,"j":2}}`, docstore.Unset("o.k"), `{"o":{"j":2}}`, false, ""},
	{"unset under a missing parent", `{"b":1}`, docstore.Unset("x.y"), ``, false, ""},
	{"inc int", `{"c":5}`, docstore.Inc("c", 2), `{"c":7}`, false, ""},
	{"inc missing", `{}`, docstore.Inc("c", 3), `{"c":3}`, false, ""},
	{"inc nested missing", `{}`, docstore.Inc("x.y", 1), `{"x":{"y":1}}`, false, ""},
	{"inc int by a double", `{"c":5}`, docstore.Inc("c", 1.5), `{"c":6.5}`, false, ""},
	{"inc double by an int", `{"c":1.5}`, docstore.Inc("c", 1), `{"c":2.5}`, false, ""},
	{"inc negative", `{"c":5}`, docstore.Inc("c", -7), `{"c":-2}`, false, ""},
	{"inc int64 beyond 2^53", `{"c":9007199254740993}`, docstore.Inc("c", 1), `{"c":9007199254740994}`, false, ""},
	{"inc a string fails", `{"c":"x"}`, docstore.Inc("c", 1), ``, true, ""},
	{"add to set", `{"t":["a"]}`, docstore.AddToSet("t", "a", "b", "b"), `{"t":["a","b"]}`, false, ""},
	{"add to set missing", `{}`, docstore.AddToSet("t", "x"), `{"t":["x"]}`, false, ""},
	{"add to set numbers compare as numbers", `{"t":[1]}`, docstore.AddToSet("t", 1.0, 2), `{"t":[1,2]}`, false, ""},
	{"add to set objects", `{"t":[{"a":1}]}`, docstore.AddToSet("t", map[string]any{"a": 1}, map[string]any{"a": 2}), `{"t":[{"a":1},{"a":2}]}`, false, ""},
	{"add to set nested creates parents", `{}`, docstore.AddToSet("o.t", "x"), `{"o":{"t":["x"]}}`, false, ""},
	{"add to set on a scalar fails", `{"t":"x"}`, docstore.AddToSet("t", "y"), ``, true, ""},
	{"pull", `{"t":["a","b","a","c"]}`, docstore.Pull("t", "a", "c"), `{"t":["b"]}`, false, ""},
	{"pull missing", `{"b":1}`, docstore.Pull("t", "a"), ``, false, ""},
	{"pull numbers compare as numbers", `{"t":[1,2,1.0,"1"]}`, docstore.Pull("t", 1), `{"t":[2,"1"]}`, false, ""},
	{"pull everything leaves an empty array", `{"t":["a"]}`, docstore.Pull("t", "a"), `{"t":[]}`, false, ""},
	{"pull on a scalar fails", `{"t":"x"}`, docstore.Pull("t", "x"), ``, true, ""},
	{"several operations", `{"a":1,"c":1,"t":["x"],"d":true,"p":[1,2]}`,
		docstore.Set("a", 2).Inc("c", 1).AddToSet("t", "y").Unset("d").Pull("p", 1), `{"a":2,"c":2,"t":["x","y"],"p":[2]}`, false, ""},
}

func TestConformanceUpdates(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, docstore.Spec{Name: "upd", Arrays: []string{"t", "arr", "o.y", "o.t", "p"}})
		ctx := confCtx(t)
		for i, r := range confUpdates {
			t.Run(r.name, func(t *testing.T) {
				skipFerret(t, e, r.ferret)
				id := fmt.Sprintf("u%d", i)
				start := `{"_id":"` + id + `"}`
				if r.doc != "{}" {
					start = `{"_id":"` + id + `",` + r.doc[1:]
				}
				if err := c.Insert(ctx, json.RawMessage(start)); err != nil {
					t.Fatalf("insert: %v", err)
				}
				ok, err := c.UpdateOne(ctx, docstore.ID(id), r.u, false)
				switch {
				case r.wantErr && err == nil:
					t.Errorf("update succeeded, want an error")
				case !r.wantErr && err != nil:
					t.Fatalf("update: %v", err)
				case !r.wantErr && !ok:
					t.Errorf("update reports no match")
				}
				want := r.want
				if want == "" {
					want = r.doc
				}
				var raw json.RawMessage
				if err := c.Get(ctx, id, &raw); err != nil {
					t.Fatalf("get: %v", err)
				}
				got := confValue(t, raw).(map[string]any)
				delete(got, "_id")
				if !confEqual(got, confValue(t, []byte(want))) {
					t.Errorf("after update: %s, want %s", raw, want)
				}
			})
		}
		t.Run("update of nothing", func(t *testing.T) {
			ok, err := c.UpdateOne(ctx, docstore.ID("none"), docstore.Set("a", 1), false)
			if ok || err != nil {
				t.Errorf("UpdateOne of nothing = %v, %v", ok, err)
			}
			if n, _ := c.Count(ctx, docstore.ID("none")); n != 0 {
				t.Errorf("update without upsert inserted")
			}
		})
		t.Run("update many counts matches, changed or not", func(t *testing.T) {
			m := confColl(t, db, docstore.Spec{Name: "many"},
				`{"_id":"k1","kind":"x"}`, `{"_id":"k2","kind":"x"}`, `{"_id":"k3","kind":"x","flag":true}`, `{"_id":"k4","kind":"y"}`)
			n, err := m.UpdateMany(ctx, docstore.Eq("kind", "x"), docstore.Set("flag", true))
			if n != 3 || err != nil {
				t.Errorf("UpdateMany = %d, %v; want 3", n, err)
			}
			if got := confIDs(t, m, docstore.Eq("flag", true)); !slices.Equal(got, strs("k1", "k2", "k3")) {
				t.Errorf("flagged %q", got)
			}
			if n, err := m.UpdateMany(ctx, docstore.Eq("kind", "z"), docstore.Set("flag", true)); n != 0 || err != nil {
				t.Errorf("UpdateMany of nothing = %d, %v", n, err)
			}
		})
		t.Run("upsert", func(t *testing.T) {
			ok, err := c.UpdateOne(ctx, docstore.And(docstore.ID("up1"), docstore.Eq("kind", "k")), docstore.Set("v", 1), true)
			if !ok || err != nil {
				t.Fatalf("upsert = %v, %v", ok, err)
			}
			confGet(t, c, "up1", `{"_id":"up1","kind":"k","v":1}`)
			for range 2 {
				if ok, err := c.UpdateOne(ctx, docstore.ID("up2"), docstore.Inc("n", 1).AddToSet("t", "a"), true); !ok || err != nil {
					t.Fatalf("upsert = %v, %v", ok, err)
				}
			}
			confGet(t, c, "up2", `{"_id":"up2","n":2,"t":["a"]}`)
			// an upsert of a filter that does not match an existing document's other field: MongoDB inserts
			// nothing new when _id exists but the filter fails; it tries to insert and hits the _id.
			_, err = c.UpdateOne(ctx, docstore.And(docstore.ID("up1"), docstore.Eq("kind", "other")), docstore.Set("v", 2), true)
			if !docstore.IsDuplicate(err) {
				t.Errorf("upsert onto an existing _id with another kind: %v, want a duplicate", err)
			}
			confGet(t, c, "up1", `{"_id":"up1","kind":"k","v":1}`)
		})
	})
}

// confGet checks the stored document.
func confGet(t *testing.T, c *docstore.Collection, id, want string) {
	t.Helper()
	var raw json.RawMessage
	if err := c.Get(confCtx(t), id, &raw); err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	if !confEqual(confValue(t, raw), confValue(t, []byte(want))) {
		t.Errorf("stored %s, want %s", raw, want)
	}
}

func TestConformanceFindOneAndUpdate(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "queue"},
			`{"_id":"q1","prio":2,"state":"ready"}`, `{"_id":"q2","prio":1,"state":"ready"}`,
			`{"_id":"q3","prio":1,"state":"ready"}`, `{"_id":"q4","prio":3,"state":"done"}`)
		type job struct {
			ID    string `json:"_id"`
			Prio  int    `json:"prio"`
			State string `json:"state"`
			Seq   int64  `json:"seq"`
		}
		var j job
		ready := docstore.Eq("state", "ready")
		if err := c.FindOneAndUpdate(ctx, ready, docstore.Sort("prio", "_id"), docstore.Set("state", "taken"), docstore.FindAndUpdate{}, &j); err != nil || j.ID != "q2" || j.State != "taken" {
			t.Errorf("after: %+v, %v; want q2 taken", j, err)
		}
		j = job{}
		if err := c.FindOneAndUpdate(ctx, ready, docstore.Sort("prio", "_id"), docstore.Set("state", "taken"), docstore.FindAndUpdate{ReturnBefore: true}, &j); err != nil || j.ID != "q3" || j.State != "ready" {
			t.Errorf("before: %+v, %v; want q3 ready", j, err)
		}
		confGet(t, c, "q3", `{"_id":"q3","prio":1,"state":"taken"}`)
		if err := c.FindOneAndUpdate(ctx, docstore.Eq("state", "taken"), docstore.Sort("-prio", "-_id"), docstore.Set("state", "x"), docstore.FindAndUpdate{}, nil); err != nil {
			t.Errorf("desc without out: %v", err)
		}
		confGet(t, c, "q3", `{"_id":"q3","prio":1,"state":"x"}`)
		j = job{}
		if err := c.FindOneAndUpdate(ctx, ready, docstore.Sort("-prio"), docstore.Set("state", "taken"), docstore.FindAndUpdate{}, &j); err != nil || j.ID != "q1" {
			t.Errorf("desc: %+v, %v; want q1", j, err)
		}
		if err := c.FindOneAndUpdate(ctx, ready, nil, docstore.Set("state", "taken"), docstore.FindAndUpdate{}, &j); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("nothing ready: %v, want ErrNotFound", err)
		}
		// counters
		for i := int64(1); i <= 2; i++ {
			j = job{}
			if err := c.FindOneAndUpdate(ctx, docstore.ID("cnt"), nil, docstore.Inc("seq", 1), docstore.FindAndUpdate{Upsert: true}, &j); err != nil || j.Seq != i || j.ID != "cnt" {
				t.Errorf("counter %d: %+v, %v", i, j, err)
			}
		}
		j = job{}
		if err := c.FindOneAndUpdate(ctx, docstore.ID("cnt"), nil, docstore.Inc("seq", 1), docstore.FindAndUpdate{Upsert: true, ReturnBefore: true}, &j); err != nil || j.Seq != 2 {
			t.Errorf("counter before: %+v, %v; want 2", j, err)
		}
		confGet(t, c, "cnt", `{"_id":"cnt","seq":3}`)
		if err := c.FindOneAndUpdate(ctx, docstore.ID("cnt2"), nil, docstore.Inc("seq", 1), docstore.FindAndUpdate{Upsert: true, ReturnBefore: true}, &j); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("upsert returning before: %v, want ErrNotFound", err)
		}
		confGet(t, c, "cnt2", `{"_id":"cnt2","seq":1}`)
	})
}

func TestConformanceReplaceDelete(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "rd"},
			`{"_id":"r1","a":1,"b":2}`, `{"_id":"k1","kind":"x"}`, `{"_id":"k2","kind":"x"}`, `{"_id":"k3","kind":"y"}`)
		if err := c.Replace(ctx, json.RawMessage(`{"_id":"r1","c":3}`), false); err != nil {
			t.Fatalf("replace: %v", err)
		}
		confGet(t, c, "r1", `{"_id":"r1","c":3}`)
		if err := c.Replace(ctx, json.RawMessage(`{"_id":"r9","c":3}`), false); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("replace unknown: %v, want ErrNotFound", err)
		}
		if n, _ := c.Count(ctx, docstore.ID("r9")); n != 0 {
			t.Errorf("replace without upsert inserted")
		}
		if err := c.Replace(ctx, json.RawMessage(`{"_id":"r9","c":4}`), true); err != nil {
			t.Errorf("replace upsert: %v", err)
		}
		confGet(t, c, "r9", `{"_id":"r9","c":4}`)
		if err := c.Insert(ctx, json.RawMessage(`{"_id":"r9"}`)); !docstore.IsDuplicate(err) {
			t.Errorf("insert of an existing _id: %v, want a duplicate", err)
		}
		if ok, err := c.DeleteOne(ctx, docstore.Eq("kind", "x")); !ok || err != nil {
			t.Errorf("delete one = %v, %v", ok, err)
		}
		if n, _ := c.Count(ctx, docstore.Eq("kind", "x")); n != 1 {
			t.Errorf("delete one left %d of 2", n)
		}
		if ok, err := c.DeleteOne(ctx, docstore.Eq("kind", "z")); ok || err != nil {
			t.Errorf("delete one of nothing = %v, %v", ok, err)
		}
		if n, err := c.DeleteMany(ctx, docstore.In("kind", "x", "y")); n != 2 || err != nil {
			t.Errorf("delete many = %d, %v; want 2", n, err)
		}
		if n, err := c.DeleteMany(ctx, docstore.All()); n != 2 || err != nil {
			t.Errorf("delete all = %d, %v; want 2", n, err)
		}
		if n, _ := c.Count(ctx, docstore.All()); n != 0 {
			t.Errorf("%d left", n)
		}
	})
}

func TestConformanceInsertMany(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "im"}, `{"_id":"x1","v":"old"}`)
		res, err := c.InsertMany(ctx, []any{
			json.RawMessage(`{"_id":"x0","v":0}`),
			json.RawMessage(`{"_id":"x1","v":1}`),
			json.RawMessage(`{"_id":"x2","v":2}`),
			json.RawMessage(`{"_id":"x2","v":"second"}`),
			map[string]any{"_id": "x3", "v": 3},
		})
		if err != nil {
			t.Fatalf("insert many: %v", err)
		}
		wantDup := []bool{false, true, false, true, false}
		if len(res) != len(wantDup) {
			t.Fatalf("%d results for 5 documents", len(res))
		}
		for i, w := range wantDup {
			if w != docstore.IsDuplicate(res[i]) || (!w && res[i] != nil) {
				t.Errorf("document %d: %v, want duplicate %v", i, res[i], w)
			}
		}
		confGet(t, c, "x1", `{"_id":"x1","v":"old"}`)
		confGet(t, c, "x2", `{"_id":"x2","v":2}`)
		if got := confIDs(t, c, docstore.All()); !slices.Equal(got, strs("x0", "x1", "x2", "x3")) {
			t.Errorf("stored %q", got)
		}
		if res, err := c.InsertMany(ctx, nil); res != nil || err != nil {
			t.Errorf("insert many of nothing = %v, %v", res, err)
		}
	})
}

// TestConformanceExists: whether a document matches, on an empty and a filled collection.
func TestConformanceExists(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		empty := confColl(t, db, docstore.Spec{Name: "ex_empty"})
		c := confColl(t, db, confSpec, confDocs...)
		for _, tt := range []struct {
			c    *docstore.Collection
			f    search.Node
			want bool
		}{
			{empty, docstore.All(), false},
			{c, docstore.All(), true},
			{c, docstore.Eq("s", "gamma"), true},
			{c, docstore.Eq("s", "delta"), false},
			{c, docstore.Eq("tags", "green"), true},
		} {
			if got, err := tt.c.Exists(ctx, tt.f); err != nil || got != tt.want {
				t.Errorf("%s: Exists(%s) = %v, %v; want %v", tt.c.Name(), confNode(tt.f), got, err, tt.want)
			}
		}
	})
}

// TestConformanceInsertAll: documents of several collections stored in order by one call, a duplicate being
// that document's result while the others are stored; on the embedded engine (one transaction is of one
// file) a collection of another database is refused.
func TestConformanceInsertAll(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		reports := confColl(t, db, docstore.Spec{Name: "ia_reports"}, `{"_id":"j0","r":"old"}`)
		jobs := confColl(t, db, docstore.Spec{Name: "ia_jobs"})
		res, err := db.InsertAll(ctx,
			docstore.Insertion{Coll: reports, Doc: json.RawMessage(`{"_id":"j0","r":"new"}`)},
			docstore.Insertion{Coll: jobs, Doc: map[string]any{"_id": "j0", "status": "Success"}},
			docstore.Insertion{Coll: reports, Doc: json.RawMessage(`{"_id":"j1","r":1}`)},
			docstore.Insertion{Coll: jobs, Doc: json.RawMessage(`{"_id":"j1","status":"Failure"}`)})
		if err != nil {
			t.Fatalf("insert all: %v", err)
		}
		wantDup := []bool{true, false, false, false}
		if len(res) != len(wantDup) {
			t.Fatalf("%d results for 4 documents", len(res))
		}
		for i, w := range wantDup {
			if w != docstore.IsDuplicate(res[i]) || (!w && res[i] != nil) {
				t.Errorf("document %d: %v, want duplicate %v", i, res[i], w)
			}
		}
		confGet(t, reports, "j0", `{"_id":"j0","r":"old"}`)
		confGet(t, reports, "j1", `{"_id":"j1","r":1}`)
		confGet(t, jobs, "j0", `{"_id":"j0","status":"Success"}`)
		confGet(t, jobs, "j1", `{"_id":"j1","status":"Failure"}`)

		other := confColl(t, e.open(t), docstore.Spec{Name: "ia_other"})
		if _, err := db.InsertAll(ctx, docstore.Insertion{Coll: other, Doc: map[string]any{"_id": "x"}}); err == nil && e.name != "mongodb" {
			t.Error("a collection of another database was taken")
		}
	})
}

func TestConformanceUnique(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		spec := docstore.Spec{Name: "users", Indexes: []docstore.Index{
			{Name: "email", Keys: []docstore.Key{docstore.Asc("email")}, Unique: true},
			{Name: "org_name", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("name")}, Unique: true},
		}}
		c := confColl(t, db, spec,
			`{"_id":"1","email":"a","org":"o1","name":"n"}`,
			`{"_id":"3","email":"b","org":"o2","name":"n"}`)
		dup := func(what string, err error) {
			t.Helper()
			if !docstore.IsDuplicate(err) {
				t.Errorf("%s: %v, want a duplicate", what, err)
			}
		}
		dup("insert same email", c.Insert(ctx, json.RawMessage(`{"_id":"2","email":"a","org":"o9","name":"m"}`)))
		dup("insert same _id", c.Insert(ctx, json.RawMessage(`{"_id":"1","email":"z","org":"o9","name":"m"}`)))
		dup("insert same compound key", c.Insert(ctx, json.RawMessage(`{"_id":"4","email":"c","org":"o1","name":"n"}`)))
		_, err := c.UpdateOne(ctx, docstore.ID("3"), docstore.Set("email", "a"), false)
		dup("update onto an existing email", err)
		_, err = c.UpdateMany(ctx, docstore.ID("3"), docstore.Set("org", "o1"))
		dup("update many onto an existing compound key", err)
		dup("replace onto an existing email", c.Replace(ctx, json.RawMessage(`{"_id":"3","email":"a","org":"o2","name":"n"}`), false))
		dup("find one and update onto an existing email", c.FindOneAndUpdate(ctx, docstore.ID("3"), nil, docstore.Set("email", "a"), docstore.FindAndUpdate{}, nil))
		_, err = c.UpdateOne(ctx, docstore.ID("5"), docstore.Set("email", "a").Set("org", "o5").Set("name", "n"), true)
		dup("upsert with an existing email", err)
		confGet(t, c, "3", `{"_id":"3","email":"b","org":"o2","name":"n"}`)
		res, err := c.InsertMany(ctx, []any{
			json.RawMessage(`{"_id":"6","email":"d","org":"o6","name":"n"}`),
			json.RawMessage(`{"_id":"7","email":"a","org":"o7","name":"n"}`),
			json.RawMessage(`{"_id":"8","email":"d","org":"o8","name":"n"}`),
		})
		if err != nil || len(res) != 3 || res[0] != nil || !docstore.IsDuplicate(res[1]) || !docstore.IsDuplicate(res[2]) {
			t.Errorf("insert many with unique violations: %v, %v; want [nil dup dup]", res, err)
		}
		if got := confIDs(t, c, docstore.All()); !slices.Equal(got, strs("1", "3", "6")) {
			t.Errorf("stored %q", got)
		}
		t.Run("missing key counts as null", func(t *testing.T) {
			skipFerret(t, e, "its unique indexes (SQLite) take each missing value as distinct; MongoDB indexes a missing field as null, so a second document without it is a duplicate")
			if err := c.Insert(ctx, json.RawMessage(`{"_id":"9","org":"o9","name":"n"}`)); err != nil {
				t.Fatalf("first without email: %v", err)
			}
			dup("second document without email", c.Insert(ctx, json.RawMessage(`{"_id":"10","org":"o10","name":"n"}`)))
			dup("second document with a null email", c.Insert(ctx, json.RawMessage(`{"_id":"11","email":null,"org":"o11","name":"n"}`)))
		})
	})
}

var confGroups = []struct {
	name   string
	filter search.Node
	path   string
	limit  int
	want   []docstore.Group
	ferret string
}{
	{"scalar: null and missing together, int and double together, ties by value", docstore.All(), "n", 0, []docstore.Group{{Value: nil, Count: 2}, {Value: int64(5), Count: 2}, {Value: int64(1), Count: 1}, {Value: 7.5, Count: 1}, {Value: "5", Count: 1}}, ""},
	{"limit", docstore.All(), "n", 1, []docstore.Group{{Value: nil, Count: 2}}, ""},
	{"array path: each element; missing, null and empty array are null", docstore.All(), "tags", 0, []docstore.Group{{Value: nil, Count: 3}, {Value: "red", Count: 3}, {Value: "blue", Count: 2}, {Value: "green", Count: 1}}, ""},
	{"array path filtered and limited", docstore.Exists("s"), "tags", 2, []docstore.Group{{Value: nil, Count: 3}, {Value: "blue", Count: 2}}, ""},
	{"numeric array path", docstore.All(), "nums", 0, []docstore.Group{{Value: nil, Count: 4}, {Value: int64(1), Count: 1}, {Value: 2.5, Count: 1}, {Value: int64(5), Count: 1}, {Value: int64(10), Count: 1}}, ""},
	{"nested path", docstore.All(), "o.k", 0, []docstore.Group{{Value: nil, Count: 5}, {Value: "x", Count: 1}, {Value: "y", Count: 1}}, ""},
	{"bool: false before true", docstore.All(), "b", 0, []docstore.Group{{Value: nil, Count: 5}, {Value: false, Count: 1}, {Value: true, Count: 1}}, ""},
	{"mixed: numbers before strings", docstore.All(), "mixed", 0, []docstore.Group{{Value: nil, Count: 2}, {Value: int64(-1), Count: 1}, {Value: int64(1), Count: 1}, {Value: 2.5, Count: 1}, {Value: "1", Count: 1}, {Value: "b", Count: 1}}, ""},
	{"nothing matches", docstore.Eq("n", "zzz"), "n", 0, nil, ""},
}

func TestConformanceGroupCount(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, confSpec, confDocs...)
		ctx := confCtx(t)
		for _, r := range confGroups {
			t.Run(r.name, func(t *testing.T) {
				skipFerret(t, e, r.ferret)
				got, err := c.GroupCount(ctx, r.filter, r.path, r.limit)
				if err != nil {
					t.Fatalf("group count: %v", err)
				}
				ok := len(got) == len(r.want)
				for i := 0; ok && i < len(got); i++ {
					ok = got[i].Count == r.want[i].Count && confEqual(docstore.Normalize(got[i].Value), r.want[i].Value)
					if w, isInt := r.want[i].Value.(int64); isInt && ok {
						// 5 and 5.0 are one group, which may report either
						ok = confEqual(docstore.Normalize(got[i].Value), float64(w))
					}
				}
				if !ok {
					t.Errorf("group %s by %s limit %d: got %v, want %v", confNode(r.filter), r.path, r.limit, got, r.want)
				}
			})
		}
	})
}

// confWait waits for wg, failing the test after a deadline.
func confWait(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("workers did not finish within 2 minutes")
	}
}

// Counters: 200 concurrent increments of one document all count, and 200 concurrent find-one-and-update
// increments each see a distinct value.
func TestConcurrencyCounter(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "counters"}, `{"_id":"seq","n":0}`)
		const n = 200
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		seen := make(chan int64, n)
		for range n {
			wg.Add(2)
			go func() {
				defer wg.Done()
				if _, err := c.UpdateOne(ctx, docstore.ID("inc"), docstore.Inc("n", 1), true); err != nil {
					errs <- err
				}
			}()
			go func() {
				defer wg.Done()
				var d struct {
					N int64 `json:"n"`
				}
				if err := c.FindOneAndUpdate(ctx, docstore.ID("seq"), nil, docstore.Inc("n", 1), docstore.FindAndUpdate{}, &d); err != nil {
					errs <- err
					return
				}
				seen <- d.N
			}()
		}
		confWait(t, &wg)
		close(errs)
		close(seen)
		for err := range errs {
			t.Errorf("increment: %v", err)
		}
		confGet(t, c, "inc", `{"_id":"inc","n":200}`)
		confGet(t, c, "seq", `{"_id":"seq","n":200}`)
		var vals []int64
		for v := range seen {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		for i, v := range vals {
			if v != int64(i+1) {
				t.Fatalf("find-one-and-update increments returned %v, want 1..200 each once", vals)
			}
		}
	})
}

// Queue claims: 40 jobs claimed by 3 groups of 4 concurrent workers with find-one-and-update: each job is
// claimed exactly once.
func TestConcurrencyClaims(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "jobs", Indexes: []docstore.Index{
			{Name: "state_created", Keys: []docstore.Key{docstore.Asc("state"), docstore.Asc("created")}}}})
		const jobs = 40
		docs := make([]any, jobs)
		for i := range docs {
			docs[i] = map[string]any{"_id": fmt.Sprintf("j%02d", i), "state": "waiting", "created": i}
		}
		if res, err := c.InsertMany(ctx, docs); err != nil || slices.ContainsFunc(res, func(e error) bool { return e != nil }) {
			t.Fatalf("insert jobs: %v %v", res, err)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			claimed = map[string][]string{}
			errs    []error
		)
		for g := range 3 {
			for w := range 4 {
				wg.Add(1)
				worker := fmt.Sprintf("g%d-w%d", g, w)
				go func() {
					defer wg.Done()
					for {
						var j struct {
							ID    string `json:"_id"`
							State string `json:"state"`
							By    string `json:"by"`
						}
						err := c.FindOneAndUpdate(ctx, docstore.Eq("state", "waiting"), docstore.Sort("created"),
							docstore.Set("state", "running").Set("by", worker), docstore.FindAndUpdate{}, &j)
						mu.Lock()
						switch {
						case errors.Is(err, docstore.ErrNotFound):
							mu.Unlock()
							return
						case err != nil:
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						if j.State != "running" || j.By != worker {
							errs = append(errs, fmt.Errorf("%s claimed %+v", worker, j))
						}
						claimed[j.ID] = append(claimed[j.ID], worker)
						mu.Unlock()
					}
				}()
			}
		}
		confWait(t, &wg)
		for _, err := range errs {
			t.Errorf("claim: %v", err)
		}
		if len(claimed) != jobs {
			t.Errorf("%d jobs claimed, want %d", len(claimed), jobs)
		}
		for id, by := range claimed {
			if len(by) != 1 {
				t.Errorf("job %s claimed by %q", id, by)
			}
		}
		if n, _ := c.Count(ctx, docstore.Eq("state", "running")); n != jobs {
			t.Errorf("%d running, want %d", n, jobs)
		}
	})
}

// TestConformanceTallies: the counts stay exact through every kind of write (on SQLite a tallied count is
// the tally's sum, kept by triggers; on MongoDB the documents are counted): after each step every filter's
// Count equals the number of documents Find returns and the number the step leaves. A tally declared on a
// collection that already holds documents is filled from them, and a changed declaration rebuilds it.
func TestConformanceTallies(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		spec := docstore.Spec{Name: "tal", Tallies: []docstore.Tally{{Name: "os", Paths: []string{"org", "status"}}}}
		// Documents stored before the tally is declared.
		confColl(t, db, docstore.Spec{Name: "tal"},
			`{"_id":"p1","org":"A","status":"Waiting"}`, `{"_id":"p2","org":"A","status":"Success","n":1}`)
		c := confColl(t, db, spec)
		filters := []struct {
			f    search.Node
			name string
		}{
			{docstore.All(), "all"},
			{docstore.Eq("org", "A"), "org A"},
			{docstore.And(docstore.Eq("org", "A"), docstore.Eq("status", "Success")), "A Success"},
			{docstore.And(docstore.Eq("org", "A"), docstore.Ne("status", "Deleted")), "A not Deleted"},
			{docstore.Eq("status", nil), "status null or missing"},
			{docstore.Missing("status"), "status missing"},
			{docstore.Eq("status", 1), "status 1"},
			{docstore.In("status", "Waiting", "InProgress"), "queued"},
			{docstore.Eq("org", "B"), "org B"},
		}
		check := func(step string, want map[string]int) {
			t.Helper()
			for _, f := range filters {
				ids := confIDs(t, c, f.f) // Count against Find
				if w, ok := want[f.name]; ok && len(ids) != w {
					t.Errorf("%s: %s matches %d documents %q, want %d", step, f.name, len(ids), ids, w)
				}
			}
		}
		check("filled from the stored documents", map[string]int{"all": 2, "org A": 2, "A Success": 1, "queued": 1})

		if err := c.Insert(ctx, json.RawMessage(`{"_id":"i1","org":"A","status":"Waiting"}`)); err != nil {
			t.Fatal(err)
		}
		res, err := c.InsertMany(ctx, []any{
			json.RawMessage(`{"_id":"i1","org":"A","status":"Success"}`), // a duplicate: not stored, not counted
			json.RawMessage(`{"_id":"i2","org":"B","status":null}`),
			json.RawMessage(`{"_id":"i3","org":"B"}`),
			json.RawMessage(`{"_id":"i4","org":"B","status":1.0}`),
		})
		if err != nil || !docstore.IsDuplicate(res[0]) || errors.Join(res[1:]...) != nil {
			t.Fatalf("insert many: %v %v", res, err)
		}
		check("inserts", map[string]int{"all": 6, "org A": 3, "queued": 2, "org B": 3, "status null or missing": 2, "status missing": 2, "status 1": 1})

		if _, err := c.UpdateOne(ctx, docstore.ID("i1"), docstore.Set("status", "InProgress"), false); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateOne(ctx, docstore.ID("p2"), docstore.Inc("n", 1), false); err != nil { // tallied paths unchanged
			t.Fatal(err)
		}
		if n, err := c.UpdateMany(ctx, docstore.Eq("org", "B"), docstore.Set("status", "Success")); err != nil || n != 3 {
			t.Fatalf("update many: %d %v", n, err)
		}
		check("updates", map[string]int{"all": 6, "A Success": 1, "queued": 2, "org B": 3, "status null or missing": 0})

		if _, err := c.UpdateOne(ctx, docstore.ID("i3"), docstore.Unset("status"), false); err != nil {
			t.Fatal(err)
		}
		var claimed map[string]any
		if err := c.FindOneAndUpdate(ctx, docstore.Eq("status", "Waiting"), docstore.Sort("_id"), docstore.Set("status", "Success").Set("org", "C"),
			docstore.FindAndUpdate{}, &claimed); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateOne(ctx, docstore.ID("u1"), docstore.Set("org", "A").Set("status", "Waiting"), true); err != nil { // upsert
			t.Fatal(err)
		}
		check("unset, find-and-update, upsert", map[string]int{"all": 7, "org A": 3, "status missing": 1, "queued": 2})

		if err := c.Replace(ctx, json.RawMessage(`{"_id":"u1","org":"B","status":"Deleted"}`), false); err != nil {
			t.Fatal(err)
		}
		if err := c.Replace(ctx, json.RawMessage(`{"_id":"r1","org":"A","status":"Deleted"}`), true); err != nil {
			t.Fatal(err)
		}
		check("replaces", map[string]int{"all": 8, "org A": 3, "A not Deleted": 2, "org B": 4})

		if _, err := c.DeleteOne(ctx, docstore.ID("i1")); err != nil {
			t.Fatal(err)
		}
		if n, err := c.DeleteMany(ctx, docstore.Eq("org", "B")); err != nil || n != 4 {
			t.Fatalf("delete many: %d %v", n, err)
		}
		check("deletes", map[string]int{"all": 3, "org A": 2, "org B": 0, "queued": 0})

		// Declarations neither engine takes.
		for _, bad := range [][]docstore.Tally{
			{{Name: "", Paths: []string{"org"}}},
			{{Name: "x", Paths: nil}},
			{{Name: "x", Paths: []string{"_id"}}},
			{{Name: "x", Paths: []string{"tags"}}},
			{{Name: "x", Paths: []string{"org", "org"}}},
			{{Name: "x", Paths: []string{"org"}}, {Name: "x", Paths: []string{"status"}}},
			{{Name: "a$b", Paths: []string{"org"}}},
			{{Name: "x", Paths: []string{"$org"}}},
		} {
			if _, err := db.Collection(ctx, docstore.Spec{Name: "tal_bad", Arrays: []string{"tags"}, Tallies: bad}); err == nil {
				t.Errorf("tallies %+v were taken", bad)
			}
		}
		// A changed declaration: the tally is rebuilt from the documents.
		c = confColl(t, db, docstore.Spec{Name: "tal", Tallies: []docstore.Tally{{Name: "os", Paths: []string{"status", "org"}}}})
		check("rebuilt", map[string]int{"all": 3, "org A": 2, "A Success": 1})
		if err := c.Insert(ctx, json.RawMessage(`{"_id":"z","org":"A","status":"Success"}`)); err != nil {
			t.Fatal(err)
		}
		check("after the rebuild", map[string]int{"all": 4, "A Success": 2})
	})
}
