package auth

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/openir/platform/pkg/apperr"
)

// testNow() is the fixed clock of the session tests.
func testNow() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }

func TestSessionRoundTrip(t *testing.T) {
	k := mustKeyring(t, testSecret)
	token, s, err := k.IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		t.Fatal(err)
	}
	if s.Subject != "alice" || !s.Expires.Equal(testNow().Add(time.Hour)) {
		t.Errorf("issued session = %+v", s)
	}
	if b, err := base64.RawURLEncoding.DecodeString(s.CSRF); err != nil || len(b) != 16 {
		t.Errorf("CSRF %q is not base64url of 16 bytes: %v", s.CSRF, err)
	}
	_, s2, err := k.IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		t.Fatal(err)
	}
	if s2.CSRF == s.CSRF {
		t.Error("two sessions share a CSRF token")
	}
	for _, at := range []time.Time{testNow(), testNow().Add(59 * time.Minute)} {
		got, err := k.ParseSession(token, at)
		if err != nil {
			t.Fatalf("ParseSession at %v: %v", at, err)
		}
		if got.Subject != s.Subject || got.CSRF != s.CSRF || !got.Expires.Equal(s.Expires) {
			t.Errorf("ParseSession = %+v, want %+v", got, s)
		}
	}
}

func TestIssueSessionErrors(t *testing.T) {
	k := mustKeyring(t, testSecret)
	tests := []struct {
		name    string
		subject string
		ttl     time.Duration
	}{
		{"empty subject", "", time.Hour},
		{"zero ttl", "alice", 0},
		{"negative ttl", "alice", -time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := k.IssueSession(tc.subject, 0, tc.ttl, testNow()); err == nil {
				t.Error("IssueSession succeeded")
			}
		})
	}
	if _, _, err := k.RenewSession(Session{Subject: "alice"}, time.Hour, testNow()); err == nil {
		t.Error("RenewSession without CSRF succeeded")
	}
}

func TestParseSessionRejects(t *testing.T) {
	k := mustKeyring(t, testSecret)
	token, _, err := k.IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, err := mustKeyring(t, otherSecret).IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		t.Fatal(err)
	}
	claims := func(sub, csrf string, exp time.Time) sessionClaims {
		c := sessionClaims{CSRF: csrf, RegisteredClaims: jwt.RegisteredClaims{Subject: sub, IssuedAt: jwt.NewNumericDate(testNow())}}
		if !exp.IsZero() {
			c.ExpiresAt = jwt.NewNumericDate(exp)
		}
		return c
	}
	sign := func(m jwt.SigningMethod, key any, c sessionClaims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := claims("alice", "csrf", testNow().Add(time.Hour))
	parts := strings.Split(token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	evil := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"alice"`, `"admin"`, 1)))

	tests := []struct {
		name  string
		token string
		now   time.Time
	}{
		{"expired", token, testNow().Add(time.Hour)},
		{"long expired", token, testNow().Add(48 * time.Hour)},
		{"wrong key", foreign, testNow()},
		{"alg none", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid), testNow()},
		{"alg none with signature", strings.Join([]string{
			base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)), parts[1], parts[2]}, "."), testNow()},
		{"HS512 with right key", sign(jwt.SigningMethodHS512, k.jwtKey, valid), testNow()},
		{"HS256 with secret itself", sign(jwt.SigningMethodHS256, []byte(testSecret), valid), testNow()},
		{"tampered payload", parts[0] + "." + evil + "." + parts[2], testNow()},
		{"tampered signature", parts[0] + "." + parts[1] + "." + flip(parts[2][0]) + parts[2][1:], testNow()},
		{"signature stripped", parts[0] + "." + parts[1] + ".", testNow()},
		{"no expiry", sign(jwt.SigningMethodHS256, k.jwtKey, claims("alice", "csrf", time.Time{})), testNow()},
		{"no subject", sign(jwt.SigningMethodHS256, k.jwtKey, claims("", "csrf", testNow().Add(time.Hour))), testNow()},
		{"no csrf", sign(jwt.SigningMethodHS256, k.jwtKey, claims("alice", "", testNow().Add(time.Hour))), testNow()},
		{"empty", "", testNow()},
		{"garbage", "a.b.c", testNow()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := k.ParseSession(tc.token, tc.now)
			if err == nil {
				t.Fatalf("ParseSession succeeded: %+v", s)
			}
			if !apperr.Is(err, apperr.Unauthenticated) {
				t.Errorf("error %v has kind %v, want Unauthenticated", err, apperr.KindOf(err))
			}
			if s != (Session{}) {
				t.Errorf("session %+v returned with an error", s)
			}
		})
	}
}

func TestRenewSession(t *testing.T) {
	k := mustKeyring(t, testSecret)
	_, s, err := k.IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		t.Fatal(err)
	}
	later := testNow().Add(50 * time.Minute)
	token, r, err := k.RenewSession(s, time.Hour, later)
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject != s.Subject || r.CSRF != s.CSRF || !r.Expires.Equal(later.Add(time.Hour)) {
		t.Errorf("RenewSession = %+v from %+v", r, s)
	}
	// Valid past the original expiry.
	got, err := k.ParseSession(token, testNow().Add(90*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "alice" || got.CSRF != s.CSRF {
		t.Errorf("ParseSession(renewed) = %+v", got)
	}
}

func FuzzParseSession(f *testing.F) {
	k := mustKeyring(f, testSecret)
	token, _, err := k.IssueSession("alice", 0, time.Hour, testNow())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(token)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSJ9.")
	f.Add(`eyJhbGciOiJIUzI1NiJ9.eyJleHAiOiJ4Iiwic3ViIjpbXX0.x`)
	f.Fuzz(func(t *testing.T, token string) {
		s, err := k.ParseSession(token, testNow())
		if err == nil && (s.Subject == "" || s.CSRF == "") {
			t.Errorf("accepted session without subject or csrf: %+v", s)
		}
		if err != nil && !apperr.Is(err, apperr.Unauthenticated) {
			t.Errorf("error %v is not Unauthenticated", err)
		}
	})
}
