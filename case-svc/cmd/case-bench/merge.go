package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/openir/platform/pkg/benchkit"
)

// ownServices are the services whose rows this program writes: a merge replaces them.
var ownServices = []string{"case-svc", "connector"}

// caseBenchKey is where a merged file keeps this run's header (date, machine, sizes, duration, phases) when
// the file's top-level header belongs to another program's run.
const caseBenchKey = "caseBench"

// mergeResults writes res into the JSON file at path. When the file holds rows of other services (the
// analysis-bench rows), it keeps them and every top-level key, replaces the rows of ownServices with res's
// (ordered by section number) and puts res's header under caseBenchKey. Otherwise it writes res as the whole
// file. It says which it did.
func mergeResults(path string, res benchkit.Results) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "written to", benchkit.WriteJSON(path, res)
	}
	if err != nil {
		return "", err
	}
	keys, values, err := topLevel(data)
	if err != nil {
		return "", fmt.Errorf("%s is not a JSON object (%w); remove it or use -out elsewhere", path, err)
	}
	var rows []benchkit.Row
	if i := slices.Index(keys, "rows"); i >= 0 {
		if err := json.Unmarshal(values[i], &rows); err != nil {
			return "", fmt.Errorf("%s: rows: %w", path, err)
		}
	}
	rows = slices.DeleteFunc(rows, func(r benchkit.Row) bool { return slices.Contains(ownServices, r.Service) })
	if len(rows) == 0 {
		return "written to", benchkit.WriteJSON(path, res) // nothing of another program's to keep
	}
	rows = append(rows, res.Rows...)
	slices.SortStableFunc(rows, func(a, b benchkit.Row) int { return sectionNumber(a.Section) - sectionNumber(b.Section) })
	header := res
	header.Rows = nil
	for _, kv := range []struct {
		key string
		v   any
	}{{"rows", rows}, {caseBenchKey, header}} {
		raw, err := json.Marshal(kv.v)
		if err != nil {
			return "", err
		}
		if i := slices.Index(keys, kv.key); i >= 0 {
			values[i] = raw
		} else {
			keys, values = append(keys, kv.key), append(values, raw)
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(values[i])
	}
	buf.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return "", err
	}
	out.WriteByte('\n')
	return "merged into", benchkit.WriteFile(path, out.Bytes())
}

// topLevel splits a JSON object into its keys and raw values, in file order.
func topLevel(data []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("no object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, nil, errors.New("bad key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}

// sectionNumber is the leading number of a section ("6 case-svc" → 6); 1000 without one.
func sectionNumber(s string) int {
	f, _, _ := strings.Cut(s, " ")
	n, err := strconv.Atoi(f)
	if err != nil {
		return 1000
	}
	return n
}

// --- helpers shared by the sections ---

// count writes 10000 as 10k.
func count(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// doc is a stored document as the bench copies it: its JSON object with numbers kept as written.
type doc map[string]any

// decodeDoc reads a stored document (json.Number keeps integers integers when it is written again).
func decodeDoc(raw []byte) (doc, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var d doc
	err := dec.Decode(&d)
	return d, err
}

// with returns a copy of d with the given key/value pairs set.
func (d doc) with(kv ...any) doc {
	out := maps.Clone(d)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
