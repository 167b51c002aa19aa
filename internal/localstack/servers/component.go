package servers

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"

	"ate.dev/orchestrator/internal/localstack/procs"
)

// component is one process of the local cluster beside the API server (the
// controller manager, the scheduler, kwok): a binary started with fixed
// arguments, its output appended to a log file, healthy once an HTTP(S)
// health endpoint answers 200.
type component struct {
	name, binary string
	args         []string
	// logFile receives the output (appended); empty discards it.
	logFile string
	// healthURL answers 200 once the process serves; https is not verified
	// (the components serve self-signed certificates on loopback).
	healthURL    string
	startTimeout time.Duration
	proc         *procs.Process
}

// running reports whether the process runs.
func (c *component) running() bool { return c.proc != nil && !c.proc.Exited() }

// start launches the process, unless it runs, and waits until it is healthy;
// on failure it kills the process and says why, with the log's last lines.
func (c *component) start(ctx context.Context) error {
	if c.running() {
		return nil
	}
	cmd := exec.Command(c.binary, c.args...)
	cmd.Env = os.Environ()
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOGC=%d", procs.ServerGOGC))
	}
	out := io.Discard
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: opening log file: %w", c.name, err)
		}
		defer f.Close() // the child holds its own descriptor
		out = f
	}
	cmd.Stdout, cmd.Stderr = out, out
	proc, err := procs.Start(c.name, cmd)
	if err != nil {
		return err
	}
	c.proc = proc
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	if err := waitServing(ctx, proc, 100*time.Millisecond, c.probe); err != nil {
		_ = proc.Kill()
		return fmt.Errorf("%s did not become healthy at %s: %w%s", c.name, c.healthURL, err, logTail(c.logFile, 20))
	}
	return nil
}

// healthClient trusts any certificate: it only asks loopback servers this
// process started whether they are up.
var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe of a child
}

func (c *component) probe(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.healthURL, nil)
	if err != nil {
		return err
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}

// stop stops the process gracefully (SIGTERM, then SIGKILL after 10s).
func (c *component) stop() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Stop(10 * time.Second)
}

// kill kills the process at once, as a crash would.
func (c *component) kill() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Kill()
}

// done is closed when the current process exits; nil before the first start.
func (c *component) done() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.Done()
}

// pid is the process's ID, or 0 when it does not run.
func (c *component) pid() int {
	if !c.running() {
		return 0
	}
	return c.proc.Pid()
}
