package auth

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
)

// ErrAuthentication is the one answer to a failed authentication, whatever failed (unknown login or key,
// wrong or no password, locked account): a client learns nothing from it.
var ErrAuthentication = apperr.New(apperr.Unauthenticated, "Authentication failure")

// ErrWrongPassword refuses a change of one's own password whose current password does not match.
var ErrWrongPassword = apperr.New(apperr.Forbidden, "the current password is wrong")

// minAPIKeyLen is the shortest API key a service accepts from its configuration (NewKey makes 32 characters).
const minAPIKeyLen = 32

// Credentials applies the credential rules both services share, over the operator's Keyring: the password
// check of a login, which costs the same whether or not the login exists; the rule and hash of a new password;
// and an API key's three forms (the key itself, given to its user; sealed, to reveal it again; its keyed hash,
// to look it up). Each service keeps its own users and their permissions; it stores what Credentials returns.
type Credentials struct {
	keys *Keyring
	// dummyHash is checked when a login has no password hash, so that a failed login takes as long either way.
	dummyHash string
}

// NewCredentials returns the credential rules over keys.
func NewCredentials(keys *Keyring) (*Credentials, error) {
	h, err := decoyHash()
	if err != nil {
		return nil, err
	}
	return &Credentials{keys: keys, dummyHash: h}, nil
}

// CheckLogin reports whether password matches hash. An empty hash (an unknown login, or a user without a
// password) is checked against a dummy hash and fails, so that every failed login costs one argon2id check.
func (c *Credentials) CheckLogin(hash, password string) bool {
	if hash == "" {
		CheckPassword(c.dummyHash, password)
		return false
	}
	return CheckPassword(hash, password)
}

// CheckNewPassword applies the rule of a new password: 8 to 1024 characters. It returns a field problem
// named field otherwise.
func CheckNewPassword(field, password string) error {
	if n := utf8.RuneCountInString(password); n < 8 || n > 1024 {
		return apperr.Fields(apperr.FieldError{Name: field, Message: "8 to 1024 characters"})
	}
	return nil
}

// NewPassword checks a new password (CheckNewPassword) and returns its hash.
func NewPassword(field, password string) (string, error) {
	if err := CheckNewPassword(field, password); err != nil {
		return "", err
	}
	return HashPassword(password)
}

// ChangePassword is a user's change of its own password: the new one must follow the rule (a field problem
// named field otherwise), then current must match hash (ErrWrongPassword otherwise, also when the user has no
// password). It returns the new password's hash.
func ChangePassword(field, hash, current, password string) (string, error) {
	if err := CheckNewPassword(field, password); err != nil {
		return "", err
	}
	if hash == "" || !CheckPassword(hash, current) {
		return "", ErrWrongPassword
	}
	return HashPassword(password)
}

// APIKey is an API key in its three forms: Plain is given to its user once (and revealed again on request),
// Sealed and Hash are what a store keeps; Hash looks the user up.
type APIKey struct {
	Plain  string
	Sealed string
	Hash   string
}

// NewAPIKey makes a new random API key.
func (c *Credentials) NewAPIKey() (APIKey, error) {
	key, err := NewKey()
	if err != nil {
		return APIKey{}, err
	}
	return c.APIKey(key)
}

// APIKey returns the stored forms of a key given in configuration, which must be at least 32 characters.
func (c *Credentials) APIKey(key string) (APIKey, error) {
	if len(key) < minAPIKeyLen {
		return APIKey{}, fmt.Errorf("an API key must be at least %d characters", minAPIKeyLen)
	}
	sealed, err := c.keys.Seal(key)
	if err != nil {
		return APIKey{}, err
	}
	return APIKey{Plain: key, Sealed: sealed, Hash: c.keys.LookupHash(key)}, nil
}

// LookupHash returns the keyed hash under which a key presented by a client is looked up.
func (c *Credentials) LookupHash(key string) string { return c.keys.LookupHash(key) }

// RevealKey opens the sealed key of the user login; an empty sealed is NotFound ("user <login> has no API
// key"). A key that does not open was sealed under another auth.secret: an internal error.
func (c *Credentials) RevealKey(login, sealed string) (string, error) {
	if sealed == "" {
		return "", apperr.Errorf(apperr.NotFound, "user %s has no API key", login)
	}
	key, err := c.keys.Open(sealed)
	if err != nil {
		return "", fmt.Errorf("open key of %s (was auth.secret changed?): %w", login, err)
	}
	return key, nil
}

// FirstUser returns the credentials of the first user that a service creates from its configuration
// (bootstrap.password and/or bootstrap.key; at least one of them): the password's hash ("" without one) and
// the key's forms (zero without one). The password is taken as configured: the operator chose it.
func (c *Credentials) FirstUser(password, key string) (string, APIKey, error) {
	if password == "" && key == "" {
		return "", APIKey{}, errors.New("bootstrap.login is set but neither bootstrap.password nor bootstrap.key")
	}
	var hash string
	var k APIKey
	var err error
	if password != "" {
		if hash, err = HashPassword(password); err != nil {
			return "", APIKey{}, err
		}
	}
	if key != "" {
		if k, err = c.APIKey(key); err != nil {
			return "", APIKey{}, fmt.Errorf("bootstrap.key: %w", err)
		}
	}
	return hash, k, nil
}
