package process

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Workers die with the service. Each worker runs in a process group of its own (killed as a whole on timeout
// or cancellation) and with a parent-death signal: SIGKILL when the service dies, kill -9 and crashes
// included, so that no orphaned analyzer or responder keeps running (and writing) after a crash while the
// restarted service runs the job again (issue 15).
//
// Linux sends the parent-death signal when the *thread* that forked the child exits, not the process. The Go
// runtime ends a thread when a goroutine locked to it exits, so a child started from an arbitrary thread
// could be killed in the middle of its run. The children are therefore started from one goroutine locked
// to its thread for the Runner's whole life (it never exits): that thread lives as long as the process.

// sysProcAttr is the workers' process attributes: their own process group, SIGKILL when the service dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// starter starts commands from its one locked thread.
type starter struct {
	once sync.Once
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// start runs cmd.Start on the starter's thread and returns its error.
func (s *starter) start(cmd *exec.Cmd) error {
	s.once.Do(func() {
		s.reqs = make(chan startReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the goroutine and its thread live as long as the process
			for r := range s.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	s.reqs <- startReq{cmd: cmd, done: done}
	return <-done
}
