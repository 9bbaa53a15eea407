package archive

// FuzzUnzip sends bytes through Unzip, the unpacking of an uploaded archive (isZip, with or without
// zipPassword), seeded with plain and encrypted archives and hostile ones: it never panics (beyond what
// Unzip itself recovers from), an error is always a 400 BadRequest and leaves no temporary file, and a success
// gives base-named files within the limits, which cleanup removes.
//
//	go test ./internal/archive -run '^$' -fuzz FuzzUnzip -fuzztime 20s -fuzzminimizetime 200x

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/yeka/zip"

	"github.com/openir/platform/case-svc/internal/archive/archivetest"
	"github.com/openir/platform/pkg/apperr"
)

// unzipDeadline bounds one unpacking of a fuzz input (a few KB within small limits).
const unzipDeadline = 5 * time.Second

var fuzzLimits = Limits{MaxEntries: 16, MaxTotal: 256 << 10}

func FuzzUnzip(f *testing.F) {
	one, two := []byte("first sample"), []byte(strings.Repeat("second sample ", 50))
	inner := archivetest.Zip(f, archivetest.File("inner.txt", one))
	seeds := [][]byte{
		archivetest.Zip(f, archivetest.File("dir/", nil), archivetest.File("dir/one.exe", one), archivetest.File("two.dll", two)),
		archivetest.Zip(f, archivetest.File("nested.zip", inner)),
		archivetest.Zip(f, archivetest.Entry{Name: "link", Content: []byte("../../etc/passwd"), Mode: fs.ModeSymlink | 0o777}),
		archivetest.Zip(f, archivetest.File("dup.txt", one), archivetest.File("dup.txt", two)),
		archivetest.Zip(f, archivetest.File("", one)),
		archivetest.Zip(f, archivetest.File("../evil", one)),
		archivetest.Zip(f, archivetest.File(`a\..\..\evil`, one)),
		archivetest.Zip(f, archivetest.File(`C:\evil`, one)),
		archivetest.Zip(f, archivetest.File("empty", nil)),
		archivetest.Zip(f),
		archivetest.Lying(f, 10, bytes.Repeat([]byte{0}, 100<<10)),
		archivetest.Lying(f, 1<<40, one),
		archivetest.Encrypted(f, "malware", zip.StandardEncryption, archivetest.File("s.bin", one)),
		archivetest.Encrypted(f, "malware", zip.AES256Encryption, archivetest.File("s.bin", two), archivetest.File("t.bin", one)),
		archivetest.Encrypted(f, "malware", zip.AES128Encryption, archivetest.File("s.bin", nil)),
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
		{"plain", "", archivetest.Zip(t, archivetest.File("dir/", nil), archivetest.File("dir/one.exe", []byte("1")), archivetest.File("two.dll", []byte("2"))), []string{"one.exe", "two.dll"}},
		{"nested zip stays a file", "", archivetest.Zip(t, archivetest.File("n.zip", archivetest.Zip(t, archivetest.File("i", []byte("i"))))), []string{"n.zip"}},
		{"symlink is a file", "", archivetest.Zip(t, archivetest.Entry{Name: "l", Content: []byte("/etc/passwd"), Mode: fs.ModeSymlink | 0o777}), []string{"l"}},
		{"duplicate names", "", archivetest.Zip(t, archivetest.File("d", []byte("1")), archivetest.File("d", []byte("2"))), []string{"d", "d"}},
		{"empty name", "", archivetest.Zip(t, archivetest.File("", []byte("1"))), nil},
		{"parent", "", archivetest.Zip(t, archivetest.File("a/../../b", []byte("1"))), nil},
		{"lying size", "", archivetest.Lying(t, 10, bytes.Repeat([]byte{0}, 1000)), nil},
		{"huge declared size", "", archivetest.Lying(t, 1<<40, []byte("x")), nil},
		{"zipcrypto", "malware", archivetest.Encrypted(t, "malware", zip.StandardEncryption, archivetest.File("s", []byte("1"))), []string{"s"}},
		{"aes without password", "", archivetest.Encrypted(t, "malware", zip.AES256Encryption, archivetest.File("s", []byte("1"))), nil},
		{"aes with a wrong password", "nope", archivetest.Encrypted(t, "malware", zip.AES256Encryption, archivetest.File("s", []byte("1"))), nil},
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
