package engine

import (
	"errors"
	"testing"
)

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"a", "_id", "a.b.c", "a.0", "é.ü", "a$", "a.b$c", "$", "a.$", "a-b_c"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", ".", "a.", ".a", "a..b", "$a", "a.$b", `a"b`, "a'b", `a\b`, "a\x00", "a\tb", "a\x7f"} {
		if err := CheckPath(p); !errors.Is(err, ErrBadPath) {
			t.Errorf("%q: %v, want ErrBadPath", p, err)
		}
	}
}
