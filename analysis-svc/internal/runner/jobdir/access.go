package jobdir

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// FolderAccess says who, besides the service's own user, may read job folders and the files the service
// writes in them (settings job.directory_group and job.directory_mode). The zero value is private: folders
// 0700 and files 0600, in the service's group.
//
// A worker that hands a file path to a daemon running as another user (Debian's clamd, say) needs that
// daemon to read the observable: set a group the daemon's user belongs to. Folders then get Mode (0750 by
// default) and that group, files 0640 and that group. Others never get any access.
type FolderAccess struct {
	GID      int         // group given to job folders and files, when SetGroup
	SetGroup bool        // false: the service's group (the folder's default)
	Mode     os.FileMode // folders' permissions: 0700, 0710 or 0750; 0 = 0700
}

// ParseFolderAccess reads job.directory_group (a group name or a numeric gid; "" = the service's group)
// and job.directory_mode (octal: 0700, 0710 or 0750; "" = 0750 with a group, else 0700).
func ParseFolderAccess(group, mode string) (FolderAccess, error) {
	var a FolderAccess
	if g := strings.TrimSpace(group); g != "" {
		gid, err := strconv.Atoi(g)
		if err != nil {
			grp, lerr := user.LookupGroup(g)
			if lerr != nil {
				return FolderAccess{}, fmt.Errorf("job.directory_group: unknown group %q", g)
			}
			if gid, err = strconv.Atoi(grp.Gid); err != nil {
				return FolderAccess{}, fmt.Errorf("job.directory_group: group %q has no numeric id", g)
			}
		}
		if gid < 0 {
			return FolderAccess{}, fmt.Errorf("job.directory_group: invalid gid %d", gid)
		}
		a.GID, a.SetGroup, a.Mode = gid, true, 0o750
	}
	if m := strings.TrimSpace(mode); m != "" {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(m, "0o"), "0O"), 8, 32)
		if d, derr := strconv.Atoi(m); derr == nil && (d == 0o700 || d == 0o710 || d == 0o750) && m[0] != '0' {
			v, err = uint64(d), nil // an unquoted YAML 0750 arrives as the number 488
		}
		if err != nil {
			return FolderAccess{}, fmt.Errorf("job.directory_mode: %q is not an octal mode such as 0750", m)
		}
		switch fm := os.FileMode(v); fm {
		case 0o700, 0o710, 0o750:
			a.Mode = fm
		default:
			return FolderAccess{}, fmt.Errorf("job.directory_mode: %04o is not allowed: use 0700, 0710 (the group may open "+
				"files it knows the name of) or 0750 (the group may also list the folders); others never get access", fm)
		}
	}
	return a, nil
}

// DirMode is the permission of job folders.
func (a FolderAccess) DirMode() os.FileMode {
	if a.Mode == 0 {
		return 0o700
	}
	return a.Mode
}

// FileMode is the permission of the files the service writes in job folders: 0640 when the group may enter
// the folders, else 0600.
func (a FolderAccess) FileMode() os.FileMode {
	if a.DirMode()&0o010 != 0 {
		return 0o640
	}
	return 0o600
}

// Shared reports whether the group has any access.
func (a FolderAccess) Shared() bool { return a.DirMode()&0o070 != 0 }

// Apply gives path (a folder when dir, else a file) its mode and group.
func (a FolderAccess) Apply(path string, dir bool) error {
	mode := a.FileMode()
	if dir {
		mode = a.DirMode()
	}
	if a.SetGroup {
		if err := os.Lchown(path, -1, a.GID); err != nil {
			return fmt.Errorf("give %s the group %d (job.directory_group): %w", path, a.GID, err)
		}
	}
	return os.Chmod(path, mode) // after chown, which may clear setgid-like bits
}

// String describes the setting for logs.
func (a FolderAccess) String() string {
	if a.SetGroup {
		return fmt.Sprintf("folders %04o, files %04o, group %d", a.DirMode(), a.FileMode(), a.GID)
	}
	return fmt.Sprintf("folders %04o, files %04o, the service's group", a.DirMode(), a.FileMode())
}

// Check tells, at start-up, whether the service's user can give job folders made in dir ("" = the system
// temp folder) the group of job.directory_group: it makes a folder there, gives it the group and the mode,
// and removes it. Without it every job of an external worker would fail with "cannot protect the job folder".
func (a FolderAccess) Check(dir string) error {
	if !a.SetGroup {
		return nil
	}
	probe, err := os.MkdirTemp(dir, ".group-check-")
	if err != nil {
		return fmt.Errorf("job.directory: cannot make a job folder in %q: %w", dir, err)
	}
	defer os.Remove(probe)
	if err := a.Apply(probe, true); err != nil {
		return fmt.Errorf("job.directory_group: the service's user (uid %d) cannot give job folders the group %d: "+
			"add the user to that group (then restart its session) or unset job.directory_group (%w)", os.Geteuid(), a.GID, err)
	}
	return nil
}
