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

// ReleaseWorkflowID is the ID of the release workflow of a SandboxConfig.
func ReleaseWorkflowID(config string) string {
	return fmt.Sprintf("sandboxconfig/%s/release", config)
}

// PoolKey is how a pool is named in search attributes and logs: "namespace/name".
func PoolKey(namespace, name string) string {
	return namespace + "/" + name
}

// SwitchWorkflowID is the ID of the switch workflow of a WorkerPool: one
// top-level execution at a time per pool, started by the starter (or by an
// operator's signal-with-start), each run one switch. Runs follow one
// another under the same ID; the Web UI lists them all.
func SwitchWorkflowID(namespace, name string) string {
	return fmt.Sprintf("workerpool/%s/%s/switch", namespace, name)
}

// SwitchPool is the pool a switch acts on, derived from its workflow ID and
// the pool its input names: the ID names the pool (SwitchWorkflowID), and a
// switch acts on that pool only, whoever started it with whatever input. An
// input that names a namespace must name the ID's pool; one that names none
// (an operator's start, with no input) takes the ID's. The input's UID, if
// any, is kept. The switch workflow and the activities' caller check both
// ask this, so they agree on what a switch may touch.
func SwitchPool(id string, named PoolRef) (PoolRef, error) {
	ns, name, ok := poolFromSwitchWorkflowID(id)
	if !ok {
		return PoolRef{}, fmt.Errorf("a switch's workflow ID names its pool, as %s does; got %q",
			SwitchWorkflowID("<namespace>", "<name>"), id)
	}
	if named.Namespace != "" && (named.Namespace != ns || named.Name != name) {
		return PoolRef{}, fmt.Errorf("switch workflow of WorkerPool %s was given WorkerPool %s",
			PoolKey(ns, name), named)
	}
	named.Namespace, named.Name = ns, name
	return named, nil
}

// poolFromSwitchWorkflowID returns the pool a switch workflow ID names, and
// false for any other ID (a release's, one made up by hand).
func poolFromSwitchWorkflowID(id string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(id, "workerpool/")
	if !found {
		return "", "", false
	}
	rest, found = strings.CutSuffix(rest, "/switch")
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return namespace, name, true
}
