package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/test/localstack/procs"
)

// process is a worker or a starter run as a real subprocess, configured by
// its environment, as test/crashtest runs them: killable, restarted as a
// new incarnation with a fresh log, dead with the test binary.
type process struct {
	t      testing.TB
	role   string
	bin    string
	env    []string
	logDir string

	proc   *procs.Process
	log    string
	starts int
}

// newProcess prepares a process with env over this process's environment
// minus what configures the product (so only env does). It is stopped when
// the test ends.
func newProcess(t testing.TB, role, bin string, env []string, logDir string) *process {
	t.Helper()
	var base []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") || strings.HasPrefix(kv, "ATE_") || strings.HasPrefix(kv, "KUBECONFIG=") ||
			strings.HasPrefix(kv, "LEADER_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		base = append(base, kv)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, role: role, bin: bin, env: append(base, env...), logDir: logDir}
	t.Cleanup(p.stop)
	return p
}

// start starts a new incarnation; extra adds environment.
func (p *process) start(extra ...string) {
	p.t.Helper()
	if p.running() {
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

// startCrashing starts an incarnation that kills itself right after the
// first successful run of activity whose first argument contains arg.
func (p *process) startCrashing(activity, arg string) {
	p.t.Helper()
	p.start(crashhook.EnvActivity+"="+activity, crashhook.EnvArg+"="+arg)
}

func (p *process) running() bool { return p.proc != nil && !p.proc.Exited() }

func (p *process) stop() {
	if p.running() {
		_ = p.proc.Stop(15 * time.Second)
	}
}

// waitCrash waits for an incarnation started by startCrashing to kill
// itself after activity, and fails if it exits otherwise.
func (p *process) waitCrash(activity string, timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.proc.Done():
	case <-time.After(timeout):
		p.t.Fatalf("the %s did not crash after %s within %s; log %s:\n%s", p.role, activity, timeout, p.log, tail(p.logText(), 30))
	}
	var exit *exec.ExitError
	err := p.proc.Err()
	killed := false
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if want := "crashhook: killing the worker after " + activity + "("; !killed || !strings.Contains(p.logText(), want) {
		p.t.Fatalf("the %s exited (%v) without the crash hook's kill after %s; log %s:\n%s", p.role, err, activity, p.log, tail(p.logText(), 30))
	}
}

func (p *process) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
