package testenv

import (
	"cmp"
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

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/localstack"
	"ate.dev/orchestrator/internal/localstack/cluster"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/wfapi"
)

// The Temporal stacks a test package can run on (Options.TemporalStack,
// $ATE_TEMPORAL_STACK): see localstack.TemporalDev and TemporalPostgres.
const (
	StackDev      = string(localstack.TemporalDev)
	StackPostgres = string(localstack.TemporalPostgres)
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
	// Cluster runs a real cluster around the API server: the controller
	// manager, the scheduler and kwok with its fleet (Env.Cluster;
	// docs/local-cluster.md). Off by default: the other packages' tests
	// play the Deployment controller themselves (they write a
	// Deployment's status), which a running one would overwrite.
	Cluster bool
	// Prometheus runs a Prometheus (Env.Prometheus) scraping every second:
	// the API server, and the targets a test adds (AddTarget) for the
	// worker's --prometheus-url (Env.Prometheus.URL()) to query.
	Prometheus bool
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
	// Cluster is the controller manager, scheduler, kwok and nodes around
	// the API server with Options.Cluster; nil without.
	Cluster *cluster.Cluster
	// ClusterName is the API server's cluster as the worker and the starter
	// name it by default: its kube-system namespace's UID
	// (kube.ClusterIdentity). Every workflow ID of a product run on the
	// default settings begins with it.
	ClusterName wfapi.Cluster

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

	// Prometheus is the Prometheus server with Options.Prometheus; nil
	// without.
	Prometheus *servers.Prometheus

	stack *localstack.Stack // the servers; nil once stopped
	keep  bool
}

// Start starts the servers. On error nothing is left running.
func Start(opts Options) (_ *Env, err error) {
	flavour, err := stackOf(opts)
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
		// A server that ran has logs that explain the failure; a missing
		// binary has none.
		if !errors.Is(err, servers.ErrMissingBinary) {
			e.keep = true
		}
		err = errors.Join(fmt.Errorf("testenv: %w", err), e.Stop())
	}()
	so := localstack.Options{
		Dir:         dir,
		KubeBinDir:  os.Getenv("KUBEBUILDER_ASSETS"),
		TemporalCLI: os.Getenv("ATE_TEMPORAL_CLI"),
		NoKube:      opts.NoKube, NoTemporal: opts.NoTemporal,
		Cluster: opts.Cluster,
		CRDDirs: opts.CRDDirs, Scheme: e.Scheme,
		Temporal:          localstack.Flavour(flavour),
		TemporalUI:        opts.TemporalUI,
		TemporalNamespace: opts.TemporalNamespace,
		TemporalDBFile:    opts.TemporalDBFile,
		DynamicConfig:     opts.TemporalDynamicConfig,
		Prometheus:        opts.Prometheus,
	}
	if so.TemporalDBFile == "" && opts.PersistTemporal {
		so.TemporalDBFile = filepath.Join(dir, "temporal.db")
	}
	if e.stack, err = localstack.Start(context.Background(), so); err != nil {
		return nil, err
	}
	if k := e.stack.Kube; k != nil {
		e.RestConfig, e.KubeconfigPath = k.RestConfig, e.stack.KubeconfigPath
		e.Cluster = e.stack.Cluster
		if e.Kube, err = client.New(e.RestConfig, client.Options{Scheme: e.Scheme}); err != nil {
			return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		scope, err := kube.Scope(ctx, e.RestConfig, "", "", kube.NamingWait{})
		cancel()
		if err != nil {
			return nil, err
		}
		e.ClusterName = scope.Cluster
	}
	e.Prometheus = e.stack.Prometheus
	if t := e.stack.Temporal; t != nil {
		e.TemporalStack, e.TemporalCLI = flavour, e.stack.TemporalCLI
		e.TemporalAddress, e.TemporalNamespace, e.TemporalUIAddress = t.Address(), t.Namespace(), t.UIAddress()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		e.Temporal, err = tclient.DialContext(ctx, e.TemporalClientOptions())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("dialing Temporal at %s: %w", e.TemporalAddress, err)
		}
	}
	return e, nil
}

// NewScheme returns a scheme with client-go's built-in types and ate.dev/v1alpha1.
func NewScheme() *runtime.Scheme { return servers.NewScheme() }

func stackOf(opts Options) (string, error) {
	f, err := localstack.ParseFlavour(cmp.Or(opts.TemporalStack, os.Getenv("ATE_TEMPORAL_STACK")))
	if err == nil && f == localstack.TemporalPostgres && opts.TemporalUI {
		err = fmt.Errorf("the %s Temporal stack has no Web UI", f)
	}
	return string(f), err
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
	if e.stack != nil {
		errs = append(errs, e.stack.Stop())
		e.stack = nil
	}
	if !e.keep && e.Dir != "" {
		errs = append(errs, os.RemoveAll(e.Dir))
		e.Dir = ""
	}
	return errors.Join(errs...)
}

// Keep keeps Dir (the servers' logs and state) after Stop.
func (e *Env) Keep() { e.keep = true }
