package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/openir/platform/pkg/docstore/internal/engine"
)

// jv is one JSON value of a stored document that an update changes. It stays the text it was stored as until an
// operation needs to look inside it: then its members (or elements) are read, each still its own text, and only
// the values the operations replace are encoded anew. So an update changes nothing else in the document: the
// order of the keys of every object and the text of every number stay as written (an integer of any size is
// not rounded through a float64), as MongoDB keeps them.
type jv struct {
	kind  jkind
	raw   []byte   // jRaw: the value's text, without surrounding spaces
	rkeys [][]byte // jObject: the members' names as written, quoted
	elems []*jv    // jObject: the members' values; jArray: the elements
	val   any      // jGo: a normalized value (engine.Normalize) an operation set
}

type jkind uint8

const (
	jRaw jkind = iota
	jObject
	jArray
	jGo
)

// jtype returns the JSON type of v as the first byte of its text: '{', '[', '"', 't' (true or false), 'n', or
// '0' for a number.
func (v *jv) jtype() byte {
	switch v.kind {
	case jObject:
		return '{'
	case jArray:
		return '['
	case jGo:
		switch v.val.(type) {
		case nil:
			return 'n'
		case bool:
			return 't'
		case string:
			return '"'
		case int64, float64:
			return '0'
		case []any:
			return '['
		case map[string]any:
			return '{'
		}
		return 'n'
	}
	switch c := v.raw[0]; c {
	case '{', '[', '"', 'n':
		return c
	case 't', 'f':
		return 't'
	}
	return '0'
}

// open makes an object or an array a list of its members or elements (v must be one).
func (v *jv) open() error {
	switch v.kind {
	case jObject, jArray:
		return nil
	case jGo:
		switch x := v.val.(type) {
		case []any:
			v.kind, v.elems = jArray, make([]*jv, len(x))
			for i, e := range x {
				v.elems[i] = &jv{kind: jGo, val: e}
			}
		case map[string]any:
			// json.Marshal, which encodes v otherwise, writes a map's keys sorted: so does this.
			v.kind = jObject
			for _, k := range sortedKeys(x) {
				v.rkeys = append(v.rkeys, quoteKey(k))
				v.elems = append(v.elems, &jv{kind: jGo, val: x[k]})
			}
		}
		v.val = nil
		return nil
	}
	b, i := v.raw, 1
	object := b[0] == '{'
	n := 0 // members read
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return errors.New("stored document: truncated JSON")
		}
		if b[i] == '}' || b[i] == ']' {
			break
		}
		if n > 0 {
			if b[i] != ',' {
				return errors.New("stored document: bad JSON")
			}
			i = skipSpace(b, i+1)
		}
		if object {
			end, err := skipValue(b, i)
			if err != nil || b[i] != '"' {
				return errors.New("stored document: bad JSON object key")
			}
			v.rkeys = append(v.rkeys, b[i:end])
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return errors.New("stored document: bad JSON object")
			}
			i = skipSpace(b, i+1)
		}
		end, err := skipValue(b, i)
		if err != nil {
			return err
		}
		v.elems = append(v.elems, &jv{raw: b[i:end]})
		i = end
		n++
	}
	if object {
		v.kind = jObject
	} else {
		v.kind = jArray
	}
	v.raw = nil
	return nil
}

// member returns the index of the member named name, or -1.
func (v *jv) member(name string) int {
	for i, rk := range v.rkeys {
		k := rk[1 : len(rk)-1]
		if !hasEscape(k) {
			if string(k) == name {
				return i
			}
			continue
		}
		var s string
		if json.Unmarshal(rk, &s) == nil && s == name {
			return i
		}
	}
	return -1
}

// value returns v as a normalized Go value (engine.Normalize).
func (v *jv) value() any {
	switch v.kind {
	case jGo:
		return v.val
	case jArray:
		out := make([]any, len(v.elems))
		for i, e := range v.elems {
			out[i] = e.value()
		}
		return out
	case jObject:
		out := make(map[string]any, len(v.elems))
		for i, e := range v.elems {
			var k string
			_ = json.Unmarshal(v.rkeys[i], &k)
			out[k] = e.value()
		}
		return out
	}
	if v.jtype() == '0' {
		return engine.Number(json.Number(v.raw))
	}
	return engine.DecodeValue(v.raw)
}

// appendJSON appends the JSON text of v.
func (v *jv) appendJSON(dst []byte) ([]byte, error) {
	switch v.kind {
	case jRaw:
		return append(dst, v.raw...), nil
	case jGo:
		b, err := json.Marshal(v.val)
		if err != nil {
			return nil, fmt.Errorf("encode document: %w", err)
		}
		return append(dst, b...), nil
	}
	open, close := byte('['), byte(']')
	if v.kind == jObject {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	var err error
	for i, e := range v.elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v.kind == jObject {
			dst = append(dst, v.rkeys[i]...)
			dst = append(dst, ':')
		}
		if dst, err = e.appendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, close), nil
}

// quoteKey returns a member name as encoding/json writes it.
func quoteKey(k string) []byte {
	b, _ := json.Marshal(k)
	return b
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end of the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("stored document: truncated JSON")
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, nil
			}
			j++
		}
		if j > i {
			return j, nil
		}
	}
	return 0, errors.New("stored document: truncated JSON")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
