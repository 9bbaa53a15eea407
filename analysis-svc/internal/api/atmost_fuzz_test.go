package api

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/apperr"
)

// atMostNumber is the number of a "<n><unit>" value, as parseAtMost reads it.
var atMostNumber = regexp.MustCompile(`^(\d+)\s*[a-zA-Z]+$`)

// FuzzParseAtMost: parseAtMost never panics; an error is an apperr BadRequest with a message; a value is -1
// (Inf), or n times one of the units, without overflow; surrounding spaces change nothing.
func FuzzParseAtMost(f *testing.F) {
	for _, s := range []string{"", " ", "Inf", "inf", "INFINITE", "1ms", "100ms", "10seconds", "10 seconds", "1second",
		"30s", "2sec", "5m", "1min", "3minutes", "1h", "2hours", "1hr", "1d", "7days", "0s", "00001minute", "1.5minute",
		"-1second", "abc", "10parsecs", "10", "s", "1 0s", "１s", "1\u00a0s", "1e3s", "0x10s", "1000000s", "1000001s",
		"99999999999999999999s", "1\ns", "\t5m\n"} {
		f.Add(s)
	}
	units := map[time.Duration]bool{}
	for _, u := range atMostUnits {
		units[u] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseAtMost(s)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.BadRequest || e.Message == "" {
				t.Fatalf("parseAtMost(%q): error %v (%T) is not an apperr BadRequest", s, err, err)
			}
			return
		}
		trimmed := strings.TrimSpace(s)
		switch {
		case trimmed == "":
			if d != time.Minute {
				t.Fatalf("parseAtMost(%q) = %v, want the default 1m", s, d)
			}
		case d == -1:
			if !strings.EqualFold(trimmed, "inf") && !strings.EqualFold(trimmed, "infinite") {
				t.Fatalf("parseAtMost(%q) = -1 (Inf)", s)
			}
		default:
			m := atMostNumber.FindStringSubmatch(trimmed)
			if m == nil {
				t.Fatalf("parseAtMost(%q) = %v for a value that is not <n><unit>", s, d)
			}
			n, perr := strconv.ParseInt(m[1], 10, 64)
			if perr != nil {
				t.Fatalf("parseAtMost(%q) = %v for a number out of range", s, d)
			}
			if d < 0 {
				t.Fatalf("parseAtMost(%q) = %v: negative (overflow)", s, d)
			}
			if n == 0 {
				if d != 0 {
					t.Fatalf("parseAtMost(%q) = %v, want 0", s, d)
				}
			} else if d%time.Duration(n) != 0 || !units[d/time.Duration(n)] {
				t.Fatalf("parseAtMost(%q) = %v is not %d times a unit (overflow)", s, d, n)
			}
		}
		if d2, err2 := parseAtMost(" \t" + s + "\n "); err2 != nil || d2 != d {
			t.Fatalf("parseAtMost(%q) = %v, but with spaces around %v, %v", s, d, d2, err2)
		}
	})
}
