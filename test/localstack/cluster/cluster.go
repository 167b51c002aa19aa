package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/test/localstack/servers"
)

// Binaries are the paths of the cluster's programs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kwok string
}

// FindBinaries finds the programs in dir (the repository's bin/, or
// $KUBEBUILDER_ASSETS): etcd and kube-apiserver, and with cluster the
// controller manager, the scheduler and kwok too; how says which dir, for
// the error. A missing one fails with an error wrapping
// servers.ErrMissingBinary.
func FindBinaries(dir, how string, cluster bool) (Binaries, error) {
	var b Binaries
	programs := []struct {
		name string
		dst  *string
	}{
		{"etcd", &b.Etcd},
		{"kube-apiserver", &b.APIServer},
		{"kube-controller-manager", &b.ControllerManager},
		{"kube-scheduler", &b.Scheduler},
		{"kwok", &b.Kwok},
	}
	if !cluster {
		programs = programs[:2]
	}
	for _, p := range programs {
		path, err := servers.FindBinary(p.name, filepath.Join(dir, p.name), how)
		if err != nil {
			return Binaries{}, err
		}
		*p.dst = path
	}
	return b, nil
}

// Config configures a local cluster.
type Config struct {
	Binaries Binaries
	// Dir holds the state and, unless LogDir says otherwise, the logs. It
	// must exist.
	Dir string
	// LogDir receives one <program>.log each; default Dir.
	LogDir string
	// CRDDirs and Scheme are passed to servers.StartKube.
	CRDDirs []string
	Scheme  *runtime.Scheme
	// EtcdDataDir, DurableEtcd and APIServerPort are passed to
	// servers.StartKube: `make dev` keeps its cluster's objects across
	// restarts and serves on the port it was asked for.
	EtcdDataDir   string
	DurableEtcd   bool
	APIServerPort int
	// Fleet is the simulated nodes; default DefaultFleet.
	Fleet []NodeGroup
	// EvictAfter is how long a pod that does not say otherwise stays bound
	// to a NotReady or unreachable node before it is evicted; default 10s
	// (a real cluster's is 300s).
	EvictAfter time.Duration
	// NodeMonitorGracePeriod: see servers.ControllerManagerConfig.
	NodeMonitorGracePeriod time.Duration
	// StartTimeout bounds the start of each program and the fleet's
	// readiness; default 60s.
	StartTimeout time.Duration
}

// Cluster is a running local cluster.
type Cluster struct {
	Kube              *servers.Kube
	ControllerManager *servers.ControllerManager
	Scheduler         *servers.Scheduler
	Kwok              *servers.Kwok
	// Clientset is an admin client of the API server.
	Clientset kubernetes.Interface
	// RestConfig authenticates as an admin (system:masters).
	RestConfig *rest.Config
	// KubeconfigFile is RestConfig as a kubeconfig file.
	KubeconfigFile string
	// Nodes are the names of the simulated nodes.
	Nodes []string
	// StartTimes is how long each step of Start took: "kube" (etcd and
	// kube-apiserver, CRDs established), "components" (controller manager,
	// scheduler and kwok healthy; started together) and "fleet" (every
	// node Ready).
	StartTimes map[string]time.Duration

	logs []*os.File
}

// Start starts etcd and kube-apiserver, then the controller manager, the
// scheduler and kwok together, then creates the fleet and waits until every
// node is Ready. On failure everything started is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("cluster: no state directory configured")
	}
	if cfg.LogDir == "" {
		cfg.LogDir = cfg.Dir
	}
	if cfg.Fleet == nil {
		cfg.Fleet = DefaultFleet
	}
	if cfg.EvictAfter == 0 {
		cfg.EvictAfter = 10 * time.Second
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	c = &Cluster{StartTimes: map[string]time.Duration{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
			c = nil
		}
	}()

	began := time.Now()
	etcdLog, err := c.logFile(cfg.LogDir, "etcd")
	if err != nil {
		return c, err
	}
	apiServerLog, err := c.logFile(cfg.LogDir, "kube-apiserver")
	if err != nil {
		return c, err
	}
	c.Kube, err = servers.StartKube(servers.KubeConfig{
		EtcdBinary: cfg.Binaries.Etcd, APIServerBinary: cfg.Binaries.APIServer,
		Dir:            filepath.Join(cfg.Dir, "kube"),
		CRDDirs:        cfg.CRDDirs,
		Scheme:         cfg.Scheme,
		EtcdDataDir:    cfg.EtcdDataDir,
		DurableEtcd:    cfg.DurableEtcd,
		APIServerPort:  cfg.APIServerPort,
		APIServerFlags: servers.ClusterAPIServerFlags(cfg.EvictAfter),
		EtcdLog:        etcdLog, APIServerLog: apiServerLog,
		StartTimeout: cfg.StartTimeout,
	})
	if err != nil {
		return c, err
	}
	c.StartTimes["kube"] = time.Since(began)
	c.RestConfig = c.Kube.RestConfig
	if c.Clientset, err = kubernetes.NewForConfig(c.RestConfig); err != nil {
		return c, fmt.Errorf("cluster: creating the client: %w", err)
	}
	kubeconfig, rootCA, err := c.Kube.WriteClientFiles(cfg.Dir)
	if err != nil {
		return c, err
	}
	c.KubeconfigFile = kubeconfig

	began = time.Now()
	if err := c.startComponents(ctx, cfg, kubeconfig, rootCA); err != nil {
		return c, err
	}
	c.StartTimes["components"] = time.Since(began)

	began = time.Now()
	if c.Nodes, err = createFleet(ctx, c.Clientset, cfg.Fleet); err != nil {
		return c, err
	}
	if err := c.WaitNodes(ctx, cfg.StartTimeout, true, c.Nodes...); err != nil {
		return c, err
	}
	c.StartTimes["fleet"] = time.Since(began)
	return c, nil
}

func (c *Cluster) startComponents(ctx context.Context, cfg Config, kubeconfig, rootCA string) error {
	logs := map[string]string{}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		f, err := c.logFile(cfg.LogDir, name)
		if err != nil {
			return err
		}
		logs[name] = f.Name()
	}
	var err error
	c.ControllerManager, err = servers.NewControllerManager(servers.ControllerManagerConfig{
		Binary: cfg.Binaries.ControllerManager, Dir: cfg.Dir, KubeconfigFile: kubeconfig,
		ServiceAccountKeyFile:  c.Kube.ServiceAccountSigningKeyFile(),
		RootCAFile:             rootCA,
		NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod,
		LogFile:                logs["kube-controller-manager"],
		StartTimeout:           cfg.StartTimeout,
	})
	if err != nil {
		return err
	}
	c.Scheduler, err = servers.NewScheduler(servers.SchedulerConfig{
		Binary: cfg.Binaries.Scheduler, Dir: cfg.Dir, KubeconfigFile: kubeconfig,
		LogFile: logs["kube-scheduler"], StartTimeout: cfg.StartTimeout,
	})
	if err != nil {
		return err
	}
	c.Kwok, err = servers.NewKwok(servers.KwokConfig{
		Binary: cfg.Binaries.Kwok, Dir: cfg.Dir, KubeconfigFile: kubeconfig,
		LogFile: logs["kwok"], StartTimeout: cfg.StartTimeout,
	})
	if err != nil {
		return err
	}
	// Started together: each mostly waits for its informers' first lists.
	starts := []func(context.Context) error{c.ControllerManager.Start, c.Scheduler.Start, c.Kwok.Start}
	errs := make([]error, len(starts))
	var wg sync.WaitGroup
	for i, start := range starts {
		wg.Go(func() { errs[i] = start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) logFile(dir, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: creating the log of %s: %w", name, err)
	}
	c.logs = append(c.logs, f)
	return f, nil
}

// Stop stops kwok, the scheduler and the controller manager, then
// kube-apiserver and etcd. It stops what runs of a partly started cluster.
func (c *Cluster) Stop() error {
	var errs []error
	if c.Kwok != nil {
		errs = append(errs, c.Kwok.Stop())
	}
	if c.Scheduler != nil {
		errs = append(errs, c.Scheduler.Stop())
	}
	if c.ControllerManager != nil {
		errs = append(errs, c.ControllerManager.Stop())
	}
	if c.Kube != nil {
		errs = append(errs, c.Kube.Stop())
	}
	for _, f := range c.logs {
		errs = append(errs, f.Close())
	}
	c.logs = nil
	return errors.Join(errs...)
}

// Pids are the process IDs of the cluster's programs that run, by name.
func (c *Cluster) Pids() map[string]int {
	pids, err := c.Kube.Pids()
	if err != nil {
		pids = map[string]int{}
	}
	for name, pid := range map[string]int{
		"kube-controller-manager": c.ControllerManager.Pid(),
		"kube-scheduler":          c.Scheduler.Pid(),
		"kwok":                    c.Kwok.Pid(),
	} {
		if pid != 0 {
			pids[name] = pid
		}
	}
	return pids
}

// SetNodeReady makes kwok report the node Ready (ready) or NotReady, as a
// kubelet whose runtime broke would: see servers.NotReadyLabel. The
// controller manager then taints a NotReady node and evicts its pods after
// Config.EvictAfter.
func (c *Cluster) SetNodeReady(ctx context.Context, node string, ready bool) error {
	value := `"true"`
	if ready {
		value = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, servers.NotReadyLabel, value)
	if _, err := c.Clientset.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("cluster: marking node %s ready=%t: %w", node, ready, err)
	}
	return nil
}

// WaitNodes waits until every named node's Ready condition is True (ready)
// or not True, polling; timeout bounds the wait.
func (c *Cluster) WaitNodes(ctx context.Context, timeout time.Duration, ready bool, nodes ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var pending []string
		for _, name := range nodes {
			n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || nodeReady(n) != ready {
				pending = append(pending, name)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: nodes %v not ready=%t: %w", pending, ready, ctx.Err())
		case <-tick.C:
		}
	}
}
