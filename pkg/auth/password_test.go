package auth

import (
	"regexp"
	"strings"
	"testing"
)

func TestHashPassword(t *testing.T) {
	phc := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	h1, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !phc.MatchString(h1) {
		t.Errorf("hash %q is not in the expected PHC format", h1)
	}
	if h1 == h2 {
		t.Error("two hashes of the same password are equal: salt is not random")
	}
	if _, err := HashPassword(""); err == nil {
		t.Error("HashPassword(\"\") succeeded")
	}
}

func TestCheckPassword(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	// A hash with other (cheap) parameters: CheckPassword must read them from the record.
	cheap := encodeHash("s3cret", []byte("0123456789abcdef"), argonParams{memory: 64, time: 1, threads: 2})
	fields := strings.Split(h, "$") // "", "argon2id", "v=19", params, salt, key
	salt, key := fields[4], fields[5]
	withSalt := func(s string) string { return strings.Replace(h, "$"+salt+"$", "$"+s+"$", 1) }

	tests := []struct {
		name    string
		encoded string
		pw      string
		want    bool
	}{
		{"round trip", h, "correct horse", true},
		{"wrong password", h, "correct horsE", false},
		{"empty password", h, "", false},
		{"prefix of password", h, "correct", false},
		{"other parameters", cheap, "s3cret", true},
		{"other parameters wrong password", cheap, "secret", false},
		{"tampered t", strings.Replace(h, "t=2", "t=3", 1), "correct horse", false},
		{"tampered m", strings.Replace(h, "m=19456", "m=19455", 1), "correct horse", false},
		{"tampered p", strings.Replace(h, "p=1", "p=2", 1), "correct horse", false},
		{"tampered hash", h[:len(h)-2] + flip(h[len(h)-2]) + h[len(h)-1:], "correct horse", false},
		{"truncated hash", h[:len(h)-4], "correct horse", false},
		{"empty", "", "correct horse", false},
		{"garbage", "not a hash", "correct horse", false},
		{"only prefix", "$argon2id$", "correct horse", false},
		{"argon2i", strings.Replace(h, "$argon2id$", "$argon2i$", 1), "correct horse", false},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy", "x", false},
		{"version 16", strings.Replace(h, "v=19", "v=16", 1), "correct horse", false},
		{"no version", strings.Replace(h, "$v=19", "", 1), "correct horse", false},
		{"params reordered", strings.Replace(h, "m=19456,t=2,p=1", "t=2,m=19456,p=1", 1), "correct horse", false},
		{"param missing", strings.Replace(h, ",p=1", "", 1), "correct horse", false},
		{"param extra", strings.Replace(h, "p=1", "p=1,k=2", 1), "correct horse", false},
		{"param signed", strings.Replace(h, "t=2", "t=+2", 1), "correct horse", false},
		{"param negative", strings.Replace(h, "t=2", "t=-2", 1), "correct horse", false},
		{"param empty", strings.Replace(h, "t=2", "t=", 1), "correct horse", false},
		{"param space", strings.Replace(h, "t=2", "t= 2", 1), "correct horse", false},
		{"param overflow", strings.Replace(h, "m=19456", "m=99999999999999999999", 1), "correct horse", false},
		{"m zero", strings.Replace(h, "m=19456", "m=0", 1), "correct horse", false},
		{"m below 8p", strings.Replace(h, "m=19456,t=2,p=1", "m=15,t=2,p=2", 1), "correct horse", false},
		{"m over 1 GiB", strings.Replace(h, "m=19456", "m=1048577", 1), "correct horse", false},
		{"m 4 GiB wraps uint32", strings.Replace(h, "m=19456", "m=4294967296", 1), "correct horse", false},
		{"t zero", strings.Replace(h, "t=2", "t=0", 1), "correct horse", false},
		{"t over 10", strings.Replace(h, "t=2", "t=11", 1), "correct horse", false},
		{"p zero", strings.Replace(h, "p=1", "p=0", 1), "correct horse", false},
		{"p over 16", strings.Replace(h, "p=1", "p=17", 1), "correct horse", false},
		{"p 256 wraps uint8", strings.Replace(h, "p=1", "p=256", 1), "correct horse", false},
		{"salt bad base64", withSalt("!!!!"), "correct horse", false},
		{"salt padded", withSalt(salt + "=="), "correct horse", false},
		{"salt too short", withSalt("c2FsdA"), "correct horse", false},
		{"salt empty", withSalt(""), "correct horse", false},
		{"hash empty", strings.TrimSuffix(h, key), "correct horse", false},
		{"hash too long", h + strings.Repeat("A", 64), "correct horse", false},
		{"trailing dollar", h + "$", "correct horse", false},
		{"leading text", "x" + h, "correct horse", false},
		{"huge input", strings.Repeat("$", 1<<16), "correct horse", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckPassword(tc.encoded, tc.pw); got != tc.want {
				t.Errorf("CheckPassword(%q, %q) = %v, want %v", tc.encoded, tc.pw, got, tc.want)
			}
		})
	}
}

// flip returns a different base64 character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// fuzzMaxCost bounds memory×time of the parameters the fuzzer may run: the production limits (1 GiB) are fine for
// one tampered record but would make each fuzz execution take seconds.
const fuzzMaxCost = 64 * 1024

func FuzzCheckPassword(f *testing.F) {
	h, err := HashPassword("correct horse")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(h, "correct horse")
	f.Add(encodeHash("s3cret", []byte("0123456789abcdef"), argonParams{memory: 64, time: 1, threads: 2}), "s3cret")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "x")
	f.Add("", "")
	f.Add("$argon2id$v=19$m=0,t=0,p=0$$", "x")
	f.Fuzz(func(t *testing.T, encoded, pw string) {
		if p, _, _, err := decodeHash(encoded); err == nil && uint64(p.memory)*uint64(p.time) > fuzzMaxCost {
			t.Skip("valid but too expensive for fuzzing")
		}
		CheckPassword(encoded, pw)
	})
}
