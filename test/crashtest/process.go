package crashtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/internal/localstack/procs"
)

// Process is a worker or a starter run as a real subprocess, as in
// production: configured by environment, killable with SIGKILL, restarted
// as a new incarnation with a fresh log. It dies with the test binary. The
// crash tests run theirs with newProcess; test/fleet runs a second
// cluster's with NewProcess.
type Process struct {
	t          testing.TB
	role       string // "worker" or "starter"
	bin        string
	env        []string
	logDir     string
	healthAddr string // "" serves no probes

	proc   *procs.Process
	log    string // the current incarnation's log file
	starts int
}

// NewProcess prepares the program bin as role, run with env as its whole
// environment (HostEnv gives the host's without what configures the
// product), its logs in logDir. It is stopped when the test ends.
func NewProcess(t testing.TB, role, bin string, env []string, logDir string) *Process {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Process{t: t, role: role, bin: bin, env: env, logDir: logDir}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s logs in %s", role, logDir)
		}
	})
	return p
}

// HostEnv is this process's environment without the variables that begin
// with any of drop, so that only what a test adds configures a product
// process.
func HostEnv(drop ...string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return slices.ContainsFunc(drop, func(prefix string) bool { return strings.HasPrefix(kv, prefix) })
	})
}

// Start starts a new incarnation; extra adds environment, e.g. the crash hook's.
func (p *Process) Start(extra ...string) {
	p.t.Helper()
	if p.Running() {
		p.t.Fatalf("%s already running", p.role)
	}
	p.starts++
	p.log = filepath.Join(p.logDir, fmt.Sprintf("%s-%d.log", p.role, p.starts))
	f, err := os.Create(p.log)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close() // the child holds its own descriptor
	cmd := exec.Command(p.bin)
	cmd.Env = append(append([]string{}, p.env...), extra...)
	cmd.Stdout, cmd.Stderr = f, f
	if p.proc, err = procs.Start(p.role, cmd); err != nil {
		p.t.Fatal(err)
	}
}

// StartCrashing starts an incarnation that kills itself right after the
// first successful run of activity whose first argument contains arg.
func (p *Process) StartCrashing(activity, arg string) {
	p.t.Helper()
	p.Start(crashhook.EnvActivity+"="+activity, crashhook.EnvArg+"="+arg)
}

// Running reports whether an incarnation runs.
func (p *Process) Running() bool { return p.proc != nil && !p.proc.Exited() }

// Kill kills the running incarnation with SIGKILL, as a crash would.
func (p *Process) Kill() {
	p.t.Helper()
	if p.Running() {
		if err := p.proc.Kill(); err != nil {
			p.t.Fatal(err)
		}
	}
}

// Stop stops the running incarnation as a shutdown does (SIGTERM).
func (p *Process) Stop() {
	if p.Running() {
		_ = p.proc.Stop(15 * time.Second)
	}
}

// WaitCrash waits for the incarnation started by StartCrashing to kill
// itself after activity, and fails if it exits otherwise.
func (p *Process) WaitCrash(activity string, timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.proc.Done():
	case <-time.After(timeout):
		p.t.Fatalf("the %s did not crash after %s within %s; log %s:\n%s", p.role, activity, timeout, p.log, Tail(p.LogText(), 30))
	}
	var exit *exec.ExitError
	err := p.proc.Err()
	var ws syscall.WaitStatus
	if errors.As(err, &exit) {
		ws, _ = exit.Sys().(syscall.WaitStatus)
	}
	killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
	want := "crashhook: killing the worker after " + activity + "("
	if !killed || !strings.Contains(p.LogText(), want) {
		p.t.Fatalf("the %s exited (%v) without the crash hook's kill after %s; log %s:\n%s", p.role, err, activity, p.log, Tail(p.LogText(), 30))
	}
}

// Pid is the process ID of the current (or last) incarnation, 0 before the
// first: with the host name, the start of its Temporal identity.
func (p *Process) Pid() int {
	if p.proc == nil {
		return 0
	}
	return p.proc.Pid()
}

// LogText is the current incarnation's log.
func (p *Process) LogText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
