package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// classNodes are the fleet's nodes labelled for class.
func classNodes(t *testing.T, p *producttest.Product, class v1alpha1.SandboxClass) []string {
	t.Helper()
	list, err := p.Clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{
		LabelSelector: v1alpha1.SandboxClassTaintKey + "=" + string(class),
	})
	require.NoError(t, err)
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	require.NotEmpty(t, out, "the fleet has %s nodes", class)
	return out
}

// poolPods lists the pool's pods that are not being deleted.
func poolPods(t *testing.T, p *producttest.Product, ns, pool string) []corev1.Pod {
	t.Helper()
	list, err := p.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(map[string]string{v1alpha1.WorkerPoolLabel: pool}).String(),
	})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			out = append(out, pod)
		}
	}
	return out
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitReadyOn waits until the pool has exactly want pods, all Ready on
// nodes, and its status says want/want; it returns the pods.
func waitReadyOn(t *testing.T, p *producttest.Product, ns, pool string, want int, nodes []string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	producttest.Eventually(t, fmt.Sprintf("%d ready pods of %s/%s on %v, and the pool's status", want, ns, pool, nodes), func() (bool, string) {
		pods = poolPods(t, p, ns, pool)
		var where []string
		ready := 0
		for i := range pods {
			where = append(where, pods[i].Name+"@"+pods[i].Spec.NodeName)
			if podReady(&pods[i]) && slices.Contains(nodes, pods[i].Spec.NodeName) {
				ready++
			}
		}
		wp := getPool(t, p, ns, pool)
		return len(pods) == want && ready == want && wp.Status.Replicas == int32(want) && wp.Status.ReadyReplicas == int32(want),
			fmt.Sprintf("pods %s (%d ready on class nodes); pool status %d/%d", strings.Join(where, " "), ready, wp.Status.ReadyReplicas, wp.Status.Replicas)
	})
	for _, pod := range pods {
		require.Contains(t, nodes, pod.Spec.NodeName, "pod %s is on a node of its class", pod.Name)
	}
	return pods
}

func getPool(t *testing.T, p *producttest.Product, ns, name string) *v1alpha1.WorkerPool {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp))
	return &wp
}

func uids(pods []corev1.Pod) []string {
	var out []string
	for _, pod := range pods {
		out = append(out, string(pod.UID))
	}
	slices.Sort(out)
	return out
}

// gvisorPool is a gvisor pool of replicas that keeps to its class's nodes.
func gvisorPool(ns, name, configRef string, replicas int32) *v1alpha1.WorkerPool {
	wp := producttest.Pool(ns, name, configRef)
	wp.Spec.Replicas = producttest.Ptr(replicas)
	wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{
		NodeSelector: map[string]v1alpha1.LabelValue{v1alpha1.SandboxClassTaintKey: v1alpha1.LabelValue(v1alpha1.SandboxClassGVisor)},
	}
	return wp
}

// microVMPool is a micro-VM pool of replicas pinned to configRef; its
// workers' ate.dev/kvm request keeps them to the micro-VM nodes.
func microVMPool(ns, name, configRef string, replicas int32) *v1alpha1.WorkerPool {
	wp := producttest.Pool(ns, name, configRef)
	wp.Spec.WorkerImage = "ateworker-microvm:v1"
	wp.Spec.SandboxClasses = []v1alpha1.WorkerPoolSandboxClass{{
		Name: v1alpha1.SandboxClassMicroVM, ConfigRef: &v1alpha1.SandboxConfigReference{Name: configRef},
	}}
	wp.Spec.Replicas = producttest.Ptr(replicas)
	return wp
}
