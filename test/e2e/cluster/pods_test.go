package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/test/producttest"
)

// TestPoolPodsRunOnTheirClass: a pool's pods are created, scheduled onto
// nodes of its class only and become Ready; its status mirrors them, and
// scaling it through the scale subresource moves pods up and down.
func TestPoolPodsRunOnTheirClass(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	gvisor := classNodes(t, p, v1alpha1.SandboxClassGVisor)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-a", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "workers", "gvisor-a", 2)))
	waitReadyOn(t, p, ns, "workers", 2, gvisor)

	producttest.Scale(t, p.Env.Kube, ns, "workers", 5)
	waitReadyOn(t, p, ns, "workers", 5, gvisor)
	producttest.Scale(t, p.Env.Kube, ns, "workers", 1)
	waitReadyOn(t, p, ns, "workers", 1, gvisor)
}

// TestMicroVMCapacity: micro-VM workers land only on nodes with ate.dev/kvm;
// once the fleet's kvm devices are taken the rest stay Pending, and the
// pool's status shows fewer ready replicas than desired.
func TestMicroVMCapacity(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	microvm := classNodes(t, p, v1alpha1.SandboxClassMicroVM)
	capacity := 0
	for _, name := range microvm {
		n, err := p.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		kvm := n.Status.Allocatable[corev1.ResourceName(v1alpha1.KVMResource)]
		capacity += int(kvm.Value())
	}
	require.Positive(t, capacity)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.MicroVMConfig("microvm-a")))
	wp := producttest.Pool(ns, "vms", "microvm-a")
	wp.Spec.WorkerImage = "ateworker-microvm:v1"
	wp.Spec.SandboxClasses = []v1alpha1.WorkerPoolSandboxClass{{
		Name: v1alpha1.SandboxClassMicroVM, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "microvm-a"},
	}}
	wp.Spec.Replicas = producttest.Ptr(int32(2))
	require.NoError(t, p.Env.Kube.Create(ctx, wp))
	waitReadyOn(t, p, ns, "vms", 2, microvm)

	want := capacity + 2
	producttest.Scale(t, p.Env.Kube, ns, "vms", int32(want))
	producttest.Eventually(t, fmt.Sprintf("%d pods on micro-VM nodes, 2 Unschedulable, status %d/%d", capacity, capacity, want), func() (bool, string) {
		pods := poolPods(t, p, ns, "vms")
		running, unschedulable := 0, 0
		for i := range pods {
			pod := &pods[i]
			if pod.Spec.NodeName != "" {
				require.Contains(t, microvm, pod.Spec.NodeName, "micro-VM pod %s on a node with ate.dev/kvm", pod.Name)
				if podReady(pod) {
					running++
				}
				continue
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					unschedulable++
				}
			}
		}
		got := getPool(t, p, ns, "vms")
		return running == capacity && unschedulable == want-capacity &&
				got.Status.Replicas == int32(want) && got.Status.ReadyReplicas == int32(capacity),
			fmt.Sprintf("%d of %d pods ready, %d unschedulable; status %d/%d", running, len(pods), unschedulable, got.Status.ReadyReplicas, got.Status.Replicas)
	})
}

// TestSwitchKeepsPods: switching a pool's config restarts no pod and
// replaces none: the worker moves its sandboxes, not its pods.
func TestSwitchKeepsPods(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	gvisor := classNodes(t, p, v1alpha1.SandboxClassGVisor)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-a", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-b", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "workers", "gvisor-a", 3)))
	p.WaitForConfig(t, ns, "workers", "gvisor-a", metav1.ConditionTrue)
	before := waitReadyOn(t, p, ns, "workers", 3, gvisor)
	var restarts int32
	for _, pod := range before {
		for _, cs := range pod.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}

	wp := getPool(t, p, ns, "workers")
	patch := client.MergeFrom(wp.DeepCopy())
	wp.Spec.SandboxClasses[0].ConfigRef.Name = "gvisor-b"
	require.NoError(t, p.Env.Kube.Patch(ctx, wp, patch))
	p.WaitForConfig(t, ns, "workers", "gvisor-b", metav1.ConditionTrue)

	after := waitReadyOn(t, p, ns, "workers", 3, gvisor)
	require.Equal(t, uids(before), uids(after), "the switch replaced no pod")
	var restartsAfter int32
	for _, pod := range after {
		for _, cs := range pod.Status.ContainerStatuses {
			restartsAfter += cs.RestartCount
		}
	}
	require.Equal(t, restarts, restartsAfter, "the switch restarted no container")
}

// TestDeletionCollectsPods: deleting a pool garbage-collects its
// Deployment and pods; deleting a namespace that holds pools finishes, and
// releases the config they used, in deletion since.
func TestDeletionCollectsPods(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	gvisor := classNodes(t, p, v1alpha1.SandboxClassGVisor)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-a", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "one", "gvisor-a", 2)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "two", "gvisor-a", 2)))
	waitReadyOn(t, p, ns, "one", 2, gvisor)
	waitReadyOn(t, p, ns, "two", 2, gvisor)

	require.NoError(t, p.Env.Kube.Delete(ctx, getPool(t, p, ns, "one")))
	producttest.Eventually(t, "pool one's Deployment and pods to be collected", func() (bool, string) {
		_, err := p.Clientset.AppsV1().Deployments(ns).Get(ctx, "one", metav1.GetOptions{})
		pods := poolPods(t, p, ns, "one")
		return apierrors.IsNotFound(err) && len(pods) == 0, fmt.Sprintf("Deployment: %v; %d pods", err, len(pods))
	})
	require.Len(t, poolPods(t, p, ns, "two"), 2, "the other pool keeps its pods")

	// The config is deleted while pool two still names it: its protection
	// keeps it, in deletion, until the namespace's deletion takes pool two
	// with it; the release then lets it go.
	cfg := &v1alpha1.SandboxConfig{}
	require.NoError(t, p.Env.Kube.Get(ctx, client.ObjectKey{Name: "gvisor-a"}, cfg))
	require.NoError(t, p.Env.Kube.Delete(ctx, cfg))
	require.NoError(t, p.Env.Kube.Get(ctx, client.ObjectKey{Name: "gvisor-a"}, cfg), "pool two still names gvisor-a")
	require.NotNil(t, cfg.DeletionTimestamp)

	require.NoError(t, p.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	producttest.Eventually(t, "the namespace and gvisor-a to be gone", func() (bool, string) {
		_, nsErr := p.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		cfgErr := p.Env.Kube.Get(ctx, client.ObjectKey{Name: "gvisor-a"}, &v1alpha1.SandboxConfig{})
		return apierrors.IsNotFound(nsErr) && apierrors.IsNotFound(cfgErr),
			fmt.Sprintf("namespace: %v; gvisor-a: %v", nsErr, cfgErr)
	})
}

// TestNodeFailureReplacesPods: a node going NotReady gets its pods evicted
// and replaced on the class's other nodes; readyReplicas dips and recovers.
func TestNodeFailureReplacesPods(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	gvisor := classNodes(t, p, v1alpha1.SandboxClassGVisor)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-a", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "workers", "gvisor-a", 3)))
	pods := waitReadyOn(t, p, ns, "workers", 3, gvisor)

	failed := pods[0].Spec.NodeName
	c := p.Env.Cluster
	require.NoError(t, c.SetNodeReady(ctx, failed, false))
	t.Cleanup(func() { require.NoError(t, c.SetNodeReady(context.Background(), failed, true)) })
	producttest.Eventually(t, "the pool's status to show the failed node's pods unready", func() (bool, string) {
		wp := getPool(t, p, ns, "workers")
		return wp.Status.ReadyReplicas < 3, fmt.Sprintf("ready %d/%d", wp.Status.ReadyReplicas, wp.Status.Replicas)
	})
	var others []string
	for _, n := range gvisor {
		if n != failed {
			others = append(others, n)
		}
	}
	waitReadyOn(t, p, ns, "workers", 3, others)
}
