// Package auth owns the credentials of both services: argon2id password hashes, API key generation, the
// Keyring derived from the operator's auth.secret (sealing revealable API keys, keyed lookup hashes) and the
// signed session tokens (JWT) with their CSRF token and cookie/header names. It also holds the credential
// rules both services' identity services apply (Credentials: the login check that costs the same for an
// unknown login, the new-password rule, a user's change of its own password, an API key's forms and its
// reveal, the first user's credentials) and the API-key lookup collection with its crash-safe rotation
// (KeyIndex), and the login throttle (Throttle). Each service keeps its own users, roles and permissions.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// argonParams are the argon2id cost parameters of one encoded hash.
type argonParams struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
}

const (
	// Parameters for new hashes; CheckPassword reads them from each record, so they can change later.
	defaultMemory  = 19456 // KiB
	defaultTime    = 2
	defaultThreads = 1

	saltLen = 16
	keyLen  = 32

	// Limits on what CheckPassword accepts from a stored record, so a tampered record cannot make
	// verification arbitrarily expensive.
	maxMemory     = 1 << 20 // KiB, 1 GiB
	maxTime       = 10
	maxThreads    = 16
	minSaltLen    = 8
	maxSaltLen    = 64
	minKeyLen     = 16
	maxKeyLen     = 64
	maxEncodedLen = 256
)

// hashSlots bounds the argon2id computations running at once: half the processors, 1 to 4. Each holds its
// memory cost (19 MiB for the default parameters) for its whole run and allocates it anew, so without a bound
// N concurrent logins would hold N times that; the CPU is the bottleneck anyway, and the others wait.
var hashSlots = make(chan struct{}, min(max(runtime.GOMAXPROCS(0)/2, 1), 4))

// idKey is argon2.IDKey run in one of the hashSlots.
func idKey(pw, salt []byte, p argonParams, n uint32) []byte {
	hashSlots <- struct{}{}
	defer func() { <-hashSlots }()
	return argon2.IDKey(pw, salt, p.time, p.memory, p.threads, n)
}

// b64 returns the unpadded standard base64 of the PHC string format, rejecting non-canonical encodings.
func b64() *base64.Encoding { return base64.RawStdEncoding.Strict() }

// HashPassword returns the argon2id hash of pw in the PHC string format
// ($argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>) with a random 16-byte salt.
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("auth: empty password")
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: read random salt: %w", err)
	}
	return encodeHash(pw, salt, argonParams{memory: defaultMemory, time: defaultTime, threads: defaultThreads}), nil
}

func encodeHash(pw string, salt []byte, p argonParams) string {
	return formatHash(p, salt, idKey([]byte(pw), salt, p, keyLen))
}

func formatHash(p argonParams, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.memory, p.time, p.threads, b64().EncodeToString(salt), b64().EncodeToString(key))
}

// decoyHash returns a hash with the parameters of new hashes whose salt and key are random: checking any
// password against it costs what checking a real hash costs, and fails (a match would be a 256-bit guess).
// Making it runs no argon2id: a service starts without the 19 MiB and the CPU of one hash.
func decoyHash() (string, error) {
	b := make([]byte, saltLen+keyLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: read random bytes: %w", err)
	}
	return formatHash(argonParams{memory: defaultMemory, time: defaultTime, threads: defaultThreads}, b[:saltLen], b[saltLen:]), nil
}

// CheckPassword reports whether pw matches the PHC-encoded argon2id hash. It reads the cost parameters from
// encoded, compares in constant time, and returns false for a malformed encoding or unreasonable parameters.
func CheckPassword(encoded, pw string) bool {
	if pw == "" {
		return false
	}
	p, salt, want, err := decodeHash(encoded)
	if err != nil {
		return false
	}
	got := idKey([]byte(pw), salt, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// decodeHash parses and bounds-checks a PHC argon2id string.
func decodeHash(encoded string) (p argonParams, salt, key []byte, err error) {
	malformed := errors.New("auth: malformed password hash")
	if len(encoded) > maxEncodedLen {
		return p, nil, nil, malformed
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, malformed
	}
	kv := strings.Split(parts[3], ",")
	if len(kv) != 3 {
		return p, nil, nil, malformed
	}
	m, ok1 := param(kv[0], "m=", maxMemory)
	t, ok2 := param(kv[1], "t=", maxTime)
	th, ok3 := param(kv[2], "p=", maxThreads)
	if !ok1 || !ok2 || !ok3 || t < 1 || th < 1 || m < 8*th {
		return p, nil, nil, malformed
	}
	p = argonParams{memory: uint32(m), time: uint32(t), threads: uint8(th)}
	if salt, err = b64().DecodeString(parts[4]); err != nil || len(salt) < minSaltLen || len(salt) > maxSaltLen {
		return p, nil, nil, malformed
	}
	if key, err = b64().DecodeString(parts[5]); err != nil || len(key) < minKeyLen || len(key) > maxKeyLen {
		return p, nil, nil, malformed
	}
	return p, salt, key, nil
}

// param parses "<prefix><decimal>" with the value at most max; only plain ASCII digits are accepted.
func param(s, prefix string, max uint64) (uint64, bool) {
	digits, ok := strings.CutPrefix(s, prefix)
	if !ok || digits == "" || len(digits) > 10 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	return v, err == nil && v <= max
}
