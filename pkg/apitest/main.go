package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// AsMain is the TestMain of a command's package: with the variable env set to 1 the test binary is the command
// (main runs with the process's arguments and exits), otherwise the tests run. Tests run the command with
// RunMain and StartMain, as a separate process with real arguments, output and exit status.
func AsMain(m *testing.M, env string, main func()) {
	if os.Getenv(env) == "1" {
		main()
		os.Exit(0) // main returned without exiting
	}
	os.Exit(m.Run())
}

// Exit is how a command run by RunMain ended.
type Exit struct {
	Stdout, Stderr string
	Code           int
}

// mainCommand returns the test binary as the command (AsMain's env), in dir, with the environment of the
// tests minus the variables starting with prefix (the service's configuration), plus vars.
func mainCommand(ctx context.Context, env, prefix, dir string, vars map[string]string, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env+"=1")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// RunMain runs the command (see AsMain) with args in dir and waits for it, 60 s at most (a command that
// does not end, a server started by mistake, fails the test).
func RunMain(t *testing.T, env, prefix, dir string, vars map[string]string, args ...string) Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := mainCommand(ctx, env, prefix, dir, vars, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q did not end within 60 s; stdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
	}
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return Exit{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// Started is a command started by StartMain or StartProcess.
type Started struct {
	Cmd    *exec.Cmd
	URL    string       // StartMain: the base URL of its "listening" log line
	Logs   fmt.Stringer // its stdout
	Stderr fmt.Stringer
	ready  string
	exited chan struct{} // closed once it ended, with err
	err    error
}

// StartMain starts the command (see AsMain) with args in dir and returns once it logs "listening" (60 s at
// most). Stop ends it.
func StartMain(t *testing.T, env, prefix, dir string, vars map[string]string, args ...string) *Started {
	t.Helper()
	out := &logWatch{addr: make(chan string, 1)}
	s := startMain(t, env, prefix, dir, vars, args, out, &LogBuffer{}, out.addr)
	s.URL = "http://" + s.ready
	return s
}

// StartProcess starts the command (see AsMain) with args in dir and returns once its stderr holds ready (60 s
// at most): a command that says it waits for something. Stop ends it.
func StartProcess(t *testing.T, env, prefix, dir string, vars map[string]string, ready string, args ...string) *Started {
	t.Helper()
	errw := &textWatch{want: ready, seen: make(chan string, 1)}
	return startMain(t, env, prefix, dir, vars, args, &LogBuffer{}, errw, errw.seen)
}

// startMain starts the command with its stdout and stderr and returns once ready says something.
func startMain(t *testing.T, env, prefix, dir string, vars map[string]string, args []string, stdout, stderr interface {
	Write([]byte) (int, error)
	String() string
}, ready <-chan string) *Started {
	t.Helper()
	cmd := mainCommand(context.Background(), env, prefix, dir, vars, args)
	s := &Started{Cmd: cmd, Logs: stdout, Stderr: stderr, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case s.ready = <-ready:
		return s
	case <-s.exited:
		t.Fatalf("%q ended before it was ready: %v; stderr:\n%s", args, s.err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%q was not ready within 60 s; stderr:\n%s", args, stderr.String())
	}
	return nil
}

// textWatch keeps what is written and reports when it holds want.
type textWatch struct {
	LogBuffer
	want string
	seen chan string
}

func (w *textWatch) Write(p []byte) (int, error) {
	n, err := w.LogBuffer.Write(p)
	if strings.Contains(w.String(), w.want) {
		select {
		case w.seen <- w.want:
		default:
		}
	}
	return n, err
}

// Stop sends sig and returns the exit status (30 s at most).
func (s *Started) Stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := s.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
		if ee := (*exec.ExitError)(nil); errors.As(s.err, &ee) {
			return ee.ExitCode()
		} else if s.err != nil {
			t.Fatal(s.err)
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop within 30 s")
	}
	return -1
}
