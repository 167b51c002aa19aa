package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/localstack"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// cluster is one Kubernetes cluster of the fleet: an API server of its own
// and the fleet's one Temporal server, and its product (worker and starter)
// run in this process or as real processes.
type cluster struct {
	label string       // "A", "B": for messages
	env   *testenv.Env // its API server; Temporal is testenv's
	cs    kubernetes.Interface
	// name is the worker's and the starter's --cluster-name; empty: the
	// default, the kube-system namespace's UID (env.ClusterName).
	name wfapi.Cluster
}

// id is the cluster's identity, as its worker and starter name it.
func (c *cluster) id() wfapi.Cluster {
	if c.name != "" {
		return c.name
	}
	return c.env.ClusterName
}

// scope is where its workflows run: its own default task queue, as no
// task queue is set.
func (c *cluster) scope() wfapi.Scope { return wfapi.ScopeOf(c.id(), "") }

func (c *cluster) String() string { return fmt.Sprintf("cluster %s (%s)", c.label, c.id()) }

// clusterA is testenv's API server.
func clusterA(t testing.TB, name wfapi.Cluster) *cluster {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	return &cluster{label: "A", env: env, cs: cs, name: name}
}

// newCluster starts an API server with its own etcd beside testenv's, its
// state in dir (empty: a new directory; an existing one is started again,
// as `make dev` restarts) and etcd's data in etcdDataDir (empty: under dir),
// and stops it when the test ends. Its state and logs are removed unless
// the test failed.
func newCluster(t testing.TB, label string, name wfapi.Cluster, dir, etcdDataDir string) (*cluster, *localstack.Stack) {
	t.Helper()
	base := testenv.Current()
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "ate-fleet-"+strings.ToLower(label)+"-")
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := localstack.Start(ctx, localstack.Options{
		Dir:         dir,
		KubeBinDir:  os.Getenv("KUBEBUILDER_ASSETS"),
		NoTemporal:  true,
		Scheme:      base.Scheme,
		EtcdDataDir: etcdDataDir,
		// etcd's data of a cluster that is stopped and copied must be on
		// disk when it stops.
		DurableEtcd: etcdDataDir != "",
	})
	require.NoError(t, err, "starting cluster %s's API server", label)
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stopping cluster %s's API server: %v", label, err)
		}
		if t.Failed() {
			t.Logf("cluster %s's state and logs kept in %s", label, dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	env := &testenv.Env{
		Dir: dir, Scheme: base.Scheme,
		RestConfig: st.Kube.RestConfig, KubeconfigPath: st.KubeconfigPath,
		TemporalAddress: base.TemporalAddress, TemporalNamespace: base.TemporalNamespace,
		Temporal: base.Temporal, TemporalCLI: base.TemporalCLI, TemporalStack: base.TemporalStack,
	}
	env.Kube, err = client.New(env.RestConfig, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	env.ClusterName, err = kube.ClusterIdentity(ctx, cs, "")
	require.NoError(t, err, "cluster %s's identity", label)
	return &cluster{label: label, env: env, cs: cs, name: name}, st
}

// runProduct runs the cluster's worker and starter in this process, on the
// default task queue, until the test ends; then the cluster is emptied and
// its running workflows ended.
func (c *cluster) runProduct(t testing.TB) *producttest.Product {
	t.Helper()
	p := &producttest.Product{Env: c.env, Clientset: c.cs, ClusterName: c.name}
	return p.Run(t)
}

// runProcesses runs the cluster's worker and starter as real processes,
// configured as an operator who sets nothing but the servers would: the
// same Temporal namespace, no task queue, and the cluster name if set.
// crashAfter, when set, is the crash hook's activity and argument for the
// worker's first incarnation. When the test ends they are stopped and the
// cluster's running workflows ended.
func (c *cluster) runProcesses(t testing.TB, crashAfter ...string) (worker, starter *crashtest.Process) {
	t.Helper()
	wbin, sbin := binaries(t)
	env := []string{
		"KUBECONFIG=" + c.env.KubeconfigPath,
		"TEMPORAL_ADDRESS=" + c.env.TemporalAddress,
		"TEMPORAL_NAMESPACE=" + c.env.TemporalNamespace,
		"METRICS_BIND_ADDRESS=0",
		"HEALTH_PROBE_BIND_ADDRESS=0",
	}
	if c.name != "" {
		env = append(env, "ATE_CLUSTER_NAME="+string(c.name))
	}
	// Only env configures them: the host's TEMPORAL_*, ATE_*, KUBECONFIG,
	// LEADER_* and OTEL_* are left out.
	env = append(crashtest.HostEnv("TEMPORAL_", "ATE_", "KUBECONFIG=", "LEADER_", "OTEL_"), env...)
	logDir := filepath.Join(c.env.Dir, "logs")
	worker = crashtest.NewProcess(t, "worker", wbin, env, logDir)
	starter = crashtest.NewProcess(t, "starter", sbin, env, logDir)
	t.Cleanup(func() { terminateRunning(t, c) }) // after the processes stop
	if len(crashAfter) == 2 {
		worker.StartCrashing(crashAfter[0], crashAfter[1])
	} else {
		worker.Start()
	}
	starter.Start()
	return worker, starter
}

// terminateRunning ends the cluster's workflows still running on its task
// queue (release workflows waiting, the operator workflow): nothing polls
// that queue once the test ends.
func terminateRunning(t testing.TB, c *cluster) {
	t.Helper()
	ctx := context.Background()
	query := fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", c.scope().TaskQueue)
	execs, err := crashtest.Executions(ctx, c.env.Temporal, query)
	if err != nil {
		t.Errorf("%s: %v", c, err)
		return
	}
	for _, e := range execs {
		err := c.env.Temporal.TerminateWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId, "test finished")
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			t.Errorf("terminating %s: %v", e.Execution.WorkflowId, err)
		}
	}
}
