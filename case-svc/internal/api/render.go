package api

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/web"
)

// timeOpt turns an optional epoch-milliseconds request field into an optional time.
func timeOpt(p *int64) *time.Time {
	if p == nil {
		return nil
	}
	t := time.UnixMilli(*p)
	return &t
}

// timeChange turns an epoch-milliseconds request field into a domain change.
func timeChange(o web.Opt[int64]) record.Change[time.Time] {
	return record.Change[time.Time]{Set: o.Set, Null: o.Null, V: time.UnixMilli(o.V)}
}

// stringsChange turns a list request field into a domain change.
func stringsChange(o web.Opt[web.Strings]) record.Change[[]string] {
	return record.Change[[]string]{Set: o.Set, Null: o.Null, V: []string(o.V)}
}

// customJSON writes custom values as the contract shows them: name → {"<type>": value, "order": n}, plus "_id"
// on templates.
func customJSON(vals customfield.Values) map[string]map[string]any {
	out := make(map[string]map[string]any, len(vals))
	for name, v := range vals {
		m := map[string]any{string(v.Type): v.Value, "order": v.Order}
		if v.ID != "" {
			m["_id"] = v.ID
		}
		out[name] = m
	}
	return out
}

// customInputs reads the customFields of a request: each value is {"<type>": value, "order": n} (other keys,
// such as a template's "_id", are ignored) or a bare value.
func customInputs(raw map[string]json.RawMessage) (map[string]customfield.Input, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]customfield.Input, len(raw))
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		field := "customFields." + name
		if len(name) > 64 {
			field = "customFields"
		}
		bad := apperr.Fields(apperr.FieldError{Name: field,
			Message: `expected {"<type>": value, "order": n} with a type among string, integer, float, boolean, date`})
		v, err := decodeAny(raw[name])
		if err != nil {
			return nil, bad
		}
		obj, isObj := v.(map[string]any)
		if !isObj {
			if _, isList := v.([]any); isList {
				return nil, bad
			}
			out[name] = customfield.Input{Value: v}
			continue
		}
		var in customfield.Input
		for k, x := range obj {
			switch {
			case k == "order":
				n, ok := x.(json.Number)
				o, err := strconv.Atoi(string(n))
				if !ok || err != nil {
					return nil, apperr.Fields(apperr.FieldError{Name: field + ".order", Message: "expected an integer"})
				}
				in.Order = &o
			case isFieldType(k):
				if in.Type != "" {
					return nil, bad
				}
				in.Type, in.Value = k, x
			}
		}
		if in.Type == "" {
			return nil, bad
		}
		out[name] = in
	}
	return out, nil
}

func isFieldType(k string) bool {
	for _, t := range customfield.Types() {
		if string(t) == k {
			return true
		}
	}
	return false
}

func decodeAny(b json.RawMessage) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// flag reads a boolean option such as nstats from the query string or the body.
func flag(c echo.Context, name string) bool {
	f, err := web.Fields(c)
	if err != nil {
		return false
	}
	switch v := f[name].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}
