package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"ate.dev/orchestrator/test/localstack/procs"
)

// TemporalServerBinaries finds temporal-server and temporal-sql-tool in
// binDir (the repository's bin/, where `make tools` links them), or says how
// to build them.
func TemporalServerBinaries(binDir string) (server, sqlTool string, err error) {
	if server, err = FindBinary("temporal-server", filepath.Join(binDir, "temporal-server"), "from the repository's bin/"); err != nil {
		return "", "", err
	}
	if sqlTool, err = FindBinary("temporal-sql-tool", filepath.Join(binDir, "temporal-sql-tool"), "from the repository's bin/"); err != nil {
		return "", "", err
	}
	return server, sqlTool, nil
}

// TemporalServerConfig configures a production-shaped Temporal server: the
// temporal-server binary (every service in one process), PostgreSQL
// persistence and SQL visibility, several history shards.
type TemporalServerConfig struct {
	// ServerBinary is temporal-server, SQLToolBinary temporal-sql-tool
	// (both built from hack/tools/temporal-server).
	ServerBinary, SQLToolBinary string
	// Postgres configures the database server; its LogFile defaults to
	// "postgres.log" beside LogFile.
	Postgres PostgresConfig
	// IP is the address every service binds; default 127.0.0.1. Port is the
	// frontend's gRPC port; 0 picks a free one.
	IP   string
	Port int
	// Namespace is registered at start; default "default".
	Namespace string
	// HistoryShards is fixed when the database is created; default 4.
	HistoryShards int
	// DynamicConfig maps dynamic config keys to JSON values.
	DynamicConfig map[string]string
	// LogFile receives the server's output (appended); empty discards it.
	LogFile string
	// LogLevel is the server's log level; default warn.
	LogLevel string
	// StartTimeout bounds each start; default 120s (the first start creates
	// the schema).
	StartTimeout time.Duration
}

// TemporalServer is a Temporal server on its own PostgreSQL. Stop and Kill
// act on the server process only, so a test can crash and restart it over
// the same database; Close removes everything.
type TemporalServer struct {
	cfg   TemporalServerConfig
	dir   string // config files
	ports map[string]int
	pg    *Postgres
	proc  *procs.Process
}

// The services temporal-server runs in one process, each with a gRPC and
// a membership port.
var temporalServices = []string{"frontend", "history", "matching", "worker"}

// NewTemporalServer validates cfg and picks its ports; Launch starts it.
func NewTemporalServer(cfg TemporalServerConfig) (*TemporalServer, error) {
	if cfg.ServerBinary == "" || cfg.SQLToolBinary == "" {
		return nil, errors.New("temporal server: temporal-server and temporal-sql-tool binaries must be configured")
	}
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = client.DefaultNamespace
	}
	if cfg.HistoryShards == 0 {
		cfg.HistoryShards = 4
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 120 * time.Second
	}
	if cfg.Postgres.LogFile == "" && cfg.LogFile != "" {
		cfg.Postgres.LogFile = filepath.Join(filepath.Dir(cfg.LogFile), "postgres.log")
	}
	t := &TemporalServer{cfg: cfg, ports: map[string]int{}}
	// Ports are fixed once, so a restarted server is found at the same address.
	var err error
	if cfg.Port == 0 {
		if t.cfg.Port, err = FreePort(cfg.IP); err != nil {
			return nil, err
		}
	} else if err := checkPortFree("Temporal gRPC", cfg.IP, cfg.Port); err != nil {
		return nil, err
	}
	t.ports["frontend.grpc"] = t.cfg.Port
	for _, name := range []string{"frontend.http", "frontend.membership",
		"history.grpc", "history.membership", "matching.grpc", "matching.membership",
		"worker.grpc", "worker.membership"} {
		// FreePort's ports fit the smallint the membership table stores.
		if t.ports[name], err = FreePort(cfg.IP); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Address is the frontend's gRPC host:port.
func (t *TemporalServer) Address() string {
	return net.JoinHostPort(t.cfg.IP, strconv.Itoa(t.cfg.Port))
}

// UIAddress is "": this stack has no Web UI (the dev server's is part of
// the temporal CLI).
func (t *TemporalServer) UIAddress() string { return "" }

// Namespace is the namespace registered at start.
func (t *TemporalServer) Namespace() string { return t.cfg.Namespace }

// Postgres is the database server, once launched.
func (t *TemporalServer) Postgres() *Postgres { return t.pg }

// Running reports whether the server process runs.
func (t *TemporalServer) Running() bool { return t.proc != nil && !t.proc.Exited() }

// Start launches the server and waits until it serves.
func (t *TemporalServer) Start(ctx context.Context) error {
	if err := t.Launch(); err != nil {
		return err
	}
	return t.WaitReady(ctx)
}

// Launch starts PostgreSQL and creates the schemas (the first time only),
// then starts the server process without waiting for it to serve. Launching
// a running server is a no-op.
func (t *TemporalServer) Launch() error {
	if t.Running() {
		return nil
	}
	if t.pg == nil {
		if err := t.setUp(); err != nil {
			return err
		}
	}
	cmd := exec.Command(t.cfg.ServerBinary, "--config-file", t.configFile(), "--allow-no-auth", "start")
	cmd.Env = envWithoutTemporal()
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOGC=%d", procs.ServerGOGC))
	}
	out, closeOut, err := t.logOutput()
	if err != nil {
		return err
	}
	defer closeOut() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = out, out
	proc, err := procs.Start("temporal-server", cmd)
	if err != nil {
		return err
	}
	t.proc = proc
	return nil
}

func (t *TemporalServer) logOutput() (io.Writer, func(), error) {
	if t.cfg.LogFile == "" {
		return io.Discard, func() {}, nil
	}
	f, err := os.OpenFile(t.cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("temporal server: opening log file: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// setUp starts PostgreSQL, creates both databases with the schema tool and
// writes the server's config; on error it removes what it made.
func (t *TemporalServer) setUp() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.StartTimeout)
	defer cancel()
	if t.dir, err = os.MkdirTemp("", "ate-temporal-server-"); err != nil {
		return fmt.Errorf("temporal server: creating the config directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	if t.pg, err = StartPostgres(ctx, t.cfg.Postgres); err != nil {
		return err
	}
	for _, db := range []struct{ name, schema string }{
		{"temporal", "postgresql/v12/temporal"},
		{"temporal_visibility", "postgresql/v12/visibility"},
	} {
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "--version", "0.0"},
			{"update-schema", "--schema-name", db.schema},
		} {
			if err := t.sqlTool(ctx, db.name, args...); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(t.configFile(), []byte(t.config()), 0o644); err != nil {
		return fmt.Errorf("temporal server: writing config: %w", err)
	}
	if err := os.WriteFile(t.dynamicConfigFile(), []byte(t.dynamicConfig()), 0o644); err != nil {
		return fmt.Errorf("temporal server: writing dynamic config: %w", err)
	}
	return nil
}

func (t *TemporalServer) sqlTool(ctx context.Context, db string, args ...string) error {
	base := []string{"--plugin", "postgres12", "--endpoint", t.pg.IP(), "--port", strconv.Itoa(t.pg.Port()),
		"--user", t.pg.User(), "--password", "unused-trust-auth", "--database", db}
	cmd := exec.CommandContext(ctx, t.cfg.SQLToolBinary, append(base, args...)...)
	cmd.Env = envWithoutTemporal()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("temporal-sql-tool %s on database %s: %w\n%s", strings.Join(args, " "), db, err, out)
	}
	return nil
}

func (t *TemporalServer) configFile() string { return filepath.Join(t.dir, "temporal-server.yaml") }
func (t *TemporalServer) dynamicConfigFile() string {
	return filepath.Join(t.dir, "dynamicconfig.yaml")
}

// WaitReady waits until the launched server serves the namespace (which it
// registers) with every custom search attribute; on failure it kills the
// server.
func (t *TemporalServer) WaitReady(ctx context.Context) error {
	if t.proc == nil {
		return errors.New("temporal server: WaitReady before Launch")
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.StartTimeout)
	defer cancel()
	err := waitServing(ctx, t.proc, 250*time.Millisecond, t.probe)
	if err == nil {
		return nil
	}
	_ = t.proc.Kill()
	return fmt.Errorf("temporal server on %s did not become ready: %w%s", t.Address(), err, logTail(t.cfg.LogFile, 20))
}

func (t *TemporalServer) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: t.Address(), Namespace: t.cfg.Namespace, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	ws := c.WorkflowService()
	if _, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: t.cfg.Namespace}); err != nil {
		var notFound *serviceerror.NamespaceNotFound
		if !errors.As(err, &notFound) {
			return fmt.Errorf("describing namespace %q: %w", t.cfg.Namespace, err)
		}
		// A real server has no namespace until one is registered (the
		// compose stack's temporal-setup job does it); the frontend's
		// namespace cache then picks it up within seconds.
		if _, err := ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        t.cfg.Namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
		}); err != nil {
			var exists *serviceerror.NamespaceAlreadyExists
			if !errors.As(err, &exists) {
				return fmt.Errorf("registering namespace %q: %w", t.cfg.Namespace, err)
			}
		}
		return fmt.Errorf("namespace %q registered, waiting for the server to serve it", t.cfg.Namespace)
	}
	return EnsureSearchAttributes(ctx, c, t.cfg.Namespace)
}

// Stop stops the server process gracefully (SIGTERM, then SIGKILL after
// 15s); PostgreSQL and its data stay for Launch.
func (t *TemporalServer) Stop() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Stop(15 * time.Second)
}

// Kill kills the server process at once, as a crash would.
func (t *TemporalServer) Kill() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Kill()
}

// Close stops the server and PostgreSQL and removes their directories. It
// is safe to call more than once.
func (t *TemporalServer) Close() error {
	errs := []error{t.Stop()}
	t.proc = nil
	if t.pg != nil {
		errs = append(errs, t.pg.Stop())
		t.pg = nil
	}
	if t.dir != "" {
		errs = append(errs, os.RemoveAll(t.dir))
		t.dir = ""
	}
	return errors.Join(errs...)
}

// Done is closed when the current server process exits.
func (t *TemporalServer) Done() <-chan struct{} {
	if t.proc == nil {
		return nil
	}
	return t.proc.Done()
}

// Err is the current server process's exit error, once it has exited.
func (t *TemporalServer) Err() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Err()
}
