package engine

import (
	"cmp"
	"strings"
)

// Compare orders normalized values as MongoDB sorts them: null, numbers (by value), strings (by bytes),
// objects, arrays, booleans (false first).
func Compare(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case int64, float64:
		return compareNumbers(x, b)
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	return 0
}

func typeRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int64, float64:
		return 1
	case string:
		return 2
	case map[string]any:
		return 3
	case []any:
		return 4
	case bool:
		return 5
	}
	return 6
}

// compareNumbers compares two numbers, int64 or float64, exactly.
func compareNumbers(a, b any) int {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		return cmp.Compare(ai, bi)
	}
	af, bf := toFloat(a), toFloat(b)
	if c := cmp.Compare(af, bf); c != 0 || (!aInt && !bInt) {
		return c
	}
	// equal as doubles, one of them an int64: compare exactly through the integral part
	if aInt {
		return -compareIntFloat(bf, ai)
	}
	return compareIntFloat(af, bi)
}

// compareIntFloat compares f with i (known to be equal once i is rounded to a double).
func compareIntFloat(f float64, i int64) int {
	if f >= 9.223372036854775807e18 {
		return 1
	}
	return cmp.Compare(int64(f), i)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
