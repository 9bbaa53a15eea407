package engine

import (
	"fmt"
	"regexp"
	"strings"
)

// Pattern helpers shared by the engines' translations of the text operators (OpLike, OpWildcard, OpPrefix,
// OpSuffix): the user's text only ever becomes a literal, except "*" and "?" of a wildcard.

// Text returns the string operand of a text node.
func Text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// Quote returns a regular expression (RE2 and PCRE syntax) that matches s literally. NUL bytes, which MongoDB
// refuses in a pattern, are written as the escape \x00.
func Quote(s string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(s), "\x00", `\x00`)
}

// Wildcard returns the regular expression (without anchors) of a wildcard pattern: "*" matches any run of
// characters, "?" any one character, everything else is literal. Runs of "*" are collapsed into one, which
// matches the same strings and keeps backtracking regex engines from blowing up on "a****b". "*" is lazy
// (".*?"): the same strings match, but a backtracking engine (MongoDB's PCRE) then tries the earliest place of
// each part first, which for a wildcard is the one that matches when any does, instead of running into its
// match limit (and answering no) on "*a*a*a…*b" against a long text that matches. RE2 (the SQLite engine's,
// FerretDB's) is linear either way. "." must match newlines too: the engines compile it with the s flag.
func Wildcard(p string) string {
	var b strings.Builder
	lit := 0 // start of the pending literal run
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '?':
			b.WriteString(Quote(p[lit:i]))
			b.WriteString(".")
			lit = i + 1
		case '*':
			b.WriteString(Quote(p[lit:i]))
			if i == 0 || p[i-1] != '*' {
				b.WriteString(".*?")
			}
			lit = i + 1
		}
	}
	b.WriteString(Quote(p[lit:]))
	return b.String()
}
