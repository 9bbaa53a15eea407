package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// JobDirPrefix starts the name of every job folder this service makes under job.directory:
// <prefix><pid of the service>-<job id>-<random>. Start-up removes the folders of this prefix whose service
// process is gone (a crash or kill -9 skipped their removal), and nothing else.
const JobDirPrefix = "analysis-svc-job-"

func jobDirPattern(jobID string) string {
	return fmt.Sprintf("%s%d-%s-", JobDirPrefix, os.Getpid(), jobID)
}

// RemoveStale removes the job folders under Options.Dir ("" = the system temp folder) left by service
// processes that no longer run (a crash or kill -9 skipped their removal); run it before the job workers
// start. A folder whose process still runs (another instance on this machine, or this one) is kept; so is
// anything not named by JobDirPrefix.
func (e *Executors) RemoveStale() {
	dir, log := e.opts.Dir, e.opts.Log
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("list job folders", "err", err)
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), JobDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("remove a stale job folder", "folder", e.Name(), "err", err)
			continue
		}
		log.Info("removed a stale job folder", "folder", e.Name())
	}
}

// alive reports whether a process with this pid exists (a pid reused since only keeps a stale folder).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
