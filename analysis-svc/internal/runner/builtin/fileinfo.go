package builtin

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gabriel-vasile/mimetype"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

const fileInfoNamespace = "FileInfo"

// Defaults and bounds of File_Info's configuration.
const (
	defaultScanMiB      = 32
	defaultMinString    = 6
	defaultMaxIOCs      = 1000
	maxStringLen        = 64 << 10 // a longer printable run is cut in pieces
	detectBytes         = 4096     // what the type detection reads (mimetype's own limit)
	highEntropy         = 7.2      // bits per byte above which uncompressed content looks packed or encrypted
	fileInfoReadBufSize = 256 << 10
)

func fileInfoDefinition() analysis.Definition {
	return newDefinition(analysis.KindAnalyzer, "File_Info", "1.0",
		"Describe a file without running anything: size, MD5/SHA-1/SHA-256/SHA-512, type from its content, "+
			"Shannon entropy (packed or encrypted content), and the IOCs (ip, url, domain, fqdn, mail, hash) "+
			"found in its printable strings, also returned as artifacts.",
		[]string{"file"},
		[]analysis.ConfigItem{
			{Name: "max_scan_mb", Description: "MiB of the file read for strings and IOCs (hashes and entropy always cover the whole file)",
				Type: "number", DefaultValue: defaultScanMiB},
			{Name: "min_string_length", Description: "Shortest printable string looked at, in characters",
				Type: "number", DefaultValue: defaultMinString},
			{Name: "max_iocs", Description: "Most IOCs reported (and returned as artifacts)",
				Type: "number", DefaultValue: defaultMaxIOCs},
			{Name: "extract_artifacts", Description: "Return the IOCs found in the file as artifacts",
				Type: "boolean", DefaultValue: true},
		},
		runFileInfo)
}

// runFileInfo is File_Info. The file is read once, in chunks: every byte feeds the hashes and the entropy,
// the first max_scan_mb MiB feed the string scanner, the first 4 KiB the type detection. A cancelled
// context is returned as the error.
func runFileInfo(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
	if in.File == "" {
		return failure(in, "no file to analyse"), nil
	}
	scanLimit := int64(math.Max(0, configNumber(in.Config, "max_scan_mb", defaultScanMiB)) * (1 << 20))
	minLen := int(configNumber(in.Config, "min_string_length", defaultMinString))
	minLen = max(3, min(minLen, 1024))
	maxIOCs := int(configNumber(in.Config, "max_iocs", defaultMaxIOCs))
	if maxIOCs <= 0 {
		maxIOCs = defaultMaxIOCs
	}
	name := in.Filename
	if name == "" {
		name = filepath.Base(in.File)
	}

	f, err := os.Open(in.File)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the job folder's path means nothing to the reader
		}
		return failure(in, "cannot open the file: %v", err), nil
	}
	defer f.Close()

	// The type is known first, from the head of the file: it tells whether strings come from text or from
	// binary data, where the extractor is stricter.
	head := make([]byte, detectBytes)
	hn, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return failure(in, "cannot read the file: %v", err), nil
	}
	head = head[:hn]
	ft := detectType(head, int64(hn))

	iocs := newCollector("", maxIOCs)
	iocs.strict = !ft.text
	strs := stringScanner{min: minLen, emit: iocs.scan}
	sums := []hash.Hash{md5.New(), sha1.New(), sha256.New(), sha512.New()}
	sumWriter := io.MultiWriter(sums[0], sums[1], sums[2], sums[3])
	var (
		hist            [256]int64
		size, scanned   int64
		scanningStopped bool
	)
	consume := func(chunk []byte) {
		size += int64(len(chunk))
		_, _ = sumWriter.Write(chunk) // hash.Hash writes never fail
		for _, b := range chunk {
			hist[b]++
		}
		if k := min(int64(len(chunk)), scanLimit-scanned); k > 0 {
			strs.write(chunk[:k])
			scanned += k
		} else if len(chunk) > 0 {
			scanningStopped = true
		}
	}
	consume(head)
	buf := make([]byte, fileInfoReadBufSize)
	for hn == detectBytes {
		if err := ctx.Err(); err != nil {
			return analysis.RunOutput{}, err
		}
		n, err := f.Read(buf)
		consume(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return failure(in, "cannot read the file: %v", err), nil
		}
	}
	if err := ctx.Err(); err != nil {
		return analysis.RunOutput{}, err
	}
	strs.flush()
	if scanned < size {
		scanningStopped = true
	}

	hashes := map[string]any{}
	for i, k := range []string{"md5", "sha1", "sha256", "sha512"} {
		hashes[k] = hex.EncodeToString(sums[i].Sum(nil))
	}
	ent := entropy(&hist, size)
	entLevel := levelInfo
	entHigh := ent > highEntropy && !ft.compressed
	if entHigh {
		entLevel = levelSuspicious
	}
	iocList := make([]any, 0, len(iocs.out))
	for _, a := range iocs.out {
		iocList = append(iocList, map[string]any{"dataType": a.DataType, "data": a.Data})
	}
	full := map[string]any{
		"filename":    name,
		"contentType": in.ContentType,
		"size":        size,
		"hashes":      hashes,
		"mimeType":    ft.mime,
		"typeName":    ft.name,
		"extension":   ft.extension,
		"compressed":  ft.compressed,
		"executable":  ft.executable,
		"entropy":     math.Round(ent*1e4) / 1e4,
		"entropyHigh": entHigh,
		"text":        ft.text,
		"strings": map[string]any{
			"count":        strs.count,
			"minLength":    minLen,
			"scannedBytes": scanned,
			"truncated":    scanningStopped,
		},
		"iocs":          iocList,
		"iocsTruncated": iocs.capped,
	}
	taxes := []analysis.Taxonomy{
		taxonomy(levelInfo, fileInfoNamespace, "Type", ft.name),
		taxonomy(levelInfo, fileInfoNamespace, "Size", humanSize(size)),
		taxonomy(entLevel, fileInfoNamespace, "Entropy", fmt.Sprintf("%.2f", ent)),
	}
	var warnings []any
	for _, w := range nameWarnings(name, ft) {
		warnings = append(warnings, w.text)
		taxes = append(taxes, taxonomy(levelSuspicious, fileInfoNamespace, w.predicate, w.text))
	}
	if entHigh {
		warnings = append(warnings, "high entropy for an uncompressed type: packed or encrypted content?")
	}
	full["warnings"] = append([]any{}, warnings...)
	if len(iocs.out) > 0 {
		taxes = append(taxes, taxonomy(levelInfo, fileInfoNamespace, "IOCs", len(iocs.out)))
	}
	var artifacts []analysis.OutputArtifact
	if configBool(in.Config, "extract_artifacts", true) {
		for _, a := range iocs.out {
			a.Tags = []string{"extracted-from:" + name}
			artifacts = append(artifacts, a)
		}
	}
	return success(summary(taxes), full, artifacts, nil), nil
}

// stringScanner finds printable strings in a byte stream, like strings(1): runs of printable ASCII (and
// UTF-8) bytes, and runs of printable ASCII characters in UTF-16LE (Windows binaries).
type stringScanner struct {
	min   int
	emit  func(string)
	count int

	narrow      []byte
	wide        []byte
	widePending byte // a printable byte waiting for its 0x00 high byte
	wideHave    bool
}

func isPrintableASCII(b byte) bool { return b == '\t' || (b >= 0x20 && b < 0x7f) }

func (s *stringScanner) write(p []byte) {
	for _, b := range p {
		if isPrintableASCII(b) || b >= 0x80 {
			s.narrow = append(s.narrow, b)
			if len(s.narrow) >= maxStringLen {
				s.flushNarrow()
			}
		} else {
			s.flushNarrow()
		}
		if s.wideHave {
			s.wideHave = false
			if b == 0 {
				s.wide = append(s.wide, s.widePending)
				if len(s.wide) >= maxStringLen {
					s.flushWide()
				}
				continue
			}
			s.flushWide()
		}
		if isPrintableASCII(b) {
			s.widePending, s.wideHave = b, true
		} else {
			s.flushWide()
		}
	}
}

// flush emits the strings still open at the end of the stream.
func (s *stringScanner) flush() {
	s.flushNarrow()
	if s.wideHave {
		s.wideHave = false
		s.flushWide()
	}
	s.flushWide()
}

func (s *stringScanner) flushNarrow() {
	if len(s.narrow) >= s.min {
		// Bytes of broken UTF-8 (binary noise next to text) become separators.
		s.emit(strings.ToValidUTF8(string(s.narrow), " "))
		s.count++
	}
	s.narrow = s.narrow[:0]
}

func (s *stringScanner) flushWide() {
	if len(s.wide) >= s.min {
		s.emit(string(s.wide))
		s.count++
	}
	s.wide = s.wide[:0]
}

// entropy is the Shannon entropy of a byte histogram, in bits per byte (0..8).
func entropy(hist *[256]int64, n int64) float64 {
	if n == 0 {
		return 0
	}
	h := 0.0
	for _, c := range hist {
		if c == 0 {
			continue
		}
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return math.Max(0, h) // -0 for a file of one repeated byte
}

// fileType is what the content says a file is.
type fileType struct {
	mime       string
	name       string // short: PE, ELF, PDF, ZIP, Text, Data, Empty…
	extension  string // usual extension of the type, with the dot
	compressed bool   // compressed by nature: high entropy is normal
	executable bool
	text       bool // text/plain or a text format (HTML, JSON, XML, CSV, scripts…)
}

// compressedTypes are types whose content is compressed (or encrypted) by nature; a type inherits the
// property from its parents (docx is a zip).
var compressedTypes = map[string]bool{
	"application/zip": true, "application/gzip": true, "application/x-7z-compressed": true,
	"application/vnd.rar": true, "application/x-bzip2": true, "application/x-xz": true, "application/zstd": true,
	"application/lzip": true, "application/zlib": true, "application/vnd.ms-cab-compressed": true,
	"application/x-rpm": true, "application/vnd.debian.binary-package": true, "application/pdf": true,
	"application/x-shockwave-flash": true, "application/x-chrome-extension": true, "application/ogg": true,
	"application/x-ms-installer": true, "font/woff": true, "font/woff2": true, "image/png": true,
	"image/jpeg": true, "image/gif": true, "image/webp": true, "image/avif": true, "image/heic": true,
	"image/heif": true, "image/jxl": true, "image/jp2": true, "image/jpx": true,
}

// executableTypes are native executables and libraries.
var executableTypes = map[string]bool{
	"application/vnd.microsoft.portable-executable": true, "application/x-elf": true,
	"application/x-executable": true, "application/x-sharedlib": true, "application/x-object": true,
	"application/x-mach-binary": true,
}

// baseMIME drops the parameters of a MIME type.
func baseMIME(m string) string {
	b, _, _ := strings.Cut(m, ";")
	return strings.TrimSpace(b)
}

// detectType identifies the first bytes of a file of size bytes.
func detectType(head []byte, size int64) fileType {
	if size == 0 {
		return fileType{mime: "application/x-empty", name: "Empty"}
	}
	m := mimetype.Detect(head)
	ft := fileType{mime: m.String(), extension: m.Extension()}
	for x := m; x != nil; x = x.Parent() {
		b := baseMIME(x.String())
		if compressedTypes[b] ||
			(strings.HasPrefix(b, "video/") || strings.HasPrefix(b, "audio/")) &&
				b != "audio/wav" && b != "audio/aiff" && b != "audio/basic" {
			ft.compressed = true
		}
		if executableTypes[b] {
			ft.executable = true
		}
		if b == "text/plain" {
			ft.text = true
		}
	}
	b := baseMIME(ft.mime)
	switch {
	case b == "application/vnd.microsoft.portable-executable":
		ft.name = "PE"
	case b == "application/x-mach-binary":
		ft.name = "Mach-O"
	case ft.executable || b == "application/x-elf" || b == "application/x-coredump":
		ft.name = "ELF"
	case b == "application/octet-stream":
		ft.name = "Data"
	case b == "text/plain":
		ft.name = "Text"
	case ft.extension != "":
		ft.name = strings.ToUpper(ft.extension[1:])
	default:
		_, sub, _ := strings.Cut(b, "/")
		ft.name = strings.TrimPrefix(sub, "x-")
	}
	return ft
}

// documentExts are extensions users open without a second thought.
var documentExts = map[string]bool{
	".pdf": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true,
	".odt": true, ".ods": true, ".odp": true, ".rtf": true, ".txt": true, ".csv": true, ".jpg": true,
	".jpeg": true, ".png": true, ".gif": true, ".bmp": true, ".tif": true, ".tiff": true, ".mp3": true,
	".mp4": true, ".avi": true, ".mov": true, ".wav": true, ".htm": true, ".html": true, ".xml": true,
	".json": true,
}

// runnableExts are extensions Windows runs or interprets when opened.
var runnableExts = map[string]bool{
	".exe": true, ".scr": true, ".com": true, ".pif": true, ".bat": true, ".cmd": true, ".js": true,
	".jse": true, ".vbs": true, ".vbe": true, ".ps1": true, ".hta": true, ".lnk": true, ".jar": true,
	".msi": true, ".dll": true, ".cpl": true, ".wsf": true,
}

// nameWarning is a suspicious trait of a file name.
type nameWarning struct{ predicate, text string }

// nameWarnings compares the name of a file with its content: an executable named like a document, or a
// document extension followed by a runnable one ("invoice.pdf.exe").
func nameWarnings(name string, ft fileType) []nameWarning {
	var out []nameWarning
	ext := strings.ToLower(filepath.Ext(name))
	if ft.executable && documentExts[ext] {
		out = append(out, nameWarning{"Mismatch", fmt.Sprintf("%s executable named as a %s file", ft.name, ext)})
	}
	if runnableExts[ext] {
		prev := strings.ToLower(filepath.Ext(strings.TrimRight(strings.TrimSuffix(name, filepath.Ext(name)), " ")))
		if documentExts[prev] {
			out = append(out, nameWarning{"DoubleExtension", fmt.Sprintf("%s file disguised as %s", ext, prev)})
		}
	}
	return out
}

// humanSize renders a byte count for a summary line.
func humanSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	f := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= 1024
		if f < 1024 || unit == "TiB" {
			return fmt.Sprintf("%.1f %s", f, unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
