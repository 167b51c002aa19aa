// Package wfapi is the contract for starting and signalling the workflows:
// the names the worker, the starter and operators share (workflow types,
// workflow IDs, signals, queries, the task queue) and the workflows' inputs.
// Changing a name breaks running histories and operators' habits alike.
package wfapi

import "fmt"

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
