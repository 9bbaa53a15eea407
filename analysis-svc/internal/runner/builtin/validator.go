package builtin

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/observable"
)

const validatorNamespace = "Validator"

func validatorDefinition() analysis.Definition {
	return newDefinition(analysis.KindAnalyzer, "Observable_Validator", "1.0",
		"Validate and normalise an observable without any network access: IP addresses (canonical form, "+
			"special-purpose range), domain names (IDN ↔ punycode, label rules, public suffix and registrable "+
			"domain), URLs (refanged, host normalised), mail addresses and hashes (kind by length).",
		[]string{"ip", "domain", "fqdn", "url", "mail", "hash"}, nil, runValidator)
}

// validation is what a validator learnt about a valid observable.
type validation struct {
	full       map[string]any
	taxonomies []analysis.Taxonomy
}

// tax adds a taxonomy line in the validator's namespace.
func (v *validation) tax(level, predicate string, value any) {
	v.taxonomies = append(v.taxonomies, taxonomy(level, validatorNamespace, predicate, value))
}

// runValidator is Observable_Validator: a valid observable is a success whose full report holds the
// normalised form; an invalid one is a failure saying why ("not a valid ip address: …").
func runValidator(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
	if err := ctx.Err(); err != nil {
		return analysis.RunOutput{}, err
	}
	s, ok := in.Data.(string)
	if !ok {
		return failure(in, "data must be a string, not %T", in.Data), nil
	}
	v, err := validate(in.DataType, s)
	if err != nil {
		return failure(in, "%s", err.Error()), nil
	}
	return success(summary(v.taxonomies), v.full, nil, nil), nil
}

// validate dispatches on the data type. Surrounding white space is dropped first.
func validate(dataType, raw string) (validation, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		if noun, ok := validatorNouns[dataType]; ok {
			return validation{}, fmt.Errorf("not a valid %s: empty", noun)
		}
	}
	switch dataType {
	case "ip":
		return validateIP(s)
	case "domain", "fqdn":
		return validateDomain(dataType, s)
	case "url":
		return validateURL(s)
	case "mail":
		return validateMail(s)
	case "hash":
		return validateHash(s)
	}
	return validation{}, fmt.Errorf("unsupported dataType %q", dataType)
}

// validatorNouns name what each data type should be, for error messages.
var validatorNouns = map[string]string{"ip": "ip address", "domain": "domain", "fqdn": "domain", "url": "url",
	"mail": "mail address", "hash": "hash"}

var (
	// defangPattern matches the usual ways reports defang the punctuation of an observable.
	defangPattern = regexp.MustCompile(`(?i)\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}|\[://\]|\[:\]|\[/\]|\[@\]|\(@\)|\{@\}|\[at\]|\(at\)|\{at\}`)
	// defangScheme matches a defanged URL scheme: hxxp, hxxps, h**p, fxp.
	defangScheme = regexp.MustCompile(`(?i)^(?:h(?:xx|\*\*)p(s?)|(fxp))://`)
)

// refang undoes defanging (1.2.3[.]4, evil[dot]com, hxxp://, user[at]example.com) and tells whether it did.
func refang(s string) (string, bool) {
	r := defangPattern.ReplaceAllStringFunc(s, func(m string) string {
		switch strings.ToLower(strings.Trim(m, "[](){}")) {
		case ".", "dot":
			return "."
		case "://":
			return "://"
		case ":":
			return ":"
		case "/":
			return "/"
		default:
			return "@"
		}
	})
	r = defangScheme.ReplaceAllStringFunc(r, func(m string) string {
		sub := defangScheme.FindStringSubmatch(m)
		if sub[2] != "" {
			return "ftp://"
		}
		return "http" + strings.ToLower(sub[1]) + "://"
	})
	return r, r != s
}

// ipRange is a special-purpose address block (RFC 6890 registries and friends).
type ipRange struct {
	prefix netip.Prefix
	name   string // the Range value
	desc   string
}

// ipRanges are the blocks the validator names; the longest matching prefix wins. An IPv4 address in none is
// "public", an IPv6 address is "public" inside 2000::/3 and "reserved" outside.
var ipRanges = []ipRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network", "RFC 791 \"this network\""},
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified", "RFC 1122 unspecified address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private", "RFC 1918 private network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "cgnat", "RFC 6598 shared address space (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", "RFC 1122 loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local", "RFC 3927 link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private", "RFC 1918 private network"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved", "RFC 6890 IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation", "RFC 5737 TEST-NET-1"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved", "RFC 7526 deprecated 6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private", "RFC 1918 private network"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking", "RFC 2544 benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation", "RFC 5737 TEST-NET-2"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation", "RFC 5737 TEST-NET-3"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast", "RFC 5771 multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved", "RFC 1112 reserved for future use"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast", "RFC 919 limited broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified", "RFC 4291 unspecified address"},
	{netip.MustParsePrefix("::1/128"), "loopback", "RFC 4291 loopback"},
	{netip.MustParsePrefix("64:ff9b::/96"), "nat64", "RFC 6052 IPv4/IPv6 translation"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "nat64", "RFC 8215 local-use IPv4/IPv6 translation"},
	{netip.MustParsePrefix("100::/64"), "discard", "RFC 6666 discard-only"},
	{netip.MustParsePrefix("2001::/32"), "teredo", "RFC 4380 Teredo"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking", "RFC 5180 benchmarking"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation", "RFC 3849 documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4", "RFC 3056 6to4"},
	{netip.MustParsePrefix("3fff::/20"), "documentation", "RFC 9637 documentation"},
	{netip.MustParsePrefix("fc00::/7"), "private", "RFC 4193 unique local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local", "RFC 4291 link-local unicast"},
	{netip.MustParsePrefix("fec0::/10"), "reserved", "RFC 3879 deprecated site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast", "RFC 4291 multicast"},
}

// classifyIP names the range of a (zone-less) address: name, description and network ("" when public).
func classifyIP(a netip.Addr) (name, desc, network string) {
	if a.Is4In6() {
		name, desc, network = classifyIP(a.Unmap())
		return name, "IPv4-mapped IPv6 address; " + desc, network
	}
	best := -1
	for i, r := range ipRanges {
		if r.prefix.Contains(a) && (best < 0 || r.prefix.Bits() > ipRanges[best].prefix.Bits()) {
			best = i
		}
	}
	if best >= 0 {
		r := ipRanges[best]
		return r.name, r.desc, r.prefix.String()
	}
	if a.Is6() && !netip.MustParsePrefix("2000::/3").Contains(a) {
		return "reserved", "RFC 4291 unassigned IPv6 space", ""
	}
	return "public", "globally routable unicast", ""
}

// parseIPAddr parses an address, with the reason for a bad one in plain words.
func parseIPAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err == nil {
		return a, nil
	}
	if _, perr := netip.ParsePrefix(s); perr == nil {
		return netip.Addr{}, errors.New("a network (CIDR), not an address")
	}
	if ap, perr := netip.ParseAddrPort(s); perr == nil {
		return netip.Addr{}, fmt.Errorf("an address with a port; the address is %s", ap.Addr())
	}
	msg := err.Error()
	if i := strings.Index(msg, "): "); i >= 0 { // drop `ParseAddr("…"): `, the input is quoted already
		msg = msg[i+3:]
	}
	return netip.Addr{}, errors.New(msg)
}

func validateIP(input string) (validation, error) {
	s, refanged := refang(input)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := parseIPAddr(s)
	if err != nil {
		return validation{}, fmt.Errorf("not a valid ip address: %s (%v)", quote(input), err)
	}
	zone := a.Zone()
	a = a.WithZone("")
	rangeName, desc, network := classifyIP(a)
	typ := "IPv4"
	version := 4
	if a.Is6() {
		typ, version = "IPv6", 6
	}
	v := validation{full: map[string]any{
		"type":             "ip",
		"input":            input,
		"normalized":       a.String(),
		"version":          version,
		"range":            rangeName,
		"rangeDescription": desc,
		"network":          network,
		"public":           rangeName == "public",
		"refanged":         refanged,
	}}
	if zone != "" {
		v.full["zone"] = zone
	}
	if a.Is4In6() {
		v.full["ipv4Mapped"] = a.Unmap().String()
	}
	v.tax(levelInfo, "Type", typ)
	v.tax(levelInfo, "Range", rangeName)
	v.tax(levelInfo, "Normalized", a.String())
	if refanged {
		v.tax(levelInfo, "Defanged", "refanged")
	}
	return v, nil
}

// specialUseNames are reserved names (RFC 6761, RFC 6762, RFC 7686, RFC 8375, RFC 9476, ICANN .internal);
// a name is special when it is one of them or under one.
var specialUseNames = []struct{ suffix, use string }{
	{"example", "documentation"}, {"example.com", "documentation"}, {"example.net", "documentation"},
	{"example.org", "documentation"}, {"test", "testing"}, {"invalid", "invalid"}, {"localhost", "loopback"},
	{"local", "mdns"}, {"onion", "tor"}, {"home.arpa", "home-network"}, {"internal", "private"},
	{"alt", "alternative"}, {"in-addr.arpa", "reverse-dns"}, {"ip6.arpa", "reverse-dns"},
}

// specialUse names the reserved name space of an ASCII name ("" when there is none).
func specialUse(ascii string) string {
	for _, s := range specialUseNames {
		if ascii == s.suffix || strings.HasSuffix(ascii, "."+s.suffix) {
			return s.use
		}
	}
	return ""
}

// nameReport adds what is known of a host name to a report and its taxonomies.
func (v *validation) nameReport(h observable.HostName, prefix string) {
	key := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + strings.ToUpper(k[:1]) + k[1:]
	}
	v.full[key("unicode")] = h.Unicode
	v.full[key("idn")] = h.IDN
	v.full[key("publicSuffix")] = h.PublicSuffix
	v.full[key("icann")] = h.ICANN
	v.full[key("knownTLD")] = h.KnownTLD
	v.full[key("registrableDomain")] = h.Registrable
	if su := specialUse(h.ASCII); su != "" {
		v.full[key("specialUse")] = su
		v.tax(levelInfo, "SpecialUse", su)
	} else if !h.KnownTLD && h.Labels > 1 {
		v.tax(levelInfo, "TLD", "unknown")
	}
	if h.IDN {
		v.tax(levelInfo, "IDN", h.Unicode)
		if why := homograph(h); why != "" {
			v.full[key("homograph")] = why
			v.tax(levelSuspicious, "Homograph", why)
		}
	}
}

func validateDomain(dataType, input string) (validation, error) {
	s, refanged := refang(input)
	bad := func(why string, args ...any) (validation, error) {
		return validation{}, fmt.Errorf("not a valid domain: %s (%s)", quote(input), fmt.Sprintf(why, args...))
	}
	switch {
	case strings.Contains(s, "://"):
		return bad("a url, not a domain")
	case strings.Contains(s, "@"):
		return bad("a mail address, not a domain")
	case strings.Contains(s, "/"):
		return bad("has a path: a url?")
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return bad("an ip address, not a domain")
	}
	h, err := observable.ParseHostName(s, observable.NameRules{AllowUnderscore: true})
	if err != nil {
		return bad("%v", err)
	}
	kind := "FQDN"
	if h.Registrable == h.ASCII {
		kind = "Domain"
	} else if h.Registrable == "" {
		kind = "PublicSuffix"
	}
	v := validation{full: map[string]any{
		"type":           dataType,
		"input":          input,
		"normalized":     h.ASCII,
		"kind":           strings.ToLower(kind),
		"labels":         h.Labels,
		"isPublicSuffix": h.Registrable == "",
		"trailingDot":    strings.HasSuffix(s, "."),
		"refanged":       refanged,
	}}
	if h.Registrable != "" && h.Registrable != h.ASCII {
		v.full["subdomain"] = strings.TrimSuffix(h.ASCII, "."+h.Registrable)
	}
	v.tax(levelInfo, "Type", kind)
	v.tax(levelInfo, "Normalized", h.ASCII)
	v.nameReport(h, "")
	if refanged {
		v.tax(levelInfo, "Defanged", "refanged")
	}
	return v, nil
}

// defaultPorts are dropped from normalised URLs.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"}

func validateURL(input string) (validation, error) {
	s, refanged := refang(input)
	bad := func(why string, args ...any) (validation, error) {
		return validation{}, fmt.Errorf("not a valid url: %s (%s)", quote(input), fmt.Sprintf(why, args...))
	}
	if !strings.Contains(s, "://") {
		if strings.Contains(s, "@") && !strings.Contains(s, "/") {
			return bad("no scheme://; a mail address?")
		}
		return bad("no scheme://; did you mean http://%s?", s)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return bad("contains white space or control characters")
	}
	u, err := url.Parse(s)
	if err != nil {
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		return bad("%s", msg)
	}
	if u.Scheme == "" {
		return bad("no scheme")
	}
	if u.Host == "" {
		return bad("no host")
	}
	host, port := u.Hostname(), u.Port()
	if port != "" && !observable.ValidPort(port) {
		return bad("port %q is not 1–65535", port)
	}
	v := validation{full: map[string]any{
		"type":     "url",
		"input":    input,
		"scheme":   u.Scheme,
		"path":     u.EscapedPath(),
		"query":    u.RawQuery,
		"fragment": u.Fragment,
		"refanged": refanged,
	}}
	var hostOut string
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("") // a zone means nothing outside the analyst's machine
		rangeName, _, _ := classifyIP(a)
		v.full["hostType"] = "ip"
		v.full["range"] = rangeName
		hostOut = a.String()
		v.full["host"] = hostOut
		if a.Is6() {
			hostOut = "[" + hostOut + "]"
		}
		v.tax(levelInfo, "Range", rangeName)
	} else {
		h, err := observable.ParseHostName(host, observable.NameRules{AllowUnderscore: true, AllowSingleLabel: true})
		if err != nil {
			return bad("host %q: %v", host, err)
		}
		switch {
		case h.Labels == 1:
			v.full["hostType"] = "host"
		case h.Registrable == h.ASCII:
			v.full["hostType"] = "domain"
		default:
			v.full["hostType"] = "fqdn"
		}
		hostOut = h.ASCII
		v.full["host"] = h.ASCII
		v.nameReport(h, "host")
	}
	if port != "" && defaultPorts[u.Scheme] != port {
		hostOut += ":" + port
		v.full["port"] = port
	}
	u.Host = hostOut
	if u.User != nil {
		v.full["username"] = u.User.Username()
		_, hasPassword := u.User.Password()
		v.full["hasPassword"] = hasPassword
		v.tax(levelSuspicious, "Userinfo", "credentials before the host ("+u.User.Username()+"@…)")
	}
	normalized := u.String()
	v.full["normalized"] = normalized
	v.taxonomies = append([]analysis.Taxonomy{
		taxonomy(levelInfo, validatorNamespace, "Type", "URL"),
		taxonomy(levelInfo, validatorNamespace, "Scheme", u.Scheme),
		taxonomy(levelInfo, validatorNamespace, "Normalized", normalized),
	}, v.taxonomies...)
	if refanged {
		v.tax(levelInfo, "Defanged", "refanged")
	}
	return v, nil
}

func validateMail(input string) (validation, error) {
	s, refanged := refang(input)
	bad := func(why string, args ...any) (validation, error) {
		return validation{}, fmt.Errorf("not a valid mail address: %s (%s)", quote(input), fmt.Sprintf(why, args...))
	}
	addr, err := mail.ParseAddress(s)
	if err != nil {
		return bad("%s", strings.TrimPrefix(err.Error(), "mail: "))
	}
	at := strings.LastIndexByte(addr.Address, '@')
	if at < 0 {
		return bad("missing @")
	}
	local, domain := addr.Address[:at], addr.Address[at+1:]
	if len(local) > 64 {
		return bad("local part longer than 64 characters")
	}
	v := validation{full: map[string]any{
		"type":        "mail",
		"input":       input,
		"localPart":   local,
		"displayName": addr.Name,
		"refanged":    refanged,
	}}
	var domainOut string
	if strings.HasPrefix(domain, "[") {
		lit := strings.TrimPrefix(strings.Trim(domain, "[]"), "IPv6:")
		a, err := netip.ParseAddr(lit)
		if err != nil {
			return bad("domain literal %s is not an ip address", domain)
		}
		rangeName, _, _ := classifyIP(a)
		v.full["range"] = rangeName
		domainOut = "[" + a.String() + "]"
		if a.Is6() {
			domainOut = "[IPv6:" + a.String() + "]"
		}
		v.full["domain"] = domainOut
	} else {
		h, err := observable.ParseHostName(domain, observable.NameRules{})
		if err != nil {
			return bad("domain %q: %v", domain, err)
		}
		domainOut = h.ASCII
		v.full["domain"] = h.ASCII
		v.nameReport(h, "domain")
	}
	normalized := local + "@" + domainOut
	v.full["normalized"] = normalized
	v.taxonomies = append([]analysis.Taxonomy{
		taxonomy(levelInfo, validatorNamespace, "Type", "Mail"),
		taxonomy(levelInfo, validatorNamespace, "Normalized", normalized),
	}, v.taxonomies...)
	if refanged {
		v.tax(levelInfo, "Defanged", "refanged")
	}
	return v, nil
}

// hashKinds name hashes by their number of hex digits.
var hashKinds = map[int]struct {
	name string
	bits int
}{32: {"md5", 128}, 40: {"sha1", 160}, 64: {"sha256", 256}, 128: {"sha512", 512}}

// emptyInputHash tells the hash of zero bytes, a frequent sign of a broken upload or acquisition.
func emptyInputHash(kind, h string) bool {
	var sum []byte
	switch kind {
	case "md5":
		s := md5.Sum(nil)
		sum = s[:]
	case "sha1":
		s := sha1.Sum(nil)
		sum = s[:]
	case "sha256":
		s := sha256.Sum256(nil)
		sum = s[:]
	case "sha512":
		s := sha512.Sum512(nil)
		sum = s[:]
	}
	return h == hex.EncodeToString(sum)
}

func validateHash(input string) (validation, error) {
	bad := func(why string, args ...any) (validation, error) {
		return validation{}, fmt.Errorf("not a valid hash: %s (%s)", quote(input), fmt.Sprintf(why, args...))
	}
	s := input
	var claimed string
	if i := strings.IndexByte(s, ':'); i > 0 {
		claimed = strings.ToLower(s[:i])
		s = s[i+1:]
	}
	if s == "" {
		return bad("empty")
	}
	for i, r := range s {
		if !((r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')) {
			return bad("character %q at position %d is not a hex digit", r, i+1)
		}
	}
	k, ok := hashKinds[len(s)]
	if !ok {
		return bad("%d hex digits; expected 32 (md5), 40 (sha1), 64 (sha256) or 128 (sha512)", len(s))
	}
	if claimed != "" && claimed != k.name && claimed != strings.ReplaceAll(k.name, "sha", "sha-") {
		return bad("prefix %q does not match %d hex digits (%s)", claimed, len(s), k.name)
	}
	normalized := strings.ToLower(s)
	empty := emptyInputHash(k.name, normalized)
	v := validation{full: map[string]any{
		"type":       "hash",
		"input":      input,
		"normalized": normalized,
		"kind":       k.name,
		"bits":       k.bits,
		"emptyInput": empty,
	}}
	v.tax(levelInfo, "Type", strings.ToUpper(k.name))
	v.tax(levelInfo, "Normalized", normalized)
	if empty {
		v.tax(levelInfo, "Note", "hash of empty input")
	}
	return v, nil
}
