package wfapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Cluster names the Kubernetes cluster a worker and a starter serve. Many
// clusters may share one Temporal namespace (a platform team's fleet on one
// Temporal Cloud namespace): every workflow ID starts with its cluster, the
// default task queue ends with it, and the KubernetesCluster search
// attribute holds it, so that one cluster's workflows are never mistaken for
// another's, by a worker or by an operator.
//
// It is the operator's --cluster-name when set, else the UID of the
// cluster's kube-system namespace (kube.ClusterIdentity): unique per
// cluster, stable across restarts and upgrades, and the same in two clusters
// restored from one etcd snapshot, which only names set apart.
type Cluster string

// Validate reports a name that cannot stand in a workflow ID: a cluster is a
// DNS label (at most 63 lowercase letters, digits and '-'), as a
// namespace's UID is.
func (c Cluster) Validate() error {
	if errs := validation.IsDNS1123Label(string(c)); len(errs) > 0 {
		return fmt.Errorf("cluster name %q is not a DNS label: %s", string(c), strings.Join(errs, "; "))
	}
	return nil
}

// ErrNoCluster is the error type of a workflow whose ID names no cluster
// (one started by hand under another ID): it is refused before any step.
const ErrNoCluster = "NoCluster"

// DefaultTaskQueuePrefix begins the task queue of a cluster whose task queue
// is not set: ate-orchestrator-<cluster>.
const DefaultTaskQueuePrefix = "ate-orchestrator"

// DefaultTaskQueue is the task queue the cluster's worker polls and its
// starter starts on when none is set: its own, so that a workflow of one
// cluster is never handed to another cluster's worker.
func (c Cluster) DefaultTaskQueue() string {
	return DefaultTaskQueuePrefix + "-" + string(c)
}

// SwitchWorkflowID is the ID of the switch workflow of a WorkerPool of the
// cluster: one top-level execution at a time per pool, started by the
// starter (or by an operator's signal-with-start), each run one switch.
// Runs follow one another under the same ID; the Web UI lists them all.
func (c Cluster) SwitchWorkflowID(namespace, name string) string {
	return fmt.Sprintf("%s/workerpool/%s/%s/switch", c, namespace, name)
}

// ReleaseWorkflowID is the ID of the release workflow of a SandboxConfig of
// the cluster.
func (c Cluster) ReleaseWorkflowID(config string) string {
	return fmt.Sprintf("%s/sandboxconfig/%s/release", c, config)
}

// OperatorWorkflowID is the ID of the cluster's operator workflow.
func (c Cluster) OperatorWorkflowID() string {
	return string(c) + "/operator"
}

// ClusterOf returns the cluster a workflow ID of the product names (its
// first segment, before a switch's, a release's or the operator's own
// part), and false for an ID that names none: one with no valid cluster
// before its first '/', or one of another shape, as an ID made up by hand,
// or one written before IDs named their cluster, may be.
func ClusterOf(workflowID string) (Cluster, bool) {
	c, rest, found := strings.Cut(workflowID, "/")
	if !found || Cluster(c).Validate() != nil {
		return "", false
	}
	if rest != "operator" && !strings.HasPrefix(rest, "workerpool/") && !strings.HasPrefix(rest, "sandboxconfig/") {
		return "", false
	}
	return Cluster(c), true
}

// Scope is where a cluster's workflows run: the cluster every workflow ID
// names, and the task queue its worker polls.
type Scope struct {
	Cluster   Cluster
	TaskQueue string
}

// ScopeOf is the scope of a cluster with the task queue set (empty: the
// cluster's default).
func ScopeOf(cluster Cluster, taskQueue string) Scope {
	if taskQueue == "" {
		taskQueue = cluster.DefaultTaskQueue()
	}
	return Scope{Cluster: cluster, TaskQueue: taskQueue}
}
