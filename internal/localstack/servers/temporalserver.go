package servers

import (
	"context"
	"errors"
	"fmt"
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
)

// TemporalServerBinaries finds temporal-server and temporal-sql-tool in
// binDir (the repository's bin/, where `make tools` links them), or says how
// to build them.
func TemporalServerBinaries(binDir string) (server, sqlTool string, err error) {
	if server, err = FindBinary("temporal-server", filepath.Join(binDir, "temporal-server"), "from the repository's bin/"); err != nil {
		return "", "", err
	}
	sqlTool, err = FindBinary("temporal-sql-tool", filepath.Join(binDir, "temporal-sql-tool"), "from the repository's bin/")
	return server, sqlTool, err
}

// TemporalServerConfig configures a production-shaped Temporal server: the
// temporal-server binary (every service in one process), PostgreSQL
// persistence and SQL visibility, 4 history shards.
type TemporalServerConfig struct {
	// ServerBinary is temporal-server, SQLToolBinary temporal-sql-tool
	// (both built from hack/tools/temporal-server).
	ServerBinary, SQLToolBinary string
	// Port is the frontend's gRPC port; 0 picks a free one.
	Port int
	// Namespace is registered at start; default "default".
	Namespace string
	// DynamicConfig maps dynamic config keys to JSON values.
	DynamicConfig map[string]string
	// LogFile receives the server's output (appended), and postgres.log
	// beside it PostgreSQL's; empty discards both.
	LogFile string
}

// TemporalServer is a Temporal server on its own PostgreSQL. Stop and Kill
// act on the server process only, so a test can crash and restart it over
// the same database; Close removes everything.
type TemporalServer struct {
	process
	cfg   TemporalServerConfig
	dir   string // config files
	ports map[string]int
	pg    *Postgres
}

// The services temporal-server runs in one process, each with a gRPC and
// a membership port.
var temporalServices = []string{"frontend", "history", "matching", "worker"}

// temporalServerStartTimeout bounds each start: the first creates the schema.
const temporalServerStartTimeout = 120 * time.Second

// NewTemporalServer validates cfg and picks its ports; Launch starts it.
func NewTemporalServer(cfg TemporalServerConfig) (_ *TemporalServer, err error) {
	if cfg.ServerBinary == "" || cfg.SQLToolBinary == "" {
		return nil, errors.New("temporal server: temporal-server and temporal-sql-tool binaries must be configured")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = client.DefaultNamespace
	}
	// Ports are fixed once, so a restarted server is found at the same address.
	if cfg.Port, err = pickPort("Temporal gRPC", cfg.Port); err != nil {
		return nil, err
	}
	t := &TemporalServer{
		process: process{name: "temporal-server", logFile: cfg.LogFile, stopTimeout: 15 * time.Second},
		cfg:     cfg, ports: map[string]int{"frontend.grpc": cfg.Port},
	}
	for _, name := range []string{"frontend.http", "frontend.membership",
		"history.grpc", "history.membership", "matching.grpc", "matching.membership",
		"worker.grpc", "worker.membership"} {
		// FreePort's ports fit the smallint the membership table stores.
		if t.ports[name], err = FreePort(loopback); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Address is the frontend's gRPC host:port.
func (t *TemporalServer) Address() string {
	return net.JoinHostPort(loopback, strconv.Itoa(t.cfg.Port))
}

// UIAddress is "": this stack has no Web UI (the dev server's is part of
// the temporal CLI).
func (t *TemporalServer) UIAddress() string { return "" }

// Namespace is the namespace registered at start.
func (t *TemporalServer) Namespace() string { return t.cfg.Namespace }

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
	return t.launch(cmd)
}

// setUp starts PostgreSQL, creates both databases with the schema tool and
// writes the server's config; on error it removes what it made.
func (t *TemporalServer) setUp() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), temporalServerStartTimeout)
	defer cancel()
	if t.dir, err = os.MkdirTemp("", "ate-temporal-server-"); err != nil {
		return fmt.Errorf("temporal server: creating the config directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	pgLog := ""
	if t.cfg.LogFile != "" {
		pgLog = filepath.Join(filepath.Dir(t.cfg.LogFile), "postgres.log")
	}
	if t.pg, err = StartPostgres(ctx, pgLog); err != nil {
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
	base := []string{"--plugin", "postgres12", "--endpoint", loopback, "--port", strconv.Itoa(t.pg.port),
		"--user", postgresUser, "--password", "unused-trust-auth", "--database", db}
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
	return t.waitReady(ctx, temporalServerStartTimeout, 250*time.Millisecond, func(ctx context.Context) error {
		return probeTemporal(ctx, t.Address(), t.cfg.Namespace, t.register)
	})
}

// register registers the namespace: a real server has none until one is
// (the compose stack's temporal-setup job does it); the frontend's namespace
// cache then picks it up within seconds.
func (t *TemporalServer) register(ctx context.Context, c client.Client) error {
	if _, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
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
