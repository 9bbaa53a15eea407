package sqlite

import (
	"testing"

	"github.com/openir/platform/pkg/docstore/internal/engine"
)

// An update writes back exactly the text of what it does not change: keys in their order (escapes and spaces
// inside untouched values included), numbers as written; what it changes is encoded as encoding/json does.
func TestUpdateKeepsTheText(t *testing.T) {
	set := func(p string, v any) engine.Op {
		return engine.Op{Kind: engine.OpSet, Path: p, Value: engine.Normalize(v)}
	}
	inc := func(p string, v any) engine.Op {
		return engine.Op{Kind: engine.OpInc, Path: p, Value: engine.Normalize(v)}
	}
	for _, r := range []struct {
		name, doc string
		ops       []engine.Op
		want      string
	}{
		{"unrelated set", ` {"_id":"x", "o" : {"b":1, "a":2}, "n": 18446744073709551615 } `, []engine.Op{set("x", 1)},
			`{"_id":"x","o":{"b":1, "a":2},"n":18446744073709551615,"x":1}`},
		{"set inside an object keeps its other keys in place", `{"o":{"b":1,"a":2,"c":3}}`, []engine.Op{set("o.a", "z")},
			`{"o":{"b":1,"a":"z","c":3}}`},
		{"escaped key", `{"a\u0062":1,"\u00e9":1E2,"t":[1E2]}`, []engine.Op{set("ab", 2), inc("é", 1)},
			`{"a\u0062":2,"\u00e9":101,"t":[1E2]}`},
		{"set through an array index", `{"t":[{"x":1,"y":0.10},2]}`, []engine.Op{set("t.0.x", 5)}, `{"t":[{"x":5,"y":0.10},2]}`},
		{"set through a null", `{"p":null,"q":1}`, []engine.Op{set("p.a.b", true)}, `{"p":{"a":{"b":true}},"q":1}`},
		{"unset keeps the order", `{"a":1,"b":2,"c":3}`, []engine.Op{{Kind: engine.OpUnset, Path: "b"}}, `{"a":1,"c":3}`},
		{"unset an element", `{"t":[1,2,3]}`, []engine.Op{{Kind: engine.OpUnset, Path: "t.1"}}, `{"t":[1,null,3]}`},
		{"inc a double", `{"n":1.0}`, []engine.Op{inc("n", 1)}, `{"n":2}`},
		{"inc beside a big integer", `{"n":1,"u":-18446744073709551615}`, []engine.Op{inc("n", 1)}, `{"n":2,"u":-18446744073709551615}`},
		{"pull keeps the other elements as written", `{"t":[1.0, 2.50, "1", 1e0, {"k" : 1}]}`,
			[]engine.Op{{Kind: engine.OpPull, Path: "t", Items: []any{int64(1)}}}, `{"t":[2.50,"1",{"k" : 1}]}`},
		{"add to set keeps the elements as written", `{"t":[1.50,{"b":1,"a":2}]}`,
			[]engine.Op{{Kind: engine.OpAddToSet, Path: "t", Items: []any{1.5, map[string]any{"b": int64(1), "a": int64(2)}, int64(3)}}},
			`{"t":[1.50,{"b":1,"a":2},3]}`},
		{"new fields in MongoDB's order", `{"m":{}}`, []engine.Op{set("m.z", 1), set("m.10", 2), set("m.9", 3), set("a", 4)},
			`{"m":{"9":3,"10":2,"z":1},"a":4}`},
		{"set a map: keys sorted", `{}`, []engine.Op{set("o", map[string]any{"b": 1, "a": []any{"<&>"}})}, `{"o":{"a":["\u003c\u0026\u003e"],"b":1}}`},
	} {
		t.Run(r.name, func(t *testing.T) {
			doc, err := parseDoc([]byte(r.doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := applyUpdate(doc, r.ops); err != nil {
				t.Fatal(err)
			}
			got, err := encodeDoc(doc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != r.want {
				t.Errorf("got  %s\nwant %s", got, r.want)
			}
		})
	}
}

func TestUpdateRefusals(t *testing.T) {
	for _, r := range []struct {
		doc string
		op  engine.Op
	}{
		{`{"a":1}`, engine.Op{Kind: engine.OpSet, Path: "a.b", Value: int64(1)}},
		{`{"a":"s"}`, engine.Op{Kind: engine.OpSet, Path: "a.b", Value: int64(1)}},
		{`{"a":[1]}`, engine.Op{Kind: engine.OpSet, Path: "a.x", Value: int64(1)}},
		{`{"a":[1]}`, engine.Op{Kind: engine.OpSet, Path: "a.1", Value: int64(1)}},
		{`{"a":"1"}`, engine.Op{Kind: engine.OpInc, Path: "a", Value: int64(1)}},
		{`{"a":null}`, engine.Op{Kind: engine.OpInc, Path: "a", Value: int64(1)}},
		{`{"a":9223372036854775807}`, engine.Op{Kind: engine.OpInc, Path: "a", Value: int64(1)}},
		{`{"a":{}}`, engine.Op{Kind: engine.OpAddToSet, Path: "a", Items: []any{int64(1)}}},
		{`{"a":1}`, engine.Op{Kind: engine.OpPull, Path: "a", Items: []any{int64(1)}}},
	} {
		doc, err := parseDoc([]byte(r.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := applyUpdate(doc, []engine.Op{r.op}); err == nil {
			t.Errorf("%s on %s: no error", r.op.Path, r.doc)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"a":1`, `{"a" 1}`, `{"a":[1,}`} {
		if doc, err := parseDoc([]byte(bad)); err == nil {
			if err := applyUpdate(doc, []engine.Op{{Kind: engine.OpSet, Path: "a.b", Value: int64(1)}}); err == nil {
				t.Errorf("%q: updated", bad)
			}
		}
	}
}
