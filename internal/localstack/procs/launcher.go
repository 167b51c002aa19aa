package procs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The launcher passes these to the re-executed binary, whose init consumes
// them before anything else runs.
const (
	envExecTarget = "ATE_PROCS_EXEC_TARGET"
	envExecParent = "ATE_PROCS_EXEC_PARENT"
)

// init turns this binary into the launcher's target when a launcher script
// re-executed it: make it die with the launcher's parent (dieWithParent),
// then exec the target in this same process. In any other run it does
// nothing.
func init() {
	target, ok := os.LookupEnv(envExecTarget)
	if !ok {
		return
	}
	parent := os.Getenv(envExecParent)
	_ = os.Unsetenv(envExecTarget)
	_ = os.Unsetenv(envExecParent)
	err := dieWithParent(parent)
	if err == nil {
		err = syscall.Exec(target, append([]string{target}, os.Args[1:]...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "procs launcher: %s: %v\n", target, err)
	os.Exit(127)
}

// ServerGOGC is the GOGC the local servers (etcd, kube-apiserver, the
// Temporal dev server) run with unless GOGC is set: they trade memory,
// which this machine has, for less garbage collection, which costs CPU the
// product's switches need (see BENCHMARKS.md, "The dev server's settings").
const ServerGOGC = 400

// WriteLauncher writes an executable script dir/name that runs target with
// the script's arguments, as a child that dies with this process, and
// records the child's PID in dir/name.pid (the PID survives the execs).
// Give the script's path to code that forks target itself.
func WriteLauncher(dir, name, target string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this executable to re-execute as launcher of %s: %w", name, err)
	}
	script := fmt.Sprintf(`#!/bin/sh
# Written by ate.dev/orchestrator/internal/localstack/procs for process %d:
# re-executes that program, which sets the parent-death signal and then
# execs the target, so %s dies with process %d.
echo $$ > %s
GOGC="${GOGC:-%d}" %s=%s %s=%d exec %s "$@"
`, os.Getpid(), name, os.Getpid(),
		shellQuote(filepath.Join(dir, name+".pid")), ServerGOGC,
		envExecTarget, shellQuote(target), envExecParent, os.Getpid(), shellQuote(self))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("writing launcher for %s: %w", name, err)
	}
	return path, nil
}

// ReadPID reads the PID a launcher recorded.
func ReadPID(dir, name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("reading PID of %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parsing PID of %s: %w", name, err)
	}
	return pid, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
