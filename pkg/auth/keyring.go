package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/hkdf"
)

// NewKey returns a new random API key: 24 bytes from crypto/rand in standard base64, 32 characters.
func NewKey() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: read random key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// minSecretLen is the minimum length in bytes of the operator's auth.secret.
const minSecretLen = 16

// HKDF info strings; each derives an independent subkey from the secret.
const (
	infoSeal   = "openir/platform auth v1: aes-256-gcm seal"
	infoLookup = "openir/platform auth v1: hmac-sha256 lookup"
	infoJWT    = "openir/platform auth v1: jwt hs256"
)

// Keyring holds the keys derived from the operator's secret. It is immutable and safe for concurrent use.
type Keyring struct {
	aead      cipher.AEAD
	lookupKey []byte
	jwtKey    []byte
}

// NewKeyring derives the keyring's subkeys from secret (config auth.secret, at least 16 bytes) with HKDF-SHA256.
func NewKeyring(secret string) (*Keyring, error) {
	if len(secret) < minSecretLen {
		return nil, fmt.Errorf("auth: secret must be at least %d bytes, got %d", minSecretLen, len(secret))
	}
	derive := func(info string) ([]byte, error) {
		k := make([]byte, 32)
		if _, err := io.ReadFull(hkdf.New(sha256.New, []byte(secret), nil, []byte(info)), k); err != nil {
			return nil, fmt.Errorf("auth: derive key: %w", err)
		}
		return k, nil
	}
	sealKey, err := derive(infoSeal)
	if err != nil {
		return nil, err
	}
	lookupKey, err := derive(infoLookup)
	if err != nil {
		return nil, err
	}
	jwtKey, err := derive(infoJWT)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, fmt.Errorf("auth: aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("auth: gcm: %w", err)
	}
	return &Keyring{aead: aead, lookupKey: lookupKey, jwtKey: jwtKey}, nil
}

// errSealed is Open's error for any value it cannot authenticate; the cause is deliberately not detailed.
const errSealed = "auth: sealed value is malformed or was not sealed with this keyring"

// Seal encrypts plain with AES-256-GCM under a random 12-byte nonce and returns base64(nonce||ciphertext).
func (k *Keyring) Seal(plain string) (string, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("auth: read random nonce: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k.aead.Seal(nonce, nonce, []byte(plain), nil)), nil
}

// Open decrypts a value returned by Seal. It returns an error if sealed is malformed, was tampered with or was
// sealed with another keyring.
func (k *Keyring) Open(sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", errors.New(errSealed)
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errors.New(errSealed)
	}
	return string(plain), nil
}

// LookupHash returns the hex HMAC-SHA256 of key under the keyring's lookup key: a deterministic value to store
// and index so a user can be found by API key without keeping the key in clear.
func (k *Keyring) LookupHash(key string) string {
	m := hmac.New(sha256.New, k.lookupKey)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// Equal reports whether a and b are equal in time that depends only on their lengths.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
