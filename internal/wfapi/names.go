// Package wfapi is the contract for starting and signalling the workflows:
// the names the worker, the starter and operators share (workflow types,
// workflow IDs, signals, queries, the task queue) and the workflows' inputs.
// Changing a name breaks running histories and operators' habits alike.
package wfapi

import (
	"fmt"
	"strings"
)

// DefaultTaskQueue is the task queue the worker polls and the starter starts on.
const DefaultTaskQueue = "ate-orchestrator"

// Workflow type names, registered explicitly so that renaming a Go function
// cannot silently change them.
const (
	PoolWorkflow    = "WorkerPool"
	SwitchWorkflow  = "SandboxConfigSwitch"
	ReleaseWorkflow = "SandboxConfigRelease"
)

// Signals and queries.
const (
	// SignalReresolve asks a pool workflow to resolve its pool again. Its
	// payload, if any, is ignored: it means "look again", never a diff.
	SignalReresolve = "reresolve"
	// SignalRecheck asks a release workflow to look at its config again.
	SignalRecheck = "recheck"
	// QueryState returns a pool workflow's view of its pool.
	QueryState = "state"
)

// PoolWorkflowID is the ID of the pool workflow of a WorkerPool.
func PoolWorkflowID(namespace, name string) string {
	return fmt.Sprintf("workerpool/%s/%s", namespace, name)
}

// SwitchWorkflowID is the ID of the n-th switch workflow of a WorkerPool.
func SwitchWorkflowID(namespace, name string, n int) string {
	return fmt.Sprintf("workerpool/%s/%s/switch/%d", namespace, name, n)
}

// ReleaseWorkflowID is the ID of the release workflow of a SandboxConfig.
func ReleaseWorkflowID(config string) string {
	return fmt.Sprintf("sandboxconfig/%s/release", config)
}

// PoolKey is how a pool is named in search attributes and logs: "namespace/name".
func PoolKey(namespace, name string) string {
	return namespace + "/" + name
}

// PoolSwitchWorkflowID is the ID of the switch workflow of a WorkerPool in the
// lean shape: one top-level execution at a time per pool, started by the
// starter (or by an operator's signal-with-start), each run one switch. Runs
// follow one another under the same ID; the Web UI lists them all.
func PoolSwitchWorkflowID(namespace, name string) string {
	return fmt.Sprintf("workerpool/%s/%s/switch", namespace, name)
}

// PoolFromSwitchWorkflowID returns the pool a lean switch workflow ID names,
// and false for any other ID (a numbered child switch of the pool workflow, a
// release). The switch acts only on the pool its ID names.
func PoolFromSwitchWorkflowID(id string) (namespace, name string, ok bool) {
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
