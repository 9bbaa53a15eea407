package observable

import (
	"net/netip"
	"net/url"
	"strings"
)

// FileLikeTLDs are top-level domains that are also common file extensions: a two-label name under one
// ("archive.zip", "readme.md", "libc.so") is taken for a file name, not a domain (NameType).
var FileLikeTLDs = map[string]bool{"zip": true, "mov": true, "md": true, "py": true, "sh": true, "so": true,
	"ps": true, "pm": true}

// NameType tells whether a parsed host name is a name worth naming one (its top-level label an ICANN TLD of
// the public suffix list, itself not a public suffix, not a file name under a file-like TLD), and which:
// "domain" when it is the registrable domain (example.co.uk), "fqdn" when it has more labels
// (www.example.co.uk). So "report.pdf", "setup.exe", "node.js", "host.local" and "co.uk" are not names.
func NameType(h HostName) (string, bool) {
	if !h.KnownTLD || h.Registrable == "" {
		return "", false
	}
	if h.Labels == 2 && FileLikeTLDs[h.ASCII[strings.LastIndexByte(h.ASCII, '.')+1:]] {
		return "", false
	}
	if h.Registrable == h.ASCII {
		return "domain", true
	}
	return "fqdn", true
}

// IsHash tells a run of 32, 40, 64 or 128 hex digits (md5, sha1, sha256, sha512) that is not only decimal
// digits (a number).
func IsHash(t string) bool {
	switch len(t) {
	case 32, 40, 64, 128:
	default:
		return false
	}
	letter := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= '0' && c <= '9':
		case (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'):
			letter = true
		default:
			return false
		}
	}
	return letter
}

// ValidPort tells a decimal port 1–65535.
func ValidPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n >= 1 && n <= 65535
}

// URLWithHost tells a URL with a usable host (an IP address, or a host name, one label allowed) and, if it
// has one, a valid port.
func URLWithHost(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if p := u.Port(); p != "" && !ValidPort(p) {
		return false
	}
	_, err = ParseHostName(host, NameRules{AllowSingleLabel: true})
	return err == nil
}
