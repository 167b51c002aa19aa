package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RolloutAfter makes a staged rollout one wave of a fleet's: its first step
// begins only once the SandboxConfig of the same name has completed its
// rollout in each cluster listed, on the same Temporal namespace, and bake
// has passed since the last of them completed
// (docs/decisions/0027-waves-across-clusters.md). The clusters are read
// through Temporal, never through their API servers: each one's rollout
// workflow, <cluster>/sandboxconfig/<name>/rollout, its latest run.
//
// Only the first step waits: once it was admitted, what the other clusters
// do later (a halt, a new rollout there) does not hold this one.
// +kubebuilder:validation:XValidation:rule="self.clusters.all(c, c.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="spec.rollout.after.clusters[] must each be a cluster name as the orchestrator's --cluster-name takes it: a DNS label (at most 63 lowercase letters, digits and '-', beginning and ending with a letter or digit)"
type RolloutAfter struct {
	// clusters are the names of the clusters (each one's --cluster-name,
	// or its kube-system namespace's UID when it has none) whose rollout
	// of this config's name must complete first. A cluster may not list
	// itself: the rollout then waits with a message saying so.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +required
	Clusters []string `json:"clusters"`

	// bake is how long after the last of them completed the first step
	// still waits (a Go duration: 30m, 1h, 24h); empty: none.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="spec.rollout.after.bake must be a duration such as 30s, 10m or 1h30m"
	// +optional
	Bake *metav1.Duration `json:"bake,omitempty"`
}

// RolloutAwaitedCluster is a cluster of spec.rollout.after whose rollout
// the first step still waits for, and why.
type RolloutAwaitedCluster struct {
	// cluster is its name, as spec.rollout.after.clusters lists it.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Cluster string `json:"cluster"`

	// phase is where its rollout of the same-named SandboxConfig stands, as
	// that rollout's workflow reports it (its status.rollout.phase there);
	// empty when it has none: no rollout yet, or a workflow that ended
	// without saying. Any string: that cluster may run another version.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Phase string `json:"phase,omitempty"`

	// message says why the rollout still waits for it.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}
