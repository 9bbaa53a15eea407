// Package protectzip writes the password-protected zips of /api/datastorezip in both services: one file per
// archive, encrypted with the traditional PKWARE scheme (ZipCrypto), which every unzip tool opens, so that a
// malware sample never lands on an analyst's disk in clear. The archive is written as it is read (no
// temporary file, nothing held in memory beyond the compressor's window).
package protectzip

import (
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/yeka/zip"

	"github.com/openir/platform/pkg/fname"
)

// DefaultPassword is the password analysts expect when none is configured (the reference systems' default).
const DefaultPassword = "malware"

// Password returns the configured password, or DefaultPassword when it is empty.
func Password(configured string) string {
	if configured == "" {
		return DefaultPassword
	}
	return configured
}

// EntryName is the name of the file inside the archive: the client's name reduced to a safe base name (no
// directories, no control characters), the characters Windows refuses and quoting ones replaced with "_" as
// the reference system does, or fallback (the file's hash).
func EntryName(name, fallback string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(forbidden, r) {
			return '_'
		}
		return r
	}, fname.Base(name, fallback))
}

const forbidden = "/\\\"<>|?*:;`\t\f"

// ContentDisposition is the header value offering the archive as <entry>.zip.
func ContentDisposition(entry string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": entry + ".zip"})
}

// Write streams r into w as a zip holding one file named entry, encrypted with password. It returns the
// first error of reading, compressing or writing; w then holds a truncated archive.
func Write(w io.Writer, entry, password string, r io.Reader) error {
	if strings.TrimSpace(password) == "" {
		return fmt.Errorf("protectzip: empty password")
	}
	zw := zip.NewWriter(w)
	fw, err := zw.Encrypt(entry, password, zip.StandardEncryption)
	if err != nil {
		return fmt.Errorf("protectzip: start entry: %w", err)
	}
	if _, err := io.Copy(fw, r); err != nil {
		return fmt.Errorf("protectzip: write entry: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("protectzip: close archive: %w", err)
	}
	return nil
}
