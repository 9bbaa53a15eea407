package query

import "github.com/openir/platform/pkg/apperr"

// WalkFilter rebuilds a filter as decoded from JSON (arrays, objects, values), offering each object to node
// first: when node answers done, its result stands for the object; otherwise the object's values are walked.
// node's walk continues below the object (for the operand of an operator it rewrites). A filter nested deeper
// than 64 levels is a 400.
func WalkFilter(q any, node func(m map[string]any, walk func(any) (any, error)) (out any, done bool, err error)) (any, error) {
	return walkFilter(q, 0, node)
}

func walkFilter(q any, depth int, node func(map[string]any, func(any) (any, error)) (any, bool, error)) (any, error) {
	if depth > 64 {
		return nil, apperr.New(apperr.BadRequest, "query is nested too deeply")
	}
	walk := func(x any) (any, error) { return walkFilter(x, depth+1, node) }
	switch v := q.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := walk(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case map[string]any:
		if y, done, err := node(v, walk); done || err != nil {
			return y, err
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := walk(x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	}
	return q, nil
}

// RewriteFilter brings the reference system's query operators that pkg/search lacks into its language,
// anywhere in a query: {_parent: {_type: "case"|"alert"|"case_task", _query: {_id: X}}} becomes
// {case|alert|task: X} (a parent the searched records lack is the search's unknown-field 400), {_is: {f: v}}
// becomes {f: v}, {_ne: {f: v}} becomes {_not: {f: v}}. Other uses of _parent are a 400.
func RewriteFilter(q any) (any, error) { return WalkFilter(q, rewriteOperator) }

func rewriteOperator(v map[string]any, walk func(any) (any, error)) (any, bool, error) {
	if len(v) != 1 {
		return nil, false, nil
	}
	if p, ok := v["_parent"]; ok {
		y, err := parentFilter(p)
		return y, true, err
	}
	if x, ok := v["_is"]; ok {
		y, err := walk(x)
		return y, true, err
	}
	if x, ok := v["_ne"]; ok {
		y, err := walk(x)
		if err != nil {
			return nil, true, err
		}
		return map[string]any{"_not": y}, true, nil
	}
	return nil, false, nil
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
