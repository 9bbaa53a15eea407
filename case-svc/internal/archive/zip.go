// Package archive unpacks the zip archives clients upload (an observable's isZip): plain and encrypted
// (ZipCrypto, AES) archives into temporary files, refusing zip bombs (Limits), entry names that would leave the
// archive and corrupt data with a 400. It owns the archive formats and the temporary files; the domain
// (cases) calls Unzip and stores what it returns.
package archive

import (
	stdzip "archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/yeka/zip"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/fname"
)

// Limits bound what an uploaded archive may unpack to: a zip bomb is refused before it fills the disk.
type Limits struct {
	MaxEntries int   // entries of the archive, directories included
	MaxTotal   int64 // bytes of all files once unpacked
}

// DefaultLimits are the limits of a service created without others.
var DefaultLimits = Limits{MaxEntries: 1000, MaxTotal: 256 << 20}

// File is one file unpacked from an archive: its base name and its content, in a temporary file.
type File struct {
	Name string
	Body io.Reader
}

func badZip(format string, args ...any) error {
	return apperr.Errorf(apperr.BadRequest, "attachment: "+format, args...)
}

// zipEntry is one file of an archive, as either reader sees it.
type zipEntry struct {
	name      string
	size      uint64 // declared uncompressed size
	packed    uint64 // declared compressed size
	encrypted bool
	dir       bool
	open      func() (io.ReadCloser, error)
}

// Unzip unpacks the files of an uploaded archive into temporary files and returns them (named by their base
// name), with a function removing them. It refuses (400) archives that are not zip files, entries
// whose names leave the archive (absolute, "..", drive letters, NUL), more entries or more unpacked bytes
// than the limits allow (declared sizes are checked first, and reading stops at the declared size, so a
// header that lies is caught too), encrypted entries without the right password, and corrupt data. The
// standard library reads plain archives; github.com/yeka/zip reads encrypted ones (ZipCrypto and AES).
func Unzip(ctx context.Context, body io.Reader, password string, lim Limits) (files []File, cleanup func(), err error) {
	ra, size, release, err := readerAt(body)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	dir, err := os.MkdirTemp("", "unzip-")
	if err != nil {
		return nil, nil, fmt.Errorf("unzip: %w", err)
	}
	var opened []*os.File
	remove := func() {
		for _, f := range opened {
			f.Close()
		}
		_ = os.RemoveAll(dir)
	}
	defer func() {
		// The archive comes from the client and the encrypted-zip reader is not hardened like the standard
		// library's: whatever it does with hostile input is the client's 400, never a crash.
		if r := recover(); r != nil {
			files, cleanup, err = nil, nil, badZip("malformed zip archive")
		}
		if err != nil {
			remove()
		}
	}()
	entries, err := listZip(ra, size, password)
	if err != nil {
		return nil, nil, err
	}
	if len(entries) > lim.MaxEntries {
		return nil, nil, badZip("the archive has more than %d entries", lim.MaxEntries)
	}
	var total uint64
	for _, e := range entries {
		if err := checkEntryName(e.name); err != nil {
			return nil, nil, err
		}
		total += e.size
		if e.size > uint64(lim.MaxTotal) || total > uint64(lim.MaxTotal) {
			return nil, nil, badZip("the archive unpacks to more than %d bytes", lim.MaxTotal)
		}
		if e.packed > uint64(size) {
			return nil, nil, badZip("malformed zip archive")
		}
	}
	for i, e := range entries {
		if e.dir {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if e.encrypted && password == "" {
			return nil, nil, badZip("the archive is encrypted: give zipPassword")
		}
		p := fmt.Sprintf("%s/%d", dir, i)
		if err := extract(e, p); err != nil {
			return nil, nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, fmt.Errorf("unzip: %w", err)
		}
		opened = append(opened, f)
		files = append(files, File{Name: fname.Base(e.name, "unnamed"), Body: f})
	}
	if len(files) == 0 {
		return nil, nil, badZip("the archive holds no file")
	}
	return files, remove, nil
}

// extract copies one entry to a file, reading at most its declared size.
func extract(e zipEntry, dst string) error {
	rc, err := e.open()
	if err != nil {
		return badZip("cannot read %q in the archive (wrong password or corrupt data)", shortName(e.name))
	}
	defer rc.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("unzip: %w", err)
	}
	defer out.Close()
	n, err := io.Copy(out, io.LimitReader(rc, int64(e.size)+1))
	if err == nil && uint64(n) > e.size {
		return badZip("%q unpacks to more than its declared size", shortName(e.name))
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("unzip: %w", err)
		}
		return badZip("cannot read %q in the archive (wrong password or corrupt data)", shortName(e.name))
	}
	return out.Close()
}

// listZip reads the archive's directory with the standard library, or with the encrypted-zip reader when an
// entry is encrypted.
func listZip(ra io.ReaderAt, size int64, password string) ([]zipEntry, error) {
	r, err := stdzip.NewReader(ra, size)
	if err != nil && !errors.Is(err, stdzip.ErrInsecurePath) {
		return nil, badZip("not a zip archive")
	}
	if r == nil {
		return nil, badZip("not a zip archive")
	}
	encrypted := false
	for _, f := range r.File {
		encrypted = encrypted || f.Flags&0x1 != 0
	}
	var out []zipEntry
	if !encrypted {
		for _, f := range r.File {
			out = append(out, zipEntry{name: f.Name, size: f.UncompressedSize64, packed: f.CompressedSize64,
				dir: f.FileInfo().IsDir(), open: f.Open})
		}
		return out, nil
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, badZip("not a zip archive")
	}
	for _, f := range zr.File {
		e := zipEntry{name: f.Name, size: f.UncompressedSize64, packed: f.CompressedSize64,
			dir: f.FileInfo().IsDir(), encrypted: f.IsEncrypted(), open: f.Open}
		if e.encrypted {
			f.SetPassword(password) // always set: the ZipCrypto reader calls the password function unchecked
		}
		out = append(out, e)
	}
	return out, nil
}

// checkEntryName refuses names that would leave the archive if unpacked naively.
func checkEntryName(name string) error {
	bad := name == "" || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "/") ||
		strings.HasPrefix(name, `\`) || (len(name) >= 2 && name[1] == ':')
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		bad = bad || seg == ".."
	}
	if bad {
		return badZip("unsafe entry name %q in the archive", shortName(name))
	}
	return nil
}

func shortName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// readerAt gives random access to an upload: multipart files already have it; anything else is spooled to
// a temporary file.
func readerAt(r io.Reader) (io.ReaderAt, int64, func(), error) {
	type readSeekerAt interface {
		io.ReaderAt
		io.Seeker
	}
	if rs, ok := r.(readSeekerAt); ok {
		size, err := rs.Seek(0, io.SeekEnd)
		if err == nil {
			return rs, size, func() {}, nil
		}
	}
	tmp, err := os.CreateTemp("", "zip-")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spool archive: %w", err)
	}
	release := func() { tmp.Close(); os.Remove(tmp.Name()) }
	size, err := io.Copy(tmp, r)
	if err != nil {
		release()
		if apperr.As(err) != nil {
			return nil, 0, nil, err
		}
		return nil, 0, nil, fmt.Errorf("spool archive: %w", err) // a spooled upload or the disk: a 500
	}
	return tmp, size, release, nil
}
