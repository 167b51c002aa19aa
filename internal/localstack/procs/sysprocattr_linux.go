package procs

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel
// SIGKILL it when the forking thread (the spawner thread, so: this process)
// dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
