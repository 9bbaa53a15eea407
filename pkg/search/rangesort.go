package search

import (
	"strconv"
	"strings"
)

// DefaultLimit is the page size of a range that does not give its end.
const DefaultLimit = 10

// ParseRange parses the "range" parameter of a list endpoint into an offset and a limit:
//
//	""     -> 0, 10
//	"all"  -> 0, max
//	"a-b"  -> a, b-a   (0 <= a < b: b is exclusive)
//	"a"    -> a, 10
//
// The limit is capped at max (a max below 1 counts as 1). Anything else, including negative numbers, spaces,
// numbers too large for an int and b <= a, is a BadRequest error.
func ParseRange(s string, max int) (offset, limit int, err error) {
	if max < 1 {
		max = 1
	}
	switch {
	case s == "":
		return 0, min(DefaultLimit, max), nil
	case strings.EqualFold(s, "all"):
		return 0, max, nil
	}
	from, to, hasTo := strings.Cut(s, "-")
	a, ok := parseUint(from)
	if !ok {
		return 0, 0, bad("invalid range %s", quote(s))
	}
	if !hasTo {
		return a, min(DefaultLimit, max), nil
	}
	b, ok := parseUint(to)
	if !ok {
		return 0, 0, bad("invalid range %s", quote(s))
	}
	if b <= a {
		return 0, 0, bad("invalid range %s: the end must be greater than the start", quote(s))
	}
	return a, min(b-a, max), nil
}

// parseUint parses a non-empty run of decimal digits.
func parseUint(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// SortKey is one key of a sort order.
type SortKey struct {
	// Path is the storage path of the field (from [Field].Path).
	Path string
	// Desc is true for a descending order.
	Desc bool
}

// ParseSort parses the "sort" parameters of a list endpoint. Each spec is "+field" (ascending), "-field"
// (descending) or "field" (ascending), or a comma-separated list of those; surrounding spaces are ignored (so
// an unencoded "+" that a query string decoded into a space still means ascending) and so are empty specs.
// Fields are looked up in fields; an unknown field is a BadRequest error. When several specs name the same
// storage path the first one wins. ParseSort returns nil when there are no keys.
func ParseSort(specs []string, fields Fields) ([]SortKey, error) {
	var keys []SortKey
	for _, spec := range specs {
		for part := range strings.SplitSeq(spec, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			desc := false
			switch part[0] {
			case '-':
				desc = true
				part = part[1:]
			case '+':
				part = part[1:]
			}
			name := strings.TrimSpace(part)
			if name == "" {
				return nil, bad("invalid sort %s: missing field name", quote(spec))
			}
			f, err := fields.lookup(name)
			if err != nil {
				return nil, err
			}
			if !hasPath(keys, f.Path) {
				keys = append(keys, SortKey{Path: f.Path, Desc: desc})
			}
		}
	}
	return keys, nil
}

func hasPath(keys []SortKey, path string) bool {
	for _, k := range keys {
		if k.Path == path {
			return true
		}
	}
	return false
}
