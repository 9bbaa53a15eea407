package mongox_test

import (
	"context"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/mongox/mongotest"
	"github.com/openir/platform/pkg/search"
)

var testFields = search.Fields{
	"id":       {Path: "_id", Type: search.String},
	"title":    {Path: "title", Type: search.String},
	"status":   {Path: "status", Type: search.String},
	"severity": {Path: "severity", Type: search.Number},
	"flag":     {Path: "flag", Type: search.Bool},
	"owner":    {Path: "owner.login", Type: search.String},
}

// doc is a shorthand for a one-key document.
func doc(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

func regexDoc(pattern string, fold bool) bson.D {
	d := doc("$regex", pattern)
	if fold {
		d = append(d, bson.E{Key: "$options", Value: "i"})
	}
	return d
}

var nothing = doc("_id", doc("$in", bson.A{}))

func TestFilter(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  bson.D
	}{
		{"all", `{}`, bson.D{}},
		{"empty body", ``, bson.D{}},
		{"eq", `{"status": "Open"}`, doc("status", doc("$eq", "Open"))},
		{"eq dotted path", `{"owner": "bob"}`, doc("owner.login", doc("$eq", "bob"))},
		{"eq number", `{"severity": "2"}`, doc("severity", doc("$eq", int64(2)))},
		{"eq bool", `{"flag": true}`, doc("flag", doc("$eq", true))},
		{"_id", `{"_id": "x"}`, doc("_id", doc("$eq", "x"))},
		{"gt", `{"_gt": {"severity": 1}}`, doc("severity", doc("$gt", int64(1)))},
		{"gte", `{"_gte": {"severity": 1.5}}`, doc("severity", doc("$gte", 1.5))},
		{"lt", `{"_lt": {"severity": 3}}`, doc("severity", doc("$lt", int64(3)))},
		{"lte", `{"_lte": {"title": "m"}}`, doc("title", doc("$lte", "m"))},
		{"between", `{"_between": {"_field": "severity", "_from": 1, "_to": 4}}`,
			doc("$and", bson.A{doc("severity", doc("$gte", int64(1))), doc("severity", doc("$lt", int64(4)))})},
		{"and", `{"_and": [{"status": "a"}, {"flag": false}]}`,
			doc("$and", bson.A{doc("status", doc("$eq", "a")), doc("flag", doc("$eq", false))})},
		{"and empty", `{"_and": []}`, bson.D{}},
		{"or", `{"_or": [{"status": "a"}, {"status": "b"}]}`,
			doc("$or", bson.A{doc("status", doc("$eq", "a")), doc("status", doc("$eq", "b"))})},
		{"or empty matches nothing", `{"_or": []}`, nothing},
		{"not", `{"_not": {"status": "a"}}`, doc("$nor", bson.A{doc("status", doc("$eq", "a"))})},
		{"not all", `{"_not": {}}`, doc("$nor", bson.A{bson.D{}})},
		{"in", `{"_in": {"_field": "severity", "_values": [1, "2"]}}`, doc("severity", doc("$in", bson.A{int64(1), int64(2)}))},
		{"in empty", `{"_in": {"_field": "status", "_values": []}}`, doc("status", doc("$in", bson.A{}))},
		{"exists", `{"_contains": "owner"}`, doc("owner.login", bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: nil}})},
		{"like", `{"_like": {"_field": "title", "_value": "a.b(c)*"}}`, doc("title", regexDoc(`a\.b\(c\)\*`, true))},
		{"wildcard", `{"_wildcard": {"_field": "title", "_value": "a*b?.c"}}`, doc("title", regexDoc(`^a.*b.\.c$`, true))},
		{"wildcard star runs collapse", `{"_wildcard": {"_field": "title", "_value": "**a***"}}`, doc("title", regexDoc(`^.*a.*$`, true))},
		{"wildcard no stars", `{"_wildcard": {"_field": "title", "_value": "[x]"}}`, doc("title", regexDoc(`^\[x\]$`, true))},
		{"prefix", `{"_startsWith": {"_field": "title", "_value": "^a$"}}`, doc("title", regexDoc(`^\^a\$`, false))},
		{"suffix", `{"_endsWith": {"_field": "title", "_value": ".exe"}}`, doc("title", regexDoc(`\.exe$`, false))},
		{"NUL in regex", `{"_like": {"_field": "title", "_value": "a\u0000b"}}`, doc("title", regexDoc(`a\x00b`, true))},
		{"string query", `{"_string": "status:a AND severity:1 OR title:\"x y\""}`,
			doc("$or", bson.A{
				doc("$and", bson.A{doc("status", doc("$eq", "a")), doc("severity", doc("$eq", int64(1)))}),
				doc("title", doc("$eq", "x y")),
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := search.ParseJSON([]byte(tt.query), testFields)
			if err != nil {
				t.Fatal(err)
			}
			got := mongox.Filter(n)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mongox.Filter(%s)\n got %s\nwant %s", tt.query, extJSON(t, got), extJSON(t, tt.want))
			}
		})
	}
}

func TestFilterHandBuiltNodes(t *testing.T) {
	tests := []struct {
		name string
		n    search.Node
		want bson.D
	}{
		{"zero node", search.Node{}, nothing},
		{"unknown op", search.Node{Op: "regex", Path: "title", Value: ".*"}, nothing},
		{"not without child", search.Node{Op: search.OpNot}, nothing},
		{"in with nil values", search.Node{Op: search.OpIn, Path: "a"}, doc("a", doc("$in", bson.A{}))},
		{"like with non-string value", search.Node{Op: search.OpLike, Path: "a", Value: 1.5}, doc("a", regexDoc(`1\.5`, true))},
	}
	for _, tt := range tests {
		if got := mongox.Filter(tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, extJSON(t, got), extJSON(t, tt.want))
		}
	}
}

func TestFilterExtJSON(t *testing.T) {
	n, err := search.ParseJSON([]byte(`{"_and": [{"_not": {"status": "x"}}, {"_wildcard": {"_field": "title", "_value": "a*"}}]}`), testFields)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$and":[{"$nor":[{"status":{"$eq":"x"}}]},{"title":{"$regex":"^a.*$","$options":"i"}}]}`
	if got := extJSON(t, mongox.Filter(n)); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestRegexSemantics checks the text operators' patterns with Go's regexp (the engine FerretDB uses).
func TestRegexSemantics(t *testing.T) {
	tests := []struct {
		op    search.Op
		value string
		match []string
		miss  []string
	}{
		{search.OpLike, "a.b", []string{"a.b", "xA.By"}, []string{"axb", "ab"}},
		{search.OpLike, "(x)+", []string{"(x)+", "-(X)+-"}, []string{"x", "xx"}},
		{search.OpLike, "", []string{"", "anything"}, nil},
		{search.OpWildcard, "a*b?", []string{"ab1", "AxyzbZ", "a-b-"}, []string{"ab", "xab1", "ab12"}},
		{search.OpWildcard, "*.exe", []string{".exe", "run.EXE"}, []string{"runxexe", "run.exe.txt"}},
		{search.OpWildcard, `a\b`, []string{`a\b`}, []string{"ab", `a\\b`}},
		{search.OpWildcard, "é?", []string{"éa", "Éö"}, []string{"é", "éab"}},
		{search.OpPrefix, "Re:", []string{"Re: x", "Re:"}, []string{"re: x", " Re:"}},
		{search.OpSuffix, "$1", []string{"cost $1"}, []string{"$10", "cost $1 "}},
	}
	for _, tt := range tests {
		d := mongox.Filter(search.Node{Op: tt.op, Path: "f", Value: tt.value})
		r := d[0].Value.(bson.D)
		pattern := r[0].Value.(string)
		if len(r) == 2 {
			pattern = "(?" + r[1].Value.(string) + ")" + pattern
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Errorf("%s %q: pattern %q: %v", tt.op, tt.value, pattern, err)
			continue
		}
		for _, s := range tt.match {
			if !re.MatchString(s) {
				t.Errorf("%s %q (%q) does not match %q", tt.op, tt.value, pattern, s)
			}
		}
		for _, s := range tt.miss {
			if re.MatchString(s) {
				t.Errorf("%s %q (%q) matches %q", tt.op, tt.value, pattern, s)
			}
		}
	}
}

func TestSort(t *testing.T) {
	keys, err := search.ParseSort([]string{"-severity,title", "+owner"}, testFields)
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{{Key: "severity", Value: -1}, {Key: "title", Value: 1}, {Key: "owner.login", Value: 1}}
	if got := mongox.Sort(keys); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := mongox.Sort(nil); got == nil || len(got) != 0 {
		t.Errorf("mongox.Sort(nil) = %#v, want an empty document", got)
	}
}

// operatorKeys are the only keys Filter may produce besides the allow-listed paths.
var operatorKeys = map[string]bool{
	"$and": true, "$or": true, "$nor": true, "$eq": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$exists": true, "$ne": true, "$regex": true, "$options": true,
}

// checkKeys fails if a key of the filter document v is neither an operator nor an allow-listed path (or "_id"
// of the match-nothing filter), or if a value position holds a document that is not an operator document.
func checkKeys(t *testing.T, v any, paths map[string]bool) {
	t.Helper()
	switch v := v.(type) {
	case bson.D:
		for _, e := range v {
			switch {
			case operatorKeys[e.Key]:
			case paths[e.Key] || e.Key == "_id":
				inner, ok := e.Value.(bson.D)
				if !ok {
					t.Fatalf("path %q compared without an operator: %#v", e.Key, e.Value)
				}
				for _, ie := range inner {
					if !operatorKeys[ie.Key] {
						t.Fatalf("key %q under path %q is not an operator", ie.Key, e.Key)
					}
					if d, ok := ie.Value.(bson.D); ok {
						t.Fatalf("operator %q of path %q has a document operand %v", ie.Key, e.Key, d)
					}
				}
				continue
			default:
				t.Fatalf("key %q comes from neither the operators nor the allow-list", e.Key)
			}
			checkKeys(t, e.Value, paths)
		}
	case bson.A:
		for _, x := range v {
			checkKeys(t, x, paths)
		}
	}
}

func allowedPaths() map[string]bool {
	m := map[string]bool{}
	for _, f := range testFields {
		m[f.Path] = true
	}
	return m
}

func TestKeysNeverComeFromInput(t *testing.T) {
	paths := allowedPaths()
	ok := []string{
		`{"title": "$where"}`,
		`{"title": "a.b"}`,
		`{"_field": "title", "_value": "$gt"}`,
		`{"_in": {"_field": "title", "_values": ["$where", "a.b", "$ne"]}}`,
		`{"_like": {"_field": "title", "_value": "$where"}}`,
		`{"_string": "title:$where AND status:a.b"}`,
		`{"_string": "title:\"{\\\"$gt\\\": \\\"\\\"}\""}`,
		`{"_or": [{"_not": {"_lt": {"title": "$regex"}}}, {"_wildcard": {"_field": "owner", "_value": "$*"}}]}`,
	}
	for _, q := range ok {
		n, err := search.ParseJSON([]byte(q), testFields)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		d := mongox.Filter(n)
		checkKeys(t, d, paths)
		js := extJSON(t, d)
		for _, bad := range []string{`"$where":`, `"$ne":`, `"a.b":`, `"$regex":"$regex"`} {
			if strings.Contains(js, bad) {
				t.Errorf("%s: user string became a key: %s", q, js)
			}
		}
	}
	rejected := []string{
		`{"title": {"$where": "1"}}`,
		`{"$where": "1"}`,
		`{"a.b": "x"}`,
		`{"_field": "$where", "_value": "1"}`,
		`{"_gt": {"$where": "1"}}`,
		`{"_in": {"_field": "title", "_values": [{"$gt": ""}]}}`,
		`{"_contains": "a.b"}`,
		`{"_string": "$where:1"}`,
	}
	for _, q := range rejected {
		if n, err := search.ParseJSON([]byte(q), testFields); err == nil {
			t.Errorf("%s accepted: %s", q, extJSON(t, mongox.Filter(n)))
		}
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"status": "Open", "severity": 2}`, `{"_or": []}`, `{"_not": {"_in": {"_field": "title", "_values": ["a"]}}}`,
		`{"_wildcard": {"_field": "title", "_value": "a**?\u0000[b"}}`, `{"_string": "title:\"$where\" OR flag:true"}`,
		`{"_between": {"_field": "severity", "_from": 1, "_to": 2.5}}`, `{"_like": {"_field": "owner", "_value": "\\E.*"}}`,
	} {
		f.Add([]byte(s))
	}
	paths := allowedPaths()
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, err := search.ParseJSON(raw, testFields)
		if err != nil {
			return
		}
		d := mongox.Filter(n)
		checkKeys(t, d, paths)
		if _, err := bson.Marshal(d); err != nil {
			t.Fatalf("marshal %v: %v", d, err)
		}
	})
}

func extJSON(t *testing.T, d bson.D) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		t.Fatalf("MarshalExtJSON(%v): %v", d, err)
	}
	return string(b)
}

// TestFilterOnDatabase runs every operator against the test database (embedded FerretDB, or the MongoDB of
// MONGOTEST_URI) to check that both understand the documents Filter produces.
func TestFilterOnDatabase(t *testing.T) {
	db := mongotest.New(t)
	ctx := context.Background()
	c := db.Collection("filter")
	docs := []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "title", Value: "Alpha.Report"}, {Key: "status", Value: "Open"},
			{Key: "severity", Value: int64(1)}, {Key: "flag", Value: true}, {Key: "owner", Value: bson.D{{Key: "login", Value: "bob"}}}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "title", Value: "beta (draft)"}, {Key: "status", Value: "Closed"},
			{Key: "severity", Value: 2.5}, {Key: "flag", Value: false}},
		bson.D{{Key: "_id", Value: "c"}, {Key: "title", Value: "AlphaXReport"}, {Key: "status", Value: "New"},
			{Key: "severity", Value: int64(3)}, {Key: "flag", Value: true}, {Key: "owner", Value: bson.D{{Key: "login", Value: "alice"}}}},
		bson.D{{Key: "_id", Value: "d"}, {Key: "title", Value: "$where"}, {Key: "status", Value: "Open"},
			{Key: "severity", Value: int64(10)}, {Key: "flag", Value: false}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{`{}`, []string{"a", "b", "c", "d"}},
		{`{"status": "Open"}`, []string{"a", "d"}},
		{`{"owner": "bob"}`, []string{"a"}},
		{`{"_id": "b"}`, []string{"b"}},
		{`{"flag": "true", "severity": 3}`, []string{"c"}},
		{`{"_gt": {"severity": 2.5}}`, []string{"c", "d"}},
		{`{"_gte": {"severity": "2.5"}}`, []string{"b", "c", "d"}},
		{`{"_lt": {"severity": 3}}`, []string{"a", "b"}},
		{`{"_lte": {"severity": 3}}`, []string{"a", "b", "c"}},
		{`{"_between": {"_field": "severity", "_from": 1, "_to": 3}}`, []string{"a", "b"}},
		{`{"_between": {"_field": "severity", "_to": 3}}`, []string{"a", "b"}},
		{`{"_in": {"_field": "status", "_values": ["New", "Closed"]}}`, []string{"b", "c"}},
		{`{"_in": {"_field": "status", "_values": []}}`, nil},
		{`{"_contains": "owner"}`, []string{"a", "c"}},
		{`{"_not": {"_contains": "owner"}}`, []string{"b", "d"}},
		{`{"_or": [{"status": "New"}, {"severity": 1}]}`, []string{"a", "c"}},
		{`{"_or": []}`, nil},
		{`{"_and": [{"status": "Open"}, {"flag": false}]}`, []string{"d"}},
		{`{"_like": {"_field": "title", "_value": "a.r"}}`, []string{"a"}},
		{`{"_like": {"_field": "title", "_value": "(DRAFT)"}}`, []string{"b"}},
		{`{"_like": {"_field": "title", "_value": "$"}}`, []string{"d"}},
		{`{"_wildcard": {"_field": "title", "_value": "alpha?report"}}`, []string{"a", "c"}},
		{`{"_wildcard": {"_field": "title", "_value": "*.report"}}`, []string{"a"}},
		{`{"_wildcard": {"_field": "title", "_value": "b*"}}`, []string{"b"}},
		{`{"_startsWith": {"_field": "title", "_value": "Alpha."}}`, []string{"a"}},
		{`{"_startsWith": {"_field": "title", "_value": "alpha"}}`, nil},
		{`{"_endsWith": {"_field": "title", "_value": "(draft)"}}`, []string{"b"}},
		{`{"_string": "status:Open AND flag:true OR status:Closed"}`, []string{"a", "b"}},
	}
	for _, tt := range tests {
		n, err := search.ParseJSON([]byte(tt.query), testFields)
		if err != nil {
			t.Errorf("%s: %v", tt.query, err)
			continue
		}
		keys, err := search.ParseSort([]string{"-id"}, testFields)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := c.Find(ctx, mongox.Filter(n), options.Find().SetSort(mongox.Sort(keys)))
		if err != nil {
			t.Errorf("%s: find %s: %v", tt.query, extJSON(t, mongox.Filter(n)), err)
			continue
		}
		var got []struct {
			ID string `bson:"_id"`
		}
		if err := cur.All(ctx, &got); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, g := range got {
			ids = append(ids, g.ID)
		}
		want := slices.Clone(tt.want)
		slices.Reverse(want)
		if !slices.Equal(ids, want) {
			t.Errorf("%s (%s): got %v, want %v", tt.query, extJSON(t, mongox.Filter(n)), ids, want)
		}
		count, err := c.CountDocuments(ctx, mongox.Filter(n))
		if err != nil || count != int64(len(want)) {
			t.Errorf("%s: count = %d, %v; want %d", tt.query, count, err, len(want))
		}
	}
}
