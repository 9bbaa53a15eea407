package query

import "github.com/openir/platform/pkg/apperr"

// RewriteFilter brings the reference system's query operators that pkg/search lacks into its language,
// anywhere in a query: {_parent: {_type: "case"|"alert"|"case_task", _query: {_id: X}}} becomes
// {case|alert|task: X} (a parent the searched records lack is the search's unknown-field 400), {_is: {f: v}}
// becomes {f: v}, {_ne: {f: v}} becomes {_not: {f: v}}. Other uses of _parent are a 400.
func RewriteFilter(q any, depth int) (any, error) {
	if depth > 64 {
		return nil, apperr.New(apperr.BadRequest, "query is nested too deeply")
	}
	switch v := q.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := RewriteFilter(x, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case map[string]any:
		if len(v) == 1 {
			if p, ok := v["_parent"]; ok {
				return parentFilter(p)
			}
			if x, ok := v["_is"]; ok {
				return RewriteFilter(x, depth+1)
			}
			if x, ok := v["_ne"]; ok {
				y, err := RewriteFilter(x, depth+1)
				if err != nil {
					return nil, err
				}
				return map[string]any{"_not": y}, nil
			}
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := RewriteFilter(x, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	}
	return q, nil
}

func parentFilter(p any) (any, error) {
	bad := apperr.New(apperr.BadRequest, `_parent supports {"_type": "case", "alert" or "case_task", "_query": {"_id": id}}`)
	m, ok := p.(map[string]any)
	if !ok {
		return nil, bad
	}
	typ, _ := m["_type"].(string)
	field, known := parentFields[typ]
	if !known {
		return nil, bad
	}
	q, _ := m["_query"].(map[string]any)
	var id any
	switch {
	case len(q) == 1 && q["_id"] != nil:
		id = q["_id"]
	case len(q) == 2 && q["_field"] == "_id":
		id = q["_value"]
	}
	if _, isString := id.(string); !isString {
		return nil, bad
	}
	return map[string]any{field: id}, nil
}

// parentFields are the _parent types and the search field naming the parent's id.
var parentFields = map[string]string{"case": "case", "alert": "alert", "case_task": "task"}
