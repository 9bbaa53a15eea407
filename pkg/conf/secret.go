package conf

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Security settings shared by both services.
type Security struct {
	Mode          string // "development" (default) or "production"
	Secret        string // auth.secret
	DataPath      string // database.path, where a generated secret is kept
	Embedded      bool   // the embedded database is in use
	AllowInsecure bool   // http.allow_insecure_credentials
	EnvPrefix     string // for messages: ANALYSIS or CASE
}

// knownWeak are example secrets that must never protect production data.
var knownWeak = []string{"changeme", "change-me", "secret", "default", "password", "dev-secret", "example"}

// AuthSecret returns the key material of auth.secret. With the embedded database and no secret configured (in
// development mode), a random one is made once and kept beside the data (mode 0600), so sessions and stored
// keys survive restarts. With an external database a secret must be configured: replicas must share it. In
// production mode the service refuses to start without a strong configured secret, or with plain-HTTP
// credentials allowed.
func AuthSecret(s Security, log *slog.Logger) (string, error) {
	env := s.EnvPrefix + "_AUTH_SECRET"
	switch s.Mode {
	case "", "development":
	case "production":
		if s.Secret == "" {
			return "", fmt.Errorf("mode production: auth.secret (%s) is required", env)
		}
		if len(s.Secret) < 32 {
			return "", fmt.Errorf("mode production: auth.secret (%s) must be at least 32 characters", env)
		}
		low := strings.ToLower(s.Secret)
		for _, w := range knownWeak {
			if strings.Contains(low, w) {
				return "", fmt.Errorf("mode production: auth.secret (%s) looks like an example value", env)
			}
		}
		if s.AllowInsecure {
			return "", errors.New("mode production: http.allow_insecure_credentials must be false")
		}
	default:
		return "", fmt.Errorf("mode must be development or production, not %q", s.Mode)
	}
	if s.Secret != "" {
		return s.Secret, nil
	}
	if !s.Embedded {
		return "", fmt.Errorf("auth.secret (%s) is required with an external database", env)
	}
	path := filepath.Join(s.DataPath, "auth.secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if log != nil {
		log.Warn("auth.secret is not set: generated one for the embedded database", "file", path)
	}
	return secret, nil
}
