package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/search"
)

func sqliteColl(t testing.TB, spec docstore.Spec, docs ...string) *docstore.Collection {
	t.Helper()
	ctx := context.Background()
	db := docstoretest.New(t)
	c, err := db.Collection(ctx, spec)
	if err != nil {
		t.Fatalf("collection: %v", err)
	}
	for _, d := range docs {
		if err := c.Insert(ctx, json.RawMessage(d)); err != nil {
			t.Fatalf("insert %s: %v", d, err)
		}
	}
	return c
}

// ids returns the sorted _ids of the documents f matches (and checks Count agrees).
func ids(t *testing.T, c *docstore.Collection, f search.Node) []string {
	t.Helper()
	ctx := context.Background()
	var docs []map[string]any
	if err := c.Find(ctx, docstore.Query{Filter: f}, &docs); err != nil {
		t.Fatalf("find: %v", err)
	}
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		out = append(out, d["_id"].(string))
	}
	sort.Strings(out)
	n, err := c.Count(ctx, f)
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != int64(len(out)) {
		t.Fatalf("count %d, find %d", n, len(out))
	}
	return out
}

func TestSQLiteFilterSemantics(t *testing.T) {
	c := sqliteColl(t, docstore.Spec{Name: "s", Arrays: []string{"tags"},
		Indexes: []docstore.Index{{Name: "x", Keys: []docstore.Key{docstore.Asc("x")}}}},
		`{"_id":"int5","x":5,"tags":["a","b"],"name":"Hello World"}`,
		`{"_id":"float5","x":5.0}`,
		`{"_id":"str5","x":"5","tags":["c"],"name":"a.b*c"}`,
		`{"_id":"null","x":null,"tags":[]}`,
		`{"_id":"missing","tags":"a"}`,
		`{"_id":"true","x":true,"b":{"c":1}}`,
		`{"_id":"false","x":false,"tags":[null,1,true]}`,
		`{"_id":"seven","x":7,"b":{"c":2},"name":"hello\nworld"}`,
		`{"_id":"abc","x":"abc","name":"ABC"}`,
	)
	cases := []struct {
		name string
		f    search.Node
		want string
	}{
		{"all", docstore.All(), "abc false float5 int5 missing null seven str5 true"},
		{"eq int", docstore.Eq("x", 5), "float5 int5"},
		{"eq float", docstore.Eq("x", 5.0), "float5 int5"},
		{"eq string", docstore.Eq("x", "5"), "str5"},
		{"eq nil", docstore.Eq("x", nil), "missing null"},
		{"eq true", docstore.Eq("x", true), "true"},
		{"eq false", docstore.Eq("x", false), "false"},
		{"eq 1 is not true", docstore.Eq("x", 1), ""},
		{"ne int", docstore.Ne("x", 5), "abc false missing null seven str5 true"},
		{"not on missing", docstore.Not(docstore.Eq("b.c", 1)), "abc false float5 int5 missing null seven str5"},
		{"gt number", docstore.Gt("x", 5), "seven"},
		{"gte number", docstore.Gte("x", 5), "float5 int5 seven"},
		{"lt number", docstore.Lt("x", 6), "float5 int5"},
		{"gt string", docstore.Gt("x", "4"), "abc str5"},
		{"lt string", docstore.Lt("x", "6"), "str5"},
		{"lte string", docstore.Lte("x", "abc"), "abc str5"},
		{"in mixed", docstore.In[any]("x", 7, "abc", nil, true), "abc missing null seven true"},
		{"in empty", docstore.In[any]("x"), ""},
		{"or empty", docstore.Or(), ""},
		{"and empty", docstore.And(), "abc false float5 int5 missing null seven str5 true"},
		{"exists", docstore.Exists("x"), "abc false float5 int5 seven str5 true"},
		{"missing", docstore.Missing("x"), "missing null"},
		{"nested", docstore.Eq("b.c", 2), "seven"},
		{"array contains", docstore.Eq("tags", "a"), "int5 missing"},
		{"array in", docstore.In("tags", "b", "c"), "int5 str5"},
		{"array null", docstore.Eq("tags", nil), "abc false float5 seven true"},
		{"array true", docstore.Eq("tags", true), "false"},
		{"array 1", docstore.Eq("tags", 1), "false"},
		{"array exists", docstore.Exists("tags"), "false int5 missing null str5"},
		{"array not", docstore.Not(docstore.Eq("tags", "a")), "abc false float5 null seven str5 true"},
		{"like", search.Node{Op: search.OpLike, Path: "name", Value: "WORLD"}, "int5 seven"},
		{"like quoted", search.Node{Op: search.OpLike, Path: "name", Value: ".b*"}, "str5"},
		{"like dot", search.Node{Op: search.OpLike, Path: "name", Value: "."}, "str5"},
		{"wildcard", search.Node{Op: search.OpWildcard, Path: "name", Value: "hello?world"}, "int5 seven"},
		{"wildcard star", search.Node{Op: search.OpWildcard, Path: "name", Value: "a*c"}, "abc str5"},
		{"wildcard literal", search.Node{Op: search.OpWildcard, Path: "name", Value: "a.b*"}, "str5"},
		{"prefix", docstore.Prefix("name", "Hello"), "int5"},
		{"prefix case", docstore.Prefix("name", "hello"), "seven"},
		{"prefix empty", docstore.Prefix("x", ""), "abc str5"},
		{"suffix", search.Node{Op: search.OpSuffix, Path: "name", Value: "*c"}, "str5"},
		{"like number", search.Node{Op: search.OpLike, Path: "x", Value: "5"}, "str5"},
		{"array like", search.Node{Op: search.OpLike, Path: "tags", Value: "A"}, "int5 missing"},
		{"id", docstore.ID("seven"), "seven"},
		{"id in", docstore.In("_id", "seven", "abc", "nope"), "abc seven"},
		{"id prefix", docstore.Prefix("_id", "f"), "false float5"},
		{"or", docstore.Or(docstore.Eq("x", 7), docstore.Eq("x", "abc")), "abc seven"},
		{"and", docstore.And(docstore.Gte("x", 5), docstore.Lt("x", 7)), "float5 int5"},
		{"not not", docstore.Not(docstore.Not(docstore.Eq("x", 7))), "seven"},
		{"unknown op", search.Node{Op: "nope"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(ids(t, c, tc.f), " ")
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSQLiteBadPathRefused(t *testing.T) {
	c := sqliteColl(t, docstore.Spec{Name: "p"})
	ctx := context.Background()
	var out []map[string]any
	if err := c.Find(ctx, docstore.Query{Filter: docstore.Eq("a') OR 1=1 --", 1)}, &out); err == nil {
		t.Fatal("a bad path was accepted")
	}
	if err := c.Find(ctx, docstore.Query{Filter: docstore.All(), Sort: docstore.Sort("x'")}, &out); err == nil {
		t.Fatal("a bad sort path was accepted")
	}
}

func TestSQLiteSort(t *testing.T) {
	c := sqliteColl(t, docstore.Spec{Name: "s"},
		`{"_id":"a","v":"b"}`, `{"_id":"b","v":2}`, `{"_id":"c"}`, `{"_id":"d","v":1.5}`, `{"_id":"e","v":"a"}`, `{"_id":"f","v":null}`)
	ctx := context.Background()
	get := func(q docstore.Query) string {
		var docs []struct {
			ID string `json:"_id"`
		}
		if err := c.Find(ctx, q, &docs); err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, d := range docs {
			s = append(s, d.ID)
		}
		return strings.Join(s, " ")
	}
	if got := get(docstore.Query{Filter: docstore.All(), Sort: docstore.StableSort(docstore.Sort("v"))}); got != "c f d b e a" {
		t.Errorf("asc: %s", got)
	}
	if got := get(docstore.Query{Filter: docstore.All(), Sort: docstore.StableSort(docstore.Sort("-v"))}); got != "a e b d c f" {
		t.Errorf("desc: %s", got)
	}
	if got := get(docstore.Query{Filter: docstore.All(), Sort: docstore.Sort("-_id"), Offset: 1, Limit: 2}); got != "e d" {
		t.Errorf("page: %s", got)
	}
	if got := get(docstore.Query{Filter: docstore.All(), Sort: docstore.Sort("_id"), Offset: 4}); got != "e f" {
		t.Errorf("offset: %s", got)
	}
	var page []map[string]any
	n, err := c.FindPage(ctx, docstore.Exists("v"), search.Page{Sort: docstore.Sort("v"), Limit: 2}, &page)
	if err != nil || n != 4 || len(page) != 2 || page[0]["_id"] != "d" {
		t.Errorf("FindPage: %d %v %v", n, page, err)
	}
}

type item struct {
	ID    string   `json:"_id"`
	N     int64    `json:"n,omitempty"`
	F     float64  `json:"f,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Owner string   `json:"owner,omitempty"`
}

func TestSQLiteCRUD(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	if db.Engine() != "sqlite" || !db.Embedded() {
		t.Fatal(db.Engine())
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection(ctx, docstore.Spec{Name: "items", Indexes: []docstore.Index{
		{Name: "owner", Keys: []docstore.Key{docstore.Asc("owner")}, Unique: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(ctx, item{ID: "a", N: 1, Owner: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(ctx, item{ID: "a"}); !docstore.IsDuplicate(err) {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := c.Insert(ctx, item{ID: "b", Owner: "x"}); !docstore.IsDuplicate(err) {
		t.Fatalf("duplicate unique key: %v", err)
	}
	res, err := c.InsertMany(ctx, []any{item{ID: "b", Owner: "y"}, item{ID: "a"}, item{ID: "c", Owner: "x"}, item{ID: "d", Owner: "z"}, item{ID: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true, false, true} {
		if docstore.IsDuplicate(res[i]) != want || (!want && res[i] != nil) {
			t.Errorf("InsertMany result %d: %v", i, res[i])
		}
	}
	var got item
	if err := c.Get(ctx, "d", &got); err != nil || got.ID != "d" {
		t.Fatalf("get: %v %v", got, err)
	}
	if err := c.Get(ctx, "zz", &got); !errors.Is(err, docstore.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	names, err := db.Collections(ctx)
	if err != nil || !slices.Equal(names, []string{"items"}) {
		t.Fatalf("collections: %v %v", names, err)
	}

	// Replace.
	if err := c.Replace(ctx, item{ID: "b", N: 9, Owner: "y"}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, item{ID: "q", N: 9, Owner: "q"}, false); !errors.Is(err, docstore.ErrNotFound) {
		t.Fatalf("replace missing: %v", err)
	}
	if err := c.Replace(ctx, item{ID: "q", N: 10, Owner: "q"}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, item{ID: "q", N: 11, Owner: "q"}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, item{ID: "q", Owner: "x"}, true); !docstore.IsDuplicate(err) {
		t.Fatalf("replace onto a unique key: %v", err)
	}
	if err := c.Get(ctx, "q", &got); err != nil || got.N != 11 {
		t.Fatalf("after replace: %+v %v", got, err)
	}

	// Delete.
	ok, err := c.DeleteOne(ctx, docstore.In("_id", "b", "d"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	n, err := c.DeleteMany(ctx, docstore.In("_id", "b", "d", "q"))
	if err != nil || n != 2 {
		t.Fatal(n, err)
	}
	ok, err = c.DeleteOne(ctx, docstore.ID("nope"))
	if err != nil || ok {
		t.Fatal(ok, err)
	}
	if n, _ := c.Count(ctx, docstore.All()); n != 1 {
		t.Fatalf("left %d", n)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSQLiteUpdates(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "u", Arrays: []string{"tags"}},
		`{"_id":"a","n":1,"f":1.5,"tags":["x"],"s":"str","big":9007199254740993}`, `{"_id":"b","n":2}`)
	get := func(id string) map[string]any {
		t.Helper()
		raw, err := c.FindRaw(ctx, docstore.Query{Filter: docstore.ID(id)})
		if err != nil || len(raw) != 1 {
			t.Fatalf("get %s: %v", id, err)
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(string(raw[0])))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ok, err := c.UpdateOne(ctx, docstore.ID("a"), docstore.Inc("n", 2).Inc("f", 1).Inc("new", 3).Set("o.p.q", "deep").
		AddToSet("tags", "x", "y", "y").Unset("s"), false)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	m := get("a")
	if m["n"] != json.Number("3") || m["f"] != json.Number("2.5") || m["new"] != json.Number("3") {
		t.Errorf("inc: %v", m)
	}
	if m["big"] != json.Number("9007199254740993") {
		t.Errorf("an untouched large integer changed: %v", m["big"])
	}
	if fmt.Sprint(m["o"]) != "map[p:map[q:deep]]" || fmt.Sprint(m["tags"]) != "[x y]" {
		t.Errorf("set/addToSet: %v", m)
	}
	if _, ok := m["s"]; ok {
		t.Errorf("unset: %v", m)
	}
	// int + float is a float; int stays int.
	if _, err := c.UpdateOne(ctx, docstore.ID("a"), docstore.Inc("n", 0.5).Pull("tags", "x", "nope"), false); err != nil {
		t.Fatal(err)
	}
	m = get("a")
	if m["n"] != json.Number("3.5") || fmt.Sprint(m["tags"]) != "[y]" {
		t.Errorf("inc float / pull: %v", m)
	}
	if _, err := c.UpdateOne(ctx, docstore.ID("a"), docstore.Inc("o", 1), false); err == nil {
		t.Error("inc of an object was accepted")
	}
	// The failed update left the document as it was.
	if m2 := get("a"); fmt.Sprint(m2) != fmt.Sprint(m) {
		t.Errorf("a failed update changed the document: %v", m2)
	}
	ok, err = c.UpdateOne(ctx, docstore.ID("zz"), docstore.Set("n", 1), false)
	if err != nil || ok {
		t.Fatal(ok, err)
	}
	n, err := c.UpdateMany(ctx, docstore.Exists("n"), docstore.Set("touched", true))
	if err != nil || n != 2 {
		t.Fatal(n, err)
	}
	if n, _ := c.Count(ctx, docstore.Eq("touched", true)); n != 2 {
		t.Errorf("touched %d", n)
	}
	// Upsert builds the document from the filter's equalities.
	ok, err = c.UpdateOne(ctx, docstore.And(docstore.ID("c"), docstore.Eq("kind", "k"), docstore.Eq("a.b", int64(4))), docstore.Inc("n", 1), true)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	m = get("c")
	if m["kind"] != "k" || m["n"] != json.Number("1") || fmt.Sprint(m["a"]) != "map[b:4]" {
		t.Errorf("upsert: %v", m)
	}
	if _, err := c.UpdateOne(ctx, docstore.Eq("kind", "zz"), docstore.Inc("n", 1), true); err == nil {
		t.Error("upsert without _id accepted")
	}
	if _, err := c.UpdateOne(ctx, docstore.And(docstore.ID("d"), docstore.Gt("n", 1)), docstore.Inc("n", 1), true); err == nil {
		t.Error("upsert with a range accepted")
	}
	// FindOneAndUpdate: sort, before/after, upsert.
	var doc map[string]any
	if err := c.FindOneAndUpdate(ctx, docstore.Exists("touched"), docstore.Sort("-_id"), docstore.Set("claimed", true), docstore.FindAndUpdate{}, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["_id"] != "b" || doc["claimed"] != true {
		t.Errorf("after: %v", doc)
	}
	doc = nil
	if err := c.FindOneAndUpdate(ctx, docstore.ID("a"), nil, docstore.Set("claimed", 1), docstore.FindAndUpdate{ReturnBefore: true}, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["claimed"]; ok || doc["_id"] != "a" {
		t.Errorf("before: %v", doc)
	}
	if err := c.FindOneAndUpdate(ctx, docstore.ID("nope"), nil, docstore.Set("x", 1), docstore.FindAndUpdate{}, &doc); !errors.Is(err, docstore.ErrNotFound) {
		t.Errorf("no match: %v", err)
	}
	if err := c.FindOneAndUpdate(ctx, docstore.ID("e"), nil, docstore.Set("x", 1), docstore.FindAndUpdate{Upsert: true, ReturnBefore: true}, &doc); !errors.Is(err, docstore.ErrNotFound) {
		t.Errorf("upsert, before: %v", err)
	}
	doc = nil
	if err := c.FindOneAndUpdate(ctx, docstore.ID("f"), nil, docstore.Set("x", 1), docstore.FindAndUpdate{Upsert: true}, &doc); err != nil || doc["x"] != float64(1) {
		t.Errorf("upsert, after: %v %v", doc, err)
	}
}

func TestSQLiteUniqueOnUpdate(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "u", Indexes: []docstore.Index{{Name: "k", Keys: []docstore.Key{docstore.Asc("k")}, Unique: true}}},
		`{"_id":"a","k":1}`, `{"_id":"b","k":2}`)
	if _, err := c.UpdateOne(ctx, docstore.ID("b"), docstore.Set("k", 1), false); !docstore.IsDuplicate(err) {
		t.Fatalf("update onto a unique key: %v", err)
	}
	if _, err := c.UpdateOne(ctx, docstore.ID("a"), docstore.Set("k", 3), true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateOne(ctx, docstore.ID("c"), docstore.Set("k", 3), true); !docstore.IsDuplicate(err) {
		t.Fatalf("upsert onto a unique key: %v", err)
	}
}

func TestSQLiteGroupCount(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "g", Arrays: []string{"tags"}},
		`{"_id":"1","s":"a","tags":["x","y"]}`, `{"_id":"2","s":"a","tags":["x"]}`, `{"_id":"3","s":"b","tags":[]}`,
		`{"_id":"4","s":5}`, `{"_id":"5","s":"b","tags":["y","x"]}`)
	g, err := c.GroupCount(ctx, docstore.All(), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g) != "[{a 2} {b 2} {5 1}]" {
		t.Errorf("scalar: %v", g)
	}
	if _, ok := g[2].Value.(int64); !ok {
		t.Errorf("number group is %T", g[2].Value)
	}
	g, err = c.GroupCount(ctx, docstore.Not(docstore.ID("5")), "tags", 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g) != "[{<nil> 2} {x 2}]" {
		t.Errorf("array: %v", g)
	}
	g, err = c.GroupCount(ctx, docstore.Eq("s", "nope"), "s", 0)
	if err != nil || len(g) != 0 {
		t.Errorf("empty: %v %v", g, err)
	}
}

func TestSQLiteIndexesAndExplain(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	spec := docstore.Spec{Name: "jobs", Indexes: []docstore.Index{
		{Name: "status", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("dataType"), docstore.Desc("createdAt")}},
	}}
	c, err := db.Collection(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 500 {
		docs = append(docs, map[string]any{"_id": fmt.Sprintf("j%04d", i), "status": []string{"Waiting", "Success"}[i%2],
			"dataType": []string{"ip", "domain", "hash"}[i%3], "createdAt": int64(i)})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	q := docstore.Query{Filter: docstore.And(docstore.Eq("status", "Success"), docstore.Eq("dataType", "ip")),
		Sort: docstore.StableSort(docstore.Sort("-createdAt")), Limit: 50}
	plan, err := c.Explain(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "USING INDEX jobs_status") || strings.Contains(plan, "SCAN jobs\n") || strings.HasSuffix(plan, "SCAN jobs") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("plan:\n%s", plan)
	}
	var page []struct {
		ID        string `json:"_id"`
		CreatedAt int64  `json:"createdAt"`
	}
	if err := c.Find(ctx, q, &page); err != nil || len(page) != 50 || page[0].CreatedAt != 495 || page[1].CreatedAt != 489 {
		t.Fatalf("page: %v %v", page, err)
	}
	// Reopening with a changed index definition rebuilds it.
	spec.Indexes[0].Keys = []docstore.Key{docstore.Asc("status"), docstore.Desc("createdAt")}
	c, err = db.Collection(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	plan, err = c.Explain(ctx, docstore.Query{Filter: docstore.Eq("status", "Success"), Sort: docstore.StableSort(docstore.Sort("-createdAt")), Limit: 50})
	if err != nil || !strings.Contains(plan, "USING INDEX jobs_status") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("plan after a change: %v\n%s", err, plan)
	}
	plan, err = c.Explain(ctx, docstore.Query{Filter: docstore.And(docstore.Eq("status", "Success"), docstore.Gt("createdAt", 10))})
	if err != nil || !strings.Contains(plan, "USING INDEX jobs_status") {
		t.Errorf("range plan: %v\n%s", err, plan)
	}
}

func TestSQLiteSecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := docstore.Open(ctx, docstore.Config{Name: "x", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = docstore.Open(ctx, docstore.Config{Name: "x", Path: dir}, nil)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second open: %v", err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err = docstore.Open(ctx, docstore.Config{Name: "x", Path: dir}, nil)
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	db.Close(ctx)
}

func TestSQLiteBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := docstore.Open(ctx, docstore.Config{Name: "b", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	c, _ := db.Collection(ctx, docstore.Spec{Name: "c"})
	for i := range 10 {
		if err := c.Insert(ctx, item{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "snap.db")
	if err := db.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(ctx, out); err == nil {
		t.Fatal("backup over an existing file")
	}
	// The snapshot opens as a database of its own.
	snapDir := filepath.Dir(out)
	db2, err := docstore.Open(ctx, docstore.Config{Name: "snap", Path: snapDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close(ctx)
	c2, _ := db2.Collection(ctx, docstore.Spec{Name: "c"})
	if n, err := c2.Count(ctx, docstore.All()); err != nil || n != 10 {
		t.Fatalf("snapshot holds %d: %v", n, err)
	}
}

func TestSQLiteConcurrentInc(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "counters"})
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Go(func() {
			var out struct {
				N int64 `json:"n"`
			}
			errs <- c.FindOneAndUpdate(ctx, docstore.ID("case"), nil, docstore.Inc("n", 1), docstore.FindAndUpdate{Upsert: true}, &out)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		N int64 `json:"n"`
	}
	if err := c.Get(ctx, "case", &out); err != nil || out.N != 200 {
		t.Fatalf("counter %d: %v", out.N, err)
	}
}

func TestSQLiteConcurrentClaims(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "jobs", Indexes: []docstore.Index{{Name: "q", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("at")}}}})
	for i := range 40 {
		if err := c.Insert(ctx, map[string]any{"_id": fmt.Sprintf("j%02d", i), "status": "Waiting", "at": i}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for w := range 120 {
		wg.Go(func() {
			for {
				var j struct {
					ID string `json:"_id"`
				}
				err := c.FindOneAndUpdate(ctx, docstore.Eq("status", "Waiting"), docstore.Sort("at"),
					docstore.Set("status", "InProgress").Set("worker", w), docstore.FindAndUpdate{}, &j)
				if errors.Is(err, docstore.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				claimed[j.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != 40 {
		t.Fatalf("claimed %d jobs", len(claimed))
	}
	for id, n := range claimed {
		if n != 1 {
			t.Errorf("%s claimed %d times", id, n)
		}
	}
}

// benchJobs returns a collection of n job-like documents with the index of the job search.
func benchJobs(b *testing.B, n int) *docstore.Collection {
	b.Helper()
	ctx := context.Background()
	db, err := docstore.Open(ctx, docstore.Config{Name: "bench", Path: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(ctx) })
	c, err := db.Collection(ctx, docstore.Spec{Name: "jobs", Indexes: []docstore.Index{
		{Name: "search", Keys: []docstore.Key{docstore.Asc("status"), docstore.Asc("dataType"), docstore.Desc("createdAt")}},
		{Name: "created", Keys: []docstore.Key{docstore.Desc("createdAt")}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]any, 0, 1000)
	for i := range n {
		batch = append(batch, benchJob(i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := c.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return c
}

type benchJobDoc struct {
	ID        string            `json:"_id"`
	Status    string            `json:"status"`
	DataType  string            `json:"dataType"`
	Data      string            `json:"data"`
	Analyzer  string            `json:"analyzerId"`
	CreatedAt int64             `json:"createdAt"`
	CreatedBy string            `json:"createdBy"`
	TLP       int64             `json:"tlp"`
	Params    map[string]string `json:"parameters"`
	Report    string            `json:"report"`
}

func benchJob(i int) benchJobDoc {
	return benchJobDoc{ID: fmt.Sprintf("job-%08d", i), Status: []string{"Waiting", "InProgress", "Success", "Failure"}[i%4],
		DataType: []string{"ip", "domain", "hash", "url", "mail"}[i%5], Data: fmt.Sprintf("10.0.%d.%d", i/256%256, i%256),
		Analyzer: fmt.Sprintf("analyzer-%d", i%20), CreatedAt: 1_700_000_000_000 + int64(i)*1000, CreatedBy: "user@example.org",
		TLP: 2, Params: map[string]string{"a": "b"}, Report: strings.Repeat("r", 300)}
}

func BenchmarkSQLite_Get(b *testing.B) {
	c := benchJobs(b, 100_000)
	ctx := context.Background()
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		var j benchJobDoc
		if err := c.Get(ctx, fmt.Sprintf("job-%08d", i*7919%100_000), &j); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSQLite_Insert(b *testing.B) {
	c := benchJobs(b, 0)
	ctx := context.Background()
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		if err := c.Insert(ctx, benchJob(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSQLite_UpdateByID(b *testing.B) {
	c := benchJobs(b, 100_000)
	ctx := context.Background()
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		if _, err := c.UpdateOne(ctx, docstore.ID(fmt.Sprintf("job-%08d", i*7919%100_000)), docstore.Set("status", "Success").Inc("tlp", 1), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLite_FindPage is the job search of issue 11: status and dataType, newest first, a page of 50
// and the total, on 100k documents.
func BenchmarkSQLite_FindPage(b *testing.B) {
	c := benchJobs(b, 100_000)
	ctx := context.Background()
	f := docstore.And(docstore.Eq("status", "Success"), docstore.Eq("dataType", "hash"))
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		var page []benchJobDoc
		n, err := c.FindPage(ctx, f, search.Page{Sort: docstore.Sort("-createdAt"), Offset: i % 3 * 50, Limit: 50}, &page)
		if err != nil || n != 5000 || len(page) != 50 {
			b.Fatal(n, len(page), err)
		}
	}
}

// BenchmarkSQLite_Claim is a queue claim: the oldest waiting job of a type, set in progress.
func BenchmarkSQLite_Claim(b *testing.B) {
	c := benchJobs(b, 100_000)
	ctx := context.Background()
	f := docstore.And(docstore.Eq("status", "Waiting"), docstore.Eq("dataType", "ip"))
	defer cpuPerOp(b)()
	for b.Loop() {
		if err := c.FindOneAndUpdate(ctx, f, docstore.Sort("createdAt"), docstore.Set("status", "InProgress"), docstore.FindAndUpdate{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuPerOp reports the process's CPU time per operation (user+system), a figure that a busy machine disturbs
// less than wall time; call the returned function after the loop.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// A sorted page reads the index that gives its order when no other index fixes more of its keys by equality:
// SQLite would otherwise take an index that also serves a range of the filter and sort every match. Counts keep
// the index that covers the filter, and a selective equality keeps its own index.
func TestSQLitePageReadsTheOrderIndex(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "cases", Indexes: []docstore.Index{
		{Name: "org_status_start", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("status"), docstore.Desc("start")}},
		{Name: "org_status_severity", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("status"), docstore.Asc("severity")}},
		{Name: "org_title", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("title")}},
	}})
	var docs []any
	for i := range 3000 {
		docs = append(docs, map[string]any{"_id": fmt.Sprintf("c%05d", i), "org": "a", "status": []string{"Open", "Resolved"}[i%5/4],
			"severity": 1 + i%4, "start": int64(i % 700), "title": fmt.Sprintf("t%d", i%1000)})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	page := docstore.Query{Filter: docstore.And(docstore.Eq("org", "a"), docstore.Eq("status", "Open"), docstore.Gte("severity", 3)),
		Sort: docstore.StableSort(docstore.Sort("-start")), Limit: 50}
	plan, err := c.Explain(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "cases_org_status_start ") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("page plan: %s", plan)
	}
	// The page is the one a full sort gives.
	var all []map[string]any
	if err := c.Find(ctx, docstore.Query{Filter: page.Filter}, &all); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i]["start"].(float64), all[j]["start"].(float64)
		if a != b {
			return a > b
		}
		return all[i]["_id"].(string) < all[j]["_id"].(string)
	})
	var got []map[string]any
	if err := c.Find(ctx, page, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("page of %d", len(got))
	}
	for i := range got {
		if got[i]["_id"] != all[i]["_id"] {
			t.Fatalf("page[%d] = %v, want %v", i, got[i]["_id"], all[i]["_id"])
		}
	}
	// Reversed: the same index read backwards.
	rev := page
	rev.Sort = []search.SortKey{{Path: "start"}, {Path: "_id", Desc: true}}
	if plan, _ := c.Explain(ctx, rev); !strings.Contains(plan, "cases_org_status_start ") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("reversed page plan: %s", plan)
	}
	// A selective equality keeps its index (more keys fixed than the order index has).
	sel := docstore.Query{Filter: docstore.And(docstore.Eq("org", "a"), docstore.Eq("title", "t7")),
		Sort: docstore.StableSort(docstore.Sort("-start")), Limit: 50}
	if plan, _ := c.Explain(ctx, sel); !strings.Contains(plan, "cases_org_title ") {
		t.Errorf("selective page plan: %s", plan)
	}
	if n, err := c.Count(ctx, page.Filter); err != nil || n != 1200 {
		t.Errorf("count = %d, %v; want 1200", n, err)
	}
}

// A filter that names its documents by _id reads the primary key, also beside equalities that an index
// matches (SQLite would take that index, and read every document of the organisation and status), for a
// find, a sorted page and a count; the results are those of the same filter without the ids, restricted to
// them.
func TestSQLiteIDListReadsThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	c := sqliteColl(t, docstore.Spec{Name: "jobs", Indexes: []docstore.Index{
		{Name: "org_status_created", Keys: []docstore.Key{docstore.Asc("org"), docstore.Asc("status"), docstore.Desc("created")}},
	}})
	var docs []any
	for i := range 500 {
		docs = append(docs, map[string]any{"_id": fmt.Sprintf("j%03d", i), "org": "a", "status": []string{"Success", "Failure"}[i%2],
			"created": int64(i)})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	scope := docstore.And(docstore.Eq("org", "a"), docstore.Eq("status", "Success"))
	for _, tc := range []struct {
		f    search.Node
		want []string
	}{
		{docstore.And(scope, docstore.In("_id", "j000", "j001", "j002", "j004", "zz")), []string{"j000", "j002", "j004"}},
		{docstore.And(scope, docstore.ID("j010")), []string{"j010"}},
		{docstore.And(docstore.And(scope, docstore.Gte("created", 3)), docstore.In("_id", "j000", "j002", "j004", "j006")), []string{"j004", "j006"}},
	} {
		for _, q := range []docstore.Query{{Filter: tc.f}, {Filter: tc.f, Sort: docstore.StableSort(docstore.Sort("-created")), Limit: 2}} {
			plan, err := c.Explain(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan, "sqlite_autoindex_jobs_1") {
				t.Errorf("%v: the plan does not read the primary key:\n%s", tc.f, plan)
			}
		}
		got := ids(t, c, tc.f) // Count agrees with Find
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Issue 28: an _or of 998 terms was a 500 (SQLite's expression depth limit, 1000): long AND and OR lists are
// written as balanced trees. search.MaxNodes terms of each, and nested in each other, are answered.
func TestSQLiteLongOrAndAnd(t *testing.T) {
	var docs []string
	for i := range 50 {
		docs = append(docs, fmt.Sprintf(`{"_id":"d%02d","x":%d,"name":"n%d"}`, i, i, i))
	}
	c := sqliteColl(t, docstore.Spec{Name: "long"}, docs...)
	var or, and []search.Node
	for i := range search.MaxNodes {
		or = append(or, docstore.Eq("x", i*7))   // 0, 7, …, 49 among the documents
		and = append(and, docstore.Ne("x", i*2)) // the odd ones left
	}
	if got := strings.Join(ids(t, c, docstore.Or(or...)), " "); got != "d00 d07 d14 d21 d28 d35 d42 d49" {
		t.Errorf("long or: %q", got)
	}
	odd := ids(t, c, docstore.And(and...))
	if len(odd) != 25 || odd[0] != "d01" {
		t.Errorf("long and: %v", odd)
	}
	if got := strings.Join(ids(t, c, docstore.And(docstore.Or(or...), docstore.And(and...))), " "); got != "d07 d21 d35 d49" {
		t.Errorf("long or within long and: %q", got)
	}
}

// Issue 28: a costly _like ran for 45 s. A query stops when its context ends (the driver interrupts SQLite),
// so the request deadline bounds every query's work. The scan here would take many seconds to finish.
func TestSQLiteQueryStopsAtDeadline(t *testing.T) {
	var docs []string
	value := strings.Repeat("a", 2<<10)
	for i := range 2000 {
		docs = append(docs, fmt.Sprintf(`{"_id":"d%04d","name":%q}`, i, value))
	}
	c := sqliteColl(t, docstore.Spec{Name: "costly"}, docs...)
	costly := search.Node{Op: search.OpLike, Path: "name", Value: strings.Repeat("a", search.MaxPattern-1) + "b"}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var out []map[string]any
		done <- c.Find(ctx, docstore.Query{Filter: costly}, &out)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the costly query finished before its deadline: make it costlier")
		}
		if ctx.Err() == nil {
			t.Fatalf("the query failed before its deadline: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the query ran 30 s past its deadline of 100 ms")
	}
}
