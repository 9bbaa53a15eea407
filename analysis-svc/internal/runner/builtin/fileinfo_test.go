package builtin

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// writeFile writes content to a file of the test's folder and returns its path.
func writeFile(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// randomBytes is n deterministic pseudo-random bytes.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// runFile runs File_Info on content stored under name.
func runFile(t *testing.T, name string, content []byte, cfg map[string]any) analysis.RunOutput {
	t.Helper()
	in := analysis.RunInput{DataType: "file", File: writeFile(t, "attachment1", content), Filename: name,
		ContentType: "application/octet-stream", TLP: 2, PAP: 2, Config: cfg}
	out, err := runFileInfo(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !out.Success {
		t.Fatalf("failure: %s", out.ErrorMessage)
	}
	return out
}

func TestRunFileInfo(t *testing.T) {
	const textIOCs = "Contact evil@bad-domain.com now.\r\n" +
		"C2 at 203.0.113.5:8443 and http://malicious.example.net/payload.exe, also cdn.example.org\n" +
		"dropped d41d8cd98f00b204e9800998ecf8427e; version 1.2.3 in report.pdf\n"
	pe := append([]byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff"), randomBytes(64)...)
	pe = append(pe, []byte("\x00\x00This program cannot be run in DOS mode.\x00")...)
	utf16 := func(s string) []byte {
		var b []byte
		for _, c := range []byte(s) {
			b = append(b, c, 0)
		}
		return b
	}
	tests := []struct {
		name, filename string
		content        []byte
		cfg            map[string]any
		wantFull       map[string]any
		wantIOCs       []string
		wantTax        [][3]any // level, predicate, value
		wantNoTax      []string // predicates that must not appear
		wantArtifacts  int      // -1: as many as IOCs
	}{
		{name: "text with iocs", filename: "notes.txt", content: []byte(textIOCs),
			wantFull: map[string]any{"typeName": "Text", "mimeType": "text/plain; charset=utf-8", "entropyHigh": false, "text": true,
				"size": int64(len(textIOCs)), "filename": "notes.txt", "contentType": "application/octet-stream"},
			wantIOCs: []string{"mail evil@bad-domain.com", "ip 203.0.113.5", "url http://malicious.example.net/payload.exe",
				"fqdn cdn.example.org", "hash d41d8cd98f00b204e9800998ecf8427e"},
			wantTax:       [][3]any{{"info", "Type", "Text"}, {"info", "IOCs", 5}, {"info", "Size", fmt.Sprintf("%d bytes", len(textIOCs))}},
			wantArtifacts: -1},
		{name: "random bytes", filename: "blob.bin", content: randomBytes(1 << 20),
			wantFull: map[string]any{"typeName": "Data", "mimeType": "application/octet-stream", "entropyHigh": true, "text": false,
				"compressed": false},
			wantTax: [][3]any{{"info", "Type", "Data"}, {"suspicious", "Entropy", "8.00"}, {"info", "Size", "1.0 MiB"}}},
		{name: "png is compressed by nature", filename: "image.png",
			content:  append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), randomBytes(1<<16)...),
			wantFull: map[string]any{"typeName": "PNG", "mimeType": "image/png", "compressed": true, "entropyHigh": false},
			wantTax:  [][3]any{{"info", "Type", "PNG"}, {"info", "Entropy", "8.00"}}},
		{name: "zip", filename: "a.zip", content: append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), randomBytes(4096)...),
			wantFull: map[string]any{"typeName": "ZIP", "mimeType": "application/zip", "extension": ".zip", "compressed": true}},
		{name: "empty", filename: "empty.txt", content: nil,
			wantFull: map[string]any{"typeName": "Empty", "size": int64(0), "entropy": 0.0, "mimeType": "application/x-empty"},
			wantTax:  [][3]any{{"info", "Entropy", "0.00"}, {"info", "Size", "0 bytes"}}, wantNoTax: []string{"IOCs"}},
		{name: "one repeated byte", filename: "zeros", content: make([]byte, 5000),
			wantFull: map[string]any{"entropy": 0.0}},
		{name: "utf-16 strings", filename: "w.bin",
			content:  append(append([]byte{0x00, 0x01, 0x02, 0x03}, utf16("https://wide.example.com/x")...), 0, 0, 7),
			wantIOCs: []string{"url https://wide.example.com/x"}, wantArtifacts: -1},
		{name: "utf-16 at an odd offset", filename: "w.bin",
			content:  append([]byte{0x01, 0x02, 0x03}, utf16("mail admin@corp-example.com")...),
			wantIOCs: []string{"mail admin@corp-example.com"}, wantArtifacts: -1},
		{name: "utf-8 names", filename: "u.txt", content: []byte("visit bücher.de today\n"),
			wantIOCs: []string{"domain bücher.de"}, wantArtifacts: -1},
		{name: "executable named as a document", filename: "invoice.pdf", content: pe,
			wantFull: map[string]any{"typeName": "PE", "executable": true},
			wantTax:  [][3]any{{"suspicious", "Mismatch", "PE executable named as a .pdf file"}}},
		{name: "double extension", filename: "invoice.pdf .exe", content: pe,
			wantTax: [][3]any{{"suspicious", "DoubleExtension", ".exe file disguised as .pdf"}}, wantNoTax: []string{"Mismatch"}},
		{name: "executable named as one", filename: "setup.exe", content: pe,
			wantNoTax: []string{"Mismatch", "DoubleExtension"}},
		{name: "artifacts off", filename: "notes.txt", content: []byte(textIOCs), cfg: map[string]any{"extract_artifacts": false},
			wantIOCs: []string{"mail evil@bad-domain.com", "ip 203.0.113.5", "url http://malicious.example.net/payload.exe",
				"fqdn cdn.example.org", "hash d41d8cd98f00b204e9800998ecf8427e"}, wantArtifacts: 0},
		{name: "ioc cap", filename: "ips.txt",
			content:  []byte("1.1.1.1 2.2.2.2 3.3.3.3 4.4.4.4 5.5.5.5 6.6.6.6 7.7.7.7\n"),
			cfg:      map[string]any{"max_iocs": 3.0},
			wantFull: map[string]any{"iocsTruncated": true},
			wantIOCs: []string{"ip 1.1.1.1", "ip 2.2.2.2", "ip 3.3.3.3"}, wantArtifacts: -1},
		{name: "short strings ignored", filename: "s.bin", content: []byte("\x00a.com\x00"),
			cfg: map[string]any{"min_string_length": 6.0}},
		{name: "scan limit", filename: "big.bin",
			content:  append(append([]byte("first.example.com\n"), make([]byte, 2<<20)...), []byte("\nlate.example.com\n")...),
			cfg:      map[string]any{"max_scan_mb": 1.0},
			wantFull: map[string]any{"size": int64(18 + 2<<20 + 18)},
			wantIOCs: []string{"fqdn first.example.com"}, wantArtifacts: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runFile(t, tt.filename, tt.content, tt.cfg)
			for k, want := range tt.wantFull {
				if got := out.Full[k]; got != want {
					t.Errorf("full.%s = %#v, want %#v", k, got, want)
				}
			}
			hashes := out.Full["hashes"].(map[string]any)
			m, s1, s256, s512 := md5.Sum(tt.content), sha1.Sum(tt.content), sha256.Sum256(tt.content), sha512.Sum512(tt.content)
			for k, want := range map[string][]byte{"md5": m[:], "sha1": s1[:], "sha256": s256[:], "sha512": s512[:]} {
				if hashes[k] != hex.EncodeToString(want) {
					t.Errorf("%s = %v", k, hashes[k])
				}
			}
			var iocs []string
			for _, i := range out.Full["iocs"].([]any) {
				im := i.(map[string]any)
				iocs = append(iocs, im["dataType"].(string)+" "+im["data"].(string))
			}
			if !slices.Equal(iocs, tt.wantIOCs) {
				t.Errorf("iocs = %q, want %q", iocs, tt.wantIOCs)
			}
			wantArts := tt.wantArtifacts
			if wantArts < 0 {
				wantArts = len(tt.wantIOCs)
			}
			if len(out.Artifacts) != wantArts {
				t.Errorf("%d artifacts, want %d: %v", len(out.Artifacts), wantArts, out.Artifacts)
			}
			for _, a := range out.Artifacts {
				if !slices.Equal(a.Tags, []string{"extracted-from:" + tt.filename}) || a.Data == "" {
					t.Errorf("artifact %+v", a)
				}
			}
			taxes := taxonomiesOf(t, out)
			for _, w := range tt.wantTax {
				if !hasTaxonomy(taxes, w[0].(string), w[1].(string), w[2]) {
					t.Errorf("no taxonomy %v in %v", w, taxes)
				}
			}
			for _, tx := range taxes {
				if slices.Contains(tt.wantNoTax, tx.Predicate) {
					t.Errorf("unexpected taxonomy %v", tx)
				}
				if tx.Namespace != "FileInfo" {
					t.Errorf("namespace %q", tx.Namespace)
				}
			}
		})
	}
}

func TestRunFileInfo_entropyBounds(t *testing.T) {
	out := runFile(t, "r.bin", randomBytes(1<<16), nil)
	e := out.Full["entropy"].(float64)
	if e < 7.9 || e > 8 {
		t.Errorf("entropy %v", e)
	}
	out = runFile(t, "t.txt", bytes.Repeat([]byte("abcd"), 1000), nil)
	if e := out.Full["entropy"].(float64); e != 2 {
		t.Errorf("entropy of 4 equiprobable bytes = %v, want 2", e)
	}
}

func TestRunFileInfo_scanLimit(t *testing.T) {
	content := append(append([]byte("first.example.com\n"), make([]byte, 2<<20)...), []byte("\nlate.example.com\n")...)
	strs := runFile(t, "big.bin", content, map[string]any{"max_scan_mb": 1.0}).Full["strings"].(map[string]any)
	if strs["scannedBytes"] != int64(1<<20) || strs["truncated"] != true || strs["count"] != 1 {
		t.Errorf("strings = %v", strs)
	}
	strs = runFile(t, "big.bin", content, nil).Full["strings"].(map[string]any)
	if strs["scannedBytes"] != int64(len(content)) || strs["truncated"] != false || strs["count"] != 2 {
		t.Errorf("strings = %v", strs)
	}
}

// TestRunFileInfo_binaryStrict checks that IOCs in binary data are found when they stand as strings, and that
// random printable runs do not yield names.
func TestRunFileInfo_binaryStrict(t *testing.T) {
	content := append(randomBytes(1<<18), []byte("\x00evil-c2.example.com\x00GET /gate.php HTTP/1.1\x00"+
		"http://198.51.100.7/x.bin\x00k.sd x.com\x00")...)
	out := runFile(t, "sample.exe", content, nil)
	var iocs []string
	for _, i := range out.Full["iocs"].([]any) {
		im := i.(map[string]any)
		iocs = append(iocs, im["dataType"].(string)+" "+im["data"].(string))
	}
	want := []string{"fqdn evil-c2.example.com", "url http://198.51.100.7/x.bin"}
	if !slices.Equal(iocs, want) {
		t.Errorf("iocs = %q, want %q", iocs, want)
	}
	// The same short names in a text file are names.
	out = runFile(t, "notes.txt", []byte("k.sd x.com\n"), nil)
	if n := len(out.Full["iocs"].([]any)); n != 2 {
		t.Errorf("text: %d iocs", n)
	}
}

func TestRunFileInfo_failures(t *testing.T) {
	ctx := context.Background()
	out, err := runFileInfo(ctx, analysis.RunInput{DataType: "file", Filename: "x"})
	if err != nil || out.Success || out.ErrorMessage != "no file to analyse" {
		t.Errorf("no file: %+v %v", out, err)
	}
	out, err = runFileInfo(ctx, analysis.RunInput{DataType: "file", File: filepath.Join(t.TempDir(), "missing"), Filename: "x"})
	if err != nil || out.Success || out.ErrorMessage != "cannot open the file: no such file or directory" {
		t.Errorf("missing file: %+v %v", out, err)
	}
	if strings.Contains(out.Input, t.TempDir()) {
		t.Errorf("input shows the job path: %s", out.Input)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = runFileInfo(cancelled, analysis.RunInput{DataType: "file", File: writeFile(t, "a", []byte("x")), Filename: "a"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestStringScanner(t *testing.T) {
	var got []string
	s := stringScanner{min: 4, emit: func(x string) { got = append(got, x) }}
	// Fed byte by byte, as chunk boundaries may fall anywhere.
	for _, b := range []byte("ab\x00abcd\x01w\x00i\x00d\x00e\x00\x00\xffhigh\xfe\xffbit") {
		s.write([]byte{b})
	}
	s.flush()
	want := []string{"abcd", "wide", " high bit"} // a run of invalid UTF-8 becomes one space
	if !slices.Equal(got, want) {
		t.Errorf("strings = %q, want %q", got, want)
	}
	if s.count != 3 {
		t.Errorf("count %d", s.count)
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB", 5000 << 40: "5000.0 TiB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
