package procs

import "syscall"

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
