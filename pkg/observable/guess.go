package observable

import (
	"net/mail"
	"net/netip"
	"strings"
	"unicode"
)

// Guess names the Cortex data type of a whole value where it is unambiguous, and only there:
//   - ip: an IPv4 (dotted quad, no leading zeros) or IPv6 address, as netip parses it (a zone allowed);
//     not a network ("10.0.0.0/8") nor an address with a port ("1.2.3.4:80");
//   - url: scheme://host… with a usable host (an address or a host name) and port;
//   - mail: a bare address local@domain, its domain a name as for domain/fqdn (not "Name <a@b>");
//   - hash: 32, 40, 64 or 128 hex digits (md5, sha1, sha256, sha512), not all decimal (a number);
//   - domain or fqdn: a host name under an ICANN top-level domain, "domain" when it is the registrable
//     domain (example.co.uk), "fqdn" when it has more labels (www.example.co.uk), as the Cortex analyzers
//     read them; not a public suffix ("co.uk"), not a file name ("invoice.zip", "setup.exe", "readme.md").
//
// Anything else is not guessed: an empty value, several words, a number, a path, a single label, a defanged
// value ("evil[.]com": the analyzer would receive it as written), a host name with an underscore (a DNS
// record), a name under an unknown or special-use top-level domain ("host.local").
func Guess(value string) (dataType string, ok bool) {
	s := strings.TrimSpace(value)
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return "", false
	}
	if strings.Contains(s, "://") {
		if i := strings.Index(s, "://"); validScheme(s[:i]) && URLWithHost(s) {
			return "url", true
		}
		return "", false
	}
	if strings.Contains(s, ":") || strings.Count(s, ".") == 3 {
		if _, err := netip.ParseAddr(s); err == nil {
			return "ip", true
		}
	}
	if strings.Contains(s, "@") {
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s || a.Name != "" {
			return "", false
		}
		at := strings.LastIndexByte(s, '@')
		if h, err := ParseHostName(s[at+1:], NameRules{}); err == nil {
			if _, ok := NameType(h); ok && at > 0 && at <= 64 {
				return "mail", true
			}
		}
		return "", false
	}
	if IsHash(s) {
		return "hash", true
	}
	if !strings.Contains(s, ".") {
		return "", false
	}
	h, err := ParseHostName(s, NameRules{})
	if err != nil {
		return "", false
	}
	return NameType(h)
}

// validScheme tells a URL scheme (RFC 3986: a letter, then letters, digits, +, - or .).
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= 'a' && c <= 'z') && !(i > 0 && (s[i] >= '0' && s[i] <= '9' || strings.IndexByte("+-.", s[i]) >= 0)) {
			return false
		}
	}
	return true
}
