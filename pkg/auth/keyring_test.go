package auth

import (
	"encoding/base64"
	"strings"
	"testing"
)

const (
	testSecret  = "0123456789abcdef0123456789abcdef"
	otherSecret = "fedcba9876543210fedcba9876543210"
)

func mustKeyring(t testing.TB, secret string) *Keyring {
	t.Helper()
	k, err := NewKeyring(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewKeyring(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		wantErr bool
	}{
		{"empty", "", true},
		{"15 bytes", strings.Repeat("x", 15), true},
		{"16 bytes", strings.Repeat("x", 16), false},
		{"long", strings.Repeat("x", 200), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewKeyring(tc.secret); (err != nil) != tc.wantErr {
				t.Errorf("NewKeyring(%d bytes) error = %v, want error %v", len(tc.secret), err, tc.wantErr)
			}
		})
	}
}

func TestSubkeysIndependent(t *testing.T) {
	k := mustKeyring(t, testSecret)
	if string(k.lookupKey) == string(k.jwtKey) || string(k.lookupKey) == testSecret || string(k.jwtKey) == testSecret {
		t.Error("subkeys are not independent of each other and of the secret")
	}
}

func TestNewKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		key, err := NewKey()
		if err != nil {
			t.Fatal(err)
		}
		if len(key) != 32 {
			t.Errorf("key %q has %d chars, want 32", key, len(key))
		}
		if b, err := base64.StdEncoding.DecodeString(key); err != nil || len(b) != 24 {
			t.Errorf("key %q is not base64 of 24 bytes: %v", key, err)
		}
		if seen[key] {
			t.Errorf("duplicate key %q", key)
		}
		seen[key] = true
	}
}

func TestSealOpen(t *testing.T) {
	k := mustKeyring(t, testSecret)
	for _, plain := range []string{"", "x", "0123456789abcdef0123456789abcdef", strings.Repeat("é", 1000)} {
		sealed, err := k.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		again, err := k.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if sealed == again {
			t.Errorf("sealing %q twice gave the same value: nonce is not random", plain)
		}
		got, err := k.Open(sealed)
		if err != nil || got != plain {
			t.Errorf("Open(Seal(%q)) = %q, %v", plain, got, err)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	k := mustKeyring(t, testSecret)
	sealed, err := k.Seal("api key")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := mustKeyring(t, otherSecret).Seal("api key")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(sealed)
	tamper := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	tests := []struct {
		name   string
		sealed string
	}{
		{"other keyring", foreign},
		{"tampered nonce", tamper(0)},
		{"tampered ciphertext", tamper(12)},
		{"tampered tag", tamper(len(raw) - 1)},
		{"truncated", base64.StdEncoding.EncodeToString(raw[:len(raw)-1])},
		{"too short", base64.StdEncoding.EncodeToString(raw[:20])},
		{"empty", ""},
		{"not base64", "!!!!"},
		{"plain text", "api key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := k.Open(tc.sealed); err == nil {
				t.Errorf("Open(%q) = %q, want error", tc.sealed, got)
			}
		})
	}
}

func TestLookupHash(t *testing.T) {
	k := mustKeyring(t, testSecret)
	other := mustKeyring(t, otherSecret)
	h := k.LookupHash("key-1")
	tests := []struct {
		name      string
		got       string
		wantEqual bool
	}{
		{"deterministic", k.LookupHash("key-1"), true},
		{"same secret, new keyring", mustKeyring(t, testSecret).LookupHash("key-1"), true},
		{"other key", k.LookupHash("key-2"), false},
		{"other secret", other.LookupHash("key-1"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.got == h) != tc.wantEqual {
				t.Errorf("LookupHash = %q vs %q, want equal %v", tc.got, h, tc.wantEqual)
			}
		})
	}
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("LookupHash = %q, want 64 lowercase hex chars", h)
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"abc", "ab", false},
		{"", "a", false},
	}
	for _, tc := range tests {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
