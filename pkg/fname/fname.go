// Package fname reduces file names that clients send (uploads, archive entries, analyzer output) to a safe
// base name, the same way in both services.
package fname

import (
	"path"
	"strings"
	"unicode/utf8"
)

// Base keeps the last element of name (either slash), without control characters or a drive letter; a name
// that is then empty, ".", "..", or not UTF-8 becomes fallback.
func Base(name, fallback string) string {
	if !utf8.ValidString(name) {
		return fallback
	}
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if i := strings.LastIndex(name, ":"); i >= 0 && i < 3 { // a drive letter: C:a.exe
		name = name[i+1:]
	}
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." || name == "/" {
		return fallback
	}
	return name
}
