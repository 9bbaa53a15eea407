package fname

import "testing"

func TestBase(t *testing.T) {
	for in, want := range map[string]string{
		"a.txt": "a.txt", "../../etc/passwd": "passwd", `..\..\windows\win.ini`: "win.ini", `C:\temp\a.exe`: "a.exe",
		"C:a.exe": "a.exe", "..": "fb", ".": "fb", "": "fb", "a\r\nX-Injected: 1": "aX-Injected: 1", "dir/sub/": "sub",
		"x\x00.txt": "x.txt", "\xff\xfe": "fb", "rapport 2026.pdf": "rapport 2026.pdf",
	} {
		if got := Base(in, "fb"); got != want {
			t.Errorf("Base(%q) = %q, want %q", in, got, want)
		}
	}
}
