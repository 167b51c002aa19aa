// Package wfapi is the contract for starting and signalling the workflows:
// the names the worker, the starter and operators share (workflow types,
// workflow IDs, signals, queries) and the workflows' inputs.
// Changing a name breaks running histories and operators' habits alike.
package wfapi

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
// any, is kept. The switch workflow asks this, and the activities' caller
// check asks the same of its caller's ID parsed (WorkflowRef.SwitchPool), so
// they agree on what a switch may touch.
func SwitchPool(id string, named PoolRef) (PoolRef, error) {
	return ParseWorkflowID(id).SwitchPool(named)
}

// CheckReleaseID reports an error unless id is the release workflow ID of
// config in the cluster it names: a release acts on the config its ID
// names only, whoever started it with whatever input.
func CheckReleaseID(id, config string) error {
	return ParseWorkflowID(id).CheckRelease(config)
}
