package events

import (
	"errors"
	"net"
	"testing"
)

// Issue 28: webhook URLs reaching the metadata address through NAT64, the loopback as an IPv4-compatible
// address, 6to4 forms and this host's own interface address were accepted, at creation and at dial time.
func TestSSRFGuard_EmbeddedAndOwnAddresses(t *testing.T) {
	refused := []string{
		"127.0.0.1", "169.254.169.254", "10.1.2.3", "0.1.2.3", "100.64.0.1", "240.0.0.1", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", // IPv4-mapped
		"::127.0.0.1", "::169.254.169.254", "::10.0.0.1", // IPv4-compatible
		"64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::a9fe:a9fe", // NAT64, well-known and local-use
		"2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:c0a8:101::1", // 6to4 of the loopback, metadata, 192.168.1.1
		"2001:0:7f00:1::1", "2001:0:4136:e378:8000:63bf:5601:5656", // Teredo: loopback server; client 169.254.169.169 inverted
		"2001:db8::1", "2600::5efe:a9fe:a9fe", // documentation; ISATAP with the metadata address
	}
	allowedOnes := []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"}
	for _, a := range refused {
		ip := net.ParseIP(a)
		if ip == nil {
			t.Fatalf("bad test address %s", a)
		}
		if allowed(ip) {
			t.Errorf("%s is allowed", a)
		}
		if err := guard(false)("tcp", net.JoinHostPort(a, "80"), nil); !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("dialling %s: %v, want refused", a, err)
		}
		if err := CheckURL("http://"+net.JoinHostPort(a, "80")+"/", false); err == nil {
			t.Errorf("URL of %s accepted", a)
		}
	}
	for _, a := range allowedOnes {
		if !allowed(net.ParseIP(a)) {
			t.Errorf("public %s is refused", a)
		}
		if err := guard(false)("tcp", net.JoinHostPort(a, "443"), nil); err != nil {
			t.Errorf("dialling %s: %v", a, err)
		}
	}
	// This host's own addresses, whatever their range: the service's own ports are behind them.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() {
			continue
		}
		own++
		if allowed(n.IP) {
			t.Errorf("this host's address %s is allowed", n.IP)
		}
		if err := CheckURL("http://"+net.JoinHostPort(n.IP.String(), "80")+"/", false); err == nil {
			t.Errorf("URL of this host's address %s accepted", n.IP)
		}
		if v4 := n.IP.To4(); v4 != nil {
			nat64 := net.IP{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, v4[0], v4[1], v4[2], v4[3]}
			if allowed(nat64) {
				t.Errorf("this host's address %s through NAT64 (%s) is allowed", n.IP, nat64)
			}
		}
	}
	t.Logf("%d non-loopback interface addresses checked", own)
	// The setting for labs still allows all.
	if err := guard(true)("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("allow_private: %v", err)
	}
}
