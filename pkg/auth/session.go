package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/openir/platform/pkg/apperr"
)

// Names shared with the HTTP layer.
const (
	// SessionCookie is the cookie that carries the session token.
	SessionCookie = "SESSION"
	// CSRFCookie is the cookie that carries the session's CSRF token to the browser.
	CSRFCookie = "XSRF-TOKEN"
	// CSRFHeader is the request header in which the client echoes the CSRF token.
	CSRFHeader = "X-XSRF-TOKEN"
)

// Session is the content of a valid session token.
type Session struct {
	Subject string    // the user the session belongs to
	CSRF    string    // the session's CSRF token, base64url of 16 random bytes
	Expires time.Time // when the token stops being accepted (second precision)
	// Version is the subject's session version when the session started. The service stores one version per
	// user and raises it to end every session of that user at once (logout, password change, lock, …): a
	// token whose version is not the user's current one is refused (see web.Authenticate).
	Version int64
}

// sessionClaims is the JWT payload of a session token.
type sessionClaims struct {
	CSRF    string `json:"csrf"`
	Version int64  `json:"sv"`
	jwt.RegisteredClaims
}

// IssueSession starts a session for subject at the subject's session version that expires ttl after now,
// with a new random CSRF token, and returns its signed token (JWT, HS256).
func (k *Keyring) IssueSession(subject string, version int64, ttl time.Duration, now time.Time) (string, Session, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", Session{}, fmt.Errorf("auth: read random csrf token: %w", err)
	}
	return k.sign(Session{Subject: subject, CSRF: base64.RawURLEncoding.EncodeToString(b), Version: version}, ttl, now)
}

// RenewSession returns a new token for s with the same subject, version and CSRF token that expires ttl after
// now.
func (k *Keyring) RenewSession(s Session, ttl time.Duration, now time.Time) (string, Session, error) {
	if s.CSRF == "" {
		return "", Session{}, errors.New("auth: session without csrf token")
	}
	return k.sign(s, ttl, now)
}

func (k *Keyring) sign(s Session, ttl time.Duration, now time.Time) (string, Session, error) {
	if s.Subject == "" {
		return "", Session{}, errors.New("auth: session without subject")
	}
	if ttl <= 0 {
		return "", Session{}, fmt.Errorf("auth: session ttl must be positive, got %v", ttl)
	}
	c := sessionClaims{CSRF: s.CSRF, Version: s.Version, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   s.Subject,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(k.jwtKey)
	if err != nil {
		return "", Session{}, fmt.Errorf("auth: sign session: %w", err)
	}
	s.Expires = c.ExpiresAt.Time
	return token, s, nil
}

// ParseSession verifies token (HS256 only, signed with this keyring, not expired at now) and returns its
// session. Any failure is an Unauthenticated error.
func (k *Keyring) ParseSession(token string, now time.Time) (Session, error) {
	var c sessionClaims
	_, err := jwt.ParseWithClaims(token, &c,
		func(*jwt.Token) (any, error) { return k.jwtKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithExpirationRequired(),
		jwt.WithStrictDecoding(),
	)
	if err == nil && (c.Subject == "" || c.CSRF == "") {
		err = errors.New("session token without subject or csrf token")
	}
	if err != nil {
		return Session{}, apperr.Wrap(apperr.Unauthenticated, "authentication failed", err)
	}
	return Session{Subject: c.Subject, CSRF: c.CSRF, Expires: c.ExpiresAt.Time, Version: c.Version}, nil
}
