package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	tclient "go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// Options configures Start. The zero value starts both servers with
// in-memory Temporal state.
type Options struct {
	// CRDDirs are the directories of CRDs to install; default <repo>/deploy/crds.
	CRDDirs []string

	// TemporalNamespace is the Temporal namespace of Env.Temporal; default
	// "default". Another name is created at start.
	TemporalNamespace string
	// PersistTemporal keeps the Temporal server's state in a SQLite file
	// under Env.Dir, so histories survive RestartTemporal and KillTemporal.
	PersistTemporal bool
	// TemporalDBFile names that SQLite file explicitly (implies PersistTemporal).
	TemporalDBFile string
	// TemporalDynamicConfig adds dynamic config values, key to JSON value,
	// e.g. {"limit.maxIDLength": "1000"}.
	TemporalDynamicConfig map[string]string
	// TemporalUI starts the Web UI too (Env.TemporalUIAddress); the dev
	// server stack only.
	TemporalUI bool
	// TemporalStack chooses the Temporal server: StackDev (the temporal
	// CLI's dev server, the default) or StackPostgres (temporal-server on
	// PostgreSQL with SQL visibility and 4 history shards, as production
	// runs it). Empty takes $ATE_TEMPORAL_STACK, then StackDev.
	TemporalStack string

	// NoKube and NoTemporal skip a server a package does not need.
	NoKube, NoTemporal bool
}

// Env is a running test environment.
type Env struct {
	// Dir holds the servers' state and logs (logs/*.log).
	Dir string
	// Scheme has client-go's types and ate.dev/v1alpha1.
	Scheme *runtime.Scheme

	// RestConfig authenticates to the kube-apiserver as an admin.
	RestConfig *rest.Config
	// KubeconfigPath is a kubeconfig file for RestConfig, for processes
	// and kubectl.
	KubeconfigPath string
	// Kube is a controller-runtime client (no cache) with Scheme.
	Kube client.Client

	// TemporalAddress is the Temporal frontend's host:port.
	TemporalAddress string
	// TemporalNamespace is the namespace Temporal is bound to.
	TemporalNamespace string
	// TemporalUIAddress is the Web UI's URL when Options.TemporalUI is set.
	TemporalUIAddress string
	// Temporal is a client of TemporalNamespace.
	Temporal tclient.Client
	// TemporalCLI is the path of the temporal CLI (the dev server's binary),
	// for tests that drive the server as an operator would.
	TemporalCLI string
	// TemporalStack is the stack Temporal runs on (StackDev or StackPostgres).
	TemporalStack string

	kube     *servers.Kube
	temporal temporalServer
	logs     []*os.File // closed by Stop
	launched bool       // a server process was started, so its logs matter
	keep     bool
}

// Start starts the servers. On error nothing is left running.
func Start(opts Options) (_ *Env, err error) {
	root, err := servers.RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	dir, err := os.MkdirTemp("", "ate-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: creating the state directory: %w", err)
	}
	e := &Env{Dir: dir, Scheme: NewScheme(), keep: os.Getenv("ATE_TESTENV_KEEP") == "1"}
	defer func() {
		if err == nil {
			return
		}
		if e.launched {
			e.keep = true // the logs explain the failure
			err = fmt.Errorf("%w (server logs in %s)", err, e.logDir())
		}
		err = errors.Join(fmt.Errorf("testenv: %w", err), e.Stop())
	}()
	if err := os.Mkdir(e.logDir(), 0o755); err != nil {
		return nil, err
	}

	// Launch Temporal first and wait for it while the control plane starts:
	// each takes seconds.
	temporalReady := make(chan error, 1)
	if !opts.NoTemporal {
		if err := e.launchTemporal(root, opts); err != nil {
			return nil, err
		}
		go func() { temporalReady <- e.temporal.WaitReady(context.Background()) }()
	} else {
		temporalReady <- nil
	}
	var kubeErr error
	if !opts.NoKube {
		kubeErr = e.startKube(root, opts)
	}
	if err := errors.Join(kubeErr, <-temporalReady); err != nil {
		return nil, err
	}
	if !opts.NoTemporal {
		if err := e.dialTemporal(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) logDir() string { return filepath.Join(e.Dir, "logs") }

func (e *Env) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(e.logDir(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	e.logs = append(e.logs, f)
	return f, nil
}

func (e *Env) startKube(root string, opts Options) error {
	binDir, how := filepath.Join(root, "bin"), "from the repository's bin/"
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		binDir, how = d, "from $KUBEBUILDER_ASSETS"
	}
	etcd, err := servers.FindBinary("etcd", filepath.Join(binDir, "etcd"), how)
	if err != nil {
		return err
	}
	apiServer, err := servers.FindBinary("kube-apiserver", filepath.Join(binDir, "kube-apiserver"), how)
	if err != nil {
		return err
	}
	crdDirs := opts.CRDDirs
	if len(crdDirs) == 0 {
		crdDirs = []string{filepath.Join(root, "deploy", "crds")}
	}
	etcdLog, err := e.logFile("etcd")
	if err != nil {
		return err
	}
	apiServerLog, err := e.logFile("kube-apiserver")
	if err != nil {
		return err
	}
	e.launched = true
	e.kube, err = servers.StartKube(servers.KubeConfig{
		EtcdBinary: etcd, APIServerBinary: apiServer,
		Dir:     filepath.Join(e.Dir, "kube"),
		CRDDirs: crdDirs,
		Scheme:  e.Scheme,
		EtcdLog: etcdLog, APIServerLog: apiServerLog,
	})
	if err != nil {
		return err
	}
	e.RestConfig = e.kube.RestConfig
	e.KubeconfigPath = filepath.Join(e.Dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, e.kube.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	e.Kube, err = client.New(e.RestConfig, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return nil
}

func (e *Env) launchTemporal(root string, opts Options) error {
	path, how := filepath.Join(root, "bin", "temporal"), "from the repository's bin/"
	if p := os.Getenv("ATE_TEMPORAL_CLI"); p != "" {
		path, how = p, "from $ATE_TEMPORAL_CLI"
	}
	bin, err := servers.FindBinary("temporal", path, how)
	if err != nil {
		return err
	}
	e.TemporalCLI = bin
	if e.TemporalStack, err = stackOf(opts); err != nil {
		return err
	}
	// Assigned only on success: a typed nil in e.temporal would be stopped.
	if e.TemporalStack == StackPostgres {
		t, err := newPostgresTemporal(root, e.logDir(), opts)
		if err != nil {
			return err
		}
		e.temporal = t
	} else {
		t, err := e.newDevTemporal(bin, opts)
		if err != nil {
			return err
		}
		e.temporal = t
	}
	e.TemporalAddress = e.temporal.Address()
	e.TemporalNamespace = e.temporal.Namespace()
	e.TemporalUIAddress = e.temporal.UIAddress()
	e.launched = true
	return e.temporal.Launch()
}

func (e *Env) newDevTemporal(bin string, opts Options) (*servers.Temporal, error) {
	db := opts.TemporalDBFile
	if db == "" && opts.PersistTemporal {
		db = filepath.Join(e.Dir, "temporal.db")
	}
	return servers.NewTemporal(servers.TemporalConfig{
		Binary:        bin,
		UI:            opts.TemporalUI,
		DBFile:        db,
		DynamicConfig: dynamicConfig(opts.TemporalDynamicConfig),
		Namespace:     opts.TemporalNamespace,
		LogFile:       filepath.Join(e.logDir(), "temporal.log"),
	})
}

func (e *Env) dialTemporal() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := tclient.DialContext(ctx, e.TemporalClientOptions())
	if err != nil {
		return fmt.Errorf("dialing Temporal at %s: %w", e.TemporalAddress, err)
	}
	e.Temporal = c
	return nil
}

// TemporalClientOptions are the options of Env.Temporal, for code under
// test that dials its own client. The SDK's logger reports warnings and
// errors only.
func (e *Env) TemporalClientOptions() tclient.Options {
	return tclient.Options{
		HostPort:  e.TemporalAddress,
		Namespace: e.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
}

// Stop stops every server and removes Dir, unless it is kept for its logs.
// It is safe to call more than once.
func (e *Env) Stop() error {
	var errs []error
	if e.Temporal != nil {
		e.Temporal.Close()
		e.Temporal = nil
	}
	if e.temporal != nil {
		errs = append(errs, e.temporal.Stop())
		if c, ok := e.temporal.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
		e.temporal = nil
	}
	if e.kube != nil {
		errs = append(errs, e.kube.Stop())
		e.kube = nil
	}
	for _, f := range e.logs {
		_ = f.Close()
	}
	e.logs = nil
	if !e.keep && e.Dir != "" {
		errs = append(errs, os.RemoveAll(e.Dir))
		e.Dir = ""
	}
	return errors.Join(errs...)
}

// Keep keeps Dir (the servers' logs and state) after Stop.
func (e *Env) Keep() { e.keep = true }

// dynamicConfig is the dev server's dynamic config as `make dev` and the
// bench run it, with a test's own values on top.
func dynamicConfig(extra map[string]string) map[string]string {
	dc := servers.DevServerDynamicConfig()
	for k, v := range extra {
		dc[k] = v
	}
	return dc
}
