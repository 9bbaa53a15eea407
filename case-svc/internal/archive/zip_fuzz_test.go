package archive

// FuzzUnzip sends bytes through Unzip, the unpacking of an uploaded archive (isZip, with or without
// zipPassword), seeded with plain and encrypted archives and hostile ones: it never panics (beyond what
// Unzip itself recovers from), an error is always a 400 BadRequest and leaves no temporary file, and a success
// gives base-named files within the limits, which cleanup removes.
//
//	go test ./internal/archive -run '^$' -fuzz FuzzUnzip -fuzztime 20s -fuzzminimizetime 200x

import (
	stdzip "archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/yeka/zip"

	"github.com/openir/platform/pkg/apperr"
)

type seedEntry struct {
	name    string
	content []byte
	mode    fs.FileMode
}

func seedZip(t testing.TB, entries ...seedEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	for _, e := range entries {
		h := &stdzip.FileHeader{Name: e.name, Method: stdzip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		fw, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(e.content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func seedEncrypted(t testing.TB, password string, method zip.EncryptionMethod, entries ...seedEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		fw, err := w.Encrypt(e.name, password, method)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(e.content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// seedLying declares small entries holding more (or large entries holding little).
func seedLying(t testing.TB, declared uint64, content []byte) []byte {
	t.Helper()
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	_, _ = fw.Write(content)
	_ = fw.Close()
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	raw, err := w.CreateRaw(&stdzip.FileHeader{Name: "lying.bin", Method: stdzip.Deflate, CRC32: crc32.ChecksumIEEE(content),
		CompressedSize64: uint64(packed.Len()), UncompressedSize64: declared})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write(packed.Bytes())
	_ = w.Close()
	return buf.Bytes()
}

// unzipDeadline bounds one unpacking of a fuzz input (a few KB within small limits).
const unzipDeadline = 5 * time.Second

var fuzzLimits = Limits{MaxEntries: 16, MaxTotal: 256 << 10}

func FuzzUnzip(f *testing.F) {
	one, two := []byte("first sample"), []byte(strings.Repeat("second sample ", 50))
	inner := seedZip(f, seedEntry{"inner.txt", one, 0})
	seeds := [][]byte{
		seedZip(f, seedEntry{"dir/", nil, 0}, seedEntry{"dir/one.exe", one, 0}, seedEntry{"two.dll", two, 0}),
		seedZip(f, seedEntry{"nested.zip", inner, 0}),
		seedZip(f, seedEntry{"link", []byte("../../etc/passwd"), fs.ModeSymlink | 0o777}),
		seedZip(f, seedEntry{"dup.txt", one, 0}, seedEntry{"dup.txt", two, 0}),
		seedZip(f, seedEntry{"", one, 0}),
		seedZip(f, seedEntry{"../evil", one, 0}),
		seedZip(f, seedEntry{`a\..\..\evil`, one, 0}),
		seedZip(f, seedEntry{`C:\evil`, one, 0}),
		seedZip(f, seedEntry{"empty", nil, 0}),
		seedZip(f),
		seedLying(f, 10, bytes.Repeat([]byte{0}, 100<<10)),
		seedLying(f, 1<<40, one),
		seedEncrypted(f, "malware", zip.StandardEncryption, seedEntry{"s.bin", one, 0}),
		seedEncrypted(f, "malware", zip.AES256Encryption, seedEntry{"s.bin", two, 0}, seedEntry{"t.bin", one, 0}),
		seedEncrypted(f, "malware", zip.AES128Encryption, seedEntry{"s.bin", nil, 0}),
		[]byte("PK\x05\x06" + strings.Repeat("\x00", 18)),
		[]byte("not a zip"),
		nil,
	}
	for _, s := range seeds {
		for _, pw := range []string{"", "malware", "wrong"} {
			f.Add(s, pw)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, password string) {
		var (
			files   []File
			cleanup func()
			err     error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			files, cleanup, err = Unzip(context.Background(), bytes.NewReader(data), password, fuzzLimits)
		}()
		select {
		case <-done:
		case <-time.After(unzipDeadline):
			t.Fatalf("unzip did not return within %v (%d bytes, password %q)", unzipDeadline, len(data), password)
		}
		if err != nil {
			if e := apperr.As(err); e == nil || e.Kind != apperr.BadRequest || e.Message == "" {
				t.Fatalf("error %v (%T) is not a BadRequest", err, err)
			}
			if files != nil || cleanup != nil {
				t.Fatal("files or cleanup returned with an error")
			}
		} else {
			if len(files) == 0 || len(files) > fuzzLimits.MaxEntries || cleanup == nil {
				t.Fatalf("%d files, cleanup %v", len(files), cleanup != nil)
			}
			var total int64
			for _, up := range files {
				if up.Name == "" || strings.Contains(up.Name, "/") || up.Name == ".." || strings.ContainsRune(up.Name, 0) {
					t.Fatalf("file named %q", up.Name)
				}
				n, err := io.Copy(io.Discard, up.Body)
				if err != nil {
					t.Fatalf("read %q: %v", up.Name, err)
				}
				total += n
			}
			if total > fuzzLimits.MaxTotal {
				t.Fatalf("unpacked %d bytes, over the limit %d", total, fuzzLimits.MaxTotal)
			}
			cleanup()
		}
	})
}

// The seeds' outcomes, as a plain test: the fuzz target checks invariants only.
func TestUnzipSeeds(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, tc := range []struct {
		name, password string
		archive        []byte
		files          []string // base names; nil = refused
	}{
		{"plain", "", seedZip(t, seedEntry{"dir/", nil, 0}, seedEntry{"dir/one.exe", []byte("1"), 0}, seedEntry{"two.dll", []byte("2"), 0}), []string{"one.exe", "two.dll"}},
		{"nested zip stays a file", "", seedZip(t, seedEntry{"n.zip", seedZip(t, seedEntry{"i", []byte("i"), 0}), 0}), []string{"n.zip"}},
		{"symlink is a file", "", seedZip(t, seedEntry{"l", []byte("/etc/passwd"), fs.ModeSymlink | 0o777}), []string{"l"}},
		{"duplicate names", "", seedZip(t, seedEntry{"d", []byte("1"), 0}, seedEntry{"d", []byte("2"), 0}), []string{"d", "d"}},
		{"empty name", "", seedZip(t, seedEntry{"", []byte("1"), 0}), nil},
		{"parent", "", seedZip(t, seedEntry{"a/../../b", []byte("1"), 0}), nil},
		{"lying size", "", seedLying(t, 10, bytes.Repeat([]byte{0}, 1000)), nil},
		{"huge declared size", "", seedLying(t, 1<<40, []byte("x")), nil},
		{"zipcrypto", "malware", seedEncrypted(t, "malware", zip.StandardEncryption, seedEntry{"s", []byte("1"), 0}), []string{"s"}},
		{"aes without password", "", seedEncrypted(t, "malware", zip.AES256Encryption, seedEntry{"s", []byte("1"), 0}), nil},
		{"aes with a wrong password", "nope", seedEncrypted(t, "malware", zip.AES256Encryption, seedEntry{"s", []byte("1"), 0}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, cleanup, err := Unzip(context.Background(), bytes.NewReader(tc.archive), tc.password, fuzzLimits)
			if tc.files == nil {
				if !apperr.Is(err, apperr.BadRequest) {
					t.Fatalf("err %v, want a BadRequest", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.files) {
				t.Fatalf("files %q, want %q", names, tc.files)
			}
		})
	}
}
