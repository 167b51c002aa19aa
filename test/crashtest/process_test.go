package crashtest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/test/localstack/procs"
	"ate.dev/orchestrator/test/testenv"
)

// process is the worker or the starter run as a real subprocess, as in
// production: configured by environment, killable with SIGKILL, restarted
// as a new incarnation with a fresh log. It dies with the test binary.
type process struct {
	t          testing.TB
	role       string // "worker" or "starter"
	bin        string
	env        []string
	logDir     string
	healthAddr string // "" serves no probes

	proc    *procs.Process
	log     string // the current incarnation's log file
	starts  int
	crashed int // incarnations that the crash hook killed
}

// newProcess prepares a worker or a starter on a task queue. healthAddr is
// its HEALTH_PROBE_BIND_ADDRESS ("" for none). It is stopped when the test
// ends.
func newProcess(t testing.TB, role, taskQueue, healthAddr string) *process {
	t.Helper()
	worker, starter := binaries(t)
	bin := map[string]string{"worker": worker, "starter": starter}[role]
	env := testenv.Current()
	if healthAddr == "" {
		healthAddr = "0"
	}
	var base []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") || strings.HasPrefix(kv, "ATE_CRASH_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		base = append(base, kv)
	}
	base = append(base,
		"KUBECONFIG="+env.KubeconfigPath,
		"TEMPORAL_ADDRESS="+env.TemporalAddress,
		"TEMPORAL_NAMESPACE="+env.TemporalNamespace,
		"TEMPORAL_TASK_QUEUE="+taskQueue,
		"METRICS_BIND_ADDRESS=0",
		"HEALTH_PROBE_BIND_ADDRESS="+healthAddr,
	)
	dir := filepath.Join(env.Dir, "crashtest", testenv.UniqueName(t))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, role: role, bin: bin, env: base, logDir: dir, healthAddr: healthAddr}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s logs in %s", role, dir)
		}
	})
	return p
}

// start starts a new incarnation; extra adds environment, e.g. the crash hook's.
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

// kill kills the running incarnation with SIGKILL, as a crash would.
func (p *process) kill() {
	p.t.Helper()
	if p.running() {
		if err := p.proc.Kill(); err != nil {
			p.t.Fatal(err)
		}
	}
}

// stop stops the running incarnation as a shutdown does (SIGTERM).
func (p *process) stop() {
	if p.running() {
		_ = p.proc.Stop(15 * time.Second)
	}
}

// waitCrash waits for the incarnation started by startCrashing to kill
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
	want := "crashhook: killing the worker after " + activity + "("
	if !killed || !strings.Contains(p.logText(), want) {
		p.t.Fatalf("the %s exited (%v) without the crash hook's kill after %s; log %s:\n%s", p.role, err, activity, p.log, tail(p.logText(), 30))
	}
	p.crashed++
}

// logText is the current incarnation's log.
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

// probe returns the HTTP status of a probe path, or 0 when nothing answers.
func (p *process) probe(path string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.healthAddr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
