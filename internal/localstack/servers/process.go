package servers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"ate.dev/orchestrator/internal/localstack/procs"
)

// process is a server's process, its output appended to logFile (empty:
// discarded). The servers embed it for Running, Stop, Kill, Done, Err and
// Pid, which are no-ops (or zero) before the first launch.
type process struct {
	name, logFile string
	stopTimeout   time.Duration // between Stop's SIGTERM and its SIGKILL
	proc          *procs.Process
}

// launch starts cmd, with GOGC=procs.ServerGOGC unless GOGC is set.
func (p *process) launch(cmd *exec.Cmd) error {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOGC=%d", procs.ServerGOGC))
	}
	if p.logFile != "" {
		f, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: opening log file: %w", p.name, err)
		}
		defer f.Close() // the child holds its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	proc, err := procs.Start(p.name, cmd)
	if err != nil {
		return err
	}
	p.proc = proc
	return nil
}

// waitReady probes the launched process every interval until probe
// succeeds. If the process exits (no use waiting: it says so at once) or
// timeout passes, it kills the process and fails with the last probe's error
// and the log's last lines.
func (p *process) waitReady(ctx context.Context, timeout, interval time.Duration, probe func(context.Context) error) error {
	if p.proc == nil {
		return fmt.Errorf("%s: waiting for it before its launch", p.name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := p.poll(ctx, interval, probe)
	if err == nil {
		return nil
	}
	_ = p.proc.Kill()
	return fmt.Errorf("%s did not become ready: %w%s", p.name, err, logTail(p.logFile, 20))
}

func (p *process) poll(ctx context.Context, interval time.Duration, probe func(context.Context) error) error {
	for {
		if p.proc.Exited() {
			return fmt.Errorf("the server exited: %w", p.proc.Err())
		}
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-p.proc.Done():
		case <-time.After(interval):
		}
	}
}

// logTail returns the last lines of a log file, to put a server's own
// explanation into the error when it fails to start.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	s := strings.TrimRight(string(b), "\n")
	if err != nil || s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	return fmt.Sprintf("\n--- last lines of %s ---\n%s", path, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// Name names the process's program.
func (p *process) Name() string { return p.name }

// Running reports whether the process runs.
func (p *process) Running() bool { return p.proc != nil && !p.proc.Exited() }

// Stop stops the process gracefully: SIGTERM, then SIGKILL after stopTimeout.
func (p *process) Stop() error {
	if p.proc == nil {
		return nil
	}
	return p.proc.Stop(p.stopTimeout)
}

// Kill kills the process at once, as a crash would.
func (p *process) Kill() error {
	if p.proc == nil {
		return nil
	}
	return p.proc.Kill()
}

// Done is closed when the current process exits; nil before the first launch.
func (p *process) Done() <-chan struct{} {
	if p.proc == nil {
		return nil
	}
	return p.proc.Done()
}

// Err is the current process's exit error, once it has exited.
func (p *process) Err() error {
	if p.proc == nil {
		return nil
	}
	return p.proc.Err()
}

// Pid is the process's ID, or 0 when it does not run.
func (p *process) Pid() int {
	if !p.Running() {
		return 0
	}
	return p.proc.Pid()
}

// pickPort returns port, checked free on loopback, or a free one for 0.
func pickPort(what string, port int) (int, error) {
	if port == 0 {
		return FreePort(loopback)
	}
	return port, checkPortFree(what, loopback, port)
}
