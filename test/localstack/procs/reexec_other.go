//go:build !linux

package procs

import (
	"fmt"
	"os"
	"syscall"
)

// init execs the launcher's target when a launcher script re-executed this
// binary. Outside Linux there is no parent-death signal to set.
func init() {
	target, ok := os.LookupEnv(envExecTarget)
	if !ok {
		return
	}
	_ = os.Unsetenv(envExecTarget)
	_ = os.Unsetenv(envExecParent)
	err := syscall.Exec(target, append([]string{target}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "procs launcher: exec %s: %v\n", target, err)
	os.Exit(127)
}
