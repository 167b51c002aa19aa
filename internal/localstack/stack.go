// Package localstack assembles the local stack the orchestrator runs on:
// etcd and kube-apiserver with the CRDs installed, a Temporal server (the
// temporal CLI's dev server, or temporal-server on PostgreSQL) and, when
// asked, a Prometheus. It is
// the one builder of that stack: the tests (internal/testenv), the bench
// (test/bench) and `make dev` (hack/devstack) each say what they want of it
// in Options and get the same servers, started the same way.
//
// The servers themselves are in package servers, and every process is
// started through package procs, so none outlives the process that started
// it.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"ate.dev/orchestrator/internal/localstack/cluster"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// Flavour is the Temporal server a stack runs.
type Flavour string

const (
	// TemporalDev is the temporal CLI's dev server: one process, one history
	// shard, SQLite (in memory, or in Options.TemporalDBFile). Fast to
	// start; it has the Web UI.
	TemporalDev Flavour = "dev"
	// TemporalPostgres is temporal-server (hack/tools/temporal-server) on a
	// PostgreSQL of Debian's packages, with SQL visibility and 4 history
	// shards: the server docker-compose.yaml runs in production. Its
	// database lives as long as the stack; it has no Web UI.
	TemporalPostgres Flavour = "postgres"
)

// ParseFlavour reads a flag's or variable's value; "" is TemporalDev.
func ParseFlavour(s string) (Flavour, error) {
	switch Flavour(s) {
	case "", TemporalDev:
		return TemporalDev, nil
	case TemporalPostgres:
		return TemporalPostgres, nil
	}
	return "", fmt.Errorf("unknown Temporal server %q (want %q or %q)", s, TemporalDev, TemporalPostgres)
}

// Options says what stack to build. Only Dir is required.
type Options struct {
	// Dir holds the stack's state (kube/, the kubeconfig) and its logs
	// (logs/<process>.log). It is created if missing.
	Dir string
	// Root is the repository root, where bin/ and deploy/crds are; default
	// servers.RepoRoot().
	Root string
	// KubeBinDir holds etcd and kube-apiserver (and prometheus); default
	// Root/bin.
	// TemporalCLI is the temporal CLI; default Root/bin/temporal.
	// temporal-server and temporal-sql-tool are always taken from Root/bin.
	KubeBinDir, TemporalCLI string

	// NoKube and NoTemporal leave a server out.
	NoKube, NoTemporal bool

	// CRDDirs are the CRDs to install; default Root/deploy/crds.
	CRDDirs []string
	// Scheme converts the CRDs; default servers.NewScheme().
	Scheme *runtime.Scheme
	// EtcdDataDir is etcd's data; default under Dir/kube. DurableEtcd makes
	// etcd fsync (`make dev`, the bench); off is faster for tests.
	EtcdDataDir string
	DurableEtcd bool
	// APIServerPort is kube-apiserver's port on 127.0.0.1; 0 picks a free one.
	APIServerPort int
	// Cluster runs a real cluster under the product: beside etcd and
	// kube-apiserver, kube-controller-manager, kube-scheduler and kwok
	// with cluster.DefaultFleet (package cluster, docs/local-cluster.md),
	// so that the worker Deployments the product applies get ReplicaSets,
	// scheduled pods and readyReplicas. KubeBinDir must then hold the
	// three programs too.
	Cluster bool
	// Fleet is the cluster's simulated nodes; default cluster.DefaultFleet.
	Fleet []cluster.NodeGroup

	// Temporal is the Temporal server; default TemporalDev.
	Temporal Flavour
	// TemporalPort is its gRPC port on 127.0.0.1; 0 picks a free one.
	TemporalPort int
	// TemporalUI serves the dev server's Web UI, on TemporalUIPort (0: a
	// free one). TemporalPostgres has none.
	TemporalUI     bool
	TemporalUIPort int
	// TemporalNamespace is created at start; default "default".
	TemporalNamespace string
	// TemporalDBFile keeps the dev server's state in that SQLite file;
	// empty keeps it in memory.
	TemporalDBFile string
	// DynamicConfig maps Temporal dynamic config keys to JSON values: on
	// the dev server over servers.DevServerDynamicConfig, which `make dev`,
	// the bench and the tests all run it with.
	DynamicConfig map[string]string

	// Prometheus runs a Prometheus (servers.Prometheus), its state in
	// Dir/prometheus, which scrapes the API server (unless NoKube) with the
	// stack's admin credentials; the caller adds its programs as targets
	// (Stack.Prometheus.AddTarget). PrometheusPort is its port on
	// 127.0.0.1 (0: a free one), PrometheusScrapeInterval its scrape
	// interval (default servers.DefaultPrometheusScrapeInterval).
	Prometheus               bool
	PrometheusPort           int
	PrometheusScrapeInterval time.Duration
}

// TemporalServer is what a stack's Temporal server offers, whichever its
// flavour.
type TemporalServer interface {
	Launch() error
	WaitReady(context.Context) error
	Stop() error
	Kill() error
	Address() string
	Namespace() string
	UIAddress() string
	Done() <-chan struct{}
	Err() error
}

// Stack is a running local stack.
type Stack struct {
	// Dir and LogDir are Options.Dir and its logs/.
	Dir, LogDir string
	// Kube is etcd and kube-apiserver (nil with NoKube); KubeconfigPath is
	// a kubeconfig file for it, for processes and kubectl.
	Kube           *servers.Kube
	KubeconfigPath string
	// Cluster is the cluster around Kube with Options.Cluster (its
	// controller manager, scheduler, kwok and nodes); nil without.
	Cluster *cluster.Cluster
	// Temporal is the Temporal server (nil with NoTemporal), of flavour
	// TemporalFlavour; TemporalCLI is the temporal CLI's path, for tools
	// that drive the server as an operator would.
	Temporal        TemporalServer
	TemporalFlavour Flavour
	TemporalCLI     string
	// Prometheus is the Prometheus server with Options.Prometheus; nil
	// without.
	Prometheus *servers.Prometheus

	started []*component // in start order
}

// component is one process (or pair of processes) of the stack. Start
// starts the components in order and Stop stops them in reverse, so a
// component may rely on every one before it, and stops before they do.
type component struct {
	name string
	// launch starts it; ready waits until it serves (nil: launch did).
	launch func(context.Context) error
	ready  func(context.Context) error
	stop   func() error
	// independent: it needs no other component, so start does not wait
	// for it before launching the next one, only at the end (Temporal
	// takes seconds, and so does the control plane).
	independent bool
}

// Start builds the stack opts describes and waits until every server
// serves. On error nothing is left running; the error names the logs.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	if opts.Dir == "" {
		return nil, errors.New("localstack: no directory")
	}
	if opts.Root == "" {
		if opts.Root, err = servers.RepoRoot(); err != nil {
			return nil, fmt.Errorf("localstack: %w", err)
		}
	}
	s := &Stack{Dir: opts.Dir, LogDir: filepath.Join(opts.Dir, "logs")}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("localstack: creating %s: %w", s.LogDir, err)
	}
	components, err := s.components(opts)
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	if err := s.start(ctx, components); err != nil {
		return nil, errors.Join(fmt.Errorf("localstack: %w (logs in %s)", err, s.LogDir), s.Stop())
	}
	return s, nil
}

// start starts components in order, each ready before the next unless it
// is independent; the caller stops what was started on error.
func (s *Stack) start(ctx context.Context, components []*component) error {
	var pending []*component // launched, not yet ready
	for _, c := range components {
		// Recorded before its launch: a launch that fails halfway (the
		// database up, the server not) leaves something to stop.
		s.started = append(s.started, c)
		if err := c.launch(ctx); err != nil {
			return fmt.Errorf("starting %s: %w", c.name, err)
		}
		switch {
		case c.ready == nil:
		case c.independent:
			pending = append(pending, c)
		default:
			if err := c.ready(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	for _, c := range pending {
		if err := c.ready(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// components are the stack's processes in start order: Temporal first, as
// it is independent and slow to come up, then the control plane.
func (s *Stack) components(opts Options) ([]*component, error) {
	var out []*component
	if !opts.NoTemporal {
		c, err := s.temporal(opts)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if !opts.NoKube {
		c, err := s.kube(opts)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if opts.Prometheus {
		c, err := s.prometheus(opts)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// prometheus is the Prometheus server. It comes after the control plane,
// whose admin credentials its configuration holds (the API server's
// certificates are made at its start), and is waited for at the end.
func (s *Stack) prometheus(opts Options) (*component, error) {
	binDir, how := opts.KubeBinDir, "from $KUBEBUILDER_ASSETS or the caller"
	if binDir == "" {
		binDir, how = filepath.Join(opts.Root, "bin"), "from the repository's bin/"
	}
	bin, err := servers.FindBinary("prometheus", filepath.Join(binDir, "prometheus"), how)
	if err != nil {
		return nil, err
	}
	return &component{
		name: "Prometheus",
		launch: func(context.Context) error {
			cfg := servers.PrometheusConfig{
				Binary: bin, Port: opts.PrometheusPort, Dir: filepath.Join(s.Dir, "prometheus"),
				ScrapeInterval: opts.PrometheusScrapeInterval,
				LogFile:        filepath.Join(s.LogDir, "prometheus.log"),
			}
			if s.Kube != nil {
				cfg.APIServer = s.Kube.RestConfig
			}
			p, err := servers.NewPrometheus(cfg)
			if err != nil {
				return err
			}
			s.Prometheus = p // assigned only on success: a typed nil would be stopped
			return p.Launch()
		},
		ready: func(ctx context.Context) error { return s.Prometheus.WaitReady(ctx) },
		stop: func() error {
			if s.Prometheus == nil {
				return nil
			}
			return s.Prometheus.Stop()
		},
		independent: true,
	}, nil
}

func (s *Stack) temporal(opts Options) (*component, error) {
	cli := opts.TemporalCLI
	how := "from $ATE_TEMPORAL_CLI or the caller"
	if cli == "" {
		cli, how = filepath.Join(opts.Root, "bin", "temporal"), "from the repository's bin/"
	}
	var err error
	if s.TemporalCLI, err = servers.FindBinary("temporal", cli, how); err != nil {
		return nil, err
	}
	if s.TemporalFlavour, err = ParseFlavour(string(opts.Temporal)); err != nil {
		return nil, err
	}
	logFile := filepath.Join(s.LogDir, "temporal.log")
	var stop func() error
	switch s.TemporalFlavour {
	case TemporalPostgres:
		if opts.TemporalUI {
			return nil, fmt.Errorf("the %s Temporal server has no Web UI", TemporalPostgres)
		}
		server, sqlTool, err := servers.TemporalServerBinaries(filepath.Join(opts.Root, "bin"))
		if err != nil {
			return nil, err
		}
		t, err := servers.NewTemporalServer(servers.TemporalServerConfig{
			ServerBinary: server, SQLToolBinary: sqlTool,
			Port: opts.TemporalPort, Namespace: opts.TemporalNamespace,
			DynamicConfig: opts.DynamicConfig,
			LogFile:       logFile,
		})
		if err != nil {
			return nil, err
		}
		// Assigned only on success: a typed nil would be stopped.
		s.Temporal, stop = t, t.Close // Close removes its PostgreSQL too
	default:
		t, err := servers.NewTemporal(servers.TemporalConfig{
			Binary: s.TemporalCLI, Port: opts.TemporalPort,
			UI: opts.TemporalUI, UIPort: opts.TemporalUIPort,
			DBFile:        opts.TemporalDBFile,
			DynamicConfig: opts.DynamicConfig,
			Namespace:     opts.TemporalNamespace,
			LogFile:       logFile,
		})
		if err != nil {
			return nil, err
		}
		s.Temporal, stop = t, t.Stop
	}
	return &component{
		name:        "Temporal (" + string(s.TemporalFlavour) + ")",
		launch:      func(context.Context) error { return s.Temporal.Launch() },
		ready:       s.Temporal.WaitReady,
		stop:        stop,
		independent: true,
	}, nil
}

// kube is etcd and kube-apiserver with the CRDs installed, or, with
// Options.Cluster, the cluster around them (the controller manager, the
// scheduler, kwok and the fleet), which package cluster starts and stops
// as one component.
func (s *Stack) kube(opts Options) (*component, error) {
	binDir, how := opts.KubeBinDir, "from $KUBEBUILDER_ASSETS or the caller"
	if binDir == "" {
		binDir, how = filepath.Join(opts.Root, "bin"), "from the repository's bin/"
	}
	bins, err := cluster.FindBinaries(binDir, how, opts.Cluster)
	if err != nil {
		return nil, err
	}
	kc := servers.KubeConfig{
		EtcdBinary: bins.Etcd, APIServerBinary: bins.APIServer,
		Dir:           filepath.Join(s.Dir, "kube"),
		EtcdDataDir:   opts.EtcdDataDir,
		DurableEtcd:   opts.DurableEtcd,
		APIServerPort: opts.APIServerPort,
		CRDDirs:       opts.CRDDirs,
		Scheme:        opts.Scheme,
		LogDir:        s.LogDir,
	}
	if len(kc.CRDDirs) == 0 {
		kc.CRDDirs = []string{filepath.Join(opts.Root, "deploy", "crds")}
	}
	if kc.Scheme == nil {
		kc.Scheme = servers.NewScheme()
	}
	name := "etcd and kube-apiserver"
	if opts.Cluster {
		name = "the cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"
	}
	return &component{
		name: name,
		launch: func(ctx context.Context) (err error) {
			if err := os.MkdirAll(kc.Dir, 0o700); err != nil {
				return err
			}
			if opts.Cluster {
				if s.Cluster, err = cluster.Start(ctx, cluster.Config{Binaries: bins, Kube: kc, Fleet: opts.Fleet}); err == nil {
					s.Kube = s.Cluster.Kube
				}
			} else {
				s.Kube, err = servers.StartKube(kc)
			}
			if err != nil {
				return err
			}
			s.KubeconfigPath = filepath.Join(s.Dir, "kubeconfig")
			if err := os.WriteFile(s.KubeconfigPath, s.Kube.KubeConfig, 0o600); err != nil {
				return fmt.Errorf("writing %s: %w", s.KubeconfigPath, err)
			}
			return nil
		},
		stop: func() error {
			switch {
			case s.Cluster != nil:
				return s.Cluster.Stop()
			case s.Kube != nil:
				return s.Kube.Stop()
			}
			return nil
		},
	}, nil
}

// Stop stops every component started, in reverse order. It is safe on a
// half-started stack and to call more than once. Dir stays.
func (s *Stack) Stop() error {
	var errs []error
	for i := len(s.started) - 1; i >= 0; i-- {
		if err := s.started[i].stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", s.started[i].name, err))
		}
	}
	s.started = nil
	return errors.Join(errs...)
}
