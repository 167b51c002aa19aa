package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/localstack/servers"
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
	// Kube configures etcd and kube-apiserver; Start sets their binaries
	// and the cluster's API server flags. The other programs keep their
	// state in Kube.Dir and their logs in Kube.LogDir too.
	Kube servers.KubeConfig
	// Fleet is the simulated nodes; default DefaultFleet.
	Fleet []NodeGroup
}

// startTimeout bounds the start of each program and the fleet's readiness.
const startTimeout = 60 * time.Second

// evictAfter is how long a pod that does not say otherwise stays bound to a
// NotReady or unreachable node before it is evicted (a real cluster's is
// 300s), so that a test of node failure sees the eviction in seconds.
const evictAfter = 10 * time.Second

// Cluster is a running local cluster.
type Cluster struct {
	Kube *servers.Kube
	// components are the controller manager, the scheduler and kwok.
	components []*servers.Component
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
}

// Start starts etcd and kube-apiserver, then the controller manager, the
// scheduler and kwok together, then creates the fleet and waits until every
// node is Ready. On failure everything started is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Fleet == nil {
		cfg.Fleet = DefaultFleet
	}
	c = &Cluster{StartTimes: map[string]time.Duration{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
			c = nil
		}
	}()

	began := time.Now()
	kc := cfg.Kube
	kc.EtcdBinary, kc.APIServerBinary = cfg.Binaries.Etcd, cfg.Binaries.APIServer
	kc.LogDir = cmp.Or(kc.LogDir, kc.Dir)
	// The DefaultTolerationSeconds admission plugin gives every pod that
	// does not say otherwise evictAfter on a NotReady or unreachable node.
	evict := strconv.Itoa(int(evictAfter.Seconds()))
	kc.APIServerFlags = map[string]string{"default-not-ready-toleration-seconds": evict, "default-unreachable-toleration-seconds": evict}
	c.Kube, err = servers.StartKube(kc)
	if err != nil {
		return c, err
	}
	c.StartTimes["kube"] = time.Since(began)
	c.RestConfig = c.Kube.RestConfig
	if c.Clientset, err = kubernetes.NewForConfig(c.RestConfig); err != nil {
		return c, fmt.Errorf("cluster: creating the client: %w", err)
	}
	kubeconfig, rootCA, err := c.Kube.WriteClientFiles(kc.Dir)
	if err != nil {
		return c, err
	}
	c.KubeconfigFile = kubeconfig

	began = time.Now()
	if err := c.startComponents(ctx, cfg.Binaries, kc.Dir, kc.LogDir, kubeconfig, rootCA); err != nil {
		return c, err
	}
	c.StartTimes["components"] = time.Since(began)

	began = time.Now()
	if c.Nodes, err = createFleet(ctx, c.Clientset, cfg.Fleet); err != nil {
		return c, err
	}
	if err := c.WaitNodes(ctx, startTimeout, true, c.Nodes...); err != nil {
		return c, err
	}
	c.StartTimes["fleet"] = time.Since(began)
	return c, nil
}

func (c *Cluster) startComponents(ctx context.Context, bins Binaries, dir, logDir, kubeconfig, rootCA string) error {
	log := func(name string) string { return filepath.Join(logDir, name+".log") }
	cm, err := servers.NewControllerManager(servers.ControllerManagerConfig{
		Binary: bins.ControllerManager, Dir: dir, KubeconfigFile: kubeconfig,
		ServiceAccountKeyFile: c.Kube.ServiceAccountSigningKeyFile(),
		RootCAFile:            rootCA,
		LogFile:               log("kube-controller-manager"),
	})
	if err != nil {
		return err
	}
	scheduler, err := servers.NewScheduler(bins.Scheduler, dir, kubeconfig, log("kube-scheduler"))
	if err != nil {
		return err
	}
	kwok, err := servers.NewKwok(bins.Kwok, dir, kubeconfig, log("kwok"))
	if err != nil {
		return err
	}
	c.components = []*servers.Component{cm, scheduler, kwok}
	// Started together: each mostly waits for its informers' first lists.
	errs := make([]error, len(c.components))
	var wg sync.WaitGroup
	for i, p := range c.components {
		wg.Go(func() { errs[i] = p.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stop stops kwok, the scheduler and the controller manager, then
// kube-apiserver and etcd. It stops what runs of a partly started cluster.
func (c *Cluster) Stop() error {
	var errs []error
	for _, p := range slices.Backward(c.components) {
		errs = append(errs, p.Stop())
	}
	if c.Kube != nil {
		errs = append(errs, c.Kube.Stop())
	}
	return errors.Join(errs...)
}

// Pids are the process IDs of the cluster's programs that run, by name.
func (c *Cluster) Pids() map[string]int {
	pids, err := c.Kube.Pids()
	if err != nil {
		pids = map[string]int{}
	}
	for _, p := range c.components {
		if pid := p.Pid(); pid != 0 {
			pids[p.Name()] = pid
		}
	}
	return pids
}

// SetNodeReady makes kwok report the node Ready (ready) or NotReady, as a
// kubelet whose runtime broke would: see servers.NotReadyLabel. The
// controller manager then taints a NotReady node and evicts its pods after
// evictAfter.
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
	var pending []string
	err := kwait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pending = nil
		for _, name := range nodes {
			n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || nodeReady(n) != ready {
				pending = append(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("cluster: nodes %v not ready=%t: %w", pending, ready, err)
	}
	return nil
}
