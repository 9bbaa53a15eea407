package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// hasTaxonomy tells whether taxes has a line with that predicate, value and level.
func hasTaxonomy(taxes []analysis.Taxonomy, level, predicate string, value any) bool {
	for _, t := range taxes {
		if t.Predicate == predicate && t.Value == value && t.Level == level {
			return true
		}
	}
	return false
}

// taxonomiesOf reads the taxonomies of a report's summary.
func taxonomiesOf(t *testing.T, out analysis.RunOutput) []analysis.Taxonomy {
	t.Helper()
	taxes, ok := out.Summary["taxonomies"].([]analysis.Taxonomy)
	if !ok {
		t.Fatalf("summary.taxonomies is %T", out.Summary["taxonomies"])
	}
	return taxes
}

func TestRunValidator(t *testing.T) {
	type tax struct {
		level, predicate string
		value            any
	}
	tests := []struct {
		name, dataType, data string
		wantErr              string         // substring of ErrorMessage; "" = success
		wantFull             map[string]any // subset of full
		wantTax              []tax
	}{
		// ip
		{name: "private", dataType: "ip", data: "10.0.0.1",
			wantFull: map[string]any{"normalized": "10.0.0.1", "version": 4, "range": "private", "network": "10.0.0.0/8"},
			wantTax:  []tax{{"info", "Type", "IPv4"}, {"info", "Range", "private"}, {"info", "Normalized", "10.0.0.1"}}},
		{name: "loopback v6", dataType: "ip", data: "::1",
			wantFull: map[string]any{"normalized": "::1", "version": 6, "range": "loopback"},
			wantTax:  []tax{{"info", "Type", "IPv6"}, {"info", "Range", "loopback"}}},
		{name: "loopback v4", dataType: "ip", data: "127.0.0.53", wantFull: map[string]any{"range": "loopback"}},
		{name: "documentation", dataType: "ip", data: "192.0.2.1", wantFull: map[string]any{"range": "documentation"}},
		{name: "documentation v6", dataType: "ip", data: "2001:DB8::0:1",
			wantFull: map[string]any{"range": "documentation", "normalized": "2001:db8::1"}},
		{name: "cgnat", dataType: "ip", data: "100.64.0.1", wantFull: map[string]any{"range": "cgnat"}},
		{name: "link-local", dataType: "ip", data: "169.254.1.1", wantFull: map[string]any{"range": "link-local"}},
		{name: "link-local v6 with zone", dataType: "ip", data: "fe80::1%eth0",
			wantFull: map[string]any{"range": "link-local", "normalized": "fe80::1", "zone": "eth0"}},
		{name: "multicast", dataType: "ip", data: "224.0.0.251", wantFull: map[string]any{"range": "multicast"}},
		{name: "multicast v6", dataType: "ip", data: "ff02::1", wantFull: map[string]any{"range": "multicast"}},
		{name: "reserved", dataType: "ip", data: "240.0.0.1", wantFull: map[string]any{"range": "reserved"}},
		{name: "broadcast", dataType: "ip", data: "255.255.255.255", wantFull: map[string]any{"range": "broadcast"}},
		{name: "unspecified", dataType: "ip", data: "0.0.0.0", wantFull: map[string]any{"range": "unspecified"}},
		{name: "this network", dataType: "ip", data: "0.1.2.3", wantFull: map[string]any{"range": "this-network"}},
		{name: "benchmarking", dataType: "ip", data: "198.18.0.1", wantFull: map[string]any{"range": "benchmarking"}},
		{name: "unique local", dataType: "ip", data: "fd00::1", wantFull: map[string]any{"range": "private"}},
		{name: "unassigned v6", dataType: "ip", data: "4000::1", wantFull: map[string]any{"range": "reserved"}},
		{name: "public", dataType: "ip", data: " 8.8.8.8 ",
			wantFull: map[string]any{"range": "public", "public": true, "normalized": "8.8.8.8"}},
		{name: "public v6", dataType: "ip", data: "2606:4700:4700::1111", wantFull: map[string]any{"range": "public"}},
		{name: "mapped", dataType: "ip", data: "::ffff:10.1.2.3",
			wantFull: map[string]any{"range": "private", "ipv4Mapped": "10.1.2.3", "version": 6}},
		{name: "bracketed v6", dataType: "ip", data: "[2001:db8::1]", wantFull: map[string]any{"normalized": "2001:db8::1"}},
		{name: "defanged ip", dataType: "ip", data: "1.2.3[.]4",
			wantFull: map[string]any{"normalized": "1.2.3.4", "refanged": true},
			wantTax:  []tax{{"info", "Defanged", "refanged"}}},
		{name: "leading zero", dataType: "ip", data: "010.0.0.1", wantErr: `not a valid ip address: "010.0.0.1" (IPv4 field has octet with leading zero)`},
		{name: "octet too big", dataType: "ip", data: "256.1.1.1", wantErr: "not a valid ip address"},
		{name: "cidr", dataType: "ip", data: "10.0.0.0/8", wantErr: "a network (CIDR), not an address"},
		{name: "with port", dataType: "ip", data: "1.2.3.4:80", wantErr: "an address with a port; the address is 1.2.3.4"},
		{name: "a name", dataType: "ip", data: "example.com", wantErr: `not a valid ip address: "example.com"`},
		{name: "three parts", dataType: "ip", data: "1.2.3", wantErr: "not a valid ip address"},
		{name: "empty ip", dataType: "ip", data: "  ", wantErr: "not a valid ip address: empty"},

		// domain and fqdn
		{name: "idn to punycode", dataType: "domain", data: "bücher.example",
			wantFull: map[string]any{"normalized": "xn--bcher-kva.example", "unicode": "bücher.example", "idn": true,
				"specialUse": "documentation", "registrableDomain": "xn--bcher-kva.example"},
			wantTax: []tax{{"info", "Type", "Domain"}, {"info", "Normalized", "xn--bcher-kva.example"},
				{"info", "IDN", "bücher.example"}}},
		{name: "punycode to idn", dataType: "domain", data: "xn--bcher-kva.example",
			wantFull: map[string]any{"normalized": "xn--bcher-kva.example", "unicode": "bücher.example", "idn": true}},
		{name: "upper case and trailing dot", dataType: "domain", data: "Example.COM.",
			wantFull: map[string]any{"normalized": "example.com", "trailingDot": true, "publicSuffix": "com", "icann": true}},
		{name: "fqdn", dataType: "fqdn", data: "www.example.co.uk",
			wantFull: map[string]any{"normalized": "www.example.co.uk", "kind": "fqdn", "registrableDomain": "example.co.uk",
				"subdomain": "www", "publicSuffix": "co.uk"},
			wantTax: []tax{{"info", "Type", "FQDN"}}},
		{name: "private suffix", dataType: "fqdn", data: "foo.github.io",
			wantFull: map[string]any{"registrableDomain": "foo.github.io", "icann": false, "knownTLD": true, "kind": "domain"}},
		{name: "public suffix itself", dataType: "domain", data: "co.uk",
			wantFull: map[string]any{"isPublicSuffix": true, "registrableDomain": ""}, wantTax: []tax{{"info", "Type", "PublicSuffix"}}},
		{name: "unknown tld", dataType: "domain", data: "host.corp",
			wantFull: map[string]any{"knownTLD": false}, wantTax: []tax{{"info", "TLD", "unknown"}}},
		{name: "special use", dataType: "fqdn", data: "printer.local", wantTax: []tax{{"info", "SpecialUse", "mdns"}}},
		{name: "dns underscore label", dataType: "fqdn", data: "_dmarc.example.com",
			wantFull: map[string]any{"normalized": "_dmarc.example.com"}},
		{name: "defanged domain", dataType: "domain", data: "evil[.]com",
			wantFull: map[string]any{"normalized": "evil.com", "refanged": true}},
		{name: "defanged dot word", dataType: "domain", data: "evil[dot]com", wantFull: map[string]any{"normalized": "evil.com"}},
		{name: "whole-script homograph", dataType: "domain", data: "xn--80ak6aa92e.com",
			wantFull: map[string]any{"unicode": "аррӏе.com"},
			wantTax:  []tax{{"suspicious", "Homograph", `label "аррӏе" is made only of Cyrillic letters that look Latin`}}},
		{name: "mixed-script homograph", dataType: "domain", data: "pаypal.com", // Cyrillic а
			wantFull: map[string]any{"normalized": "xn--pypal-4ve.com"},
			wantTax:  []tax{{"suspicious", "Homograph", `label "pаypal" mixes scripts`}}},
		{name: "cyrillic under cyrillic tld is fine", dataType: "domain", data: "пример.рф",
			wantFull: map[string]any{"normalized": "xn--e1afmkfd.xn--p1ai", "idn": true}},
		{name: "url given as domain", dataType: "domain", data: "http://x.com", wantErr: "a url, not a domain"},
		{name: "mail given as domain", dataType: "domain", data: "a@x.com", wantErr: "a mail address, not a domain"},
		{name: "ip given as domain", dataType: "domain", data: "1.2.3.4", wantErr: "an ip address, not a domain"},
		{name: "empty label", dataType: "domain", data: "a..b", wantErr: `not a valid domain: "a..b" (empty label)`},
		{name: "hyphen", dataType: "domain", data: "-a.com", wantErr: "starts or ends with a hyphen"},
		{name: "single label", dataType: "domain", data: "localhost", wantErr: "needs at least two labels"},
		{name: "space", dataType: "domain", data: "exa mple.com", wantErr: "contains whitespace"},
		{name: "numeric tld", dataType: "domain", data: "a.123", wantErr: "numeric"},
		{name: "long label", dataType: "domain", data: strings.Repeat("a", 64) + ".com", wantErr: "longer than 63"},
		{name: "long name", dataType: "fqdn", data: strings.Repeat("a.", 127) + "com", wantErr: "longer than 253"},
		{name: "bad punycode", dataType: "domain", data: "xn--abc.com", wantErr: "not valid punycode"},
		{name: "bad character", dataType: "domain", data: "ex!ample.com", wantErr: "not allowed"},
		{name: "bad idn (bidi rule)", dataType: "domain", data: "a\u05d0.com", wantErr: "not a valid internationalised name"},
		{name: "bad idn (control character)", dataType: "domain", data: "ü\u0001.com", wantErr: "not a valid internationalised name"},
		{name: "idn mapping drops zero-width space", dataType: "domain", data: "a\u200bb.com",
			wantFull: map[string]any{"normalized": "ab.com"}},

		// url
		{name: "defanged url", dataType: "url", data: "hxxps://evil[.]example[.]com:443/path?q=1#f",
			wantFull: map[string]any{"normalized": "https://evil.example.com/path?q=1#f", "scheme": "https",
				"host": "evil.example.com", "hostType": "fqdn", "path": "/path", "query": "q=1", "fragment": "f",
				"refanged": true, "hostRegistrableDomain": "example.com"},
			wantTax: []tax{{"info", "Type", "URL"}, {"info", "Scheme", "https"}, {"info", "Defanged", "refanged"}}},
		{name: "idn host, port kept, path escaped", dataType: "url", data: "HTTP://Bücher.Example:8080/ä?x=1",
			wantFull: map[string]any{"normalized": "http://xn--bcher-kva.example:8080/%C3%A4?x=1", "port": "8080",
				"hostUnicode": "bücher.example", "hostType": "domain"},
			wantTax: []tax{{"info", "IDN", "bücher.example"}}},
		{name: "ip host, default port dropped", dataType: "url", data: "http://[2001:DB8::1]:80/",
			wantFull: map[string]any{"normalized": "http://[2001:db8::1]/", "hostType": "ip", "range": "documentation"},
			wantTax:  []tax{{"info", "Range", "documentation"}}},
		{name: "private ip host", dataType: "url", data: "http://10.0.0.1:8080/admin",
			wantFull: map[string]any{"normalized": "http://10.0.0.1:8080/admin", "range": "private"}},
		{name: "userinfo", dataType: "url", data: "http://paypal.com@evil.com/",
			wantFull: map[string]any{"username": "paypal.com", "host": "evil.com"},
			wantTax:  []tax{{"suspicious", "Userinfo", "credentials before the host (paypal.com@…)"}}},
		{name: "single-label host", dataType: "url", data: "http://intranet/x", wantFull: map[string]any{"hostType": "host"}},
		{name: "ftp", dataType: "url", data: "ftp://files.example.org", wantFull: map[string]any{"normalized": "ftp://files.example.org"}},
		{name: "defanged scheme variants", dataType: "url", data: "hXXp://evil[.]com/x", wantFull: map[string]any{"normalized": "http://evil.com/x"}},
		{name: "fxp", dataType: "url", data: "fxp://evil[.]com/x", wantFull: map[string]any{"normalized": "ftp://evil.com/x"}},
		{name: "bracketed colon", dataType: "url", data: "http[:]//evil[.]com/", wantFull: map[string]any{"normalized": "http://evil.com/"}},
		{name: "no scheme", dataType: "url", data: "evil.com/x", wantErr: "no scheme://; did you mean http://evil.com/x?"},
		{name: "mailto", dataType: "url", data: "mailto:a@b.com", wantErr: "a mail address?"},
		{name: "no host", dataType: "url", data: "http://", wantErr: "no host"},
		{name: "bad port", dataType: "url", data: "http://10.0.0.1:99999/", wantErr: `port "99999" is not 1–65535`},
		{name: "space", dataType: "url", data: "http://a.com/a b", wantErr: "white space"},
		{name: "bad host", dataType: "url", data: "http://exa_mple..com/", wantErr: "empty label"},
		{name: "bad escape", dataType: "url", data: "http://a.com/%zz", wantErr: "invalid URL escape"},

		// mail
		{name: "mail", dataType: "mail", data: "John.Doe@Example.COM",
			wantFull: map[string]any{"normalized": "John.Doe@example.com", "localPart": "John.Doe", "domain": "example.com"},
			wantTax:  []tax{{"info", "Type", "Mail"}, {"info", "Normalized", "John.Doe@example.com"}}},
		{name: "mail with name and idn", dataType: "mail", data: "John <john@bücher.example>",
			wantFull: map[string]any{"normalized": "john@xn--bcher-kva.example", "displayName": "John",
				"domainUnicode": "bücher.example"}},
		{name: "defanged mail", dataType: "mail", data: "user[at]evil[.]com",
			wantFull: map[string]any{"normalized": "user@evil.com", "refanged": true}},
		{name: "domain literal", dataType: "mail", data: "a@[1.2.3.4]", wantFull: map[string]any{"normalized": "a@[1.2.3.4]"}},
		{name: "no at", dataType: "mail", data: "nope", wantErr: "not a valid mail address"},
		{name: "single-label domain", dataType: "mail", data: "a@b", wantErr: `domain "b": needs at least two labels`},
		{name: "two ats", dataType: "mail", data: "a@b@c.com", wantErr: "not a valid mail address"},
		{name: "long local part", dataType: "mail", data: strings.Repeat("a", 65) + "@example.com", wantErr: "longer than 64"},

		// hash
		{name: "md5 upper", dataType: "hash", data: "D41D8CD98F00B204E9800998ECF8427E",
			wantFull: map[string]any{"kind": "md5", "bits": 128, "normalized": "d41d8cd98f00b204e9800998ecf8427e", "emptyInput": true},
			wantTax:  []tax{{"info", "Type", "MD5"}, {"info", "Note", "hash of empty input"}}},
		{name: "sha1", dataType: "hash", data: strings.Repeat("a1", 20), wantFull: map[string]any{"kind": "sha1", "emptyInput": false}},
		{name: "sha256", dataType: "hash", data: strings.Repeat("b2", 32), wantTax: []tax{{"info", "Type", "SHA256"}}},
		{name: "sha512", dataType: "hash", data: strings.Repeat("c3", 64), wantFull: map[string]any{"kind": "sha512", "bits": 512}},
		{name: "prefixed", dataType: "hash", data: "SHA-256:" + strings.Repeat("b2", 32), wantFull: map[string]any{"kind": "sha256"}},
		{name: "wrong prefix", dataType: "hash", data: "md5:" + strings.Repeat("b2", 32), wantErr: `prefix "md5" does not match`},
		{name: "bad length", dataType: "hash", data: "abc", wantErr: "3 hex digits; expected 32 (md5)"},
		{name: "sha224 length", dataType: "hash", data: strings.Repeat("a", 56), wantErr: "56 hex digits"},
		{name: "non-hex", dataType: "hash", data: "xyz", wantErr: `character 'x' at position 1 is not a hex digit`},

		// others
		{name: "unsupported type", dataType: "other", data: "x", wantErr: `unsupported dataType "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.dataType+"/"+tt.name, func(t *testing.T) {
			in := analysis.RunInput{Data: tt.data, DataType: tt.dataType, TLP: 2, PAP: 2,
				Config: map[string]any{"api_key": "s3cr3t"}}
			out, err := runValidator(context.Background(), in)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if tt.wantErr != "" {
				if out.Success {
					t.Fatalf("success, want failure %q; full %v", tt.wantErr, out.Full)
				}
				if !strings.Contains(out.ErrorMessage, tt.wantErr) {
					t.Errorf("ErrorMessage = %q, want it to contain %q", out.ErrorMessage, tt.wantErr)
				}
				if strings.Contains(out.Input, "s3cr3t") || !strings.Contains(out.Input, `"api_key":"REMOVED"`) {
					t.Errorf("Input = %s, want the key removed", out.Input)
				}
				return
			}
			if !out.Success {
				t.Fatalf("failure %q, want success", out.ErrorMessage)
			}
			for k, want := range tt.wantFull {
				if got := out.Full[k]; got != want {
					t.Errorf("full.%s = %#v, want %#v", k, got, want)
				}
			}
			taxes := taxonomiesOf(t, out)
			for _, w := range tt.wantTax {
				if !hasTaxonomy(taxes, w.level, w.predicate, w.value) {
					t.Errorf("no taxonomy %v in %v", w, taxes)
				}
			}
			for _, tx := range taxes {
				if tx.Namespace != "Validator" {
					t.Errorf("namespace %q", tx.Namespace)
				}
			}
			if _, err := json.Marshal(map[string]any{"summary": out.Summary, "full": out.Full}); err != nil {
				t.Errorf("report does not encode: %v", err)
			}
		})
	}
}

func TestRunValidator_notAString(t *testing.T) {
	out, err := runValidator(context.Background(), analysis.RunInput{Data: 42.0, DataType: "ip"})
	if err != nil || out.Success || out.ErrorMessage != "data must be a string, not float64" {
		t.Fatalf("got %+v, %v", out, err)
	}
}

// TestRunValidator_roundTrip checks that a normalised value validates to itself.
func TestRunValidator_roundTrip(t *testing.T) {
	for _, c := range [][2]string{{"ip", "::FFFF:1.2.3.4"}, {"domain", "BÜCHER.example."}, {"url", "hxxp://Evil[.]com:80/a/../b?x#y"},
		{"mail", "A <x@EXAMPLE.org>"}, {"hash", "ABCDEF0123456789ABCDEF0123456789"}} {
		v, err := validate(c[0], c[1])
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		n := v.full["normalized"].(string)
		v2, err := validate(c[0], n)
		if err != nil || v2.full["normalized"] != n {
			t.Errorf("%v: %q normalises to %v (%v)", c, n, v2.full["normalized"], err)
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "::1", "fe80::1%eth0", "bücher.example", "xn--bcher-kva.example",
		"hxxps://evil[.]com:443/x", "http://[::1]:80/", "a@b.com", "John <j@x.org>", "a@[IPv6:::1]",
		"d41d8cd98f00b204e9800998ecf8427e", "sha256:", "xn--", "http://%zz", "[.]", "http://a@b@c/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, dt := range []string{"ip", "domain", "fqdn", "url", "mail", "hash"} {
			out, err := runValidator(context.Background(), analysis.RunInput{Data: s, DataType: dt})
			if err != nil {
				t.Fatalf("%s %q: %v", dt, s, err)
			}
			if !out.Success {
				if !strings.HasPrefix(out.ErrorMessage, "not a valid ") {
					t.Fatalf("%s %q: message %q", dt, s, out.ErrorMessage)
				}
				continue
			}
			n, ok := out.Full["normalized"].(string)
			if !ok || n == "" {
				t.Fatalf("%s %q: normalized %v", dt, s, out.Full["normalized"])
			}
			if _, err := json.Marshal(out.Full); err != nil {
				t.Fatalf("%s %q: %v", dt, s, err)
			}
		}
	})
}
