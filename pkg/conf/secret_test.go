package conf

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAuthSecret(t *testing.T) {
	dir := t.TempDir()
	gen, err := AuthSecret(Security{DataPath: dir, Embedded: true, EnvPrefix: "X"}, nil)
	if err != nil || len(gen) < 32 {
		t.Fatalf("generated %q %v", gen, err)
	}
	again, _ := AuthSecret(Security{DataPath: dir, Embedded: true}, nil)
	if again != gen {
		t.Fatal("the generated secret was not kept")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "auth.secret")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	strong := "k3y-material-0123456789-abcdefghijklmnop"
	for name, s := range map[string]Security{
		"external without secret":   {DataPath: dir},
		"production without secret": {Mode: "production", DataPath: dir, Embedded: true},
		"production short":          {Mode: "production", Secret: "short-secret-123"},
		"production example":        {Mode: "production", Secret: "changeme-changeme-changeme-changeme"},
		"production insecure":       {Mode: "production", Secret: strong, AllowInsecure: true},
		"unknown mode":              {Mode: "prod", Secret: strong},
	} {
		if _, err := AuthSecret(s, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got, err := AuthSecret(Security{Mode: "production", Secret: strong}, nil); err != nil || got != strong {
		t.Fatalf("production with a strong secret: %q %v", got, err)
	}
}
