package servers

import (
	"context"
	"errors"
	"fmt"
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
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"ate.dev/orchestrator/internal/searchattr"
)

// TemporalConfig configures a Temporal dev server.
type TemporalConfig struct {
	// Binary is the temporal CLI.
	Binary string
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
}

// Temporal is a Temporal dev server process.
type Temporal struct {
	process
	cfg TemporalConfig
}

// NewTemporal validates cfg and picks its ports; Launch starts the server.
func NewTemporal(cfg TemporalConfig) (_ *Temporal, err error) {
	if cfg.Binary == "" {
		return nil, errors.New("temporal: no CLI binary configured")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = client.DefaultNamespace
	}
	// Ports are fixed once, so a restarted server is found at the same address.
	if cfg.Port, err = pickPort("Temporal gRPC", cfg.Port); err != nil {
		return nil, err
	}
	if cfg.UI {
		if cfg.UIPort, err = pickPort("Temporal Web UI", cfg.UIPort); err != nil {
			return nil, err
		}
	}
	return &Temporal{process: process{name: "temporal server", logFile: cfg.LogFile, stopTimeout: 15 * time.Second}, cfg: cfg}, nil
}

// Address is the server's gRPC host:port.
func (t *Temporal) Address() string { return net.JoinHostPort(loopback, strconv.Itoa(t.cfg.Port)) }

// UIAddress is the Web UI's URL, or "" without UI.
func (t *Temporal) UIAddress() string {
	if !t.cfg.UI {
		return ""
	}
	return "http://" + net.JoinHostPort(loopback, strconv.Itoa(t.cfg.UIPort))
}

// Namespace is the namespace the server was started with.
func (t *Temporal) Namespace() string { return t.cfg.Namespace }

func (t *Temporal) args() []string {
	c := t.cfg
	args := []string{"server", "start-dev", "--ip", loopback, "--port", strconv.Itoa(c.Port), "--log-level", "warn"}
	if c.UI {
		args = append(args, "--ui-ip", loopback, "--ui-port", strconv.Itoa(c.UIPort))
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

// Launch starts the server process without waiting for it, so that callers
// can start other servers meanwhile; WaitReady waits. Launching a running
// server is a no-op.
func (t *Temporal) Launch() error {
	if t.Running() {
		return nil
	}
	cmd := exec.Command(t.cfg.Binary, t.args()...)
	cmd.Env = envWithoutTemporal()
	return t.launch(cmd)
}

// WaitReady waits until the launched server's namespace serves requests and
// has every custom search attribute (registering any that a reused database
// lacks: the CLI registers them only when it creates the namespace); on
// failure it kills the server.
func (t *Temporal) WaitReady(ctx context.Context) error {
	return t.waitReady(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		return probeTemporal(ctx, t.Address(), t.cfg.Namespace, nil)
	})
}

// probeTemporal checks that the server at addr serves namespace, with every
// custom search attribute, which it registers if missing. notFound, if any,
// handles a namespace that does not exist yet.
func probeTemporal(ctx context.Context, addr, namespace string, notFound func(context.Context, client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: namespace,
		Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
		var missing *serviceerror.NamespaceNotFound
		if notFound != nil && errors.As(err, &missing) {
			return notFound(ctx, c)
		}
		return fmt.Errorf("describing namespace %q: %w", namespace, err)
	}
	return EnsureSearchAttributes(ctx, c, namespace)
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

// envWithoutTemporal is this process's environment minus TEMPORAL_*
// variables: the CLI reads client settings (address, TLS, API key) from
// them, which are meant for our programs, not for the server it starts.
func envWithoutTemporal() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TEMPORAL_") })
}
