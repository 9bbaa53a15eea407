package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/apperr"
)

func mustCredentials(t *testing.T, secret string) *Credentials {
	t.Helper()
	c, err := NewCredentials(mustKeyring(t, secret))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCredentials_CheckLogin(t *testing.T) {
	c := mustCredentials(t, testSecret)
	hash, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, hash, password string
		want                 bool
	}{
		{"right password", hash, "correct horse", true},
		{"wrong password", hash, "correct horsE", false},
		{"no hash (unknown login or no password)", "", "correct horse", false},
		{"no hash, empty password", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.CheckLogin(tt.hash, tt.password); got != tt.want {
				t.Errorf("CheckLogin = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecoyHash: the hash an empty hash is checked against has the parameters, salt and key lengths of a new
// hash (so a failed login costs what a real check costs), is a well-formed hash, and is not the same twice.
func TestDecoyHash(t *testing.T) {
	real, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	rp, rsalt, rkey, err := decodeHash(real)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := decoyHash()
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := decoyHash()
	dp, dsalt, dkey, err := decodeHash(d1)
	if err != nil {
		t.Fatalf("the decoy %q does not decode: %v", d1, err)
	}
	if dp != rp || len(dsalt) != len(rsalt) || len(dkey) != len(rkey) {
		t.Fatalf("decoy %+v salt %d key %d, a real hash %+v salt %d key %d", dp, len(dsalt), len(dkey), rp, len(rsalt), len(rkey))
	}
	if d1 == d2 {
		t.Fatal("two decoys are equal")
	}
	if CheckPassword(d1, "correct horse") || CheckPassword(d1, "") {
		t.Fatal("a password matches the decoy")
	}
}

func TestCheckNewPassword(t *testing.T) {
	tests := []struct {
		name, pw string
		ok       bool
	}{
		{"7 characters", "1234567", false},
		{"8 characters", "12345678", true},
		{"1024 characters", strings.Repeat("x", 1024), true},
		{"1025 characters", strings.Repeat("x", 1025), false},
		{"8 two-byte characters", strings.Repeat("é", 8), true},
		{"4 two-byte characters (8 bytes)", strings.Repeat("é", 4), false},
		{"1024 two-byte characters", strings.Repeat("é", 1024), true},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNewPassword("newPassword", tt.pw)
			if tt.ok {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Invalid || len(e.Fields) != 1 ||
				e.Fields[0] != (apperr.FieldError{Name: "newPassword", Message: "8 to 1024 characters"}) {
				t.Fatalf("err = %#v, want the field problem newPassword: 8 to 1024 characters", err)
			}
		})
	}
}

func TestNewPassword(t *testing.T) {
	h, err := NewPassword("password", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	if h == "a good password" || !CheckPassword(h, "a good password") {
		t.Fatalf("hash %q does not check its password", h)
	}
	if _, err := NewPassword("password", "short"); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("short: err = %v, want Invalid", err)
	}
}

func TestChangePassword(t *testing.T) {
	old, err := HashPassword("the old password")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("right current", func(t *testing.T) {
		h, err := ChangePassword("password", old, "the old password", "the new password")
		if err != nil {
			t.Fatal(err)
		}
		if !CheckPassword(h, "the new password") || CheckPassword(h, "the old password") {
			t.Fatal("the returned hash is not the new password's")
		}
	})
	t.Run("wrong current", func(t *testing.T) {
		if _, err := ChangePassword("password", old, "not the old one", "the new password"); !errors.Is(err, ErrWrongPassword) {
			t.Fatalf("err = %v, want ErrWrongPassword", err)
		}
	})
	t.Run("no password yet", func(t *testing.T) {
		if _, err := ChangePassword("password", "", "", "the new password"); !errors.Is(err, ErrWrongPassword) {
			t.Fatalf("err = %v, want ErrWrongPassword", err)
		}
	})
	t.Run("the rule before the current password", func(t *testing.T) {
		_, err := ChangePassword("password", old, "not the old one", "short")
		if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Fields[0].Name != "password" {
			t.Fatalf("err = %v, want the field problem password", err)
		}
	})
	if apperr.KindOf(ErrWrongPassword) != apperr.Forbidden || ErrWrongPassword.Message != "the current password is wrong" {
		t.Errorf("ErrWrongPassword = %#v", ErrWrongPassword)
	}
	if apperr.KindOf(ErrAuthentication) != apperr.Unauthenticated || ErrAuthentication.Message != "Authentication failure" {
		t.Errorf("ErrAuthentication = %#v", ErrAuthentication)
	}
}

func TestCredentials_APIKey(t *testing.T) {
	c := mustCredentials(t, testSecret)
	k, err := c.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Plain) != 32 || k.Sealed == "" || strings.Contains(k.Sealed, k.Plain) || k.Hash != c.LookupHash(k.Plain) {
		t.Fatalf("key %+v: want 32 characters, sealed and hashed", k)
	}
	if k2, err := c.NewAPIKey(); err != nil || k2.Plain == k.Plain || k2.Hash == k.Hash {
		t.Fatalf("second key %+v, %v: want another key", k2, err)
	}
	got, err := c.RevealKey("dan", k.Sealed)
	if err != nil || got != k.Plain {
		t.Fatalf("RevealKey = %q, %v; want the key", got, err)
	}

	given := strings.Repeat("k", 32)
	g, err := c.APIKey(given)
	if err != nil || g.Plain != given || g.Hash != c.LookupHash(given) {
		t.Fatalf("APIKey(32 characters) = %+v, %v", g, err)
	}
	if _, err := c.APIKey(given[:31]); err == nil {
		t.Fatal("APIKey(31 characters): want an error")
	}
}

func TestCredentials_RevealKey(t *testing.T) {
	c := mustCredentials(t, testSecret)
	_, err := c.RevealKey("dan", "")
	if e := apperr.As(err); e == nil || e.Kind != apperr.NotFound || e.Message != "user dan has no API key" {
		t.Fatalf("no key: err = %v, want NotFound: user dan has no API key", err)
	}
	k, err := mustCredentials(t, otherSecret).NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RevealKey("dan", k.Sealed)
	if err == nil || apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("key sealed under another secret: err = %v, want an internal error", err)
	}
	if strings.Contains(err.Error(), k.Plain) {
		t.Fatal("the error holds the key")
	}
}

func TestCredentials_FirstUser(t *testing.T) {
	c := mustCredentials(t, testSecret)
	key := strings.Repeat("b", 40)
	tests := []struct {
		name, password, key  string
		wantErr              string
		wantHash, wantKeyFor bool
	}{
		{name: "neither", wantErr: "neither bootstrap.password nor bootstrap.key"},
		{name: "password", password: "admin password", wantHash: true},
		{name: "key", key: key, wantKeyFor: true},
		{name: "both", password: "admin password", key: key, wantHash: true, wantKeyFor: true},
		{name: "short key", key: key[:31], wantErr: "bootstrap.key: an API key must be at least 32 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hash, k, err := c.FirstUser(tt.password, tt.key)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (hash != "") != tt.wantHash || (tt.wantHash && !CheckPassword(hash, tt.password)) {
				t.Errorf("hash %q for password %q", hash, tt.password)
			}
			if tt.wantKeyFor && (k.Plain != tt.key || k.Hash != c.LookupHash(tt.key) || k.Sealed == "") {
				t.Errorf("key %+v for %q", k, tt.key)
			}
			if !tt.wantKeyFor && k != (APIKey{}) {
				t.Errorf("key %+v without a configured key", k)
			}
		})
	}
}
