package procs

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns this binary into the launcher's target when a launcher script
// re-executed it: set SIGKILL as the parent-death signal, make sure the
// parent did not die before that, and exec the target in this same process
// (the signal survives exec). In any other run it does nothing.
func init() {
	target, ok := os.LookupEnv(envExecTarget)
	if !ok {
		return
	}
	parent := os.Getenv(envExecParent)
	_ = os.Unsetenv(envExecTarget)
	_ = os.Unsetenv(envExecParent)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "procs launcher: setting the parent-death signal for %s: %v\n", target, err)
		os.Exit(127)
	}
	if strconv.Itoa(os.Getppid()) != parent {
		// The parent died between fork and prctl: nobody would stop us.
		os.Exit(127)
	}
	argv := append([]string{target}, os.Args[1:]...)
	err := syscall.Exec(target, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "procs launcher: exec %s: %v\n", target, err)
	os.Exit(127)
}
