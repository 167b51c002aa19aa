package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// Anyone who can start workflows on the task queue can start a switch, with
// any input (docs/security.md). A switch therefore acts only on the pool its
// workflow ID names (wfapi.SwitchPool, asked by Switch), and the activities
// check the same again before any pool write. And a switch whose claim was
// taken over by another writer ends as superseded, without a write or an
// event.

func superseded() *wfapi.SwitchResult { return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded} }

// carriedMove is the unsetting of the move's search attributes (and the
// outcome) a run started with: none on a run started by the starter or an
// operator, the previous run's on one continued as new.
func carriedMove(ctx workflow.Context) []temporal.SearchAttributeUpdate {
	sa := workflow.GetTypedSearchAttributes(ctx)
	var unset []temporal.SearchAttributeUpdate
	for _, k := range []temporal.SearchAttributeKeyKeyword{searchattr.SandboxClassKey, searchattr.FromConfigKey, searchattr.ToConfigKey, searchattr.OutcomeKey} {
		if sa.ContainsKey(k) {
			unset = append(unset, k.ValueUnset())
		}
	}
	return unset
}
