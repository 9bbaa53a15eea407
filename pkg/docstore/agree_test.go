package docstore_test

// Conformance rows for what the engines once did differently (issue 31): a document keeps its encoding through
// updates (the order of its objects' keys, which equality on an object depends on, and its integers of any
// size), both engines refuse the same bad paths with ErrBadPath, Spec.Arrays is checked on every write
// (ErrUndeclaredArray), and text patterns that only MongoDB's PCRE could get wrong. Like the rest of the suite,
// each runs on both engines.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// rawAt returns the JSON text at path (dot-separated object keys) of a document, as the engine returned it.
func rawAt(t *testing.T, doc []byte, path string) json.RawMessage {
	t.Helper()
	cur := json.RawMessage(doc)
	for _, seg := range strings.Split(path, ".") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(cur, &m); err != nil {
			t.Fatalf("%s: %v in %s", path, err, doc)
		}
		v, ok := m[seg]
		if !ok {
			t.Fatalf("%s: no %q in %s", path, seg, doc)
		}
		cur = v
	}
	return cur
}

// keysOf returns the names of an object's members in their order.
func keysOf(t *testing.T, obj json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", obj)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func getRaw(t *testing.T, c *docstore.Collection, id string) []byte {
	t.Helper()
	var raw json.RawMessage
	if err := c.Get(confCtx(t), id, &raw); err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return raw
}

// The writes that leave the objects under test alone: after each, equality on an object matches the same
// documents, and the objects' keys keep their order.
var keptWrites = []struct {
	name string
	do   func(ctx context.Context, c *docstore.Collection) error
}{
	{"set another field", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Set("x", 1))
		return err
	}},
	{"increment another field", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Inc("n", 1))
		return err
	}},
	{"add to a declared array", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.AddToSet("tags", "t", map[string]any{"z": 1, "a": 2}))
		return err
	}},
	{"pull from a declared array", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Pull("tags", "t"))
		return err
	}},
	{"unset another field", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Unset("x"))
		return err
	}},
	{"set a field beside the object, inside its parent", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateOne(ctx, docstore.ID("k3"), docstore.Set("p.w", "v"), false)
		return err
	}},
	{"find one and update", func(ctx context.Context, c *docstore.Collection) error {
		return c.FindOneAndUpdate(ctx, docstore.ID("k1"), nil, docstore.Set("y", "z").Inc("n", 2), docstore.FindAndUpdate{}, nil)
	}},
	{"several fields at once", func(ctx context.Context, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Set("s", "x").Set("b", true).Unset("y"))
		return err
	}},
}

// TestConformanceObjectsKeptThroughUpdates: an update does not change the encoding of what it does not touch,
// so equality on an object (which, as in MongoDB, depends on the order of its keys) matches the same documents
// before and after an unrelated update. (The SQLite engine used to write the whole document again with its keys
// sorted: k1 then matched after any update.)
func TestConformanceObjectsKeptThroughUpdates(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "kept", Arrays: []string{"tags"}},
			`{"_id":"k1","o":{"b":1,"a":2},"tags":["x"],"n":1}`,
			`{"_id":"k2","o":{"a":2,"b":1},"tags":[],"n":2}`,
			`{"_id":"k3","p":{"q":{"z":1,"y":{"d":1,"c":2}}},"n":3}`)
		filters := []struct {
			name string
			f    search.Node
			want []string
		}{
			// a map's keys go in sorted order on both engines: {"a":2,"b":1}
			{"object equal with its keys in order", docstore.Eq("o", map[string]any{"b": 1, "a": 2}), strs("k2")},
			{"object in", docstore.In("o", map[string]any{"a": 2, "b": 1}), strs("k2")},
			{"object not equal", docstore.Ne("o", map[string]any{"a": 2, "b": 1}), strs("k1", "k3")},
			{"nested object with keys out of order", docstore.Eq("p.q", map[string]any{"y": map[string]any{"c": 2, "d": 1}, "z": 1}), nil},
			{"deeper object with keys out of order", docstore.Eq("p.q.y", map[string]any{"c": 2, "d": 1}), nil},
		}
		check := func(step string) {
			t.Helper()
			for _, r := range filters {
				if got := confIDs(t, c, r.f); !slices.Equal(got, r.want) {
					t.Errorf("%s: %s matches %q, want %q", step, r.name, got, r.want)
				}
			}
			if got := keysOf(t, rawAt(t, getRaw(t, c, "k1"), "o")); !slices.Equal(got, strs("b", "a")) {
				t.Errorf("%s: k1's o has the keys %q, want [b a] as written", step, got)
			}
			k3 := getRaw(t, c, "k3")
			if got := keysOf(t, rawAt(t, k3, "p.q")); !slices.Equal(got, strs("z", "y")) {
				t.Errorf("%s: k3's p.q has the keys %q, want [z y] as written", step, got)
			}
			if got := keysOf(t, rawAt(t, k3, "p.q.y")); !slices.Equal(got, strs("d", "c")) {
				t.Errorf("%s: k3's p.q.y has the keys %q, want [d c] as written", step, got)
			}
		}
		check("inserted")
		for _, w := range keptWrites {
			if err := w.do(ctx, c); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			check("after " + w.name)
		}
	})
}

// TestConformanceUpdateFieldOrder: the fields an update adds to an object come in MongoDB's order (by name,
// numeric names by value), whatever the order of the operations.
func TestConformanceUpdateFieldOrder(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		c := confColl(t, db, docstore.Spec{Name: "order"}, `{"_id":"f1","m":{"k":0}}`)
		if _, err := c.UpdateOne(ctx, docstore.ID("f1"), docstore.Set("n.z", 1).Set("m.b", 2).Set("n.a", 3).Set("m.a", 4), false); err != nil {
			t.Fatal(err)
		}
		raw := getRaw(t, c, "f1")
		if got := keysOf(t, rawAt(t, raw, "n")); !slices.Equal(got, strs("a", "z")) {
			t.Errorf("n has the keys %q, want [a z] (%s)", got, raw)
		}
		if got := keysOf(t, rawAt(t, raw, "m")); !slices.Equal(got, strs("k", "a", "b")) {
			t.Errorf("m has the keys %q, want [k a b] (%s)", got, raw)
		}
		if got := confIDs(t, c, docstore.Eq("n", map[string]any{"z": 1, "a": 3})); !slices.Equal(got, strs("f1")) {
			t.Errorf("equality on the new object: %q", got)
		}
		t.Run("numeric names by value", func(t *testing.T) {
			skipFerret(t, e, "it adds fields with numeric names in byte order (MongoDB 5.0+: by value)")
			if _, err := c.UpdateOne(ctx, docstore.ID("f1"), docstore.Set("q.10", 1).Set("q.9", 2).Set("q.x", 3), false); err != nil {
				t.Fatal(err)
			}
			raw := getRaw(t, c, "f1")
			if got := keysOf(t, rawAt(t, raw, "q")); !slices.Equal(got, strs("9", "10", "x")) {
				t.Errorf("q has the keys %q, want [9 10 x] (%s)", got, raw)
			}
		})
	})
}

// TestConformanceBigIntegers: integers beyond int64 are kept as written, through updates too (a float64 would
// round 18446744073709551615 to 18446744073709551616). MongoDB keeps them as decimal128 (exact up to 34
// digits); filters compare them as numbers.
func TestConformanceBigIntegers(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		skipFerret(t, e, "FerretDB v1 has no decimal128, in which MongoDB keeps the integers beyond int64")
		ctx := confCtx(t)
		nums := map[string]string{
			"u":        "18446744073709551615",
			"neg":      "-9223372036854775809",
			"max":      "9223372036854775807",
			"min":      "-9223372036854775808",
			"huge":     "1234567890123456789012345678901234",
			"o.v":      "18446744073709551616",
			"zeros":    "100000000000000000000000000000000000000000000000000",
			"f":        "2.5",
			"beyond53": "9007199254740993",
		}
		doc := `{"_id":"b1","u":18446744073709551615,"neg":-9223372036854775809,"max":9223372036854775807,` +
			`"min":-9223372036854775808,"huge":1234567890123456789012345678901234,"o":{"v":18446744073709551616},` +
			`"zeros":100000000000000000000000000000000000000000000000000,"f":2.5,"beyond53":9007199254740993}`
		c := confColl(t, db, docstore.Spec{Name: "big"}, doc, `{"_id":"b2","u":1}`)
		check := func(step string) {
			t.Helper()
			raw := getRaw(t, c, "b1")
			for path, want := range nums {
				if got := string(rawAt(t, raw, path)); got != want {
					t.Errorf("%s: %s reads %s, want %s as written", step, path, got, want)
				}
			}
			var typed struct {
				U   uint64 `json:"u"`
				Max int64  `json:"max"`
			}
			if err := c.Get(ctx, "b1", &typed); err != nil || typed.U != math.MaxUint64 || typed.Max != math.MaxInt64 {
				t.Errorf("%s: decoded %+v, %v", step, typed, err)
			}
			if got := confIDs(t, c, docstore.Gt("u", int64(math.MaxInt64))); !slices.Equal(got, strs("b1")) {
				t.Errorf("%s: u > MaxInt64 matches %q, want [b1]", step, got)
			}
			if got := confIDs(t, c, docstore.Eq("max", int64(math.MaxInt64))); !slices.Equal(got, strs("b1")) {
				t.Errorf("%s: max = MaxInt64 matches %q, want [b1]", step, got)
			}
		}
		check("inserted")
		if _, err := c.UpdateOne(ctx, docstore.ID("b1"), docstore.Set("x", 1), false); err != nil {
			t.Fatal(err)
		}
		check("after an unrelated set")
		if _, err := c.UpdateMany(ctx, docstore.All(), docstore.Inc("n", 1).Set("o.w", 2)); err != nil {
			t.Fatal(err)
		}
		check("after an increment and a set beside o.v")
		if err := c.FindOneAndUpdate(ctx, docstore.ID("b1"), nil, docstore.Unset("x"), docstore.FindAndUpdate{}, nil); err != nil {
			t.Fatal(err)
		}
		check("after find one and update")
	})
}

// The paths both engines refuse, with ErrBadPath, in every call that reads one.
var badPaths = []string{"", "a..b", ".a", "a.", "$where", "a.$b", `a"b`, "a'b", `a\b`, "a\x00b", "a\nb", "a\x7fb"}

// The paths that go through a declared array: MongoDB would look into the elements, SQLite cannot.
var throughArrayPaths = []string{"tags.0", "tags.x", "tags.x.y"}

var pathCalls = []struct {
	name    string
	through bool // the call refuses a path through a declared array too (a read, not a write of an element)
	call    func(ctx context.Context, db *docstore.DB, c *docstore.Collection, p string) error
}{
	{"find eq", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: docstore.Eq(p, 1)}, &out)
	}},
	{"find in a nested or", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("a", 1), docstore.Not(docstore.Or(docstore.Exists(p))))}, &out)
	}},
	{"find like", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: like(p, "x")}, &out)
	}},
	{"find in", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: docstore.In(p, 1, 2)}, &out)
	}},
	{"find sorted", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: docstore.All(), Sort: docstore.Sort("-" + p)}, &out)
	}},
	{"find one", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out map[string]any
		return c.FindOne(ctx, docstore.Gt(p, 0), nil, &out)
	}},
	{"find page", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		_, err := c.FindPage(ctx, docstore.All(), search.Page{Sort: docstore.Sort(p)}, &out)
		return err
	}},
	{"exists", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.Exists(ctx, docstore.Prefix(p, "x"))
		return err
	}},
	{"count", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.Count(ctx, docstore.Lt(p, 3))
		return err
	}},
	{"group count by", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.GroupCount(ctx, docstore.All(), p, 0)
		return err
	}},
	{"group count filtered", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.GroupCount(ctx, docstore.Eq(p, 1), "a", 0)
		return err
	}},
	{"delete one", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.DeleteOne(ctx, docstore.Not(docstore.Eq(p, 1)))
		return err
	}},
	{"delete many", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.DeleteMany(ctx, docstore.Missing(p))
		return err
	}},
	{"update filter", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.UpdateMany(ctx, docstore.Missing(p), docstore.Set("changed", true))
		return err
	}},
	{"find one and update filter", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		return c.FindOneAndUpdate(ctx, docstore.Missing(p), nil, docstore.Set("changed", true), docstore.FindAndUpdate{}, nil)
	}},
	{"find one and update sort", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		return c.FindOneAndUpdate(ctx, docstore.All(), docstore.Sort(p), docstore.Set("changed", true), docstore.FindAndUpdate{}, nil)
	}},
	{"update set", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.UpdateOne(ctx, docstore.ID("p1"), docstore.Set(p, 1), false)
		return err
	}},
	{"update unset", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		_, err := c.UpdateOne(ctx, docstore.ID("p1"), docstore.Unset(p), false)
		return err
	}},
	{"projection", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection, p string) error {
		var out []map[string]any
		return c.Find(ctx, docstore.Query{Filter: docstore.All(), Fields: []string{"a", p}}, &out)
	}},
	{"index key", true, func(ctx context.Context, db *docstore.DB, _ *docstore.Collection, p string) error {
		_, err := db.Collection(ctx, docstore.Spec{Name: "paths_ix", Arrays: []string{"tags"},
			Indexes: []docstore.Index{{Name: "x", Keys: []docstore.Key{docstore.Asc(p)}}}})
		return err
	}},
	{"tally path", true, func(ctx context.Context, db *docstore.DB, _ *docstore.Collection, p string) error {
		_, err := db.Collection(ctx, docstore.Spec{Name: "paths_tally", Arrays: []string{"tags"},
			Tallies: []docstore.Tally{{Name: "x", Paths: []string{p}}}})
		return err
	}},
	{"array declaration", false, func(ctx context.Context, db *docstore.DB, _ *docstore.Collection, p string) error {
		_, err := db.Collection(ctx, docstore.Spec{Name: "paths_arr", Arrays: []string{p}})
		return err
	}},
}

// TestConformancePaths: a bad path is ErrBadPath on both engines, whatever the call, and nothing is changed.
// (The MongoDB engine used to send such paths to the server as they were.)
func TestConformancePaths(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		const doc = `{"_id":"p1","a":1,"tags":["x",{"x":1}],"o":{"k":1}}`
		c := confColl(t, db, docstore.Spec{Name: "paths", Arrays: []string{"tags"}}, doc)
		for _, call := range pathCalls {
			t.Run(call.name, func(t *testing.T) {
				paths := badPaths
				if call.through {
					paths = append(slices.Clone(badPaths), throughArrayPaths...)
				}
				for _, p := range paths {
					if err := call.call(ctx, db, c, p); !errors.Is(err, docstore.ErrBadPath) {
						t.Errorf("path %q: %v, want ErrBadPath", p, err)
					}
				}
			})
		}
		confGet(t, c, "p1", doc)
		// A path through a declared array is a path to an element for a write, as in MongoDB.
		if _, err := c.UpdateOne(ctx, docstore.ID("p1"), docstore.Set("tags.1.x", 2), false); err != nil {
			t.Fatalf("set an element's field: %v", err)
		}
		confGet(t, c, "p1", `{"_id":"p1","a":1,"tags":["x",{"x":2}],"o":{"k":1}}`)
	})
}

var arrayWrites = []struct {
	name    string
	wantErr bool
	write   func(ctx context.Context, db *docstore.DB, c *docstore.Collection) error
}{
	{"insert: an array at an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, json.RawMessage(`{"_id":"n1","list":["a"]}`))
	}},
	{"insert: an empty array at an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, json.RawMessage(`{"_id":"n2","list":[]}`))
	}},
	{"insert: an array at an undeclared nested path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, json.RawMessage(`{"_id":"n3","o":{"k":1,"other":[1]}}`))
	}},
	{"insert: an array under an escaped name", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, json.RawMessage(`{"_id":"n4","t\u0061gs2":[1]}`))
	}},
	{"insert: a struct with a slice field", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, struct {
			ID   string   `json:"_id"`
			List []string `json:"list"`
		}{"n5", []string{"a"}})
	}},
	{"insert: arrays at declared paths, anything inside their elements", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, json.RawMessage(`{"_id":"ok1","tags":["a",{"x":[1,{"y":[]}]}],"o":{"list":[1,2]},"s":"[not an array]"}`))
	}},
	{"insert: a nil slice is null, not an array", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Insert(ctx, struct {
			ID   string   `json:"_id"`
			List []string `json:"list"`
		}{"ok2", nil})
	}},
	{"insert many: one document with an undeclared array", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.InsertMany(ctx, []any{json.RawMessage(`{"_id":"n6"}`), json.RawMessage(`{"_id":"n7","list":[1]}`)})
		return err
	}},
	{"insert all: one document with an undeclared array", true, func(ctx context.Context, db *docstore.DB, c *docstore.Collection) error {
		_, err := db.InsertAll(ctx, docstore.Insertion{Coll: c, Doc: json.RawMessage(`{"_id":"n8"}`)},
			docstore.Insertion{Coll: c, Doc: json.RawMessage(`{"_id":"n9","o":{"list":[1],"more":[2]}}`)})
		return err
	}},
	{"replace: an undeclared array", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Replace(ctx, json.RawMessage(`{"_id":"base","a":1,"list":[1]}`), false)
	}},
	{"replace with upsert: an undeclared array", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.Replace(ctx, json.RawMessage(`{"_id":"n10","list":[1]}`), true)
	}},
	{"set: an array at an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.UpdateOne(ctx, docstore.ID("base"), docstore.Set("list", []string{"a"}), false)
		return err
	}},
	{"set: an object holding an undeclared array", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.UpdateMany(ctx, docstore.All(), docstore.Set("o", map[string]any{"list": []any{1}, "other": []any{}}))
		return err
	}},
	{"set: a struct holding an undeclared array", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		return c.FindOneAndUpdate(ctx, docstore.ID("base"), nil, docstore.Set("p", struct {
			L []int `json:"l"`
		}{[]int{1}}), docstore.FindAndUpdate{}, nil)
	}},
	{"add to set: an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.UpdateOne(ctx, docstore.ID("base"), docstore.AddToSet("list", "a"), false)
		return err
	}},
	{"pull: an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.UpdateOne(ctx, docstore.ID("base"), docstore.Pull("list", "a"), false)
		return err
	}},
	{"upsert: an equality on an array at an undeclared path", true, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		_, err := c.UpdateOne(ctx, docstore.And(docstore.ID("n11"), docstore.Eq("list", []any{1})), docstore.Set("v", 1), true)
		return err
	}},
	{"set, add to set and upsert at declared paths", false, func(ctx context.Context, _ *docstore.DB, c *docstore.Collection) error {
		if _, err := c.UpdateOne(ctx, docstore.ID("base"), docstore.Set("tags", []string{"a"}).Set("o", map[string]any{"list": []any{1}, "k": 2}), false); err != nil {
			return err
		}
		if _, err := c.UpdateOne(ctx, docstore.ID("base"), docstore.AddToSet("tags", map[string]any{"in": []any{"element"}}).Pull("o.list", 1), false); err != nil {
			return err
		}
		_, err := c.UpdateOne(ctx, docstore.And(docstore.ID("ok3"), docstore.Eq("tags", []any{"a"})), docstore.AddToSet("o.list", 1), true)
		return err
	}},
}

// TestConformanceArrays: Spec.Arrays is complete, or the write fails: an array at a path the collection does not
// declare is ErrUndeclaredArray on both engines, and nothing is written. (A filter on an undeclared array path
// used to match its elements on MongoDB only.)
func TestConformanceArrays(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		ctx := confCtx(t)
		const base = `{"_id":"base","a":1}`
		c := confColl(t, db, docstore.Spec{Name: "arrays", Arrays: []string{"tags", "o.list"}}, base)
		for _, w := range arrayWrites {
			err := w.write(ctx, db, c)
			switch {
			case w.wantErr && !errors.Is(err, docstore.ErrUndeclaredArray):
				t.Errorf("%s: %v, want ErrUndeclaredArray", w.name, err)
			case !w.wantErr && err != nil:
				t.Errorf("%s: %v", w.name, err)
			}
		}
		if got := confIDs(t, c, docstore.All()); !slices.Equal(got, strs("base", "ok1", "ok2", "ok3")) {
			t.Errorf("stored %q, want [base ok1 ok2 ok3]", got)
		}
		confGet(t, c, "base", `{"_id":"base","a":1,"tags":["a",{"in":["element"]}],"o":{"list":[],"k":2}}`)
		confGet(t, c, "ok3", `{"_id":"ok3","tags":["a"],"o":{"list":[1]}}`)
		// What the declaration is for: an element matches, on both engines.
		if got := confIDs(t, c, docstore.Eq("o.list", 1)); !slices.Equal(got, strs("ok1", "ok3")) {
			t.Errorf("o.list = 1 matches %q, want [ok1 ok3]", got)
		}
		t.Run("an array in an array", func(t *testing.T) {
			skipFerret(t, e, "it stores no array directly inside an array")
			if err := c.Insert(ctx, json.RawMessage(`{"_id":"ok4","tags":[["a"]],"o":{"list":[[1],[]]}}`)); err != nil {
				t.Errorf("insert: %v", err)
			}
		})
		for _, bad := range [][]string{{"_id"}, {"a..b"}} {
			if _, err := db.Collection(ctx, docstore.Spec{Name: "arrays_bad", Arrays: bad}); err == nil {
				t.Errorf("Arrays %q were taken", bad)
			}
		}
	})
}

var regexDocs = []string{
	`{"_id":"r1","t":"` + strings.Repeat("a", 40) + `b"}`,
	`{"_id":"r2","t":"` + strings.Repeat("a", 40) + `bc"}`,
	`{"_id":"r3","t":"p\\Qx\\E (?#c) #h \\p{L} [[:alpha:]] a{2} \\1 (?i)Z \\z$"}`,
	`{"_id":"r4","t":"ǅ straße Σίσυφος"}`,
}

// Rows for MongoDB's regular expressions (PCRE), which the MongoDB engine's _like and _wildcard run on: user
// text written in PCRE's own syntax stays literal, and a wildcard of many stars against a long text answers
// as RE2 does (no backtracking blow-up into the match limit). On FerretDB (Go's regexp) these rows check the
// translation only; they exercise PCRE when MONGOTEST_URI names a MongoDB.
var regexRows = []struct {
	name string
	f    search.Node
	want []string
}{
	{"many stars, long text, matches", wild("t", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"), strs("r1")},
	{"many stars, long text, matches at the end", wild("t", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*bc"), strs("r2")},
	{"many stars, long text, no match", wild("t", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c*b"), nil},
	{"many stars anchored at the start", wild("t", "a*a*a*a*a*a*a*a*a*a*a*a*"), strs("r1", "r2")},
	{"question marks and stars", wild("t", "??????????*b?"), strs("r2")},
	{"PCRE quoting is literal", like("t", `\Qx\E`), strs("r3")},
	{"PCRE comment is literal", like("t", "(?#c)"), strs("r3")},
	{"PCRE hash is literal", like("t", " #h "), strs("r3")},
	{"PCRE property is literal", like("t", `\p{L}`), strs("r3")},
	{"POSIX class is literal", like("t", "[[:alpha:]]"), strs("r3")},
	{"repetition is literal", like("t", "a{2}"), strs("r3")},
	{"backreference is literal", like("t", `\1`), strs("r3")},
	{"inline flag is literal", like("t", "(?i)z"), strs("r3")},
	{"end anchors are literal", suffix("t", `\z$`), strs("r3")},
	{"wildcard of PCRE syntax", wild("t", `p\Q*\E*(?#c)*`), strs("r3")},
	{"title case letter folds", like("t", "ǆ"), strs("r4")},
	{"sharp s", like("t", "STRASSE"), nil}, // simple folding only, as MongoDB: ß is not "ss"
	{"final sigma folds with sigma", like("t", "ΣΊΣΥΦΟΣ"), strs("r4")},
}

func TestConformanceRegex(t *testing.T) {
	forEngines(t, func(t *testing.T, e confEngine, db *docstore.DB) {
		c := confColl(t, db, docstore.Spec{Name: "rx"}, regexDocs...)
		if onFerretDB(e) {
			t.Log("FerretDB compiles $regex with Go's regexp: these rows exercise MongoDB's PCRE only with MONGOTEST_URI")
		}
		for _, r := range regexRows {
			t.Run(r.name, func(t *testing.T) {
				if got := confIDs(t, c, r.f); !slices.Equal(got, r.want) {
					t.Errorf("filter %s: got %q, want %q", confNode(r.f), got, r.want)
				}
			})
		}
	})
}
