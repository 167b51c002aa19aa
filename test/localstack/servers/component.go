package servers

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"ate.dev/orchestrator/test/localstack/procs"
)

// component is one process of the local cluster beside the API server (the
// controller manager, the scheduler, kwok): a binary started with fixed
// arguments, its output appended to a log file, healthy once an HTTP(S)
// health endpoint answers 200. Each server type embeds it, so its exported
// methods (Start, Stop, Kill, Running, Done, Pid) are the server's.
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

// Running reports whether the process runs.
func (c *component) Running() bool { return c.proc != nil && !c.proc.Exited() }

// Start launches the process, unless it runs, and waits until it is healthy;
// on failure it kills the process and says why, with the log's last lines.
func (c *component) Start(ctx context.Context) error {
	if c.Running() {
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

// Stop stops the process gracefully (SIGTERM, then SIGKILL after 10s).
func (c *component) Stop() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Stop(10 * time.Second)
}

// Kill kills the process at once, as a crash would.
func (c *component) Kill() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Kill()
}

// Done is closed when the current process exits; nil before the first start.
func (c *component) Done() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.Done()
}

// Pid is the process's ID, or 0 when it does not run.
func (c *component) Pid() int {
	if !c.Running() {
		return 0
	}
	return c.proc.Pid()
}

// kubeServing picks a free secure port for a Kubernetes component (the
// controller manager, the scheduler) and makes the directory for the
// serving certificate it generates, and returns the flags that serve its
// health endpoint there, on loopback, without leader election or profiling.
func kubeServing(name, dir string) (healthURL string, flags []string, err error) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return "", nil, err
	}
	certDir := filepath.Join(dir, name+"-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", nil, fmt.Errorf("%s: creating %s: %w", name, certDir, err)
	}
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz", []string{
		// One instance: no lease to take, no wait for it at start.
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--profiling=false",
	}, nil
}
