package builtin

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/openir/platform/pkg/observable"
)

// confusableScripts are the scripts whose letters pass for Latin ones.
var confusableScripts = []*unicode.RangeTable{unicode.Latin, unicode.Cyrillic, unicode.Greek, unicode.Armenian}

// latinLookalikes are the Cyrillic letters that look like Latin ones (а с ԁ е һ і ј ӏ о р ԛ ѕ ԝ х у ү).
const latinLookalikes = "асԁеһіјӏорԛѕԝхуү"

// homograph explains why an IDN may imitate another name ("" when it does not look like it does): a label
// that mixes Latin, Cyrillic, Greek or Armenian letters, or an all-Cyrillic label of only Latin look-alikes
// under a non-Cyrillic top-level domain (the whole-script case browsers refuse to display, e.g. аррӏе.com).
func homograph(h observable.HostName) string {
	labels := strings.Split(h.Unicode, ".")
	tld := labels[len(labels)-1]
	for _, l := range labels {
		if observable.IsASCII(l) {
			continue
		}
		seen := map[*unicode.RangeTable]bool{}
		allLookalike := true
		for _, r := range l {
			if !unicode.IsLetter(r) {
				continue
			}
			for _, t := range confusableScripts {
				if unicode.Is(t, r) {
					seen[t] = true
				}
			}
			if !strings.ContainsRune(latinLookalikes, r) {
				allLookalike = false
			}
		}
		if len(seen) > 1 {
			return fmt.Sprintf("label %q mixes scripts", l)
		}
		if seen[unicode.Cyrillic] && allLookalike && !strings.ContainsFunc(tld, isCyrillic) {
			return fmt.Sprintf("label %q is made only of Cyrillic letters that look Latin", l)
		}
	}
	return ""
}

// isCyrillic tells Cyrillic letters.
func isCyrillic(r rune) bool { return unicode.Is(unicode.Cyrillic, r) }
