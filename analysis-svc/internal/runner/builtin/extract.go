package builtin

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/observable"
)

// Extract finds the observables in a report, as cortexutils' Extractor does for auto_extract_artifacts, and
// returns them as artifacts (DataType and Data only), deduplicated by (dataType, data), in the order they
// are met walking full with map keys sorted. It never returns nil.
//
// What it looks at: every string value of full at any depth (map keys are not read, numbers and booleans
// are ignored). full is normally decoded JSON (map[string]any, []any); any other Go value (a struct, a
// []analysis.Taxonomy, a map[string]string) is read as it would be encoded to JSON.
//
// What it finds, both when a string IS the observable and inside longer text (unlike cortexutils, which only
// matches a whole value, so "Connect to 1.2.3.4 on port 80" yields ip 1.2.3.4):
//   - url: http, https and ftp URLs with a valid host; trailing punctuation and an unbalanced closing
//     bracket are not part of the URL. Defanged forms (hxxp://, [.]) are left alone: a report defangs on
//     purpose.
//   - mail: local@domain with a domain as below.
//   - ip: IPv4 dotted quads (each octet 0–255, no leading zeros) and IPv6 addresses, in canonical form; the
//     unspecified addresses 0.0.0.0 and :: are skipped. A dotted quad glued to letters ("v1.2.3.4") is not one.
//   - hash: a run of exactly 32, 40, 64 or 128 hex digits (md5, sha1, sha256, sha512), lower-cased; a run of
//     decimal digits only is a number, not a hash.
//   - domain / fqdn: a host name whose top-level label is an ICANN TLD of the public suffix list, so
//     "report.pdf", "setup.exe", "1.2.3" (version strings), "node.js" and "host.local" are not names;
//     "domain" when it is the registrable domain (example.co.uk), "fqdn" when it has more labels
//     (www.example.co.uk); lower-cased. Because .zip, .mov, .md, .py, .sh, .so, .ps and .pm are TLDs and file
//     extensions at once, a two-label name under them ("archive.zip", "readme.md", "libc.so") is taken for
//     a file name; with more labels ("evil.example.zip") it is a name. Dotted identifiers that end in a
//     real TLD ("com.example.app", "asp.net") cannot be told from names and are reported. Names with an
//     underscore ("_dmarc.example.com") are DNS records, not hosts, and are not reported. Parts of an
//     extracted URL or mail address are not reported again.
//
// ignore (usually the analysed observable) drops every candidate equal to it or containing it, compared
// without case; cortexutils instead skips a whole string value containing it, which would lose the other
// observables of a sentence that mentions the analysed one.
func Extract(full any, ignore string) []analysis.OutputArtifact {
	c := newCollector(ignore, 0)
	w := walker{c: c, visited: map[visit]bool{}}
	w.walk(full)
	return c.out
}

// walkBudget bounds the nodes Extract visits, so that even a pathological Go value (shared sub-trees many
// levels deep) cannot make it run for long. Decoded JSON reports are far below it.
const walkBudget = 1 << 22

// visit identifies a map or slice already walked (its data pointer and length).
type visit struct {
	ptr uintptr
	len int
}

// walker walks a value and feeds its strings to a collector.
type walker struct {
	c       *collector
	visited map[visit]bool
	nodes   int
}

// seen marks a map or slice as walked and tells whether it was already: walking it again cannot find
// anything new, and a value that contains itself would never end.
func (w *walker) seen(v any) bool {
	rv := reflect.ValueOf(v)
	k := visit{ptr: rv.Pointer(), len: rv.Len()}
	if w.visited[k] {
		return true
	}
	w.visited[k] = true
	return false
}

func (w *walker) walk(v any) {
	w.nodes++
	if w.nodes > walkBudget {
		return
	}
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		json.Number:
	case string:
		w.c.scan(x)
	case []string:
		for _, s := range x {
			w.c.scan(s)
		}
	case []any:
		if len(x) == 0 || w.seen(x) {
			return
		}
		for _, e := range x {
			w.walk(e)
		}
	case map[string]any:
		if len(x) == 0 || w.seen(x) {
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.walk(x[k])
		}
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.c.scan(x[k])
		}
	default:
		// Any other value is read as its JSON form: the report is JSON in the end. Unencodable values
		// (channels, functions, cycles) hold no report data.
		b, err := json.Marshal(x)
		if err != nil {
			return
		}
		var d any
		if json.Unmarshal(b, &d) == nil {
			w.walk(d)
		}
	}
}

// collector deduplicates the observables found in strings, skipping the ignored ones, up to a limit.
type collector struct {
	ignore string // lower case; "" = none
	limit  int    // 0 = none
	seen   map[[2]string]bool
	out    []analysis.OutputArtifact
	capped bool // the limit dropped observables
	strict bool // the strings come from binary data: see findObservables
}

func newCollector(ignore string, limit int) *collector {
	return &collector{
		ignore: strings.ToLower(strings.TrimSpace(ignore)),
		limit:  limit,
		seen:   map[[2]string]bool{},
		out:    []analysis.OutputArtifact{},
	}
}

// scan adds the observables of s.
func (c *collector) scan(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	for _, f := range findObservables(s, c.strict) {
		c.add(f.dataType, f.data)
	}
}

func (c *collector) add(dataType, data string) {
	if c.ignore != "" && strings.Contains(strings.ToLower(data), c.ignore) {
		return
	}
	k := [2]string{dataType, data}
	if c.seen[k] {
		return
	}
	if c.limit > 0 && len(c.out) >= c.limit {
		c.capped = true
		return
	}
	c.seen[k] = true
	c.out = append(c.out, analysis.OutputArtifact{DataType: dataType, Data: data})
}

// found is one observable and where it starts in the string.
type found struct {
	pos      int
	dataType string
	data     string
}

var (
	urlPattern   = regexp.MustCompile(`(?i)\b(?:https?|ftp)://[^\s"'<>\x60]+`)
	mailPattern  = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[\p{L}\p{M}\p{N}\-]+(?:\.[\p{L}\p{M}\p{N}\-]+)+`)
	tokenPattern = regexp.MustCompile(`[\p{L}\p{M}\p{N}_.:\-]+`)
)

// findObservables returns the observables of s in the order they appear. URLs are taken first, then mail
// addresses, and both are blanked out before the remaining text is cut into tokens, so the host of a URL is
// not also reported as a name.
//
// strict is for strings pulled out of binary data, where random printable runs would otherwise yield names
// like "k.sd" and addresses like "::a": a mail address or token must then stand between white space,
// quotes, brackets or , ; = | / \ (or the ends of the string); a name must be ASCII, in one case (not
// "Gmk.Sn"), with a registrable label of 3 characters or more (4 under a two-letter TLD); an IPv6 address
// must have three groups, or two with one of three digits or more ("fe80::1", not "a::b" nor "1f4::").
// Measured: no false observable in 64 MiB of random bytes.
func findObservables(s string, strict bool) []found {
	var out []found
	rest := []byte(s)
	blank := func(start, end int) {
		for i := start; i < end; i++ {
			rest[i] = ' '
		}
	}
	for _, m := range urlPattern.FindAllStringIndex(s, -1) {
		u := trimURL(s[m[0]:m[1]])
		if observable.URLWithHost(u) {
			out = append(out, found{m[0], "url", u})
			blank(m[0], m[0]+len(u))
		}
	}
	masked := string(rest)
	for _, m := range mailPattern.FindAllStringIndex(masked, -1) {
		if strict && !(delimited(masked, m[0]-1) && delimited(masked, m[1])) {
			continue
		}
		if addr, ok := mailCandidate(masked[m[0]:m[1]], strict); ok {
			out = append(out, found{m[0], "mail", addr})
			blank(m[0], m[1])
		}
	}
	masked = string(rest)
	for _, m := range tokenPattern.FindAllStringIndex(masked, -1) {
		if strict && !(delimited(masked, m[0]-1) && delimited(masked, m[1])) {
			continue
		}
		out = appendToken(out, m[0], masked[m[0]:m[1]], strict)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// delimited tells whether s[i] may border an observable in strict mode (outside s counts).
func delimited(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	return strings.IndexByte(" \t\r\n\"'`()[]<>{},;=|/\\", s[i]) >= 0
}

// trimURL drops what a sentence adds after a URL: final punctuation and closing brackets it did not open.
func trimURL(u string) string {
	open := map[byte]int{')': strings.Count(u, "("), ']': strings.Count(u, "["), '}': strings.Count(u, "{")}
	closed := map[byte]int{')': strings.Count(u, ")"), ']': strings.Count(u, "]"), '}': strings.Count(u, "}")}
	for u != "" {
		last := u[len(u)-1]
		switch {
		case strings.IndexByte(".,;:!?*", last) >= 0:
		case strings.IndexByte(")]}", last) >= 0 && open[last] < closed[last]:
			closed[last]--
		default:
			return u
		}
		u = u[:len(u)-1]
	}
	return u
}

// mailCandidate validates a matched address and lower-cases its domain.
func mailCandidate(m string, strict bool) (string, bool) {
	at := strings.LastIndexByte(m, '@')
	local, domain := m[:at], strings.TrimRight(m[at+1:], "-")
	if local == "" || len(local) > 64 || local[0] == '.' || local[len(local)-1] == '.' ||
		strings.Contains(local, "..") {
		return "", false
	}
	_, name, ok := nameCandidate(domain, strict)
	if !ok {
		return "", false
	}
	return local + "@" + name, true
}

// appendToken classifies one token of text (letters, digits and . : _ -): an IP address, or the parts
// between its colons ("host:port", "key:value") as hashes, IPv4 addresses or names.
func appendToken(out []found, pos int, tok string, strict bool) []found {
	t := strings.Trim(tok, ".-")
	if t == "" {
		return out
	}
	if strings.Contains(t, ":") {
		for _, cand := range []string{t, strings.TrimRight(t, ":")} {
			if a, ok := ipCandidate(cand, strict); ok {
				if a != "" {
					out = append(out, found{pos, "ip", a})
				}
				return out
			}
		}
		for _, part := range strings.Split(t, ":") {
			if dt, data, ok := plainCandidate(part, strict); ok {
				out = append(out, found{pos, dt, data})
			}
		}
		return out
	}
	if dt, data, ok := plainCandidate(t, strict); ok {
		out = append(out, found{pos, dt, data})
	}
	return out
}

// ipCandidate parses an IP address token; ok with an empty string means "an address, but not one to
// report" (unspecified, or too short an IPv6 address in strict mode).
func ipCandidate(s string, strict bool) (string, bool) {
	if !strings.Contains(s, ":") && strings.Count(s, ".") != 3 {
		return "", false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", false
	}
	if a.IsUnspecified() {
		return "", true
	}
	if strict && a.Is6() {
		groups := strings.FieldsFunc(s, func(r rune) bool { return r == ':' })
		longest := 0
		for _, g := range groups {
			longest = max(longest, len(g))
		}
		if len(groups) < 2 || (len(groups) == 2 && longest < 3) {
			return "", true
		}
	}
	return a.String(), true
}

// plainCandidate classifies a colon-free token: hash, IPv4 address or name.
func plainCandidate(t string, strict bool) (dataType, data string, ok bool) {
	t = strings.Trim(t, ".-")
	if t == "" {
		return "", "", false
	}
	if observable.IsHash(t) {
		return "hash", strings.ToLower(t), true
	}
	if strings.Trim(t, "0123456789.") == "" {
		// Only digits and dots: an IPv4 address or nothing (a version, a number, a date).
		a, ok := ipCandidate(t, strict)
		if !ok || a == "" {
			return "", "", false
		}
		return "ip", a, true
	}
	if !strings.Contains(t, ".") {
		return "", "", false
	}
	return nameCandidate(t, strict)
}

// nameCandidate tells whether t is a host name worth reporting (see Extract) and whether it is a domain
// (registrable) or an fqdn; the name is returned lower-cased in the form it was written in.
func nameCandidate(t string, strict bool) (dataType, data string, ok bool) {
	h, err := observable.ParseHostName(t, observable.NameRules{})
	if err != nil {
		return "", "", false
	}
	dataType, ok = observable.NameType(h)
	if !ok {
		return "", "", false
	}
	labels := strings.Split(h.ASCII, ".")
	if strict {
		// Two-letter TLDs are a third of all letter pairs, so random text hits them often: ask more of the
		// label in front of them.
		first, _, _ := strings.Cut(h.Registrable, ".")
		minFirst := 3
		if len(labels[len(labels)-1]) == 2 {
			minFirst = 4
		}
		if !observable.IsASCII(t) || len(first) < minFirst || (t != strings.ToLower(t) && t != strings.ToUpper(t)) {
			return "", "", false
		}
	}
	return dataType, strings.ToLower(t), true
}
