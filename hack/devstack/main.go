// Command devstack is `make dev`: the whole product on this machine, no
// Docker. It starts a Temporal dev server (Web UI on 127.0.0.1:8233, gRPC on
// 127.0.0.1:7233, state in .state/temporal.db), etcd and kube-apiserver
// (state in .state/etcd), kube-controller-manager, kube-scheduler and kwok
// with a simulated fleet of nodes (docs/local-cluster.md; -cluster=false
// leaves them out), a Prometheus on 127.0.0.1:9098 (state in
// .state/prometheus) scraping the API server, the worker and the starter,
// installs the CRDs, applies deploy/samples, builds and runs the worker
// (its --prometheus-url that Prometheus) and the starter, and on Ctrl-C
// (SIGINT or SIGTERM) stops all of it. State survives a restart: workflow
// histories in SQLite, Kubernetes objects in etcd, metrics for a day in
// Prometheus' TSDB. `rm -rf .state` starts afresh.
//
// With -temporal postgres it runs temporal-server (hack/tools/temporal-server)
// on a PostgreSQL of Debian's packages instead, with SQL visibility and 4
// history shards, as production does: no Web UI, and its database is
// temporary, gone when devstack stops (etcd's state still survives).
//
// With -temporal-address it starts no Temporal server and joins the one
// there instead: `make dev-cluster-2` runs a second local cluster (its own
// etcd, kube-apiserver, CRDs, samples, worker and starter, state in
// .state/cluster-2, cluster name local-2) against the first stack's
// Temporal, so that both clusters' workflows show in one Web UI
// (docs/local-cluster.md). With -prometheus-url it starts no Prometheus
// either: its worker queries the first stack's, into whose targets
// directory (-prometheus-targets) it adds its worker and starter while it
// runs, so one Prometheus holds both clusters' metrics.
//
// Every process dies with devstack even if it is killed (see
// internal/localstack/procs). Logs are in .state/logs/.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"ate.dev/orchestrator/internal/localstack"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/temporalconn"
	"ate.dev/orchestrator/internal/version"
)

type config struct {
	stateDir      string
	temporalPort  int
	uiPort        int
	apiServerPort int
	namespace     string
	taskQueue     string
	clusterName   string
	temporalStack string
	crds, samples string
	cluster       bool
	// temporalAddress, when set, is a Temporal server to join: none is
	// started.
	temporalAddress string
	// programPorts is the first of the four ports of the worker's and the
	// starter's metrics and probes; 0 picks free ones.
	programPorts int
	// prometheusPort is the Prometheus' port; 0 picks a free one.
	prometheusPort int
	// prometheusURL, when set, is a Prometheus to join: none is started.
	// prometheusTargets is its targets directory, where the worker and the
	// starter are added while the stack runs; empty: they are not.
	prometheusURL, prometheusTargets string

	// Not flags: where etcd and the Kubernetes programs are (default
	// <root>/bin), where the worker and the starter are built (default
	// <root>/_out/bin), and where the programs' output and the summary go
	// besides their logs (main's is stdout).
	kubeBinDir, binDir string
	console            io.Writer
}

func main() {
	cfg := config{console: os.Stdout}
	// Its own flag set, not flag.CommandLine: controller-runtime's client
	// config package registers --kubeconfig there in an init, which devstack
	// does not read (it writes .state/kubeconfig).
	fs := flag.NewFlagSet("devstack", flag.ExitOnError)
	fs.StringVar(&cfg.stateDir, "state", ".state", "directory of the stack's state and logs")
	fs.IntVar(&cfg.temporalPort, "temporal-port", 7233, "Temporal gRPC port on 127.0.0.1")
	fs.IntVar(&cfg.uiPort, "ui-port", 8233, "Temporal Web UI port on 127.0.0.1")
	fs.IntVar(&cfg.apiServerPort, "apiserver-port", 0, "kube-apiserver port on 127.0.0.1 (0: a free port; .state/kubeconfig has it)")
	fs.StringVar(&cfg.namespace, "temporal-namespace", temporalconn.DefaultNamespace, "Temporal namespace of the worker and starter")
	fs.StringVar(&cfg.clusterName, "cluster-name", "local", "name of the local cluster in workflow IDs, the task queue and the Web UI (the worker's and starter's --cluster-name); empty: its kube-system namespace's UID, as in a cluster where none is set")
	fs.StringVar(&cfg.taskQueue, "task-queue", "", "Temporal task queue of the worker and starter; empty: the cluster's own, ate-orchestrator-<cluster>")
	fs.StringVar(&cfg.temporalStack, "temporal", "dev", `Temporal server: "dev" (the CLI's dev server with the Web UI) or "postgres" (temporal-server on PostgreSQL, as production runs it)`)
	fs.BoolVar(&cfg.cluster, "cluster", true, "run kube-controller-manager, kube-scheduler and kwok with a simulated fleet of nodes, so that worker Deployments get pods (docs/local-cluster.md); -cluster=false runs the bare API server")
	fs.StringVar(&cfg.crds, "crds", "deploy/crds", "directory of the CRDs to install")
	fs.StringVar(&cfg.samples, "samples", "deploy/samples", "directory of the objects to apply once the CRDs are installed")
	fs.StringVar(&cfg.temporalAddress, "temporal-address", "", "`host:port` of a running Temporal server to join instead of starting one (-temporal, -temporal-port and -ui-port then do not apply), e.g. the first make dev stack's 127.0.0.1:7233 for a second local cluster (make dev-cluster-2); its namespace (-temporal-namespace) must exist with the search attributes, as make dev leaves it")
	fs.IntVar(&cfg.programPorts, "program-ports", 9090, "first of four ports on 127.0.0.1 for the worker's metrics and probes and the starter's (9090: 9090-9093); 0 picks free ones")
	fs.IntVar(&cfg.prometheusPort, "prometheus-port", 9098, "Prometheus port on 127.0.0.1 (its HTTP API; the build has no web UI); 0 picks a free one")
	fs.StringVar(&cfg.prometheusURL, "prometheus-url", "", "`URL` of a running Prometheus to join instead of starting one (-prometheus-port then does not apply): the worker's --prometheus-url, e.g. the first make dev stack's http://127.0.0.1:9098 (make dev-cluster-2)")
	fs.StringVar(&cfg.prometheusTargets, "prometheus-targets", "", "targets `directory` (file_sd) of the Prometheus joined with -prometheus-url, where this stack adds its worker and starter while it runs, e.g. the first stack's .state/prometheus/targets; empty: they are not scraped")
	printVersion := version.Flag(fs, "devstack")
	_ = fs.Parse(os.Args[1:])
	if printVersion(os.Stdout) {
		return
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	s := &stack{cfg: cfg, log: log}
	err := s.run(ctx)
	stop() // a second Ctrl-C now kills devstack, and with it every child
	if err != nil {
		log.Error("the local stack failed; stopping it", "error", err)
	}
	if stopErr := s.shutdown(); stopErr != nil {
		log.Error("stopping the stack", "error", stopErr)
		err = errors.Join(err, stopErr)
	}
	if err != nil {
		os.Exit(1)
	}
	log.Info("stopped; nothing is left running")
}

type stack struct {
	cfg      config
	log      *slog.Logger
	servers  *localstack.Stack
	programs []*program
	stopped  chan struct{}
}

func (s *stack) run(ctx context.Context) error {
	s.stopped = make(chan struct{})
	root, err := servers.RepoRoot()
	if err != nil {
		return err
	}
	state := inRoot(root, s.cfg.stateDir)
	flavour, err := localstack.ParseFlavour(s.cfg.temporalStack)
	if err != nil {
		return fmt.Errorf("-temporal: %w", err)
	}
	join := s.cfg.temporalAddress != ""
	if join && flavour != localstack.TemporalDev {
		return fmt.Errorf("-temporal %s starts a Temporal server; -temporal-address %s joins one: set one of them", flavour, s.cfg.temporalAddress)
	}
	if s.cfg.prometheusTargets != "" {
		if s.cfg.prometheusURL == "" {
			return fmt.Errorf("-prometheus-targets %s is the targets directory of a Prometheus joined with -prometheus-url, which is not set", s.cfg.prometheusTargets)
		}
		s.cfg.prometheusTargets = inRoot(root, s.cfg.prometheusTargets)
		if st, err := os.Stat(s.cfg.prometheusTargets); err != nil || !st.IsDir() {
			return fmt.Errorf("-prometheus-targets %s is not a directory: is the stack whose Prometheus it is (make dev) running?", s.cfg.prometheusTargets)
		}
	}
	opts := localstack.Options{
		Dir: state, Root: root,
		KubeBinDir:    s.cfg.kubeBinDir,
		NoTemporal:    join,
		CRDDirs:       []string{inRoot(root, s.cfg.crds)},
		EtcdDataDir:   filepath.Join(state, "etcd"),
		DurableEtcd:   true,
		APIServerPort: s.cfg.apiServerPort,
		Cluster:       s.cfg.cluster,
		Temporal:      flavour,
		TemporalPort:  s.cfg.temporalPort, TemporalNamespace: s.cfg.namespace,
		Prometheus:     s.cfg.prometheusURL == "",
		PrometheusPort: s.cfg.prometheusPort,
		// Every 5 s: fresh enough to watch a rollout's analysis, and a
		// fifth of the scrapes of the tests' second on a shared machine.
		PrometheusScrapeInterval: 5 * time.Second,
	}
	if flavour == localstack.TemporalDev && !join {
		opts.TemporalUI, opts.TemporalUIPort = true, s.cfg.uiPort
		opts.TemporalDBFile = filepath.Join(state, "temporal.db")
	}
	if join {
		s.log.Info("starting etcd and kube-apiserver; joining the Temporal server at "+s.cfg.temporalAddress, "etcdData", opts.EtcdDataDir, "cluster", opts.Cluster)
	} else {
		s.log.Info("starting the Temporal server, etcd and kube-apiserver", "temporal", flavour, "etcdData", opts.EtcdDataDir, "cluster", opts.Cluster)
	}
	if s.servers, err = localstack.Start(ctx, opts); err != nil {
		return err
	}
	logDir, kubeconfig := s.servers.LogDir, s.servers.KubeconfigPath
	s.log.Info("the servers are up; CRDs installed", "temporal", s.temporalAddress(), "namespace", s.cfg.namespace,
		"apiserver", s.servers.Kube.RestConfig.Host, "kubeconfig", kubeconfig, "prometheus", s.prometheusURL())

	c, err := client.New(s.servers.Kube.RestConfig, client.Options{Scheme: servers.NewScheme()})
	if err != nil {
		return fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	applied, err := applyDir(ctx, c, inRoot(root, s.cfg.samples))
	if err != nil {
		return err
	}
	s.log.Info("applied "+s.cfg.samples, "objects", applied)

	if err := s.startPrograms(ctx, root, kubeconfig, logDir); err != nil {
		return err
	}
	s.printSummary(kubeconfig, logDir)

	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr) // after the ^C
		s.log.Info("stopping the stack (Ctrl-C again to kill it at once)")
		return nil
	case <-s.temporalDone():
		return fmt.Errorf("the Temporal server exited unexpectedly: %w (log: %s)", s.servers.Temporal.Err(), filepath.Join(logDir, "temporal.log"))
	}
}

// temporalAddress is the Temporal server the programs use: the stack's, or
// the one it joined.
func (s *stack) temporalAddress() string {
	if s.servers.Temporal == nil {
		return s.cfg.temporalAddress
	}
	return s.servers.Temporal.Address()
}

// prometheusURL is the Prometheus the worker queries: the stack's, or the
// one it joined.
func (s *stack) prometheusURL() string {
	if s.servers.Prometheus == nil {
		return s.cfg.prometheusURL
	}
	return s.servers.Prometheus.URL()
}

// temporalDone is closed when the stack's Temporal server exits; never for
// a server joined (its own stack watches it).
func (s *stack) temporalDone() <-chan struct{} {
	if s.servers.Temporal == nil {
		return nil
	}
	return s.servers.Temporal.Done()
}

// inRoot resolves a path relative to the repository root.
func inRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// startPrograms builds and runs the worker and the starter, and has the
// Prometheus scrape them.
func (s *stack) startPrograms(ctx context.Context, root, kubeconfig, logDir string) error {
	outDir := cmp.Or(s.cfg.binDir, filepath.Join(root, "_out", "bin"))
	for i, name := range []string{"worker", "starter"} {
		// Distinct ports, since both run on this host: by default the
		// worker's metrics and probes on 9090 and 9091, the starter's on
		// 9092 and 9093 (a second stack takes others: -program-ports).
		metrics, probes, err := s.programAddrs(i)
		if err != nil {
			return err
		}
		p := &program{name: name, metrics: metrics, probes: probes, env: []string{
			"KUBECONFIG=" + kubeconfig,
			"TEMPORAL_ADDRESS=" + s.temporalAddress(),
			"TEMPORAL_NAMESPACE=" + s.cfg.namespace,
			"TEMPORAL_TASK_QUEUE=" + s.cfg.taskQueue,
			"ATE_CLUSTER_NAME=" + s.cfg.clusterName,
			// Plain HTTP on loopback: nothing else reaches it.
			"METRICS_BIND_ADDRESS=" + metrics,
			"METRICS_SECURE=false",
			"HEALTH_PROBE_BIND_ADDRESS=" + probes,
		}}
		if name == "worker" {
			// Only the worker queries Prometheus (the starter does not
			// take the flag).
			p.env = append(p.env, "PROMETHEUS_URL="+s.prometheusURL())
		}
		s.log.Info("building ./" + name)
		bin, err := p.build(ctx, root, outDir)
		if err != nil {
			return err
		}
		if err := p.start(bin, logDir, s.cfg.console); err != nil {
			return err
		}
		s.programs = append(s.programs, p)
		go p.watch(s.log, s.stopped)
		s.log.Info("started "+name, "pid", p.proc.Pid(), "metrics", metrics, "probes", probes)
		if err := s.addTarget(p); err != nil {
			return err
		}
	}
	return nil
}

// addTarget has the stack's Prometheus, or the joined one's targets
// directory, scrape the program's /metrics as job <name>, labelled with the
// cluster's name as its own series are (with honor_labels, the label of
// both is the one the program serves).
func (s *stack) addTarget(p *program) error {
	var labels map[string]string
	if s.cfg.clusterName != "" {
		labels = map[string]string{"cluster": s.cfg.clusterName}
	}
	switch {
	case s.servers.Prometheus != nil:
		return s.servers.Prometheus.AddTarget(p.name, p.metrics, labels)
	case s.cfg.prometheusTargets != "":
		return servers.WritePrometheusTarget(s.cfg.prometheusTargets, p.name, p.metrics, labels)
	}
	return nil
}

// programAddrs are the metrics and probe addresses of the i-th program:
// ports -program-ports+2i and +2i+1, or free ones with -program-ports 0.
func (s *stack) programAddrs(i int) (metrics, probes string, err error) {
	if s.cfg.programPorts == 0 {
		if metrics, err = servers.FreeAddr("127.0.0.1"); err != nil {
			return "", "", err
		}
		probes, err = servers.FreeAddr("127.0.0.1")
		return metrics, probes, err
	}
	base := s.cfg.programPorts + 2*i
	return "127.0.0.1:" + strconv.Itoa(base), "127.0.0.1:" + strconv.Itoa(base+1), nil
}

func (s *stack) printSummary(kubeconfig, logDir string) {
	var procs strings.Builder
	if c := s.servers.Cluster; c != nil {
		pids := c.Pids()
		for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
			fmt.Fprintf(&procs, "  %-24s pid %d\n", name+":", pids[name])
		}
		fmt.Fprintf(&procs, "  %-24s %s\n\n", "nodes (kwok):", strings.Join(c.Nodes, " "))
	}
	for _, p := range s.programs {
		fmt.Fprintf(&procs, "  %-8s  metrics http://%s/metrics, probes http://%s/readyz\n", p.name+":", p.metrics, p.probes)
	}
	prom := s.prometheusURL() + " (scraping the worker and the starter every 5 s, kube-apiserver every 15 s; the worker's --prometheus-url)"
	if s.servers.Prometheus == nil {
		prom = s.prometheusURL() + ", joined: another stack runs it (the worker's --prometheus-url)"
	}
	ui, grpc := "none (temporal-server has none; use the temporal CLI)", s.temporalAddress()
	switch {
	case s.servers.Temporal == nil:
		cluster := s.cfg.clusterName + "/"
		if s.cfg.clusterName == "" {
			cluster = "the kube-system namespace's UID"
		}
		ui = "the joined stack's (its workflow IDs begin with " + cluster + ")"
		grpc += ", joined: another stack runs it"
	case s.servers.Temporal.UIAddress() != "":
		ui = s.servers.Temporal.UIAddress()
	}
	fmt.Fprintf(s.cfg.console, `
The local stack is running. Ctrl-C stops all of it.

  Temporal Web UI:  %s
  Temporal gRPC:    %s (namespace %s)
  kube-apiserver:   %s
  Prometheus:       %s

%s
  export KUBECONFIG=%s
  kubectl get ate -A
  kubectl get pods -A -o wide

  Logs: %s
`, ui, grpc, s.cfg.namespace, s.servers.Kube.RestConfig.Host, prom, procs.String(), kubeconfig, logDir)
}

// shutdown stops everything that was started, in reverse order of
// dependency: the programs first (they talk to both servers), then the
// servers (localstack stops them in reverse order of their start).
func (s *stack) shutdown() error {
	if s.stopped != nil {
		close(s.stopped)
	}
	var errs []error
	for i := len(s.programs) - 1; i >= 0; i-- {
		p := s.programs[i]
		s.log.Info("stopping " + p.name)
		errs = append(errs, p.stop())
		if s.cfg.prometheusTargets != "" {
			// The joined Prometheus outlives this stack: it stops
			// scraping what is gone.
			errs = append(errs, servers.RemovePrometheusTarget(s.cfg.prometheusTargets, p.name, p.metrics))
		}
	}
	if s.servers != nil {
		s.log.Info("stopping Prometheus (unless joined), the cluster (kwok, kube-scheduler, kube-controller-manager), kube-apiserver, etcd and the Temporal server (unless joined)")
		errs = append(errs, s.servers.Stop())
	}
	return errors.Join(errs...)
}
