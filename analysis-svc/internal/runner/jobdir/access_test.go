package jobdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// Check refuses a group the service's user cannot give its folders, and accepts one it can. The refusal
// needs an unprivileged user (root may give any group): as root, the test runs itself as nobody.
func TestFolderAccess_Check(t *testing.T) {
	if os.Getenv("JOBDIR_CHECK_AS") != "" { // the re-executed test, as an unprivileged user
		gid, _ := strconv.Atoi(os.Getenv("JOBDIR_CHECK_AS"))
		err := FolderAccess{GID: gid, SetGroup: true, Mode: 0o750}.Check(os.Getenv("JOBDIR_CHECK_DIR"))
		fmt.Printf("check: %v\n", err)
		return
	}
	dir := t.TempDir()
	if err := (FolderAccess{}).Check(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("no group: %v", err)
	}
	if err := (FolderAccess{GID: os.Getegid(), SetGroup: true, Mode: 0o750}).Check(dir); err != nil {
		t.Errorf("the service's own group: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe folder was left: %v", entries)
	}
	if err := (FolderAccess{GID: os.Getegid(), SetGroup: true}).Check(filepath.Join(dir, "missing")); err == nil ||
		!strings.Contains(err.Error(), "job.directory") {
		t.Errorf("a missing job.directory: %v", err)
	}

	const stranger = 61990 // a group no test user is in
	if os.Geteuid() != 0 {
		err := FolderAccess{GID: stranger, SetGroup: true, Mode: 0o750}.Check(dir)
		if err == nil || !strings.Contains(err.Error(), "cannot give job folders the group 61990") {
			t.Errorf("a group the user is not in: %v", err)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("as root, needs setpriv (util-linux) to run as an unprivileged user")
	}
	// A copy of this test binary that nobody may run, and a folder nobody may write in.
	bin := filepath.Join(t.TempDir(), "jobdir.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(bin); p != "/"; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(p, st.Mode().Perm()|0o011)
		}
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	for p := dir; p != "/"; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(p, st.Mode().Perm()|0o011)
		}
	}
	for gid, want := range map[int]string{stranger: "check: job.directory_group: the service's user (uid 65534) cannot give job folders the group 61990",
		65534: "check: <nil>"} {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestFolderAccess_Check$", "-test.v")
		cmd.Env = append(os.Environ(), "JOBDIR_CHECK_AS="+strconv.Itoa(gid), "JOBDIR_CHECK_DIR="+work)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("gid %d as nobody: %v\n%s", gid, err, out)
		}
	}
}
