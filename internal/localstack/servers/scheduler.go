package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// SchedulerConfig configures a kube-scheduler.
type SchedulerConfig struct {
	// Binary is kube-scheduler.
	Binary string
	// Dir holds its serving certificate; it must exist.
	Dir string
	// KubeconfigFile authenticates to the API server as an admin.
	KubeconfigFile string
	// LogFile receives the output (appended); empty discards it.
	LogFile string
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
}

// Scheduler is a kube-scheduler process with the default profile: it honours
// taints and tolerations, node selectors and affinity, and extended
// resources such as ate.dev/kvm as a real cluster's does.
type Scheduler struct{ c component }

// NewScheduler validates cfg and picks a free secure port; Start starts the
// process.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	for what, v := range map[string]string{"binary": cfg.Binary, "directory": cfg.Dir, "kubeconfig": cfg.KubeconfigFile} {
		if v == "" {
			return nil, fmt.Errorf("kube-scheduler: no %s configured", what)
		}
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(cfg.Dir, "kube-scheduler-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("kube-scheduler: creating %s: %w", certDir, err)
	}
	return &Scheduler{c: component{
		name:   "kube-scheduler",
		binary: cfg.Binary,
		args: []string{
			"--kubeconfig=" + cfg.KubeconfigFile,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + certDir,
			"--profiling=false",
		},
		logFile:      cfg.LogFile,
		healthURL:    "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz",
		startTimeout: cfg.StartTimeout,
	}}, nil
}

// Start starts the scheduler and waits until it is healthy. Starting a
// running one is a no-op.
func (s *Scheduler) Start(ctx context.Context) error { return s.c.start(ctx) }

// Stop stops it gracefully.
func (s *Scheduler) Stop() error { return s.c.stop() }

// Kill kills it at once, as a crash would.
func (s *Scheduler) Kill() error { return s.c.kill() }

// Running reports whether the process runs.
func (s *Scheduler) Running() bool { return s.c.running() }

// Done is closed when the current process exits.
func (s *Scheduler) Done() <-chan struct{} { return s.c.done() }

// Pid is the process ID, or 0 when it does not run.
func (s *Scheduler) Pid() int { return s.c.pid() }
