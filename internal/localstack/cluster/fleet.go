package cluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// NodeGroup is a group of identical simulated nodes.
type NodeGroup struct {
	// Class is the sandbox class the nodes are reserved for: they carry the
	// taint ate.dev/sandboxClass=<class>:NoSchedule, which only that class's
	// pods tolerate, and the label ate.dev/sandboxClass=<class>, which a
	// pool's template.nodeSelector can select. Empty: untainted, unlabelled
	// nodes any pod may land on.
	Class v1alpha1.SandboxClass
	// Count is the number of nodes; they are named <class>-<i> (or
	// general-<i> without a class).
	Count int
	// KVM is each node's ate.dev/kvm capacity, which a micro-VM worker
	// requests one of (atelet's device plugin advertises it on real nodes).
	KVM int64
	// Pods is each node's pod capacity; 0 is a kubelet's default, 110.
	Pods int64
}

// DefaultFleet is three gVisor nodes, two micro-VM nodes with four
// ate.dev/kvm each (so a test can exhaust them), and one general node.
var DefaultFleet = []NodeGroup{
	{Class: v1alpha1.SandboxClassGVisor, Count: 3},
	{Class: v1alpha1.SandboxClassMicroVM, Count: 2, KVM: 4},
	{Count: 1},
}

// Each simulated node's capacity, generous so that only what a test means
// to exhaust (ate.dev/kvm) runs out.
const (
	nodeCPU    = "16"
	nodeMemory = "64Gi"
	nodePods   = "110"
)

// NodeName is the name of the i-th node of group g.
func (g NodeGroup) NodeName(i int) string {
	prefix := string(g.Class)
	if prefix == "" {
		prefix = "general"
	}
	return prefix + "-" + strconv.Itoa(i)
}

// Node is the i-th node of group g as it is created: annotated for kwok,
// labelled and tainted for its class, with its capacity in its status
// (kwok's node-initialize stage keeps a node's own capacity).
func (g NodeGroup) Node(i int) *corev1.Node {
	name := g.NodeName(i)
	labels := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		"type":                 "kwok",
	}
	var taints []corev1.Taint
	if g.Class != "" {
		labels[v1alpha1.SandboxClassTaintKey] = string(g.Class)
		taints = append(taints, corev1.Taint{
			Key: v1alpha1.SandboxClassTaintKey, Value: string(g.Class), Effect: corev1.TaintEffectNoSchedule,
		})
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(nodeCPU),
		corev1.ResourceMemory: resource.MustParse(nodeMemory),
		corev1.ResourcePods:   resource.MustParse(nodePods),
	}
	if g.Pods > 0 {
		capacity[corev1.ResourcePods] = *resource.NewQuantity(g.Pods, resource.DecimalSI)
	}
	if g.KVM > 0 {
		capacity[v1alpha1.KVMResource] = *resource.NewQuantity(g.KVM, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				servers.KwokManagedAnnotation: servers.KwokManagedValue,
				// The TTL controller is not run: pods' secrets and config
				// maps would be cached forever by a kubelet, of which there
				// is none.
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
		},
	}
}

// createFleet creates the nodes of every group; a node that exists already
// (a reused etcd) is left as it is.
func createFleet(ctx context.Context, cs kubernetes.Interface, fleet []NodeGroup) ([]string, error) {
	var names []string
	for _, g := range fleet {
		for i := range g.Count {
			n := g.Node(i)
			if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("cluster: creating node %s: %w", n.Name, err)
			}
			names = append(names, n.Name)
		}
	}
	return names, nil
}

// nodeReady reports whether a node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
