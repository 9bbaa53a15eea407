package jobdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// Throwaway ids for the access test: no account needs to exist for a process to run as them.
const (
	daemonGroup = 61000 // job.directory_group
	memberUID   = 61001 // a daemon's user, in daemonGroup (as clamd in its group)
	outsiderUID = 61002 // another user
	outsiderGID = 61003
)

// readAs runs /bin/cat path (or ls for a folder) as uid/gid with no supplementary groups: nil when it could
// read.
func readAs(t *testing.T, uid, gid int, path string, list bool) error {
	t.Helper()
	cmd := exec.Command("/bin/cat", path)
	if list {
		cmd = exec.Command("/bin/ls", path)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid),
		Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &exec.ExitError{Stderr: out}
	}
	return nil
}

// requireRoot skips when the test cannot switch users (it needs root to run commands as other uids).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test reads the job folder as two other uids (run the suite as root, as CI does)")
	}
}

// traversableParent is a folder every user may traverse (not list) to reach the job folder, as /tmp is.
func traversableParent(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for p := base; p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	return base
}

// TestPrepare_folderAccess: with job.directory_group a user of that group reads the observable's copy and
// input.json, a user outside it cannot; without the setting nobody else can.
func TestPrepare_folderAccess(t *testing.T) {
	requireRoot(t)
	base := traversableParent(t)
	src := filepath.Join(base, "observable")
	if err := os.WriteFile(src, []byte("EICAR-like test content"), 0o600); err != nil {
		t.Fatal(err)
	}
	prepare := func(t *testing.T, access FolderAccess) (dir, attachment string) {
		t.Helper()
		dir = filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"), "run")
		if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
			t.Fatal(err)
		}
		if _, err := Prepare(dir, analysis.KindAnalyzer, analysis.RunInput{DataType: "file", File: src, Filename: "x.bin"},
			Options{Access: access}); err != nil {
			t.Fatal(err)
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "input", "attachment*"))
		if len(matches) != 1 {
			t.Fatalf("attachments: %v", matches)
		}
		return dir, matches[0]
	}

	t.Run("group 0750", func(t *testing.T) {
		access, err := ParseFolderAccess("61000", "")
		if err != nil {
			t.Fatal(err)
		}
		dir, att := prepare(t, access)
		for _, p := range []string{dir, filepath.Join(dir, "input"), filepath.Join(dir, "output"), att,
			filepath.Join(dir, "input", "input.json")} {
			st, _ := os.Stat(p)
			want := os.FileMode(0o640)
			if st.IsDir() {
				want = 0o750
			}
			if st.Mode().Perm() != want || st.Sys().(*syscall.Stat_t).Gid != daemonGroup {
				t.Errorf("%s: mode %v gid %d, want %v gid %d", p, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid, want, daemonGroup)
			}
		}
		if err := readAs(t, memberUID, daemonGroup, att, false); err != nil {
			t.Errorf("a user of the group cannot read the observable: %s", err.(*exec.ExitError).Stderr)
		}
		if err := readAs(t, memberUID, daemonGroup, filepath.Join(dir, "input"), true); err != nil {
			t.Errorf("a user of the group cannot list input/ with 0750: %s", err.(*exec.ExitError).Stderr)
		}
		if err := readAs(t, outsiderUID, outsiderGID, att, false); err == nil {
			t.Error("a user outside the group read the observable")
		}
		if err := readAs(t, outsiderUID, outsiderGID, filepath.Join(dir, "input", "input.json"), false); err == nil {
			t.Error("a user outside the group read input.json")
		}
	})
	t.Run("group 0710", func(t *testing.T) {
		access, err := ParseFolderAccess("61000", "0710")
		if err != nil {
			t.Fatal(err)
		}
		dir, att := prepare(t, access)
		if err := readAs(t, memberUID, daemonGroup, att, false); err != nil {
			t.Errorf("a user of the group cannot read the observable by its name: %s", err.(*exec.ExitError).Stderr)
		}
		if err := readAs(t, memberUID, daemonGroup, filepath.Join(dir, "input"), true); err == nil {
			t.Error("a user of the group listed input/ with 0710")
		}
		if err := readAs(t, outsiderUID, outsiderGID, att, false); err == nil {
			t.Error("a user outside the group read the observable")
		}
	})
	t.Run("default private", func(t *testing.T) {
		_, att := prepare(t, FolderAccess{})
		if err := readAs(t, memberUID, daemonGroup, att, false); err == nil {
			t.Error("without job.directory_group another user read the observable")
		}
	})
}

func TestParseFolderAccess(t *testing.T) {
	for _, c := range []struct {
		group, mode string
		want        FolderAccess
		err         bool
	}{
		{"", "", FolderAccess{}, false},
		{"61000", "", FolderAccess{GID: 61000, SetGroup: true, Mode: 0o750}, false},
		{"root", "0710", FolderAccess{GID: 0, SetGroup: true, Mode: 0o710}, false},
		{"", "750", FolderAccess{Mode: 0o750}, false},
		{"", "0755", FolderAccess{}, true}, // never world-readable
		{"", "0770", FolderAccess{}, true},
		{"", "rwx", FolderAccess{}, true},
		{"no-such-group-anywhere", "", FolderAccess{}, true},
	} {
		got, err := ParseFolderAccess(c.group, c.mode)
		if (err != nil) != c.err || (err == nil && got != c.want) {
			t.Errorf("ParseFolderAccess(%q, %q) = %+v, %v", c.group, c.mode, got, err)
		}
	}
}
