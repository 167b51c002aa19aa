// Package wfapi is the contract for starting and signalling the workflows:
// the names the worker, the starter and operators share (workflow types,
// workflow IDs, signals, queries) and the workflows' inputs.
// Changing a name breaks running histories and operators' habits alike.
package wfapi

import (
	"fmt"
	"strings"
)

// Workflow type names, registered explicitly so that renaming a Go function
// cannot silently change them.
const (
	SwitchWorkflow  = "SandboxConfigSwitch"
	ReleaseWorkflow = "SandboxConfigRelease"
)

// Signals and queries.
const (
	// SignalReresolve asks a pool's switch workflow to resolve its pool again. Its
	// payload, if any, is ignored: it means "look again", never a diff.
	SignalReresolve = "reresolve"
	// SignalRecheck asks a release workflow to look at its config again.
	SignalRecheck = "recheck"
	// QueryState returns a switch's move and step, or a release's looks.
	QueryState = "state"
)

// PoolKey is how a pool is named in search attributes and logs: "namespace/name".
func PoolKey(namespace, name string) string {
	return namespace + "/" + name
}

// SwitchPool is the pool a switch acts on, derived from its workflow ID and
// the pool its input names: the ID names the pool (SwitchWorkflowID), and a
// switch acts on that pool only, whoever started it with whatever input. An
// input that names a namespace must name the ID's pool; one that names none
// (an operator's start, with no input) takes the ID's. The input's UID, if
// any, is kept. The switch workflow and the activities' caller check both
// ask this, so they agree on what a switch may touch.
func SwitchPool(id string, named PoolRef) (PoolRef, error) {
	_, ns, name, ok := poolFromSwitchWorkflowID(id)
	if !ok {
		return PoolRef{}, fmt.Errorf("a switch's workflow ID names its cluster and pool, as %s does; got %q",
			Cluster("<cluster>").SwitchWorkflowID("<namespace>", "<name>"), id)
	}
	if named.Namespace != "" && (named.Namespace != ns || named.Name != name) {
		return PoolRef{}, fmt.Errorf("switch workflow of WorkerPool %s was given WorkerPool %s",
			PoolKey(ns, name), named)
	}
	named.Namespace, named.Name = ns, name
	return named, nil
}

// poolFromSwitchWorkflowID returns the cluster and pool a switch workflow
// ID names, and false for any other ID (a release's, one with no cluster,
// one made up by hand).
func poolFromSwitchWorkflowID(id string) (cluster Cluster, namespace, name string, ok bool) {
	cluster, found := ClusterOf(id)
	if !found {
		return "", "", "", false
	}
	rest, found := strings.CutPrefix(id, string(cluster)+"/workerpool/")
	if !found {
		return "", "", "", false
	}
	rest, found = strings.CutSuffix(rest, "/switch")
	if !found {
		return "", "", "", false
	}
	namespace, name, found = strings.Cut(rest, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", "", false
	}
	return cluster, namespace, name, true
}

// CheckReleaseID reports an error unless id is the release workflow ID of
// config in the cluster it names: a release acts on the config its ID
// names only, whoever started it with whatever input.
func CheckReleaseID(id, config string) error {
	cluster, ok := ClusterOf(id)
	if !ok || id != cluster.ReleaseWorkflowID(config) {
		return fmt.Errorf("the release workflow of SandboxConfig %q has the ID %s; got %q",
			config, Cluster("<cluster>").ReleaseWorkflowID(config), id)
	}
	return nil
}
