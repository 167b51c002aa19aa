package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
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
// pool's status shows fewer ready replicas than desired, and Available
// False; scaled back within capacity, Available is True again.
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
	require.NoError(t, p.Env.Kube.Create(ctx, microVMPool(ns, "vms", "microvm-a", 2)))
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
	// And says so where an operator looks: the pool's Available condition,
	// mirrored from its Deployment's.
	producttest.Eventually(t, "the pool to be Available=False", func() (bool, string) {
		c := meta.FindStatusCondition(getPool(t, p, ns, "vms").Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "MinimumReplicasUnavailable" &&
			strings.HasPrefix(c.Message, fmt.Sprintf("%d of %d workers ready", capacity, want)), fmt.Sprintf("%+v", c)
	})

	producttest.Scale(t, p.Env.Kube, ns, "vms", int32(capacity))
	waitReadyOn(t, p, ns, "vms", capacity, microvm)
	producttest.Eventually(t, "the pool to be Available=True", func() (bool, string) {
		c := meta.FindStatusCondition(getPool(t, p, ns, "vms").Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
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
// and replaced elsewhere; readyReplicas dips and recovers. Micro-VM workers
// make the dip last: six on two nodes of four ate.dev/kvm devices each,
// so of the failed node's pods only as many are replaced as the other
// node has free devices, the rest stay Pending (the pool 4/6 and
// Available False) until the node is Ready again.
func TestNodeFailureReplacesPods(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	microvm := classNodes(t, p, v1alpha1.SandboxClassMicroVM)
	require.Len(t, microvm, 2, "the default fleet")

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.MicroVMConfig("microvm-a")))
	require.NoError(t, p.Env.Kube.Create(ctx, microVMPool(ns, "vms", "microvm-a", 6)))
	pods := waitReadyOn(t, p, ns, "vms", 6, microvm)
	onNode := map[string]int{}
	for _, pod := range pods {
		onNode[pod.Spec.NodeName]++
	}
	failed, other := microvm[0], microvm[1]
	if onNode[other] > onNode[failed] {
		failed, other = other, failed
	}
	lost := onNode[failed]
	replaceable := min(lost, 4-onNode[other])

	c := p.Env.Cluster
	require.NoError(t, c.SetNodeReady(ctx, failed, false))
	restored := false
	t.Cleanup(func() {
		if !restored {
			require.NoError(t, c.SetNodeReady(context.Background(), failed, true))
		}
	})
	ready := int32(6 - lost + replaceable)
	producttest.Eventually(t, fmt.Sprintf("%s's %d pods evicted, %d replaced on %s, the pool %d/6 and not Available", failed, lost, replaceable, other, ready), func() (bool, string) {
		onFailed, onOther := 0, 0
		for _, pod := range poolPods(t, p, ns, "vms") {
			switch pod.Spec.NodeName {
			case failed:
				onFailed++
			case other:
				onOther++
			}
		}
		wp := getPool(t, p, ns, "vms")
		avail := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionAvailable)
		return onFailed == 0 && onOther == 4 && wp.Status.ReadyReplicas == ready && avail != nil && avail.Status == metav1.ConditionFalse,
			fmt.Sprintf("%d pods on %s, %d on %s; pool ready %d/%d; Available %+v", onFailed, failed, onOther, other, wp.Status.ReadyReplicas, wp.Status.Replicas, avail)
	})

	require.NoError(t, c.SetNodeReady(ctx, failed, true))
	restored = true
	waitReadyOn(t, p, ns, "vms", 6, microvm)
	producttest.Eventually(t, "the pool to be Available again", func() (bool, string) {
		avail := meta.FindStatusCondition(getPool(t, p, ns, "vms").Status.Conditions, v1alpha1.ConditionAvailable)
		return avail != nil && avail.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", avail)
	})
}
