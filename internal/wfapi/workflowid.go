package wfapi

import (
	"fmt"
	"strings"
)

// WorkflowKind is which of the product's workflows a workflow ID names.
type WorkflowKind string

// The kinds of workflow IDs, one per ID the cluster builds
// (SwitchWorkflowID, ReleaseWorkflowID, RolloutWorkflowID,
// OperatorWorkflowID).
const (
	// KindNone: an ID of none of those shapes: one with no cluster, one
	// made up by hand (whatever cluster it names), a rollout's gate's.
	KindNone     WorkflowKind = ""
	KindSwitch   WorkflowKind = "switch"
	KindRelease  WorkflowKind = "release"
	KindRollout  WorkflowKind = "rollout"
	KindOperator WorkflowKind = "operator"
)

// WorkflowRef is a workflow ID parsed: the cluster it names, which of the
// product's workflows it is, and the object that workflow acts on. A
// workflow acts on the object its ID names only, whoever started it with
// whatever input, so this is what every check of a workflow against an
// input asks: the workflows of their own ID (SwitchPool, CheckReleaseID,
// CheckRolloutID), the worker's activities of their caller's, parsed once
// per activity.
type WorkflowRef struct {
	// ID is the workflow ID as given.
	ID string
	// Cluster is the cluster the ID names (ClusterOf), "" for none.
	Cluster Cluster
	Kind    WorkflowKind
	// Pool is the pool a switch's ID names: its namespace and name (an ID
	// names no UID).
	Pool PoolRef
	// Config is the SandboxConfig a release's or a rollout's ID names.
	Config string
}

// ParseWorkflowID parses a workflow ID of the product. It never fails: an
// ID of another shape has KindNone, and no Cluster when ClusterOf finds
// none.
func ParseWorkflowID(id string) WorkflowRef {
	ref := WorkflowRef{ID: id}
	cluster, ok := ClusterOf(id)
	if !ok {
		return ref
	}
	ref.Cluster = cluster
	rest := id[len(cluster)+1:]
	if rest == "operator" {
		ref.Kind = KindOperator
		return ref
	}
	if pool, ok := strings.CutPrefix(rest, "workerpool/"); ok {
		if pool, ok = strings.CutSuffix(pool, "/switch"); ok {
			// The namespace is the first segment and the name the rest,
			// which holds no '/': a name can hold none.
			ns, name, found := strings.Cut(pool, "/")
			if found && ns != "" && name != "" && !strings.Contains(name, "/") {
				ref.Kind, ref.Pool = KindSwitch, PoolRef{Namespace: ns, Name: name}
			}
		}
		return ref
	}
	// ClusterOf accepted the ID: the rest begins with "sandboxconfig/".
	// Whatever lies between that and the kind's suffix is the config, as
	// ReleaseWorkflowID and RolloutWorkflowID put it there (empty
	// included: the checks below compare it with their input's).
	config := strings.TrimPrefix(rest, "sandboxconfig/")
	if c, ok := strings.CutSuffix(config, "/release"); ok {
		ref.Kind, ref.Config = KindRelease, c
	} else if c, ok := strings.CutSuffix(config, "/rollout"); ok {
		ref.Kind, ref.Config = KindRollout, c
	}
	return ref
}

// SwitchPool is SwitchPool of the parsed ID.
func (w WorkflowRef) SwitchPool(named PoolRef) (PoolRef, error) {
	if w.Kind != KindSwitch {
		return PoolRef{}, fmt.Errorf("a switch's workflow ID names its cluster and pool, as %s does; got %q",
			Cluster("<cluster>").SwitchWorkflowID("<namespace>", "<name>"), w.ID)
	}
	ns, name := w.Pool.Namespace, w.Pool.Name
	if named.Namespace != "" && (named.Namespace != ns || named.Name != name) {
		return PoolRef{}, fmt.Errorf("switch workflow of WorkerPool %s was given WorkerPool %s",
			PoolKey(ns, name), named)
	}
	named.Namespace, named.Name = ns, name
	return named, nil
}

// CheckRelease is CheckReleaseID of the parsed ID.
func (w WorkflowRef) CheckRelease(config string) error {
	if w.Kind != KindRelease || w.Config != config {
		return fmt.Errorf("the release workflow of SandboxConfig %q has the ID %s; got %q",
			config, Cluster("<cluster>").ReleaseWorkflowID(config), w.ID)
	}
	return nil
}

// CheckRollout is CheckRolloutID of the parsed ID.
func (w WorkflowRef) CheckRollout(config string) error {
	if w.Kind != KindRollout || config == "" || w.Config != config {
		return fmt.Errorf("the rollout workflow of SandboxConfig %q has the ID %s; got %q",
			config, Cluster("<cluster>").RolloutWorkflowID(config), w.ID)
	}
	return nil
}
