package procs

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

var spawner struct {
	once sync.Once
	work chan func()
}

// OnSpawnerThread runs f on the one OS thread from which every child is
// forked. The thread is locked to a goroutine that never exits, so the
// kernel's parent-death signal fires only when the whole process dies.
// Calls are serialised; keep f short unless it must fork (as envtest does).
func OnSpawnerThread(f func() error) error {
	spawner.once.Do(func() {
		spawner.work = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for w := range spawner.work {
				w()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.work <- func() { done <- f() }
	return <-done
}

// Process is a started child process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start starts cmd as a child that dies with this process, in its own
// process group. name labels errors. Of cmd.SysProcAttr only Credential
// is kept (on Linux).
func Start(name string, cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = sysProcAttr(cmd.SysProcAttr)
	if err := OnSpawnerThread(cmd.Start); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, cmd.Path, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process ID, which is also its process group ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error once Done is closed.
func (p *Process) Err() error {
	if p.Exited() {
		return p.err
	}
	return nil
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop asks the process group to terminate (SIGTERM) and kills it (SIGKILL)
// if it has not exited within timeout. Stopping an exited process is a no-op.
func (p *Process) Stop(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	signalGroup(p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	if err := p.Kill(); err != nil {
		return err
	}
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.Name, timeout)
}

// Kill kills the process group at once, as a crash would, and waits for the
// process to exit.
func (p *Process) Kill() error {
	if p.Exited() {
		return nil
	}
	signalGroup(p.Pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL for 10s", p.Name, p.Pid())
	}
}

// signalGroup signals the process group led by pid, falling back to the
// process alone; an already-exited process is not an error.
func signalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, sig)
	}
}
