package procs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group and has the kernel
// SIGKILL it when the forking thread (the spawner thread, so: this process)
// dies. It keeps the caller's Credential, so a server that refuses root
// (PostgreSQL) runs as another user; Go sets the parent-death signal after
// switching user, so the switch does not clear it.
func sysProcAttr(base *syscall.SysProcAttr) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if base != nil {
		a.Credential = base.Credential
	}
	return a
}

// dieWithParent sets SIGKILL as this process's parent-death signal, which
// survives exec, and checks that the parent (PID parent) did not die before
// that: nobody would stop us.
func dieWithParent(parent string) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the parent-death signal: %w", err)
	}
	if strconv.Itoa(os.Getppid()) != parent {
		return errors.New("the parent died before the parent-death signal was set")
	}
	return nil
}
