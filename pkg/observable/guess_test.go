package observable

import "testing"

func TestGuess(t *testing.T) {
	for _, c := range []struct {
		value, want string // want "" = not guessed
	}{
		// ip
		{"203.0.113.7", "ip"},
		{"  198.51.100.1\t", "ip"},
		{"0.0.0.0", "ip"},
		{"2001:db8::1", "ip"},
		{"::1", "ip"},
		{"fe80::1%eth0", "ip"},
		{"::ffff:192.0.2.1", "ip"},
		{"10.0.0.0/8", ""},    // a network
		{"1.2.3.4:80", ""},    // an address with a port
		{"[2001:db8::1]", ""}, // bracketed: a URL's host, not a value
		{"1.2.3", ""},         // a version
		{"01.2.3.4", ""},      // leading zero: octal or decimal?
		{"256.1.1.1", ""},     // no such address
		{"1.2.3.4.5", ""},     // numeric top-level label
		{"12345", ""},         // a number: autonomous system? port?
		{"dead:beef", ""},     // a key:value
		// url
		{"https://www.example.com/a?b=c#d", "url"},
		{"http://203.0.113.7:8080/x", "url"},
		{"http://[2001:db8::1]/", "url"},
		{"ftp://files.example.org/pub", "url"},
		{"http://intranet/", "url"}, // one label is a host in a URL
		{"http://example.com:99999/", ""},
		{"https://", ""},
		{"://example.com", ""},
		{"1http://example.com", ""},
		{"hxxp://evil[.]com/x", ""}, // defanged
		{"http://exa mple.com/", ""},
		{"www.example.com/path", ""}, // no scheme: a URL or a path?
		// mail
		{"alice@example.com", "mail"},
		{"Bob.Smith+tag@mail.example.co.uk", "mail"},
		{"Alice <alice@example.com>", ""},
		{"alice@localhost", ""},
		{"alice@example.local", ""},
		{"@example.com", ""},
		{"alice@@example.com", ""},
		{"user[at]example.com", ""},
		// hash
		{"d41d8cd98f00b204e9800998ecf8427e", "hash"},                                 // md5
		{"DA39A3EE5E6B4B0D3255BFEF95601890AFD80709", "hash"},                         // sha1, upper case
		{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "hash"}, // sha256
		{"cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e", "hash"},
		{"d41d8cd98f00b204e9800998ecf8427", ""},   // 31 digits
		{"d41d8cd98f00b204e9800998ecf8427ee", ""}, // 33
		{"g41d8cd98f00b204e9800998ecf8427e", ""},  // not hex
		{"12345678901234567890123456789012", ""},  // 32 decimal digits: a number
		{"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		// domain and fqdn
		{"example.com", "domain"},
		{"EXAMPLE.COM", "domain"},
		{"example.com.", "domain"},
		{"example.co.uk", "domain"},
		{"bücher.de", "domain"},
		{"xn--bcher-kva.de", "domain"},
		{"www.example.com", "fqdn"},
		{"a.b.example.co.uk", "fqdn"},
		{"evil.example.zip", "fqdn"}, // three labels under a file-like TLD: a name
		{"co.uk", ""},                // a public suffix
		{"com", ""},                  // a single label
		{"localhost", ""},
		{"host.local", ""}, // not an ICANN TLD
		{"corp.internal", ""},
		{"invoice.zip", ""}, // a file name as much as a domain
		{"readme.md", ""},
		{"install.sh", ""},
		{"setup.exe", ""},
		{"report.pdf", ""},
		{"node.js", ""},
		{"_dmarc.example.com", ""}, // a DNS record
		{"-bad.example.com", ""},
		{"evil[.]com", ""},
		{"example..com", ""},
		// other
		{"", ""},
		{"   ", ""},
		{"example.com 203.0.113.7", ""}, // two values
		{"C:\\Windows\\system32\\cmd.exe", ""},
		{"HKLM\\Software\\Run", ""},
		{"Mozilla/5.0 (X11)", ""},
		{"<script>alert(1)</script>", ""},
		{"AS15169", ""},
	} {
		got, ok := Guess(c.value)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("Guess(%q) = %q, %v; want %q", c.value, got, ok, c.want)
		}
	}
}

func TestNameType(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"example.com", "domain"}, {"www.example.com", "fqdn"}, {"archive.zip", ""}, {"a.archive.zip", "fqdn"},
		{"co.uk", ""}, {"host.local", ""},
	} {
		h, err := ParseHostName(c.name, NameRules{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, ok := NameType(h); got != c.want || ok != (c.want != "") {
			t.Errorf("NameType(%s) = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}
