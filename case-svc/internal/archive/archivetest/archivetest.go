// Package archivetest writes zip archives for case-svc's tests: plain ones, ones encrypted with a password,
// and hostile ones (entries that claim another size than they hold).
package archivetest

import (
	stdzip "archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io/fs"
	"testing"

	"github.com/yeka/zip"
)

// Entry is one file of an archive; a zero Mode leaves the mode unset.
type Entry struct {
	Name    string
	Content []byte
	Mode    fs.FileMode
}

// File is an entry without a mode.
func File(name string, content []byte) Entry { return Entry{Name: name, Content: content} }

// Zip writes an archive of the entries, deflated.
func Zip(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	for _, e := range entries {
		h := &stdzip.FileHeader{Name: e.Name, Method: stdzip.Deflate}
		if e.Mode != 0 {
			h.SetMode(e.Mode)
		}
		fw, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(e.Content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Encrypted writes an archive whose entries are encrypted with password (ZipCrypto or AES).
func Encrypted(t testing.TB, password string, method zip.EncryptionMethod, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		fw, err := w.Encrypt(e.Name, password, method)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(e.Content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Bomb writes n entries, zeros-<i>.bin, each holding size zero bytes compressed once: a small file that
// unpacks to n×size bytes. A non-zero declared is the size each entry claims instead of the truth.
func Bomb(t testing.TB, n, size int, declared uint64) []byte {
	t.Helper()
	return raw(t, n, make([]byte, size), declared, func(i int) string { return fmt.Sprintf("zeros-%d.bin", i) })
}

// Lying writes one entry, lying.bin, holding content and claiming declared bytes.
func Lying(t testing.TB, declared uint64, content []byte) []byte {
	t.Helper()
	return raw(t, 1, content, declared, func(int) string { return "lying.bin" })
}

// raw writes n entries holding content, compressed once, each claiming declared bytes (0: the truth).
func raw(t testing.TB, n int, content []byte, declared uint64, name func(int) string) []byte {
	t.Helper()
	var packed bytes.Buffer
	fw, err := flate.NewWriter(&packed, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = fw.Close()
	if declared == 0 {
		declared = uint64(len(content))
	}
	crc := crc32.ChecksumIEEE(content)
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	for i := range n {
		rw, err := w.CreateRaw(&stdzip.FileHeader{Name: name(i), Method: stdzip.Deflate, CRC32: crc,
			CompressedSize64: uint64(packed.Len()), UncompressedSize64: declared})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = rw.Write(packed.Bytes())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
