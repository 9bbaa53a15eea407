// Package observable is what both services know of observables' values: host names parsed and classified by
// the public suffix list, hashes by their length, and Guess, which names the data type of a value where it
// is unambiguous (the new-analysis page). analysis-svc's Observable_Validator and report extractor build on
// it.
package observable

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// HostName is a validated DNS name (ParseHostName).
type HostName struct {
	ASCII        string // lower case, IDN labels in punycode, no trailing dot
	Unicode      string // IDN labels decoded
	Labels       int
	IDN          bool
	PublicSuffix string // by the public suffix list, "*" rule for unknown top-level labels
	ICANN        bool   // PublicSuffix is an ICANN suffix (false: a private-section suffix or an unknown TLD)
	KnownTLD     bool   // the top-level label is in the ICANN section of the list
	Registrable  string // eTLD+1 (ASCII); "" when the name is itself a public suffix
}

// NameRules relaxes ParseHostName for the places that need it.
type NameRules struct {
	AllowUnderscore  bool // DNS (not host) names: _dmarc.example.com
	AllowSingleLabel bool // URL hosts: http://intranet/
}

// ParseHostName validates and normalises a DNS name: one trailing dot dropped, IDN (Unicode or punycode
// labels, checked with the UTS #46 lookup profile) converted both ways, lower case, LDH labels of 1–63
// characters, 253 characters at most, an alphabetic (or punycode) top-level label.
func ParseHostName(s string, rules NameRules) (HostName, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return HostName{}, errors.New("empty name")
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return HostName{}, errors.New("contains whitespace")
	}
	if !IsASCII(s) {
		a, err := idna.Lookup.ToASCII(s)
		if err != nil {
			return HostName{}, fmt.Errorf("not a valid internationalised name (%v)", err)
		}
		s = strings.TrimSuffix(a, ".") // the lookup mapping turns "。" into "."
	}
	s = strings.ToLower(s)
	if len(s) > 253 {
		return HostName{}, errors.New("longer than 253 characters")
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 && !rules.AllowSingleLabel {
		return HostName{}, errors.New("needs at least two labels (name.tld)")
	}
	h := HostName{ASCII: s, Labels: len(labels)}
	unicodeLabels := make([]string, len(labels))
	for i, l := range labels {
		u, err := checkLabel(l, rules.AllowUnderscore)
		if err != nil {
			return HostName{}, err
		}
		if u != l {
			h.IDN = true
		}
		unicodeLabels[i] = u
	}
	tld := labels[len(labels)-1]
	if err := checkTopLabel(tld, len(labels) == 1); err != nil {
		return HostName{}, err
	}
	h.Unicode = strings.Join(unicodeLabels, ".")
	h.PublicSuffix, h.ICANN = publicsuffix.PublicSuffix(s)
	_, h.KnownTLD = publicsuffix.PublicSuffix(tld)
	if reg, err := publicsuffix.EffectiveTLDPlusOne(s); err == nil {
		h.Registrable = reg
	}
	return h, nil
}

// checkLabel validates one lower-case ASCII label and returns its Unicode form.
func checkLabel(l string, AllowUnderscore bool) (string, error) {
	switch {
	case l == "":
		return "", errors.New("empty label")
	case len(l) > 63:
		return "", fmt.Errorf("label %q longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return "", fmt.Errorf("label %q starts or ends with a hyphen", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (c == '_' && AllowUnderscore) {
			continue
		}
		return "", fmt.Errorf("label %q: character %q not allowed", l, rune(c))
	}
	if len(l) >= 4 && l[2:4] == "--" {
		if !strings.HasPrefix(l, "xn--") {
			return "", fmt.Errorf("label %q has hyphens in the 3rd and 4th positions (reserved)", l)
		}
		u, err := idna.Lookup.ToUnicode(l)
		if err != nil {
			return "", fmt.Errorf("label %q is not valid punycode", l)
		}
		return u, nil
	}
	return l, nil
}

// checkTopLabel applies the rule that a top-level label is alphabetic (or an IDN label); a lone label (a URL
// host like "intranet") only must not be numeric, which would make it an integer IP address.
func checkTopLabel(tld string, alone bool) error {
	if strings.Trim(tld, "0123456789") == "" {
		return fmt.Errorf("top-level label %q is numeric", tld)
	}
	if alone || strings.HasPrefix(tld, "xn--") {
		if strings.Contains(tld, "_") {
			return fmt.Errorf("label %q: character '_' not allowed in a host name", tld)
		}
		return nil
	}
	for i := 0; i < len(tld); i++ {
		if tld[i] < 'a' || tld[i] > 'z' {
			return fmt.Errorf("top-level label %q must be letters only", tld)
		}
	}
	return nil
}

// IsASCII tells whether s has only 7-bit characters.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
