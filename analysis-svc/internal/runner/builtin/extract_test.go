package builtin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// pairs renders artifacts as "dataType data" for compact comparisons.
func pairs(arts []analysis.OutputArtifact) []string {
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = a.DataType + " " + a.Data
	}
	return out
}

func TestExtract(t *testing.T) {
	const (
		md5    = "d41d8cd98f00b204e9800998ecf8427e"
		sha1   = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
		sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		sha512 = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
	)
	tests := []struct {
		name   string
		full   any
		ignore string
		want   []string
	}{
		// Whole values.
		{"ipv4", "8.8.8.8", "", []string{"ip 8.8.8.8"}},
		{"ipv6 canonical", "2001:DB8:0:0::1", "", []string{"ip 2001:db8::1"}},
		{"ipv6 loopback", "::1", "", []string{"ip ::1"}},
		{"ipv4 mapped", "::ffff:1.2.3.4", "", []string{"ip ::ffff:1.2.3.4"}},
		{"url", "https://evil.example.com/path?q=1#frag", "", []string{"url https://evil.example.com/path?q=1#frag"}},
		{"url ftp", "ftp://files.example.org/pub", "", []string{"url ftp://files.example.org/pub"}},
		{"url ipv6 host", "http://[2001:db8::1]:8080/x", "", []string{"url http://[2001:db8::1]:8080/x"}},
		{"url single-label host", "http://intranet/x", "", []string{"url http://intranet/x"}},
		{"domain", "example.com", "", []string{"domain example.com"}},
		{"domain under a two-level suffix", "example.co.uk", "", []string{"domain example.co.uk"}},
		{"fqdn", "www.example.co.uk", "", []string{"fqdn www.example.co.uk"}},
		{"fqdn lower-cased", "WWW.Example.COM", "", []string{"fqdn www.example.com"}},
		{"private suffix registrable", "foo.github.io", "", []string{"domain foo.github.io"}},
		{"idn domain", "bücher.de", "", []string{"domain bücher.de"}},
		{"punycode domain", "xn--bcher-kva.de", "", []string{"domain xn--bcher-kva.de"}},
		{"mail", "John.Doe@Example.COM", "", []string{"mail John.Doe@example.com"}},
		{"mail idn", "user@bücher.de", "", []string{"mail user@bücher.de"}},
		{"md5", md5, "", []string{"hash " + md5}},
		{"sha1", sha1, "", []string{"hash " + sha1}},
		{"sha256 upper-case", strings.ToUpper(sha256), "", []string{"hash " + sha256}},
		{"sha512", sha512, "", []string{"hash " + sha512}},
		{"padded value", "  8.8.4.4\n", "", []string{"ip 8.8.4.4"}},

		// Inside text.
		{"sentence", "Connect to 1.2.3.4:80, then fetch http://evil.example.com/a?b=c).",
			"", []string{"ip 1.2.3.4", "url http://evil.example.com/a?b=c"}},
		{"url in brackets keeps balanced parentheses", "see (http://example.com/foo_(bar))", "",
			[]string{"url http://example.com/foo_(bar)"}},
		{"url host not repeated", "GET http://evil.example.com/x from evil.example.com", "",
			[]string{"url http://evil.example.com/x", "fqdn evil.example.com"}},
		{"mail domain not repeated", "from: a@evil.com", "", []string{"mail a@evil.com"}},
		{"host:port", "evil.com:8443", "", []string{"domain evil.com"}},
		{"key:value", "key:evil.com", "", []string{"domain evil.com"}},
		{"bracketed ipv6 with port", "[2001:db8::1]:443", "", []string{"ip 2001:db8::1"}},
		{"ipv6 zone dropped", "fe80::1%eth0", "", []string{"ip fe80::1"}},
		{"cidr", "block 10.0.0.0/8 now", "", []string{"ip 10.0.0.0"}},
		{"hash in text", "sha256=" + sha256 + ";", "", []string{"hash " + sha256}},
		{"two-label file-like TLD with more labels is a name", "evil.example.zip", "",
			[]string{"fqdn evil.example.zip"}},
		{"order of appearance", "b.example.com a.example.com 9.9.9.9", "",
			[]string{"fqdn b.example.com", "fqdn a.example.com", "ip 9.9.9.9"}},

		// Not observables.
		{"version", "1.2.3", "", nil},
		{"version with v", "v1.2.3.4", "", nil},
		{"five-part version", "1.2.3.4.5", "", nil},
		{"filename pdf", "report.pdf", "", nil},
		{"filename exe", "setup.exe", "", nil},
		{"filename zip", "archive.zip", "", nil},
		{"filename md", "README.md", "", nil},
		{"filename py", "script.py", "", nil},
		{"library so", "libc.so", "", nil},
		{"library so.6", "libc.so.6", "", nil},
		{"node.js", "node.js", "", nil},
		{"unknown tld", "host.local", "", nil},
		{"public suffix alone", "co.uk", "", nil},
		{"single label", "localhost", "", nil},
		{"octet over 255", "999.1.1.1", "", nil},
		{"leading zero octet", "010.1.1.1", "", nil},
		{"unspecified v4", "0.0.0.0", "", nil},
		{"unspecified v6", "::", "", nil},
		{"time", "12:30:45", "", nil},
		{"mac address", "00:1a:2b:3c:4d:5e", "", nil},
		{"timestamp", "2024-01-02T10:30:00Z", "", nil},
		{"date", "2024.01.02", "", nil},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", "", nil},
		{"long decimal number", "12345678901234567890123456789012", "", nil},
		{"hex of another length", strings.Repeat("ab", 20) + "c", "", nil},
		{"hex glued to letters", "x" + md5, "", nil},
		{"defanged url", "hxxp://evil[.]com/x", "", nil},
		{"other scheme", "smb://server/share", "", nil},
		{"mail without tld", "x@y", "", nil},
		{"mail bad local part: only the domain", ".x@example.com", "", []string{"domain example.com"}},
		{"underscore name", "_dmarc.example.com", "", nil},
		{"empty", "", "", nil},
		{"number", 8.8, "", nil},
		{"bool", true, "", nil},
		{"nil", nil, "", nil},

		// Structures.
		{"nested, keys sorted, keys not read", map[string]any{
			"z":        "9.9.9.9",
			"a":        []any{"example.com", map[string]any{"deep": []any{"https://x.example.org/"}}},
			"evil.com": 3.0,
		}, "", []string{"domain example.com", "url https://x.example.org/", "ip 9.9.9.9"}},
		{"dedup across values", []any{"8.8.8.8", "8.8.8.8", "see 8.8.8.8"}, "", []string{"ip 8.8.8.8"}},
		{"same data, two types", []any{"a@example.com", "mailto example.com"}, "",
			[]string{"mail a@example.com", "domain example.com"}},
		{"typed values read as JSON", []analysis.Taxonomy{{Level: "info", Namespace: "N", Predicate: "P", Value: "1.1.1.1"}},
			"", []string{"ip 1.1.1.1"}},
		{"string slice and map", map[string]any{"a": []string{"1.1.1.1"}, "b": map[string]string{"x": "2.2.2.2"}},
			"", []string{"ip 1.1.1.1", "ip 2.2.2.2"}},

		// ignore.
		{"ignore equal", []any{"evil.com", "1.2.3.4"}, "evil.com", []string{"ip 1.2.3.4"}},
		{"ignore containing", []any{"http://evil.com/x", "www.evil.com", "a@evil.com", "other.com"}, "EVIL.com",
			[]string{"domain other.com"}},
		{"ignore keeps the rest of a sentence", "evil.com resolves to 1.2.3.4", "evil.com", []string{"ip 1.2.3.4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Extract(tt.full, tt.ignore)
			if got == nil {
				t.Fatal("Extract returned nil")
			}
			if g := pairs(got); !slices.Equal(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
				t.Errorf("Extract(%v) = %q, want %q", tt.full, g, tt.want)
			}
		})
	}
}

func TestExtract_deterministic(t *testing.T) {
	full := map[string]any{}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		full[k] = "host-" + k + ".example.com and 10.0.0." + k[1:]
	}
	first := pairs(Extract(full, ""))
	if len(first) != 16 {
		t.Fatalf("got %d artifacts, want 16: %q", len(first), first)
	}
	for range 20 {
		if got := pairs(Extract(full, "")); !slices.Equal(got, first) {
			t.Fatalf("order changed: %q vs %q", got, first)
		}
	}
}

func TestExtract_cycles(t *testing.T) {
	m := map[string]any{"ip": "1.2.3.4"}
	m["self"] = m
	m["again"] = m
	s := []any{"5.6.7.8", nil}
	s[1] = s
	m["list"] = s
	if got := pairs(Extract(m, "")); !slices.Equal(got, []string{"ip 1.2.3.4", "ip 5.6.7.8"}) {
		t.Errorf("got %q", got)
	}
	// Shared sub-trees many levels deep stay linear.
	var v any = "9.9.9.9"
	for range 200 {
		v = map[string]any{"a": v, "b": v}
	}
	if got := pairs(Extract(v, "")); !slices.Equal(got, []string{"ip 9.9.9.9"}) {
		t.Errorf("got %q", got)
	}
	// Values JSON cannot encode are skipped.
	if got := Extract(map[string]any{"c": make(chan int), "s": "8.8.8.8"}, ""); len(got) != 1 {
		t.Errorf("got %v", got)
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "http://evil.example.com/a)", "a@b.com", "::ffff:1.2.3.4",
		"xn--bcher-kva.de", "bücher.de", `{"a":["x.example.com",{"b":"2001:db8::1"}]}`, "[::1]:80", "..-.",
		"d41d8cd98f00b204e9800998ecf8427e", "http://[", "a@[1.2.3.4]", "%%%", "\xff\xfe"} {
		f.Add(s, "")
		f.Add(s, "example")
	}
	f.Fuzz(func(t *testing.T, s, ignore string) {
		_ = findObservables(s, true) // the File_Info mode must not panic either
		var full any = s
		var decoded any
		if json.Unmarshal([]byte(s), &decoded) == nil {
			full = []any{s, decoded}
		}
		seen := map[string]bool{}
		for _, a := range Extract(full, ignore) {
			k := a.DataType + " " + a.Data
			if seen[k] {
				t.Fatalf("duplicate %q", k)
			}
			seen[k] = true
			if a.Data == "" || !utf8.ValidString(a.Data) && utf8.ValidString(s) {
				t.Fatalf("bad data %q", a.Data)
			}
			if ignore != "" && strings.Contains(strings.ToLower(a.Data), strings.ToLower(strings.TrimSpace(ignore))) &&
				strings.TrimSpace(ignore) != "" {
				t.Fatalf("%q contains ignored %q", a.Data, ignore)
			}
			switch a.DataType {
			case "ip", "url", "domain", "fqdn", "mail", "hash":
			default:
				t.Fatalf("unexpected type %q", a.DataType)
			}
		}
	})
}

func TestFindObservables_strict(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"evil-c2.example.com", []string{"fqdn evil-c2.example.com"}},
		{"host=evil.com;", []string{"domain evil.com"}},
		{`"abc.com"`, []string{"domain abc.com"}},
		{"ABCD.RU", []string{"domain abcd.ru"}},
		{"abc.ru", nil},    // short label under a two-letter TLD
		{"Gmk.Sn", nil},    // mixed case
		{"#evil.com", nil}, // not delimited
		{"evil.com!", nil}, // not delimited
		{"bücher.de", nil}, // not ASCII
		{"fe80::1", []string{"ip fe80::1"}},
		{"2001:db8::1", []string{"ip 2001:db8::1"}},
		{"a::b", nil},
		{"1f4::", nil},
		{"8.8.8.8", []string{"ip 8.8.8.8"}},
		{"mail x@evil.com", []string{"mail x@evil.com"}},
		{"mail x@Evil.Com", nil},
		{"%x@evil.com", []string{"mail %x@evil.com"}}, // % belongs to the local part
		{"http://Gmk.Sn/x", []string{"url http://Gmk.Sn/x"}},
	}
	for _, tt := range tests {
		var got []string
		for _, f := range findObservables(tt.in, true) {
			got = append(got, f.dataType+" "+f.data)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("findObservables(%q, strict) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
