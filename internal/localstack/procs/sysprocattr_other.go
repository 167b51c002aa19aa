//go:build !linux

package procs

import "syscall"

// sysProcAttr puts the child in its own process group. Outside Linux there
// is no parent-death signal: children are stopped by Stop only.
func sysProcAttr(base *syscall.SysProcAttr) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if base != nil {
		a.Credential = base.Credential
	}
	return a
}

// dieWithParent does nothing: outside Linux there is no parent-death signal.
func dieWithParent(string) error { return nil }
