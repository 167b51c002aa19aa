//go:build !linux

package procs

import "syscall"

// sysProcAttr puts the child in its own process group. Outside Linux there
// is no parent-death signal: children are stopped by Stop only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
