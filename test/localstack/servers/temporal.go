package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/test/localstack/procs"
)

// TemporalConfig configures a Temporal dev server.
type TemporalConfig struct {
	// Binary is the temporal CLI.
	Binary string
	// IP is the address the server and its UI bind; default 127.0.0.1.
	IP string
	// Port is the gRPC frontend port; 0 picks a free one on first start.
	Port int
	// UI enables the Web UI, on UIPort (0 picks a free one).
	UI     bool
	UIPort int
	// DBFile is the SQLite file that holds the server's state, with
	// DevServerPragmas. Empty keeps state in memory: it is lost when the
	// server stops.
	DBFile string
	// DynamicConfig maps dynamic config keys to JSON values, over
	// DevServerDynamicConfig.
	DynamicConfig map[string]string
	// Namespace is created at start and checked for readiness; default
	// "default", which the dev server always creates.
	Namespace string
	// LogFile receives the server's output (appended); empty discards it.
	LogFile string
	// LogLevel is the server's log level; default warn.
	LogLevel string
	// StartTimeout bounds each start; default 60s.
	StartTimeout time.Duration
}

// Temporal is a Temporal dev server process.
type Temporal struct {
	cfg  TemporalConfig
	proc *procs.Process
}

// NewTemporal validates cfg and picks its ports; Start starts the server.
func NewTemporal(cfg TemporalConfig) (*Temporal, error) {
	if cfg.Binary == "" {
		return nil, errors.New("temporal: no CLI binary configured")
	}
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = client.DefaultNamespace
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	// Ports are fixed once, so a restarted server is found at the same address.
	var err error
	if cfg.Port == 0 {
		if cfg.Port, err = FreePort(cfg.IP); err != nil {
			return nil, err
		}
	} else if err := checkPortFree("Temporal gRPC", cfg.IP, cfg.Port); err != nil {
		return nil, err
	}
	if cfg.UI {
		if cfg.UIPort == 0 {
			if cfg.UIPort, err = FreePort(cfg.IP); err != nil {
				return nil, err
			}
		} else if err := checkPortFree("Temporal Web UI", cfg.IP, cfg.UIPort); err != nil {
			return nil, err
		}
	}
	return &Temporal{cfg: cfg}, nil
}

// Address is the server's gRPC host:port.
func (t *Temporal) Address() string {
	return net.JoinHostPort(t.cfg.IP, strconv.Itoa(t.cfg.Port))
}

// UIAddress is the Web UI's URL, or "" without UI.
func (t *Temporal) UIAddress() string {
	if !t.cfg.UI {
		return ""
	}
	return "http://" + net.JoinHostPort(t.cfg.IP, strconv.Itoa(t.cfg.UIPort))
}

// Namespace is the namespace the server was started with.
func (t *Temporal) Namespace() string { return t.cfg.Namespace }

// Running reports whether the server process runs.
func (t *Temporal) Running() bool { return t.proc != nil && !t.proc.Exited() }

func (t *Temporal) args() []string {
	c := t.cfg
	args := []string{"server", "start-dev",
		"--ip", c.IP, "--port", strconv.Itoa(c.Port),
		"--log-level", c.LogLevel,
	}
	if c.UI {
		args = append(args, "--ui-ip", c.IP, "--ui-port", strconv.Itoa(c.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if c.DBFile != "" {
		args = append(args, "--db-filename", c.DBFile)
		for _, p := range DevServerPragmas {
			args = append(args, "--sqlite-pragma", p)
		}
	}
	dc := DevServerDynamicConfig()
	maps.Copy(dc, c.DynamicConfig)
	for _, k := range slices.Sorted(maps.Keys(dc)) {
		args = append(args, "--dynamic-config-value", k+"="+dc[k])
	}
	if c.Namespace != client.DefaultNamespace {
		args = append(args, "--namespace", c.Namespace)
	}
	return append(args, searchattr.DevServerFlags()...)
}

// Start starts the server and waits until its namespace serves requests
// and has every custom search attribute. Starting a running server is a
// no-op.
func (t *Temporal) Start(ctx context.Context) error {
	if err := t.Launch(); err != nil {
		return err
	}
	return t.WaitReady(ctx)
}

// Launch starts the server process without waiting for it, so that callers
// can start other servers meanwhile; WaitReady waits. Launching a running
// server is a no-op.
func (t *Temporal) Launch() error {
	if t.Running() {
		return nil
	}
	cmd := exec.Command(t.cfg.Binary, t.args()...)
	cmd.Env = envWithoutTemporal()
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOGC=%d", procs.ServerGOGC))
	}
	out := io.Discard
	if t.cfg.LogFile != "" {
		f, err := os.OpenFile(t.cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("temporal: opening log file: %w", err)
		}
		defer f.Close() // the child holds its own descriptor
		out = f
	}
	cmd.Stdout, cmd.Stderr = out, out
	proc, err := procs.Start("temporal server", cmd)
	if err != nil {
		return err
	}
	t.proc = proc
	return nil
}

// WaitReady waits until the launched server's namespace serves requests and
// has every custom search attribute; on failure it kills the server.
func (t *Temporal) WaitReady(ctx context.Context) error {
	if t.proc == nil {
		return errors.New("temporal: WaitReady before Launch")
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.StartTimeout)
	defer cancel()
	if err := t.waitReady(ctx); err != nil {
		_ = t.proc.Kill()
		return fmt.Errorf("temporal dev server on %s did not become ready: %w%s", t.Address(), err, logTail(t.cfg.LogFile, 20))
	}
	return nil
}

// waitReady polls until the namespace answers, then registers any custom
// search attribute a reused database lacks (the CLI registers them only
// when it creates the namespace).
func (t *Temporal) waitReady(ctx context.Context) error {
	return waitServing(ctx, t.proc, 200*time.Millisecond, t.probe)
}

func (t *Temporal) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  t.Address(),
		Namespace: t.cfg.Namespace,
		Logger:    quietLogger(),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: t.cfg.Namespace}); err != nil {
		return fmt.Errorf("describing namespace %q: %w", t.cfg.Namespace, err)
	}
	return EnsureSearchAttributes(ctx, c, t.cfg.Namespace)
}

// EnsureSearchAttributes registers every custom search attribute that the
// namespace lacks, and fails if one exists with another type.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes of namespace %q: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, d := range searchattr.Definitions {
		typ, ok := have.GetCustomAttributes()[d.Name]
		switch {
		case !ok:
			missing[d.Name] = d.Type
		case typ != d.Type:
			return fmt.Errorf("search attribute %s of namespace %q has type %s, want %s", d.Name, namespace, typ, d.Type)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("adding search attributes to namespace %q: %w", namespace, err)
	}
	return nil
}

// Stop stops the server gracefully (SIGTERM, then SIGKILL after 15s).
func (t *Temporal) Stop() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Stop(15 * time.Second)
}

// Kill kills the server at once, as a crash would.
func (t *Temporal) Kill() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Kill()
}

// envWithoutTemporal is this process's environment minus TEMPORAL_*
// variables: the CLI reads client settings (address, TLS, API key) from
// them, which are meant for our programs, not for the server it starts.
func envWithoutTemporal() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	return env
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// Done is closed when the current server process exits.
func (t *Temporal) Done() <-chan struct{} {
	if t.proc == nil {
		return nil
	}
	return t.proc.Done()
}

// Err is the current server process's exit error, once it has exited.
func (t *Temporal) Err() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Err()
}
