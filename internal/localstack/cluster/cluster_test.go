package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// wait bounds each wait for the cluster to converge.
const wait = 60 * time.Second

// binaries finds the cluster's programs as the other real-server tests do
// ($KUBEBUILDER_ASSETS, else the repository's bin/). CI builds them, so
// there a missing one fails the test; elsewhere it is skipped, saying why.
func binaries(t *testing.T, root string) Binaries {
	t.Helper()
	dir, how := filepath.Join(root, "bin"), "from the repository's bin/"
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		dir, how = d, "from $KUBEBUILDER_ASSETS"
	}
	b, err := FindBinaries(dir, how, true)
	if errors.Is(err, servers.ErrMissingBinary) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("skipping the local cluster test: %v", err)
	}
	require.NoError(t, err)
	return b
}

func startCluster(t *testing.T) (*Cluster, client.Client) {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	b := binaries(t, root)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	dir := t.TempDir()
	c, err := Start(context.Background(), Config{Binaries: b, Kube: servers.KubeConfig{
		Dir: dir, Scheme: scheme, CRDDirs: []string{filepath.Join(root, "deploy", "crds")},
	}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Stop())
		if t.Failed() {
			for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
				if b, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil {
					t.Logf("--- %s.log (last 4 KiB) ---\n%s", name, b[max(0, len(b)-4096):])
				}
			}
		}
	})
	t.Logf("started in: kube %s, controller manager + scheduler + kwok %s, fleet Ready %s",
		c.StartTimes["kube"].Round(time.Millisecond), c.StartTimes["components"].Round(time.Millisecond),
		c.StartTimes["fleet"].Round(time.Millisecond))
	kc, err := client.New(c.RestConfig, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c, kc
}

// newPool creates a pool of class with replicas and the template's node
// selector on the class label, and applies its worker Deployment as the
// product does. The pool exists, so the garbage collector keeps the
// Deployment it owns.
func newPool(t *testing.T, ctx context.Context, c *Cluster, kc client.Client, ns, name string, class v1alpha1.SandboxClass, replicas int32) *v1alpha1.WorkerPool {
	t.Helper()
	pool := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       ptr.To(replicas),
			WorkerImage:    "registry.example/ate-worker:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: class}},
			Template: &v1alpha1.WorkerPoolPodTemplate{
				NodeSelector: map[string]v1alpha1.LabelValue{v1alpha1.SandboxClassTaintKey: v1alpha1.LabelValue(class)},
			},
		},
	}
	require.NoError(t, kc.Create(ctx, pool))
	ac, err := deployment.Build(pool)
	require.NoError(t, err)
	_, err = c.Clientset.AppsV1().Deployments(ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "cluster-test", Force: true})
	require.NoError(t, err)
	return pool
}

// pods lists the pods of pool.
func pods(ctx context.Context, c *Cluster, pool *v1alpha1.WorkerPool) ([]corev1.Pod, error) {
	list, err := c.Clientset.CoreV1().Pods(pool.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(deployment.SelectorLabels(pool)).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// classNodes are the names of the fleet's nodes of class.
func classNodes(class v1alpha1.SandboxClass) []string {
	var names []string
	for _, g := range DefaultFleet {
		if g.Class == class {
			for i := range g.Count {
				names = append(names, g.NodeName(i))
			}
		}
	}
	return names
}

// readyOn waits until exactly want pods of pool exist, none terminating,
// all Ready, each on a node of nodes and none on avoid, and returns them.
func readyOn(t *testing.T, ctx context.Context, c *Cluster, pool *v1alpha1.WorkerPool, want int, nodes []string, avoid string) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ps, err := pods(ctx, c, pool)
		require.NoError(ct, err)
		ready = ready[:0]
		for _, p := range ps {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = append(ready, p)
			}
			if p.Spec.NodeName != "" {
				assert.Contains(ct, nodes, p.Spec.NodeName, "pod %s of %s on a node of another class", p.Name, pool.Name)
				assert.NotEqual(ct, avoid, p.Spec.NodeName, "pod %s on the NotReady node", p.Name)
			}
		}
		assert.Len(ct, ready, want, "Ready pods of %s", pool.Name)
		assert.Len(ct, ps, want, "pods of %s (terminating or not)", pool.Name)
	}, wait, 100*time.Millisecond)
	return ready
}

// unschedulable waits, for a pool with more replicas than room, until want
// of its pods are Ready on nodes and every other one is Pending,
// Unschedulable for want of reason.
func unschedulable(t *testing.T, ctx context.Context, c *Cluster, pool *v1alpha1.WorkerPool, want int, nodes []string, reason string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ps, err := pods(ctx, c, pool)
		require.NoError(ct, err)
		readyN, unschedulableN := 0, 0
		for _, p := range ps {
			if p.Spec.NodeName != "" {
				assert.Contains(ct, nodes, p.Spec.NodeName, "pod %s of %s on a node of another class", p.Name, pool.Name)
			}
			if podReady(&p) {
				readyN++
			}
			for _, cond := range p.Status.Conditions {
				if p.Spec.NodeName == "" && cond.Type == corev1.PodScheduled &&
					cond.Reason == corev1.PodReasonUnschedulable && strings.Contains(cond.Message, reason) {
					unschedulableN++
				}
			}
		}
		assert.Equal(ct, want, readyN, "Ready pods of %s", pool.Name)
		assert.Equal(ct, len(ps)-want, unschedulableN, "pods of %s Unschedulable for want of %s", pool.Name, reason)
	}, wait, 100*time.Millisecond)
}

// TestClusterRunsWorkerDeployments: the product's worker Deployments are
// scheduled by class (the taint, the node selector, ate.dev/kvm), become
// Ready, are evicted from a NotReady node and replaced, and are garbage
// collected with their Deployment; a namespace's deletion finishes.
func TestClusterRunsWorkerDeployments(t *testing.T) {
	c, kc := startCluster(t)
	ctx := context.Background()
	measureIdleCPU(t, c)

	const ns = "ate-demo"
	_, err := c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	gvisorNodes := classNodes(v1alpha1.SandboxClassGVisor)
	gv := newPool(t, ctx, c, kc, ns, "counter", v1alpha1.SandboxClassGVisor, 3)
	started := time.Now()
	ready := readyOn(t, ctx, c, gv, 3, gvisorNodes, "")
	t.Logf("3 gVisor workers Ready %s after their Deployment was applied", time.Since(started).Round(time.Millisecond))

	// Two micro-VM nodes of 4 ate.dev/kvm each hold 8 workers; the 9th
	// stays Pending, unschedulable.
	vm := newPool(t, ctx, c, kc, ns, "vm", v1alpha1.SandboxClassMicroVM, 9)
	unschedulable(t, ctx, c, vm, 8, classNodes(v1alpha1.SandboxClassMicroVM), v1alpha1.KVMResource)

	// A NotReady node's workers are evicted (after evictAfter) and
	// replaced on the other gVisor nodes; the node comes back.
	broken := ready[0].Spec.NodeName
	require.NoError(t, c.SetNodeReady(ctx, broken, false))
	require.NoError(t, c.WaitNodes(ctx, wait, false, broken))
	started = time.Now()
	readyOn(t, ctx, c, gv, 3, gvisorNodes, broken)
	t.Logf("workers of NotReady node %s replaced %s after it was NotReady", broken, time.Since(started).Round(time.Millisecond))
	require.NoError(t, c.SetNodeReady(ctx, broken, true))
	require.NoError(t, c.WaitNodes(ctx, wait, true, broken))

	// Deleting the Deployment garbage-collects its ReplicaSet and pods.
	require.NoError(t, c.Clientset.AppsV1().Deployments(ns).Delete(ctx, gv.Name, metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rs, err := c.Clientset.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(deployment.SelectorLabels(gv)).String(),
		})
		require.NoError(ct, err)
		assert.Empty(ct, rs.Items, "ReplicaSets of the deleted Deployment %s", gv.Name)
		ps, err := pods(ctx, c, gv)
		require.NoError(ct, err)
		assert.Empty(ct, ps, "pods of the deleted Deployment %s", gv.Name)
	}, wait, 100*time.Millisecond)

	// Deleting the namespace deletes what is left in it and finishes.
	require.NoError(t, c.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := c.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, wait, 100*time.Millisecond, "namespace %s was not deleted", ns)
	var left appsv1.DeploymentList
	require.NoError(t, kc.List(ctx, &left, client.InNamespace(ns)))
	require.Empty(t, left.Items)
}

// measureIdleCPU, when ATE_CLUSTER_IDLE_CPU is a duration, logs the CPU each
// process of the idle cluster burns over it (for docs/local-cluster.md). The
// wait is the measurement window, not synchronisation.
func measureIdleCPU(t *testing.T, c *Cluster) {
	window, err := time.ParseDuration(os.Getenv("ATE_CLUSTER_IDLE_CPU"))
	if err != nil || window <= 0 {
		return
	}
	pids := c.Pids()
	require.Len(t, pids, 5, "%v", pids)
	before := map[string]time.Duration{}
	for name, pid := range pids {
		before[name] = cpuTime(t, pid)
	}
	time.Sleep(window)
	names := make([]string, 0, len(pids))
	for name := range pids {
		names = append(names, name)
	}
	slices.Sort(names)
	var total time.Duration
	for _, name := range names {
		used := cpuTime(t, pids[name]) - before[name]
		total += used
		t.Logf("idle CPU of %s: %.1f%% of a core", name, 100*used.Seconds()/window.Seconds())
	}
	t.Logf("idle CPU of the cluster: %.1f%% of a core", 100*total.Seconds()/window.Seconds())
}

// cpuTime is the user and system CPU time of a process (Linux, 100 Hz ticks).
func cpuTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	require.NoError(t, err)
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err := strconv.Atoi(fields[11])
	require.NoError(t, err)
	stime, err := strconv.Atoi(fields[12])
	require.NoError(t, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
